"""Reclaim: a queue below its fair share takes back what queues above theirs borrowed.

For each gang still pending after ``allocate`` (queues furthest below their fair share
first, then higher priority, then older), whose queue stays within its fair share once the
gang is placed: victims are gangs (or an elastic gang's surplus pods, ``victims.py``, each
weighed by what it alone holds) of other queues (not its ancestors or descendants) that
are above their fair share in a dimension the victim holds, and that stay at or above
their deserved quota without it. Across subtrees the same holds at each level where the
two queues differ: the preemptor's side below its share, the victim's side above its own
and never pushed below its deserved quota. Victims are found by simulation
(``search.py``).
"""

from __future__ import annotations

from fractions import Fraction

from drasched.scheduler.actions.fairness import Fairness
from drasched.scheduler.actions.ordering import share_ratio
from drasched.scheduler.actions.search import Rule, VictimSearch, gang_demand, needed_tasks
from drasched.scheduler.eviction import RECLAIM
from drasched.scheduler.session import Session
from drasched.scheduler.snapshot import GroupInfo
from drasched.scheduler.victims import VictimGang


def reclaim(session: Session, shares: dict[str, dict[str, Fraction]]) -> None:
    snap = session.snap
    fair = Fairness(session, shares)
    pending = [(g, tasks) for g in snap.pending_groups if (tasks := needed_tasks(session, g)) is not None]
    if not pending:
        return
    search = VictimSearch(session)

    def order(item: tuple[GroupInfo, object]) -> tuple[float, int, str, str]:
        g = item[0]
        used = {d: fair.effective(g.queue, d) for d in shares.get(g.queue, {})}
        return (share_ratio(used, shares.get(g.queue, {})), -g.priority, g.created, g.key)

    for g, tasks in sorted(pending, key=order):
        if session.disruption.budget <= 0:
            break
        demand = gang_demand(session, g, tasks)
        if not fair.fits_share(g.queue, demand):
            continue
        search.place(g, tasks, _rule(session, fair, g, demand))


def _rule(session: Session, fair: Fairness, g: GroupInfo, demand: dict[str, float]) -> Rule:
    tree = session.snap.queues
    mine = set(tree.ancestors(g.queue))

    def candidate(v: VictimGang) -> bool:
        return v.queue not in mine and g.queue not in tree.ancestors(v.queue)

    def allowed(v: VictimGang) -> bool:
        theirs = tree.ancestors(v.queue)
        common = mine.intersection(theirs)
        for q in theirs:
            if q in common:
                break
            if fair.over_share(q, v.demand) is None or not fair.keeps_deserved(q, v.demand):
                return False
        return all(fair.below_share(q, demand) for q in tree.ancestors(g.queue)[1:] if q not in common)

    def reason(v: VictimGang) -> str:
        dim = fair.over_share(v.queue, v.demand) or next(iter(sorted(v.demand)), "")
        return (f"reclaim: queue {g.queue} is below its fair share of {dim}, "
                f"queue {v.queue} above its own ({_fmt(fair.share(v.queue, dim))})")

    return Rule(RECLAIM, (RECLAIM, g.queue), candidate, allowed, reason)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.3g}"
