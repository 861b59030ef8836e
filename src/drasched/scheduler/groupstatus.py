"""PodGroup status values: ``phase``, the pod counts and the ``Scheduled`` condition.

Written by the scheduler on drasched's own PodGroups (never on a translated one: an upstream
PodGroup gets kube-scheduler's condition, a KAI PodGroup nothing), only when they change, as
queue statuses are (:mod:`~drasched.scheduler.queuestatus`). Modelled on Volcano's
``PodGroupStatus`` (``scheduling.volcano.sh/v1beta1``: ``phase`` Pending / Running / Completed,
``running`` / ``succeeded`` / ``failed`` counts, conditions with a reason) and on KAI-Scheduler's
unschedulable reasons (``OverLimit``: the gang exceeds its queue's limit):

* ``scheduled``: pods placed (bound, or a BindRequest places them), finished ones included,
  failed ones not: what counts toward ``minMember``; ``running``, ``succeeded``, ``failed``:
  pods in that phase.
* ``phase``: ``Pending`` (fewer than ``minMember`` placed), ``Scheduled`` (``minMember`` placed,
  not yet running), ``Running`` (``minMember`` running or succeeded), ``Completed`` (every pod
  ended, at least ``minMember`` succeeded), ``Failed`` (every pod ended, fewer succeeded).
* condition ``Scheduled``: ``True``/``Scheduled`` once ``minMember`` pods are placed;
  ``False`` with the gang's message while it waits, reason ``Unschedulable``, or ``OverLimit``
  when its ``minMember`` pods alone exceed a queue's limit (it never fits); a gang not tried in
  a cycle keeps the condition it had. ``lastTransitionTime`` moves only when the status does.

Other fields (``resourceClaimStatuses``) and other conditions (``ResourceClaimsValid``) are the
claim controller's and are kept as found.
"""

from __future__ import annotations

from typing import Any

from drasched.scheduler.groups import GroupInfo

Obj = dict[str, Any]

SCHEDULED_CONDITION = "Scheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_OVER_LIMIT = "OverLimit"
REASON_PENDING = "Pending"

FIELDS = ("phase", "scheduled", "running", "succeeded", "failed", "conditions")
"""The status fields the scheduler owns."""


def _phase(g: GroupInfo, scheduled: int, running: int, succeeded: int, failed: int) -> str:
    members = len(g.pods)
    if members and succeeded + failed == members:
        return "Completed" if succeeded >= g.min_member else "Failed"
    if running + succeeded >= g.min_member:
        return "Running"
    if scheduled >= g.min_member:
        return "Scheduled"
    return "Pending"


def _condition(g: GroupInfo, old: Obj | None, scheduled: int, message: str | None, over_limit: bool,
               now: str) -> Obj:
    if scheduled >= g.min_member:
        status, reason, text = "True", REASON_SCHEDULED, f"minMember {g.min_member} pods placed"
    elif message is not None:
        status, reason, text = "False", REASON_OVER_LIMIT if over_limit else REASON_UNSCHEDULABLE, message
    elif old is not None and old.get("status") == "False":
        return old  # not tried in this cycle (parked, or held for a nomination): what it said still holds
    else:
        status, reason = "False", REASON_PENDING
        text = f"{scheduled} of minMember {g.min_member} pods placed"
    since = old.get("lastTransitionTime") if old and old.get("status") == status else now
    return {"type": SCHEDULED_CONDITION, "status": status, "reason": reason, "message": text,
            "lastTransitionTime": since or now}


def pod_group_status(g: GroupInfo, placed_now: int, message: str | None, over_limit: bool, now: str) -> Obj:
    """The status of ``g``'s PodGroup after a cycle that placed ``placed_now`` of its pods and,
    if it did not place the gang, said ``message`` (``over_limit``: the message is that its
    ``minMember`` pods exceed a queue's limit)."""
    running = succeeded = failed = 0
    for p in g.pods:
        if p.phase == "Running":
            running += 1
        elif p.phase == "Succeeded":
            succeeded += 1
        elif p.phase == "Failed":
            failed += 1
    scheduled = g.placed + placed_now
    status: Obj = dict(((g.obj or {}).get("status")) or {})
    conds = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    old = next((c for c in conds if c.get("type") == SCHEDULED_CONDITION), None)
    status.update(phase=_phase(g, scheduled, running, succeeded, failed), scheduled=scheduled, running=running,
                  succeeded=succeeded, failed=failed)
    status["conditions"] = [*(c for c in conds if c.get("type") != SCHEDULED_CONDITION),
                            _condition(g, old, scheduled, message, over_limit, now)]
    return status


def status_changed(pg: Obj, new: Obj) -> bool:
    old = pg.get("status") or {}
    return any(old.get(k) != new.get(k) for k in FIELDS)
