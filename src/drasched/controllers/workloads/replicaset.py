"""The ``apps/v1`` ReplicaSet controller of the embedded control plane.

As upstream ``pkg/controller/replicaset/replica_set.go``: keep ``spec.replicas`` active pods
(named ``<rs>-<random5>``, the template's labels, a controller ownerReference), creating the
missing ones and deleting the surplus in upstream's order (unscheduled before scheduled,
pending before running, not ready before ready, the newest first); failed and succeeded
pods do not count and are replaced. Status: ``replicas``, ``fullyLabeledReplicas``,
``readyReplicas``, ``availableReplicas`` (ready for ``minReadySeconds``), ``observedGeneration``.
Events ``SuccessfulCreate`` / ``SuccessfulDelete`` as upstream words them. Active pods that
match the selector and have no controller are adopted (and owned pods that stop matching are
released), as upstream's ``ClaimPods`` (:mod:`.adoption`).
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta

from drasched.api import kinds
from drasched.api.meta import format_time, parse_time
from drasched.controllers.workloads.adoption import claim
from drasched.controllers.workloads.common import (
    Obj,
    WorkloadBase,
    is_active,
    is_ready,
    md,
    owned_by,
    pod_from_template,
    set_condition,
    spec_of,
)


def ready_since(pod: Obj) -> datetime | None:
    """When the pod's Ready condition last became True (None: not ready)."""
    if not is_ready(pod):
        return None
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("lastTransitionTime"):
            return parse_time(str(c["lastTransitionTime"]))
    return None


def is_available(pod: Obj, min_ready_seconds: int, now: datetime) -> bool:
    """Ready for at least ``minReadySeconds`` (upstream ``podutil.IsPodAvailable``)."""
    since = ready_since(pod)
    return since is not None and (min_ready_seconds == 0 or since + timedelta(seconds=min_ready_seconds) <= now)


def deletion_order(pod: Obj) -> tuple[int, int, int, float, str]:
    """Sort key: the pod to delete first sorts first (upstream ``controller.ActivePods`` ranking, abridged)."""
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(str((pod.get("status") or {}).get("phase")), 0)
    created = md(pod).get("creationTimestamp")
    newest_first = -parse_time(str(created)).timestamp() if created else 0.0
    return (1 if spec_of(pod).get("nodeName") else 0, phase_rank, 1 if is_ready(pod) else 0, newest_first,
            str(md(pod).get("name")))


class ReplicaSetController(WorkloadBase):
    """Keeps each ReplicaSet's replica count of pods."""

    name = "replicaset-controller"
    component = "replicaset-controller"
    kind = kinds.REPLICA_SET
    watched = (kinds.POD,)

    def sync(self, rs: Obj) -> bool:
        spec = spec_of(rs)
        all_pods = list(self.informer(kinds.POD).values())
        owned = owned_by(all_pods).get(md(rs).get("uid", ""), [])
        # upstream syncReplicaSet: FilterActivePods, then claimPods (adopt matching orphans, release the rest)
        active, wrote = claim(self, rs, (p for p in all_pods if is_active(p)), [p for p in owned if is_active(p)])
        want = int(spec.get("replicas", 1))
        failure: str | None = None
        if len(active) < want:
            for _ in range(want - len(active)):
                pod = pod_from_template(rs, spec.get("template") or {})
                created = self.create(pod, rs)
                if created is None:
                    failure = self.last_create_error
                    break
                active.append(created)
                self.ctx.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {md(created).get('name')}",
                               self.component)
                wrote = True
        elif len(active) > want:
            doomed = sorted(active, key=deletion_order)[:len(active) - want]
            for pod in doomed:
                if self.delete(kinds.POD, pod):
                    self.ctx.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {md(pod).get('name')}",
                                   self.component)
                    wrote = True
            gone = {md(p).get("uid") for p in doomed}
            active = [p for p in active if md(p).get("uid") not in gone]
        status = self._status(rs, active)
        if failure is not None:  # upstream: condition ReplicaFailure, reason FailedCreate, the error
            set_condition(status, "ReplicaFailure", "True", "FailedCreate", failure,
                          format_time(self.ctx.now()), probe=None)
        elif any(c.get("type") == "ReplicaFailure" for c in status.get("conditions") or []):
            status["conditions"] = [c for c in status["conditions"] if c.get("type") != "ReplicaFailure"]
            if not status["conditions"]:
                status.pop("conditions")
        return self.write_status(rs, status) or wrote

    def _status(self, rs: Obj, active: list[Obj]) -> Obj:
        now = self.ctx.now()
        min_ready = int(spec_of(rs).get("minReadySeconds") or 0)
        status = copy.deepcopy(rs.get("status") or {})
        selector = ((spec_of(rs).get("selector") or {}).get("matchLabels") or {})
        counts = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(1 for p in active if all(
                (md(p).get("labels") or {}).get(k) == v for k, v in selector.items())),
            "readyReplicas": sum(1 for p in active if is_ready(p)),
            "availableReplicas": sum(1 for p in active if is_available(p, min_ready, now)),
        }
        for key, value in counts.items():
            if value or key == "replicas":
                status[key] = value
            else:
                status.pop(key, None)
        status["observedGeneration"] = md(rs).get("generation", 1)
        for pod in active:  # look again when a ready pod becomes available
            since = ready_since(pod)
            if since is not None and min_ready and since + timedelta(seconds=min_ready) > now:
                self.wake(rs, since + timedelta(seconds=min_ready))
        return status
