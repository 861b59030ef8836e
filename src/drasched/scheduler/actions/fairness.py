"""Queue fairness as reclaim sees it: effective usage, fair share, deserved quota.

*Effective* usage is the session's allocated usage less what pods already terminating
hold: those are leaving, so they must not make a queue look richer than it is (otherwise
the next cycle would evict again for the same shortfall). Pods nominated in the session
count for their queue. *Deserved* is ``min(quota, requested)`` per dimension: what fair
share gives a queue before anything is split over quota, and the floor reclaim never
pushes a victim queue below.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from drasched.scheduler.accounting import ALLOCATED, REQUESTED, QueueUsage
from drasched.scheduler.constants import PODS
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.release import holdings
from drasched.scheduler.session import Session

EPS = 1e-6


class Fairness:
    """Per cycle; reads the session's usage live, so every eviction and hold is seen at once."""

    def __init__(self, session: Session, shares: Mapping[str, Mapping[str, Fraction]]) -> None:
        self.session = session
        self.shares = shares
        self.leaving = QueueUsage(session.snap.queues)
        snap = session.snap
        by_group: dict[str, list[PodInfo]] = {}
        for p in snap.deleting.values():
            if p.node_name and not p.terminal and p.key in snap.group_of:
                by_group.setdefault(snap.group_of[p.key], []).append(p)
        for gkey in sorted(by_group):
            g = snap.groups[gkey]
            if g.queue in snap.queues:
                going = sorted(by_group[gkey], key=lambda p: (p.created, p.key))  # the group's member order
                self.leaving.add(ALLOCATED, g.queue, holdings(session, going))

    def effective(self, queue: str, dim: str) -> float:
        return self.session.usage.of(ALLOCATED, queue).get(dim, 0.0) - self.leaving.of(ALLOCATED, queue).get(dim, 0.0)

    def share(self, queue: str, dim: str) -> float:
        return float(self.shares.get(queue, {}).get(dim, Fraction(0)))

    def deserved(self, queue: str, dim: str) -> float:
        settings = self.session.snap.queues.queues[queue].settings(dim)
        requested = self.session.usage.of(REQUESTED, queue).get(dim, 0.0)
        if settings.unlimited:  # all it asks, within its limit
            return requested if settings.limit is None else min(float(settings.limit), requested)
        if settings.quota is None:
            return 0.0
        return min(float(settings.quota), requested)

    def fits_share(self, queue: str, demand: Mapping[str, float]) -> bool:
        """``queue`` stays within its fair share with ``demand`` added (every dimension asked)."""
        return all(self.effective(queue, d) + v <= self.share(queue, d) + EPS
                   for d, v in demand.items() if v > 0 and d != PODS)

    def below_share(self, queue: str, demand: Mapping[str, float]) -> bool:
        """Below its fair share in every dimension of ``demand``."""
        return all(self.effective(queue, d) < self.share(queue, d) - EPS
                   for d, v in demand.items() if v > 0 and d != PODS)

    def over_share(self, queue: str, demand: Mapping[str, float]) -> str | None:
        """A dimension of ``demand`` where ``queue`` holds more than its fair share, if any."""
        for d in sorted(demand):
            if demand[d] > 0 and d != PODS and self.effective(queue, d) > self.share(queue, d) + EPS:
                return d
        return None

    def keeps_deserved(self, queue: str, demand: Mapping[str, float]) -> bool:
        """Losing ``demand`` leaves ``queue`` at or above its deserved quota in every dimension."""
        return all(self.effective(queue, d) - v >= self.deserved(queue, d) - EPS
                   for d, v in demand.items() if v > 0 and d != PODS)
