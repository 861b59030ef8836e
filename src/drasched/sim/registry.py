"""Which controllers an embedded run starts, in the order one round runs them.

Order matters only for how much work one round gets done, never for the outcome: the
runner loops until none of them has work left (the claim controller's work queue drains
every ready key each round; the others look at what changed).
"""

from __future__ import annotations

from drasched.api import kinds
from drasched.control import Controller

UPSTREAM_POD_GROUPS = tuple(rt for rt in kinds.UPSTREAM_GANG if rt.kind == "PodGroup")
"""The upstream PodGroup versions the embedded store serves (v1beta1 first: it wins a name both hold)."""


def build_default_controllers() -> list[Controller]:
    controllers: list[Controller] = []
    # 0. workload controllers (Jobs, Deployments, ReplicaSets, StatefulSets, DaemonSets make pods) and the
    #    implicit PodGroups of gang workloads, so a new pod joins its gang before it is scheduled
    # 1. claim controller (claims from templates, release, deallocation) and device taint
    #    eviction (pods on devices tainted NoExecute), node lifecycle (taints from node conditions and
    #    spec.unschedulable) and taint eviction (pods on nodes tainted NoExecute); the last two embedded
    #    only: in a cluster kube-controller-manager runs them. The node lifecycle controller runs before
    #    the scheduler so a node's first cycle already sees its taints.
    #    and the nodes' DRA drivers (sim-gpus annotations: slices published before a pod asks)
    # 2. scheduler (one cycle per round)
    # 3. binder (carries out BindRequests)
    # 4. simulated kubelet (prepare, run, finish pods)
    from drasched.controllers.workloads.registry import workload_controllers

    controllers.extend(workload_controllers())
    from drasched.controllers.resourceclaim import ResourceClaimController

    # The embedded store serves the upstream gang API (kept as written, in either version), so the
    # claims of an upstream PodGroup's resourceClaims are made, owned and reserved as in a cluster.
    controllers.append(ResourceClaimController(upstream_groups=UPSTREAM_POD_GROUPS))
    from drasched.controllers.devicetainteviction import DeviceTaintEvictionController

    controllers.append(DeviceTaintEvictionController())
    from drasched.controllers.nodelifecycle import NodeLifecycleController

    controllers.append(NodeLifecycleController())
    from drasched.controllers.nodetainteviction import NodeTaintEvictionController

    controllers.append(NodeTaintEvictionController())
    from drasched.node.sim_kubelet import SimulatedKubelet

    kubelet = SimulatedKubelet()
    controllers.append(kubelet.drivers_controller())
    from drasched.scheduler.controller import SchedulerController

    # Upstream PodGroups read translated, as serve reads a server's (the loader printed their warnings).
    controllers.append(SchedulerController(foreign=kinds.UPSTREAM_GANG, log_foreign_problems=False))
    from drasched.binder import BinderController

    controllers.append(BinderController())
    from drasched.node.example_binding import ExampleBindingConditionsController

    # 3b. the DRA example driver's controller, where a node runs it with binding conditions
    #     (it marks an allocated claim's devices ready, which the binder waits for)
    controllers.append(ExampleBindingConditionsController(lambda: kubelet.node_drivers.binding_condition_drivers()))
    controllers.append(kubelet)
    from drasched.controllers.disruption import DisruptionController  # 5. PodDisruptionBudget status (embedded only)

    controllers.append(DisruptionController())
    return controllers
