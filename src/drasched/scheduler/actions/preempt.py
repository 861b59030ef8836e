"""Preempt: within one queue, a higher-priority gang evicts lower-priority ones.

Gangs still pending after ``allocate`` and ``reclaim`` go in priority order (then age);
victims are gangs of the same queue whose priority is strictly lower. Queue shares do not
move (both sides are one queue). Victims are found by simulation (``search.py``).
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
        search.place(g, tasks, _rule(g))


def _rule(g: GroupInfo) -> Rule:
    def candidate(v: VictimGang) -> bool:
        return v.queue == g.queue and v.priority < g.priority

    def reason(v: VictimGang) -> str:
        return f"preemption: priority {g.priority} is above the victim's {v.priority} in queue {g.queue}"

    return Rule(PREEMPT, (PREEMPT, g.queue, g.priority), candidate, candidate, reason)
