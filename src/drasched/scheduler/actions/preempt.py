"""Preempt: within one queue, a higher-priority gang evicts lower-priority ones.

Gangs still pending after ``allocate`` and ``reclaim`` go in priority order (then age);
victims are gangs of the same queue whose priority is strictly lower (upstream
DefaultPreemption's ``isPreemptionAllowed``). Queue shares do not move (both sides are one
queue). Victims are found by simulation (``search.py``): room in the node's resources, and
room under inter-pod anti-affinity and topology spread constraints (a pod its own required
anti-affinity forbids, or whose anti-affinity forbids the preemptor, or one too many in a
crowded spread domain), never the preemptor's own required affinity.

A pod without a PodGroup that stays pending although some gang of its queue could be a
victim gets upstream's PostFilter messages after the filters' (``FitError.Error()``):
``0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3
nodes are available: 3 No preemption victims found for incoming pod.`` (DynamicResources'
status, then DefaultPreemption's; ``preemptor.py`` words each node's status).
"""

from __future__ import annotations

from fractions import Fraction

from drasched.scheduler.actions.search import Rule, VictimSearch, needed_tasks
from drasched.scheduler.eviction import PREEMPT
from drasched.scheduler.session import Session
from drasched.scheduler.snapshot import GroupInfo
from drasched.scheduler.victims import VictimGang


def preempt(session: Session, shares: dict[str, dict[str, Fraction]]) -> None:
    snap = session.snap
    pending = [(g, tasks) for g in snap.pending_groups if (tasks := needed_tasks(session, g)) is not None]
    if not pending:
        return
    search = VictimSearch(session)
    for g, tasks in sorted(pending, key=lambda item: (-item[0].priority, item[0].created, item[0].key)):
        if session.disruption.budget <= 0:
            break
        if not search.place(g, tasks, _rule(g)) and g.implicit and search.postfilter is not None:
            _explain(session, g, search.postfilter.message())


def _explain(session: Session, g: GroupInfo, postfilter: str) -> None:
    """Append the PostFilter messages to the pod's filter message (``0/N nodes are available:
    ...``): DynamicResources' status first (it runs before DefaultPreemption), then preemption's,
    joined by ", " as ``RunPostFilterPlugins`` joins the rejecting plugins' reasons."""
    for p in g.pending:
        message = session.unschedulable.get(p.key)
        if message is not None and message.startswith("0/"):
            dra = dra_postfilter_status(session, p.key)
            session.unschedulable[p.key] = f"{message} {dra}, {postfilter}" if dra else f"{message} {postfilter}"


def dra_postfilter_status(session: Session, pod_key: str) -> str | None:
    """What upstream's DynamicResources PostFilter says when it deallocates nothing: "no new
    claims to deallocate" for a pod without claims, "still not schedulable" for one with
    (dynamicresources.go ``PostFilter``); None with the plugin disabled. A claim it does
    deallocate replaces this with ``cycle.DEALLOCATED``."""
    if session.profile.claim_allocation is None:
        return None
    return STILL_UNSCHEDULABLE if pod_key in session.dra_pods else NO_CLAIMS_TO_DEALLOCATE


NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
STILL_UNSCHEDULABLE = "still not schedulable"


def _rule(g: GroupInfo) -> Rule:
    def candidate(v: VictimGang) -> bool:
        return v.queue == g.queue and v.priority < g.priority

    def reason(v: VictimGang) -> str:
        return f"preemption: priority {g.priority} is above the victim's {v.priority} in queue {g.queue}"

    return Rule(PREEMPT, (PREEMPT, g.queue, g.priority), candidate, candidate, reason)
