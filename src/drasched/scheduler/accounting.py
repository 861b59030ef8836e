"""What each queue requests and holds, per accounting dimension (docs/design.md, "Queue status").

``requested`` sums the pods that are pending or running; ``allocated`` the pods bound or
running (and those placed but not yet bound: assumed). A parent's numbers include its
children's. A claim shared by several pods of a queue counts once in that queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.queues import QueueTree
from drasched.scheduler.snapshot import Snapshot

REQUESTED = "requested"
ALLOCATED = "allocated"
_REQUESTED_ONLY = (REQUESTED,)
_BOTH = (REQUESTED, ALLOCATED)


@dataclass
class QueueUsage:
    """Per queue and kind (requested / allocated): sums over its subtree, and claims counted."""

    tree: QueueTree
    sums: dict[str, dict[str, dict[str, float]]] = field(default_factory=lambda: {REQUESTED: {}, ALLOCATED: {}})
    own: dict[str, dict[str, dict[str, float]]] = field(default_factory=lambda: {REQUESTED: {}, ALLOCATED: {}})
    """Per queue and kind: its own pods only (a parent's own pods take part in fair share)."""
    claims: dict[str, dict[str, set[str]]] = field(default_factory=lambda: {REQUESTED: {}, ALLOCATED: {}})

    def of(self, kind: str, queue: str) -> dict[str, float]:
        return self.sums[kind].get(queue, {})

    def add(self, kind: str, queue: str, demand: Mapping[str, float], sign: float = 1.0) -> None:
        """Add (or with ``sign=-1`` remove) ``demand`` to ``queue`` and every ancestor."""
        own = self.own[kind].setdefault(queue, {})
        for d, v in demand.items():
            own[d] = own.get(d, 0.0) + sign * v
        table = self.sums[kind]
        for q in self.tree.ancestors(queue):
            row = table.setdefault(q, {})
            for d, v in demand.items():
                row[d] = row.get(d, 0.0) + sign * v

    def new_claims(self, kind: str, queue: str, keys: Iterable[str]) -> list[str]:
        """Claims not yet counted for ``queue`` (the caller then marks them with :meth:`mark`)."""
        seen = self.claims[kind].get(queue, set())
        out: list[str] = []
        for k in keys:
            if k not in seen and k not in out:
                out.append(k)
        return out

    def mark(self, kind: str, queue: str, keys: Iterable[str], counted: bool = True) -> None:
        seen = self.claims[kind].setdefault(queue, set())
        if counted:
            seen.update(keys)
        else:
            seen.difference_update(keys)


def demand_with_claims(snap: Snapshot, pod: PodInfo, claim_keys: Iterable[str]) -> dict[str, float]:
    """A pod's demand plus the devices of the given claims, in accounting dimensions."""
    out = snap.pod_demand(pod)
    for k in claim_keys:
        info = snap.claims.get(k)
        if info is None:
            continue
        for d, v in info.demand.items():
            out[d] = out.get(d, 0.0) + v
    return out


def pod_claim_keys(snap: Snapshot, pod: PodInfo) -> list[str]:
    return [c.key for c in snap.pod_claims.get(pod.key, []) if c.key]


def initial_usage(snap: Snapshot) -> QueueUsage:
    """Usage from the snapshot: every non-terminal pod of an existing queue."""
    usage = QueueUsage(snap.queues)
    for g in snap.groups.values():
        if g.queue not in snap.queues:
            continue
        for p in g.pods:
            if p.terminal:
                continue
            keys = pod_claim_keys(snap, p)
            kinds = _BOTH if p.node_name or p.key in snap.assumed else _REQUESTED_ONLY
            if not keys:  # most pods: no claim to count once per queue
                demand = snap.pod_demand(p)
                for kind in kinds:
                    usage.add(kind, g.queue, demand)
                continue
            for kind in kinds:
                fresh = usage.new_claims(kind, g.queue, keys)
                usage.add(kind, g.queue, demand_with_claims(snap, p, fresh))
                usage.mark(kind, g.queue, fresh)
    return usage
