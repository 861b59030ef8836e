"""Which controllers an embedded run starts, in the order one round runs them.

Order matters only for how much work one round gets done, never for the outcome: the
runner loops until none of them has work left (the claim controller's work queue drains
every ready key each round; the others look at what changed).
"""

from __future__ import annotations

from drasched.control import Controller


def build_default_controllers() -> list[Controller]:
    controllers: list[Controller] = []
    # 0. workload controllers (Jobs, Deployments, ReplicaSets, StatefulSets, DaemonSets make pods) and the
    #    implicit PodGroups of gang workloads, so a new pod joins its gang before it is scheduled
    # 1. claim controller (claims from templates, release, deallocation) and device taint
    #    eviction (pods on devices tainted NoExecute), node lifecycle (taints from node conditions and
    #    spec.unschedulable) and taint eviction (pods on nodes tainted NoExecute); the last two embedded
    #    only: in a cluster kube-controller-manager runs them. The node lifecycle controller runs before
    #    the scheduler so a node's first cycle already sees its taints.
    # 2. scheduler (one cycle per round)
    # 3. binder (carries out BindRequests)
    # 4. simulated kubelet (prepare, run, finish pods)
    from drasched.controllers.workloads.registry import workload_controllers

    controllers.extend(workload_controllers())
    from drasched.controllers.resourceclaim import ResourceClaimController

    controllers.append(ResourceClaimController())
    from drasched.controllers.devicetainteviction import DeviceTaintEvictionController

    controllers.append(DeviceTaintEvictionController())
    from drasched.controllers.nodelifecycle import NodeLifecycleController

    controllers.append(NodeLifecycleController())
    from drasched.controllers.nodetainteviction import NodeTaintEvictionController

    controllers.append(NodeTaintEvictionController())
    from drasched.scheduler.controller import SchedulerController

    controllers.append(SchedulerController())
    from drasched.binder import BinderController

    controllers.append(BinderController())
    from drasched.node.sim_kubelet import SimulatedKubelet

    controllers.append(SimulatedKubelet())
    from drasched.controllers.disruption import DisruptionController  # 5. PodDisruptionBudget status (embedded only)

    controllers.append(DisruptionController())
    return controllers
