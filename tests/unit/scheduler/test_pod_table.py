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
