"""Hierarchical fair share, per resource dimension, in exact arithmetic.

At each level of the queue tree, the share of the parent (the cluster's capacity at the top)
is divided among its children in two phases:

1. **deserved**: each child gets ``min(quota, demand, limit)`` (``min(demand, limit)`` with
   ``quota: unlimited``); highest priority first, and if
   a priority level asks more than is left, that level splits what is left in proportion to
   what each child deserves;
2. **over quota**: what is left goes to the highest priority level first, split in proportion
   to ``overQuotaWeight`` by water-filling (a child never gets more than its demand or limit;
   what it cannot take goes to the others), then to the next level down.

Demand is what the queue's subtree requests (pending and running pods), so a share never
exceeds what a queue can use, and what nobody asks for stays unassigned. Limits are hard
caps. A parent with pods of its own splits with them as one more child with no quota and
weight 1. The result is each queue's fair share of every dimension.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from drasched.scheduler.queues import DimSettings, QueueTree

ZERO = Fraction(0)
SELF_SUFFIX = "\x00own-pods"


@dataclass(frozen=True, slots=True)
class Member:
    """One child at one level, for one dimension."""

    name: str
    priority: int
    demand: Fraction
    settings: DimSettings

    @property
    def cap(self) -> Fraction:
        lim = self.settings.limit
        return self.demand if lim is None else min(self.demand, lim)


def _by_priority(members: Sequence[Member]) -> list[list[int]]:
    levels: dict[int, list[int]] = {}
    for i, m in enumerate(members):
        levels.setdefault(m.priority, []).append(i)
    return [levels[p] for p in sorted(levels, reverse=True)]


def _water_fill(amount: Fraction, idx: list[int], room: list[Fraction], weight: list[Fraction],
                given: list[Fraction]) -> Fraction:
    """Give ``amount`` to ``idx`` in proportion to weight, never past ``room``; return what is left."""
    active = [i for i in idx if room[i] > 0 and weight[i] > 0]
    while amount > 0 and active:
        total_w = sum((weight[i] for i in active), ZERO)
        step = min(room[i] / weight[i] for i in active)  # level at which the first child fills up
        if step * total_w >= amount:
            for i in active:
                part = amount * weight[i] / total_w
                given[i] += part
                room[i] -= part
            return ZERO
        for i in active:
            part = step * weight[i]
            given[i] += part
            room[i] -= part
        amount -= step * total_w
        active = [i for i in active if room[i] > 0]
    return amount


def split_level(amount: Fraction, members: Sequence[Member]) -> list[Fraction]:
    """Divide ``amount`` among siblings: deserved quota first, then the rest by priority and weight."""
    given = [ZERO] * len(members)
    left = amount
    levels = _by_priority(members)
    for level in levels:
        deserved = {i: members[i].settings.deserved(members[i].cap) for i in level}
        need = sum(deserved.values(), ZERO)
        if need <= left:
            for i, d in deserved.items():
                given[i] += d
            left -= need
        elif need > 0:
            for i, d in deserved.items():
                given[i] += d * left / need
            left = ZERO
    room = [m.cap - g for m, g in zip(members, given)]
    weight = [m.settings.weight for m in members]
    for level in levels:
        if left <= 0:
            break
        left = _water_fill(left, level, room, weight, given)
    return given


def subtree_demand(tree: QueueTree, own: Mapping[str, Mapping[str, Fraction]], dim: str) -> dict[str, Fraction]:
    """Demand of every queue's subtree (its own pods plus its descendants') for one dimension.

    Children before their parent, with a stack rather than a recursive inner function: such a
    function refers to itself, a reference cycle each call that only the cyclic collector frees."""
    out: dict[str, Fraction] = {}
    stack: list[tuple[str, bool]] = [(r, False) for r in reversed(tree.roots)]
    while stack:
        name, children_done = stack.pop()
        children = tree.queues[name].children
        if children_done:
            total = own.get(name, {}).get(dim, ZERO)
            for c in children:
                total += out[c]
            out[name] = total
            continue
        stack.append((name, True))
        stack.extend((c, False) for c in reversed(children))
    return out


def fair_shares(tree: QueueTree, capacity: Mapping[str, Fraction],
                own_demand: Mapping[str, Mapping[str, Fraction]]) -> dict[str, dict[str, Fraction]]:
    """Fair share of every queue (every level) for every dimension in ``capacity``.

    Keys ending in ``SELF_SUFFIX`` hold the share of a parent's own pods.
    """
    shares: dict[str, dict[str, Fraction]] = {n: {} for n in tree.queues}
    for dim, total in capacity.items():
        demand = subtree_demand(tree, own_demand, dim)
        # each level split among its members, parents before children (a stack: see subtree_demand)
        levels: list[tuple[Fraction, list[str], str | None]] = [(total, list(tree.roots), None)]
        while levels:
            amount, names, own_of = levels.pop()
            members = [Member(n, tree.queues[n].priority, demand[n], tree.queues[n].settings(dim)) for n in names]
            if own_of is not None:
                mine = own_demand.get(own_of, {}).get(dim, ZERO)
                if mine > 0:
                    members.append(Member(own_of + SELF_SUFFIX, tree.queues[own_of].priority, mine, DimSettings()))
            for m, share in zip(members, split_level(amount, members)):
                shares.setdefault(m.name, {})[dim] = share
                if not m.name.endswith(SELF_SUFFIX) and tree.queues[m.name].children:
                    levels.append((share, tree.queues[m.name].children, m.name))
    return shares
