"""Preempt: within one queue, a higher-priority gang evicts lower-priority ones.

Gangs still pending after ``allocate`` and ``reclaim`` go in priority order (then age);
victims are gangs of the same queue whose priority is strictly lower (upstream
DefaultPreemption's ``isPreemptionAllowed``). Queue shares do not move (both sides are one
queue). Victims are found by simulation (``search.py``): room in the node's resources, and
room under inter-pod anti-affinity and topology spread constraints (a pod its own required
anti-affinity forbids, or whose anti-affinity forbids the preemptor, or one too many in a
crowded spread domain), never the preemptor's own required affinity.

A pod without a PodGroup that stays pending although some gang of its queue could be a
victim gets upstream's PostFilter message after the filters' (``FitError.Error()``):
``0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No
preemption victims found for incoming pod.`` (``preemptor.py`` words each node's status).
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
    """Append the PostFilter message to the pod's filter message (``0/N nodes are available: ...``)."""
    for p in g.pending:
        message = session.unschedulable.get(p.key)
        if message is not None and message.startswith("0/"):
            session.unschedulable[p.key] = f"{message} {postfilter}"


def _rule(g: GroupInfo) -> Rule:
    def candidate(v: VictimGang) -> bool:
        return v.queue == g.queue and v.priority < g.priority

    def reason(v: VictimGang) -> str:
        return f"preemption: priority {g.priority} is above the victim's {v.priority} in queue {g.queue}"

    return Rule(PREEMPT, (PREEMPT, g.queue, g.priority), candidate, candidate, reason)
