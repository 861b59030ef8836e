"""Queue usage: what each queue requests and holds, and the ledger that keeps it across cycles.

``requested`` sums the pods that are pending or running; ``allocated`` the pods bound or
running (and those placed but not yet bound: assumed). A parent's numbers include its
children's. A claim shared by several pods of a queue counts once in that queue
(docs/design.md, "Queue status").

The snapshot builder keeps one :class:`UsageLedger` for the life of the scheduler and
changes it pod by pod as the cache changes (what each pod added is remembered, so taking
it out is exact); a cycle works on :meth:`QueueUsage.copy`, so what it tries and rolls back
never reaches the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from drasched.scheduler.queues import QueueTree

REQUESTED = "requested"
ALLOCATED = "allocated"

_RESIDUE = 1e-9
"""Sums are floats; a queue emptied by adding and taking out the same pods can keep a residue
of a few ulps, which would read as usage. Anything this close to zero is zero."""


def _tidy(x: float) -> float:
    return 0.0 if -_RESIDUE < x < _RESIDUE else x


@dataclass
class QueueUsage:
    """Per queue and kind (requested / allocated): sums over its subtree, and claims counted."""

    tree: QueueTree
    sums: dict[str, dict[str, dict[str, float]]] = field(default_factory=lambda: {REQUESTED: {}, ALLOCATED: {}})
    own: dict[str, dict[str, dict[str, float]]] = field(default_factory=lambda: {REQUESTED: {}, ALLOCATED: {}})
    """Per queue and kind: its own pods only (a parent's own pods take part in fair share)."""
    claims: dict[str, dict[str, set[str]]] = field(default_factory=lambda: {REQUESTED: {}, ALLOCATED: {}})
    _shared: set[tuple[str, str]] = field(default_factory=set)
    """(kind, queue) whose claim set is still the one this copy was made from (copied on first write)."""

    def of(self, kind: str, queue: str) -> dict[str, float]:
        return self.sums[kind].get(queue, {})

    def add(self, kind: str, queue: str, demand: Mapping[str, float], sign: float = 1.0) -> None:
        """Add (or with ``sign=-1`` remove) ``demand`` to ``queue`` and every ancestor."""
        if not demand:
            return
        items = [(d, sign * v) for d, v in demand.items()]
        own = self.own[kind].setdefault(queue, {})
        for d, v in items:
            x = own.get(d, 0.0) + v
            own[d] = 0.0 if -_RESIDUE < x < _RESIDUE else x  # _tidy, inlined: this runs per pod
        table = self.sums[kind]
        for q in self.tree.ancestors(queue):
            row = table.setdefault(q, {})
            for d, v in items:
                x = row.get(d, 0.0) + v
                row[d] = 0.0 if -_RESIDUE < x < _RESIDUE else x

    def new_claims(self, kind: str, queue: str, keys: Iterable[str]) -> list[str]:
        """Claims not yet counted for ``queue`` (the caller then marks them with :meth:`mark`)."""
        seen = self.claims[kind].get(queue, set())
        out: list[str] = []
        for k in keys:
            if k not in seen and k not in out:
                out.append(k)
        return out

    def mark(self, kind: str, queue: str, keys: Iterable[str], counted: bool = True) -> None:
        if (kind, queue) in self._shared:
            self._shared.discard((kind, queue))
            self.claims[kind][queue] = set(self.claims[kind][queue])
        seen = self.claims[kind].setdefault(queue, set())
        if counted:
            seen.update(keys)
        else:
            seen.difference_update(keys)

    def copy(self) -> QueueUsage:
        """A copy to change freely: sums copied (one row per queue), claim sets copied on first write."""
        return QueueUsage(
            self.tree,
            {k: {q: dict(row) for q, row in t.items()} for k, t in self.sums.items()},
            {k: {q: dict(row) for q, row in t.items()} for k, t in self.own.items()},
            {k: dict(t) for k, t in self.claims.items()},
            {(k, q) for k, t in self.claims.items() for q in t},
        )


class PodUsage(NamedTuple):
    """What one pod adds to its queue: its own demand for each kind, and its claims (once per queue).
    A named tuple: a full build makes one per pod, and a frozen dataclass costs twice as much to make."""

    queue: str
    kinds: tuple[str, ...]
    demand: Mapping[str, float]
    claims: tuple[str, ...]


_EXACT = 2.0 ** 53
"""A float holds every whole number below this."""


def exact_sums(counted: Iterable[tuple[Mapping[str, float], int]]) -> bool:
    """Whether adding up ``n`` times each of these amounts, in any order and grouping, is exact:
    all whole numbers, and their total size below 2**53 (every partial sum is then a whole
    number a float holds). Then adding an amount once times ``n`` equals adding it ``n`` times."""
    total = 0.0
    for amounts, n in counted:
        for v in amounts.values():
            if not v.is_integer():
                return False
            total += abs(v) * n
    return total < _EXACT


def _sum_into(own: dict[str, dict[str, dict[str, float]]], usage: PodUsage, times: int) -> None:
    """Add ``times`` pods of ``usage`` to ``own`` (queue -> kind -> demand)."""
    of_queue = own.get(usage.queue)
    if of_queue is None:
        of_queue = own[usage.queue] = {}
    for kind in usage.kinds:
        acc = of_queue.get(kind)
        if acc is None:
            acc = of_queue[kind] = {}
        for d, v in usage.demand.items():
            acc[d] = acc.get(d, 0.0) + v * times


class UsageLedger:
    """Queue usage kept pod by pod: :meth:`set_pod` replaces what a pod adds (``None``: nothing).

    A claim adds its devices once per (kind, queue) while any pod of the queue counts it;
    the demand it added is remembered, so it is taken out exactly when its last pod goes.
    """

    def __init__(self, tree: QueueTree) -> None:
        self.usage = QueueUsage(tree)
        self._pods: dict[str, PodUsage] = {}
        self._claim_refs: dict[tuple[str, str], dict[str, tuple[int, Mapping[str, float]]]] = {}
        self._claim_queues: dict[str, set[tuple[str, str]]] = {}
        """Claim key -> the (kind, queue) pairs it is counted in."""

    def retree(self, tree: QueueTree) -> None:
        """A new tree of the same shape (queue names and parents): statuses or settings changed."""
        self.usage.tree = tree

    def set_pod(self, key: str, new: PodUsage | None, claim_demand: Mapping[str, Mapping[str, float]]) -> None:
        """Replace pod ``key``'s contribution; ``claim_demand``: a claim key's device demand."""
        old = self._pods.get(key)
        if old == new:
            return
        if old is not None:
            del self._pods[key]
            for kind in old.kinds:
                self.usage.add(kind, old.queue, old.demand, -1.0)
                for c in old.claims:
                    self._unref(kind, old.queue, c)
        if new is not None:
            self._pods[key] = new
            for kind in new.kinds:
                self.usage.add(kind, new.queue, new.demand)
                for c in new.claims:
                    self._ref(kind, new.queue, c, claim_demand.get(c, {}))

    def fill(self, pods: Iterable[tuple[str, PodUsage]], claim_demand: Mapping[str, Mapping[str, float]]) -> None:
        """What :meth:`set_pod` of each of ``pods`` would give an empty ledger, with each
        queue's sums added once (a full build of a large cluster: one pass, not one per pod)."""
        assert not self._pods, "fill starts from an empty ledger"
        pods = list(pods)
        same: dict[tuple[str, tuple[str, ...], int], list[Any]] = {}
        """(queue, kinds, id() of the demand) -> [a pod's usage with it, how many pods]: pods of
        one template share their demand dict."""
        for key, new in pods:
            self._pods[key] = new
            hit = same.get((new.queue, new.kinds, id(new.demand)))
            if hit is None:
                same[(new.queue, new.kinds, id(new.demand))] = [new, 1]
            else:
                hit[1] += 1
            for kind in new.kinds:
                for c in new.claims:
                    self._ref(kind, new.queue, c, claim_demand.get(c, {}))
        own: dict[str, dict[str, dict[str, float]]] = {}
        """Queue -> kind -> the demand of its pods."""
        if exact_sums((new.demand, n) for new, n in same.values()):
            for new, n in same.values():  # whole numbers: the sums are exact, as pod by pod
                _sum_into(own, new, n)
        else:
            for _, new in pods:
                _sum_into(own, new, 1)
        for queue, kinds in own.items():
            for kind, demand in kinds.items():
                self.usage.add(kind, queue, demand)

    def set_claim(self, claim: str, demand: Mapping[str, float]) -> None:
        """A claim's device demand changed (allocated, or gone): count the new one where it is counted."""
        for kind, queue in self._claim_queues.get(claim, ()):
            refs = self._claim_refs[(kind, queue)]
            count, old = refs[claim]
            if old == demand:
                continue
            self.usage.add(kind, queue, old, -1.0)
            self.usage.add(kind, queue, demand)
            refs[claim] = (count, dict(demand))

    def _ref(self, kind: str, queue: str, claim: str, demand: Mapping[str, float]) -> None:
        refs = self._claim_refs.setdefault((kind, queue), {})
        hit = refs.get(claim)
        if hit is not None:
            refs[claim] = (hit[0] + 1, hit[1])
            return
        refs[claim] = (1, dict(demand))
        self._claim_queues.setdefault(claim, set()).add((kind, queue))
        self.usage.add(kind, queue, demand)
        self.usage.mark(kind, queue, (claim,))

    def _unref(self, kind: str, queue: str, claim: str) -> None:
        refs = self._claim_refs[(kind, queue)]
        count, demand = refs[claim]
        if count > 1:
            refs[claim] = (count - 1, demand)
            return
        del refs[claim]
        where = self._claim_queues[claim]
        where.discard((kind, queue))
        if not where:
            del self._claim_queues[claim]
        self.usage.add(kind, queue, demand, -1.0)
        self.usage.mark(kind, queue, (claim,), counted=False)
