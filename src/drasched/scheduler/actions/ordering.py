"""Which queue goes next: the one furthest below its fair share, level by level.

A queue's share ratio is its dominant one: the largest ``allocated / fairShare`` over the
dimensions it holds. From the top, the child (or a parent's own pods) with the lowest ratio
among those with gangs left is chosen, ties to the higher priority, then the name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from drasched.scheduler.accounting import ALLOCATED, QueueUsage
from drasched.scheduler.constants import PODS
from drasched.scheduler.fairshare import SELF_SUFFIX
from drasched.scheduler.queues import QueueTree


def share_ratio(allocated: Mapping[str, float], share: Mapping[str, Fraction]) -> float:
    ratio = 0.0
    for d, v in allocated.items():
        if d == PODS or v <= 0:
            continue
        f = share.get(d, Fraction(0))
        ratio = max(ratio, v / float(f) if f > 0 else math.inf)
    return ratio


class QueuePicker:
    """Hierarchical deficit order over queues with pending gangs."""

    def __init__(self, tree: QueueTree, usage: QueueUsage, shares: Mapping[str, Mapping[str, Fraction]],
                 pending: Mapping[str, int]) -> None:
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
                options.append((share_ratio(self.usage.of(ALLOCATED, q), self.shares.get(q, {})),
                                -self.tree.queues[q].priority, q, False))
            if own_of is not None and self.own.get(own_of, 0) > 0:
                mine = self.usage.own[ALLOCATED].get(own_of, {})
                options.append((share_ratio(mine, self.shares.get(own_of + SELF_SUFFIX, {})),
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
