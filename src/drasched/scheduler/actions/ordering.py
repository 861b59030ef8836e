"""Which queue goes next: the one furthest below its fair share, level by level.

A queue's share ratio is its dominant one: the largest ``allocated / fairShare`` over the
dimensions it holds. From the top, the child (or a parent's own pods) with the lowest ratio
among those with gangs left is chosen, ties to the higher priority, then the name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction

from drasched.scheduler.accounting import ALLOCATED, QueueUsage
from drasched.scheduler.fairshare import SELF_SUFFIX
from drasched.scheduler.plugins.fairshare import share_ratio
from drasched.scheduler.queues import QueueTree

Ratio = Callable[[Mapping[str, float], Mapping[str, Fraction]], float]

__all__ = ["QueuePicker", "share_ratio"]


def _no_ratio(allocated: Mapping[str, float], share: Mapping[str, Fraction]) -> float:
    return 0.0


class QueuePicker:
    """Hierarchical deficit order over queues with pending gangs."""

    def __init__(self, tree: QueueTree, usage: QueueUsage, shares: Mapping[str, Mapping[str, Fraction]],
                 pending: Mapping[str, int], ratio: Ratio | None = share_ratio) -> None:
        """``ratio``: the queue order plugin's (``None``: none enabled, priority then name)."""
        self.ratio = ratio or _no_ratio
        self.tree = tree
        self.usage = usage
        self.shares = shares
        self.own = dict(pending)
        self.sub: dict[str, int] = {}
        for name in tree.queues:
            n = self.own.get(name, 0)
            if n:
                for q in tree.ancestors(name):
                    self.sub[q] = self.sub.get(q, 0) + n

    def taken(self, queue: str) -> None:
        """One gang of ``queue`` was tried."""
        self.own[queue] -= 1
        for q in self.tree.ancestors(queue):
            self.sub[q] -= 1

    def next(self) -> str | None:
        level = [q for q in self.tree.roots if self.sub.get(q, 0) > 0]
        own_of: str | None = None
        while True:
            options: list[tuple[float, int, str, bool]] = []
            for q in level:
                options.append((self.ratio(self.usage.of(ALLOCATED, q), self.shares.get(q, {})),
                                -self.tree.queues[q].priority, q, False))
            if own_of is not None and self.own.get(own_of, 0) > 0:
                mine = self.usage.own[ALLOCATED].get(own_of, {})
                options.append((self.ratio(mine, self.shares.get(own_of + SELF_SUFFIX, {})),
                                -self.tree.queues[own_of].priority, own_of, True))
            if not options:
                return None
            _, _, chosen, is_own = min(options)
            if is_own:
                return chosen
            children = [c for c in self.tree.queues[chosen].children if self.sub.get(c, 0) > 0]
            if not children:
                return chosen
            level, own_of = children, chosen
