"""A check that a world kept up to date change by change equals one built from scratch.

The test suite turns it on (``DRASCHED_CHECK_SNAPSHOTS``): every scenario, unit and fault
test then also proves that applying the cache's changes in place gives the cycle exactly
what reading the whole cache would. It raises on the first difference, naming it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from drasched.scheduler.groups import GroupInfo
from drasched.scheduler.world import World


class WorldMismatch(AssertionError):
    """The world built change by change differs from the one built from scratch."""


def _group_view(g: GroupInfo) -> tuple[Any, ...]:
    return (g.namespace, g.name, g.obj is not None and g.obj.get("metadata", {}).get("resourceVersion"), g.implicit,
            g.min_member, g.queue, g.priority, g.created, g.required_key, g.preferred_key, g.claim_entries,
            [p.key for p in g.pods], [p.key for p in g.pending], g.placed, g.blocked,
            [p.key for p in g.label_mismatch], g.movable)


def _close(a: dict[str, dict[str, dict[str, float]]], b: dict[str, dict[str, dict[str, float]]]) -> bool:
    for kind in set(a) | set(b):
        ta, tb = a.get(kind, {}), b.get(kind, {})
        for q in set(ta) | set(tb):
            ra, rb = ta.get(q, {}), tb.get(q, {})
            for d in set(ra) | set(rb):
                if abs(ra.get(d, 0.0) - rb.get(d, 0.0)) > 1e-6 * max(1.0, abs(rb.get(d, 0.0))):
                    return False
    return True


def check_same_world(kept: World, fresh: World) -> None:
    """Raise :class:`WorldMismatch` naming the first part where ``kept`` differs from ``fresh``."""
    def differ(what: str, a: object = None, b: object = None) -> None:
        raise WorldMismatch(f"incremental snapshot differs from a full build in {what}: {a!r} != {b!r}")

    if kept.pods.keys() != fresh.pods.keys():
        differ("pods", sorted(kept.pods.keys() ^ fresh.pods.keys()))
    for k, p in kept.pods.items():
        if p.obj is not fresh.pods[k].obj:
            differ(f"pod {k} version")
    if kept.index.names != fresh.index.names:
        differ("resource rows", kept.index.names, fresh.index.names)
    for name in ("alloc", "device_used", "pod_used", "pod_releasing"):
        a, b = getattr(kept, name), getattr(fresh, name)
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-9, atol=1e-6):
            differ(name)
    for name in ("assumed", "counted", "group_of", "assumed_alloc", "assumed_res", "br_allocations", "unbound"):
        if getattr(kept, name) != getattr(fresh, name):
            differ(name, getattr(kept, name), getattr(fresh, name))
    if kept.claims.keys() != fresh.claims.keys():
        differ("claims", sorted(kept.claims.keys() ^ fresh.claims.keys()))
    for k, c in kept.claims.items():
        f = fresh.claims[k]
        if (c.obj is not f.obj or c.allocation != f.allocation or c.reserved_for != f.reserved_for
                or c.demand != f.demand or c.assumed != f.assumed):
            differ(f"claim {k}", (c.allocation, c.reserved_for, c.demand), (f.allocation, f.reserved_for, f.demand))
    if kept.state.devices() != fresh.state.devices():
        differ("devices taken", sorted(kept.state.devices() ^ fresh.state.devices()))
    if kept.owned.keys() != fresh.owned.keys():
        differ("extended-resource claims by owner", sorted(kept.owned), sorted(fresh.owned))
    if kept.stale.keys() != fresh.stale.keys():
        differ("stale BindRequests", sorted(kept.stale), sorted(fresh.stale))
    on_a = {j: s for j, s in kept.on_node.items() if s}
    on_b = {j: s for j, s in fresh.on_node.items() if s}
    if on_a != on_b:
        differ("pods per node")
    table_a, table_b = kept.pod_table, fresh.pod_table  # builds both: kept's then follows each change
    if table_a.entries() != table_b.entries():
        differ("pods by namespace", table_a.entries(), table_b.entries())
    for ns, key in table_a.label_tables():
        table_b.with_label(ns, key, ())
    if table_a.label_tables() != table_b.label_tables():
        differ("pods by label", table_a.label_tables(), table_b.label_tables())
    for key, per_node in table_a.kept_counts().items():
        again = table_a.walk_again(key, len(kept.nodes))
        if not np.array_equal(per_node, again):
            differ(f"kept pod count {key}", per_node.tolist(), again.tolist())
    if kept.groups.keys() != fresh.groups.keys():
        differ("groups", sorted(kept.groups.keys() ^ fresh.groups.keys()))
    for k, g in kept.groups.items():
        if _group_view(g) != _group_view(fresh.groups[k]):
            differ(f"group {k}", _group_view(g), _group_view(fresh.groups[k]))
    for name in ("pending", "mismatched"):
        if getattr(kept, name) != getattr(fresh, name):
            differ(name, sorted(getattr(kept, name)), sorted(getattr(fresh, name)))
    if kept.deleting.keys() != fresh.deleting.keys():
        differ("deleting pods", sorted(kept.deleting), sorted(fresh.deleting))
    pc_a = {k: [(c.entry, c.key, c.group, c.waiting) for c in v] for k, v in kept.pod_claims.items()}
    pc_b = {k: [(c.entry, c.key, c.group, c.waiting) for c in v] for k, v in fresh.pod_claims.items()}
    if pc_a != pc_b:
        differ("pod claims", pc_a, pc_b)
    assert kept.ledger is not None and fresh.ledger is not None
    ua, ub = kept.ledger.usage, fresh.ledger.usage
    if not _close(ua.sums, ub.sums) or not _close(ua.own, ub.own):
        differ("queue usage", ua.sums, ub.sums)
    ca = {k: {q: s for q, s in t.items() if s} for k, t in ua.claims.items()}
    cb = {k: {q: s for q, s in t.items() if s} for k, t in ub.claims.items()}
    if ca != cb:
        differ("claims counted per queue", ca, cb)
