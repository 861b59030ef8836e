"""The workload controllers an embedded run starts, in the order one round runs them."""

from __future__ import annotations

from drasched.control import Controller
from drasched.controllers.workloads.gangs import ImplicitGangs


def workload_controllers(gangs: ImplicitGangs | None = None) -> list[Controller]:
    """Owners before what they own (a Deployment's ReplicaSet gets its pods in the same round),
    and the implicit gangs last, so a new pod joins its gang before the scheduler's turn."""
    from drasched.controllers.workloads.daemonset import DaemonSetController
    from drasched.controllers.workloads.deployment import DeploymentController
    from drasched.controllers.workloads.gangs import ImplicitGangController
    from drasched.controllers.workloads.job import JobController
    from drasched.controllers.workloads.jobset import JobSetController
    from drasched.controllers.workloads.leaderworkerset import LeaderWorkerSetController
    from drasched.controllers.workloads.replicaset import ReplicaSetController
    from drasched.controllers.workloads.statefulset import StatefulSetController

    return [DeploymentController(), ReplicaSetController(), StatefulSetController(), DaemonSetController(),
            JobSetController(), JobController(), LeaderWorkerSetController(), ImplicitGangController(gangs)]
