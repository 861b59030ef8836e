"""The snapshot builder's pod table follows every pod change, so inter-pod rules read the
cluster as it is without walking every pod each cycle."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.scheduler.podtable import PodTable
from tests.unit.scheduler.helpers import World, node, placed_nodes, pod

Obj = dict[str, Any]

ANTI_WEB = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def _labelled(name: str, app: str, node_name: str | None = None, **spec: Any) -> Obj:
    p = pod(name, cpu="1", node_name=node_name, **spec)
    p["metadata"]["labels"]["app"] = app
    return p


def _relabel(w: World, name: str, app: str) -> None:
    p = w.store.get(kinds.POD, name, "default")
    p["metadata"]["labels"]["app"] = app
    w.store.update(p)


def _nodes() -> list[Obj]:
    return [node(n, cpu="8", labels={"kubernetes.io/hostname": n}) for n in ("a", "b")]


def test_the_table_after_changes_in_place_equals_one_built_afresh() -> None:
    w = World([*_nodes(), _labelled("web-1", "web", "a"), _labelled("web-2", "web", "b"),
               _labelled("db-1", "db", "b")])
    snap = w.snapshot()
    assert snap.pod_table is not None
    assert sorted(snap.pod_table.with_label("default", "app", ["web"])) == ["default/web-1", "default/web-2"]
    full = w.builder.full_builds
    _relabel(w, "web-2", "db")
    w.store.delete(kinds.POD, "web-1", "default", grace_period_seconds=0)
    w.store.create(_labelled("web-3", "web", "b"))
    snap = w.snapshot()
    assert w.builder.full_builds == full  # the world was kept: the table followed the changes
    assert snap.pod_table is not None
    afresh = PodTable(snap.pods, snap.on_node)
    assert sorted(snap.pod_table.with_label("default", "app", ["web"])) == ["default/web-3"]
    assert sorted(snap.pod_table.with_label("default", "app", ["db"])) == ["default/db-1", "default/web-2"]
    assert snap.pod_table.entries() == afresh.entries()
    afresh.with_label("default", "app", ())
    assert snap.pod_table.label_tables() == afresh.label_tables()


def test_anti_affinity_sees_a_relabelled_pod_in_the_next_cycle() -> None:
    """The pod on node a stops being a ``web`` pod: a new web pod with anti-affinity to web pods
    may go there (upstream reads NodeInfo's pods as they are at each cycle)."""
    w = World([*_nodes(), _labelled("web-1", "web", "a"), _labelled("web-2", "web", "b")])
    assert placed_nodes(w.cycle()) == {}
    w.store.create(_labelled("web-new", "web", affinity=ANTI_WEB))
    assert placed_nodes(w.cycle()) == {}  # both nodes hold a web pod
    _relabel(w, "web-1", "retired")
    assert placed_nodes(w.cycle()) == {"web-new": "a"}


def _three_nodes() -> list[Obj]:
    return [node(n, cpu="8", labels={"kubernetes.io/hostname": n}) for n in ("a", "b", "c")]


def _placed(w: World) -> dict[str, str]:
    """A cycle's placements, its BindRequests written (the placed pods count from then on)."""
    result = w.cycle()
    for br in result.bind_requests:
        w.store.create(br)
    return placed_nodes(result)


def _kept_counts_are_fresh(w: World) -> None:
    snap = w.snapshot()
    assert snap.pod_table is not None
    kept = snap.pod_table.kept_counts()
    assert kept  # the cycles asked for counts: they are kept
    for key, per_node in kept.items():
        assert per_node.tolist() == snap.pod_table.walk_again(key, snap.n_nodes).tolist(), key


def test_a_term_counted_in_one_cycle_follows_pod_changes_into_the_next() -> None:
    """The per-node count of a required anti-affinity term is kept by the world after the cycle
    that asked for it; pods relabelled, deleted and added afterwards change it as a count from
    scratch would, and the next pod with the same term is placed by it."""
    w = World([*_three_nodes(), _labelled("web-1", "web", "a"), _labelled("web-2", "web", "b")])
    w.store.create(_labelled("web-new-1", "web", affinity=ANTI_WEB))
    assert _placed(w) == {"web-new-1": "c"}
    _relabel(w, "web-1", "retired")
    w.store.delete(kinds.POD, "web-2", "default", grace_period_seconds=0)
    w.store.create(_labelled("web-3", "web", "b"))
    _kept_counts_are_fresh(w)
    w.store.create(_labelled("web-new-2", "web", affinity=ANTI_WEB))
    assert _placed(w) == {"web-new-2": "a"}  # a: relabelled away; b: web-3; c: web-new-1
    _kept_counts_are_fresh(w)


def test_a_kept_spread_count_drops_a_pod_once_it_starts_terminating() -> None:
    """PodTopologySpread does not count terminating pods (upstream ``countPodsMatchSelector``
    skips pods with a deletionTimestamp): a pod that starts terminating after its count was
    kept leaves it."""
    spread = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    w = World([*_three_nodes(), _labelled("web-1", "web", "a"), _labelled("web-2", "web", "b"),
               _labelled("web-3", "web", "c"), _labelled("web-4", "web", "c")])
    p = w.store.get(kinds.POD, "web-4", "default")
    p["metadata"].setdefault("finalizers", []).append("example.com/hold")
    w.store.update(p)
    w.store.create(_labelled("web-new-1", "web", topologySpreadConstraints=spread))
    placed = _placed(w)
    assert placed["web-new-1"] in ("a", "b")
    w.store.delete(kinds.POD, "web-4", "default")  # held by its finalizer: terminating, still on c
    _kept_counts_are_fresh(w)
    w.store.create(_labelled("web-new-2", "web", topologySpreadConstraints=spread))
    # counted: a 1, b 1, c 1 (web-3; web-4 terminating), plus web-new-1 on a or b
    assert _placed(w)["web-new-2"] in ({"a", "b"} - {placed["web-new-1"]}) | {"c"}
    _kept_counts_are_fresh(w)
