"""Workload controllers of the embedded control plane (Job, Deployment, ReplicaSet, StatefulSet)
and the implicit PodGroups of gang workloads."""
