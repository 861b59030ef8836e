"""Workload controllers of the embedded control plane (Job, Deployment, ReplicaSet, StatefulSet, DaemonSet,
JobSet, LeaderWorkerSet) and the implicit PodGroups of gang workloads."""
