"""Consolidate: move running pods so that a gang that fits nowhere gets a node.

When a pending gang fits nowhere but would if running pods moved (free room scattered over
nodes: fragmentation), each candidate victim is evicted in the session and its pods are
re-placed on other nodes first; only if they all fit elsewhere does the gang get tried on
the room they left. The moved pods' new places are held in the session (no BindRequest: the
pods that will run there are the replacements their controller creates), so nothing else
takes that room in this cycle.

Only pods their controller recreates can move (every pod of the victim gang has a
controller owner): evicting a bare pod would end it, not move it. Victims have a priority
no higher than the gang's. On by default for every node order, spread included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from drasched.scheduler.accounting import ALLOCATED
from drasched.scheduler.actions.nominated import placed_demand
from drasched.scheduler.actions.search import Rule, VictimSearch, needed_tasks
from drasched.scheduler.eviction import CONSOLIDATE, EvictionState
from drasched.scheduler.session import Session, Statement
from drasched.scheduler.snapshot import GroupInfo
from drasched.scheduler.victims import VictimGang


@dataclass(frozen=True, slots=True)
class HeldForMove:
    """Moved pods' new places held (ghosts), their demand left out of their queue's reported status."""

    state: EvictionState
    moved: tuple[str, ...]
    queue: str
    held: Mapping[str, float]

    def apply(self) -> None:
        self.state.ghosts.update(self.moved)
        self.state.status_delta.add(ALLOCATED, self.queue, self.held, -1.0)

    def revert(self) -> None:
        self.state.ghosts.difference_update(self.moved)
        self.state.status_delta.add(ALLOCATED, self.queue, self.held)


def consolidate(session: Session, shares: dict[str, dict[str, Fraction]]) -> None:
    snap = session.snap
    pending = [(g, tasks) for g in snap.pending_groups if (tasks := needed_tasks(session, g)) is not None]
    if not pending:
        return
    search = VictimSearch(session)
    for g, tasks in sorted(pending, key=lambda item: (-item[0].priority, item[0].created, item[0].key)):
        if session.disruption.budget <= 0:
            break
        search.place(g, tasks, _rule(session, search, g))


def _rule(session: Session, search: VictimSearch, g: GroupInfo) -> Rule:
    def candidate(v: VictimGang) -> bool:
        return v.movable and v.priority <= g.priority

    def move(stmt: Statement, v: VictimGang, j: int) -> bool:
        """Re-place the victim's pods away from node ``j``, holding their room (journaled)."""
        away = np.ones(session.snap.n_nodes, dtype=bool)
        away[j] = False
        for p, _ in v.pods:
            if not search.try_place(stmt, v.group, p, away):
                return False
        moved = [p.key for p, _ in v.pods]
        held = placed_demand(session, [p for p, _ in v.pods])
        session.apply(HeldForMove(session.disruption, tuple(moved), v.queue, held))
        return True

    def allowed(v: VictimGang) -> bool:
        return candidate(v) and v.group is not g  # an elastic gang's own surplus makes it no room

    def reason(v: VictimGang) -> str:
        return f"consolidation: moved off the node so that a gang that fits nowhere else gets it (queue {g.queue})"

    return Rule(CONSOLIDATE, (CONSOLIDATE, g.priority), candidate, allowed, reason, after_evict=move)
