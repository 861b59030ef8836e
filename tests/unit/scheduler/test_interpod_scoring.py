"""Scores of InterPodAffinity and PodTopologySpread, as upstream's scoring.go computes them."""

from __future__ import annotations

from typing import Any

import numpy as np

from drasched.scheduler.plugins.interpod import InterPodAffinity
from drasched.scheduler.plugins.spread import IGNORED, PodTopologySpread
from tests.unit.scheduler.helpers import World, node, placed_nodes, pod

Obj = dict[str, Any]


def _nodes(*names: str) -> list[Obj]:
    return [node(n, cpu="8", labels={"kubernetes.io/hostname": n, "zone": "z-" + n}) for n in names]


def _labelled(name: str, app: str, node_name: str | None = None, **spec: Any) -> Obj:
    p = pod(name, cpu="1", node_name=node_name, **spec)
    p["metadata"]["labels"]["app"] = app
    return p


def _weighted(kind: str, weight: int, app: str) -> Obj:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}},
                                               "topologyKey": "kubernetes.io/hostname"}}]}}


def test_interpod_normalize_is_min_max_truncated() -> None:
    """Upstream interpodaffinity/scoring.go NormalizeScore: 100 * (s - min) / (max - min), as int64."""
    got = InterPodAffinity().normalize(np.array([-100.0, 0.0, 50.0, 200.0]))
    assert got.tolist() == [0.0, 33.0, 50.0, 100.0]
    assert InterPodAffinity().normalize(np.array([7.0, 7.0])).tolist() == [0.0, 0.0]


def test_spread_normalize_prefers_fewer_and_zeroes_ignored_nodes() -> None:
    """Upstream podtopologyspread/scoring.go NormalizeScore: MaxNodeScore * (max + min - s) / max."""
    got = PodTopologySpread().normalize(np.array([1.0, 3.0, IGNORED, 2.0]))
    assert got.tolist() == [100.0, 33.0, 0.0, 66.0]
    assert PodTopologySpread().normalize(np.array([0.0, 0.0])).tolist() == [100.0, 100.0]


def test_a_running_pods_preferred_anti_affinity_pushes_a_matching_pod_away() -> None:
    """The symmetric half (processExistingPod): the running ``lonely`` pod prefers no ``web`` pod
    beside it; a new web pod without terms of its own goes to the other node, which bin-packing
    alone would not choose (``a`` is the fuller)."""
    w = World([*_nodes("a", "b"), _labelled("lonely", "db", "a", affinity=_weighted("podAntiAffinity", 100, "web"))])
    w.store.create(_labelled("web", "web"))
    assert placed_nodes(w.cycle()) == {"web": "b"}


def test_a_running_pods_required_affinity_draws_a_matching_pod() -> None:
    """hardPodAffinityWeight (1): a running pod's required affinity to ``web`` pods scores its
    node for a new web pod."""
    required = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    w = World([*_nodes("a", "b"), _labelled("big", "batch", "a"), _labelled("client", "client", "b",
                                                                              affinity=required)])
    w.store.get  # noqa: B018 - the store holds both running pods
    w.store.create(_labelled("web", "web"))
    assert placed_nodes(w.cycle()) == {"web": "b"}


def test_pods_placed_earlier_in_the_cycle_count() -> None:
    """Three replicas in one cycle, preferring to stay apart: each sees those placed before it."""
    w = World(_nodes("a", "b", "c"))
    for i in range(3):
        w.store.create(_labelled(f"r{i}", "r", affinity=_weighted("podAntiAffinity", 10, "r")))
    assert sorted(placed_nodes(w.cycle()).values()) == ["a", "b", "c"]


def test_disabled_plugin_scores_nothing() -> None:
    from drasched.scheduler.config import SchedulerConfig

    config = SchedulerConfig(disabled_plugins=frozenset({"interPodAffinity"}))
    w = World(_nodes("a", "b", "c"), config=config)
    for i in range(3):
        w.store.create(_labelled(f"r{i}", "r", affinity=_weighted("podAntiAffinity", 10, "r")))
    assert set(placed_nodes(w.cycle()).values()) == {"a"}
