"""The preference scorers: preferred node affinity and PreferNoSchedule taints, as upstream scores them.

Upstream: ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`` (Score: the sum of
the weights of the matching preferred terms; NormalizeScore: ``DefaultNormalizeScore``, not
reversed), ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`` (Score: the
node's PreferNoSchedule taints the pod does not tolerate; NormalizeScore reversed),
``pkg/scheduler/framework/plugins/helper/normalize_score.go`` and the default weights of
``pkg/scheduler/apis/config/v1/default_plugins.go`` (NodeAffinity 2, TaintToleration 3).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from drasched.scheduler.config import config_from_dict
from drasched.scheduler.framework.api import PodState, default_normalize
from drasched.scheduler.framework.profile import Profile, default_profile
from drasched.scheduler.framework.registry import BUILTINS
from drasched.scheduler.plugins.predicates import (
    NodeAffinity,
    NodeVectors,
    TaintToleration,
    intolerable_counts,
    prefer_no_schedule_taints,
    prefer_no_schedule_tolerations,
    preferred_affinity_scores,
    preferred_terms,
)
from drasched.scheduler.podinfo import parse_node, parse_pod
from drasched.scheduler.session import Session
from tests.unit.scheduler.helpers import World, node, placed_nodes, pod

Obj = dict[str, Any]
PREFER = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}


def preferring(*terms: tuple[int, Obj]) -> Obj:
    """``affinity`` with preferred node-affinity terms: (weight, preference)."""
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": p} for w, p in terms]}}


def label_in(key: str, *values: str) -> Obj:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def config(**plugins: Obj) -> Any:
    return config_from_dict({"schedulerNames": [], "plugins": plugins})


def placed(objs: list[Obj], cfg: Any = None) -> dict[str, str]:
    return placed_nodes(World(objs, cfg).cycle())


# ---------------------------------------------------------------------- helper.DefaultNormalizeScore


@pytest.mark.parametrize(("scores", "reverse", "expected"), [
    ([0, 5, 10], False, [0, 50, 100]),
    ([0, 5, 10], True, [100, 50, 0]),
    ([1, 2, 3], False, [33, 66, 100]),  # int64 division, as upstream
    ([0, 1, 100, 201], False, [0, 0, 49, 100]),  # 100*1/201 truncates to 0: a tie upstream too
    ([0, 0], False, [0, 0]),
    ([0, 0], True, [100, 100]),  # maxCount 0, reversed: every node gets MaxNodeScore
    ([], False, []),
])
def test_default_normalize_is_upstream_default_normalize_score(scores: list[int], reverse: bool,
                                                               expected: list[int]) -> None:
    out = default_normalize(np.array(scores, dtype=np.int64), reverse)
    assert out.tolist() == expected


# ---------------------------------------------------------------------- node_affinity.go Score


def test_node_affinity_score_sums_the_weights_of_matching_terms_node_affinity_go() -> None:
    nodes = [parse_node(node(n, labels), i) for i, (n, labels) in enumerate([
        ("a", {"gpu-type": "a100", "zone": "z1"}), ("b", {"gpu-type": "a100"}), ("c", {"gpu-type": "h100"}),
        ("d", {"zone": "z1", "rank": "7"})])]
    terms = preferring(
        (80, label_in("gpu-type", "a100")),
        (15, {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}),
        (4, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}),
        (1, {"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["5"]}]}),
        (2, {"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["a100"]},
                                  {"key": "zone", "operator": "Exists"}]}),  # requirements ANDed
        (7, {"matchExpressions": [{"key": "gpu-type", "operator": "NotIn", "values": ["a100"]},
                                  {"key": "rank", "operator": "DoesNotExist"}]}),
    )["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred_affinity_scores(nodes, terms).tolist() == [97, 80, 11, 16]


def test_terms_with_weight_zero_or_an_empty_preference_never_score() -> None:
    # upstream nodeaffinity.NewPreferredSchedulingTerms skips them
    p = pod("p", cpu="1", affinity=preferring((0, label_in("a", "b")), (5, {}), (5, {"matchExpressions": []}),
                                              (3, label_in("x", "y"))))
    terms = preferred_terms(parse_pod("default/p", p, {}))
    assert [t["weight"] for t in terms] == [3]
    assert preferred_terms(parse_pod("default/q", pod("q", cpu="1"), {})) == []


# ---------------------------------------------------------------------- taint_toleration.go Score


def test_taint_score_counts_prefer_no_schedule_taints_not_tolerated_taint_toleration_go() -> None:
    other = {"key": "old", "value": "", "effect": "PreferNoSchedule"}
    hard = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    nodes = [parse_node(node(n, taints=t), i) for i, (n, t) in enumerate([
        ("a", [PREFER, other]), ("b", [PREFER]), ("c", [hard]), ("d", None)])]
    tainted = prefer_no_schedule_taints(nodes)
    assert [j for j, _ in tainted] == [0, 1]  # NoSchedule taints are the filter's
    assert intolerable_counts(4, tainted, []).tolist() == [2, 1, 0, 0]
    # getAllTolerationPreferNoSchedule: effect PreferNoSchedule or empty; a NoSchedule one is left out
    tols = prefer_no_schedule_tolerations([
        {"key": "spot", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "old", "operator": "Exists"}])
    assert tols == [{"key": "old", "operator": "Exists"}]
    assert intolerable_counts(4, tainted, tols).tolist() == [1, 1, 0, 0]
    everything = prefer_no_schedule_tolerations([{"operator": "Exists", "effect": "PreferNoSchedule"}])
    assert intolerable_counts(4, tainted, everything).tolist() == [0, 0, 0, 0]


# ---------------------------------------------------------------------- in a cycle


def test_a_preferred_node_wins_over_the_fuller_node_binpack_prefers() -> None:
    objs = [node("a", {"gpu-type": "h100"}, gpu=8), node("b", {"gpu-type": "a100"}, gpu=8),
            pod("old", gpu=6, node_name="a", phase="Running"),
            pod("p", gpu=1, affinity=preferring((50, label_in("gpu-type", "a100"))))]
    assert placed(objs) == {"p": "b"}
    assert placed(objs, config(nodeAffinity={"weight": 0})) == {"p": "a"}  # weight 0: binpack alone
    assert placed(objs, config(nodeAffinity={"enabled": False})) == {"p": "a"}


def test_the_heavier_preferred_term_wins() -> None:
    nodes = [node("a", {"disk": "ssd"}), node("b", {"gpu-type": "a100"})]
    a100, ssd = label_in("gpu-type", "a100"), label_in("disk", "ssd")
    light_on_b = pod("p", cpu="1", affinity=preferring((10, a100), (60, ssd)))
    heavy_on_b = pod("p", cpu="1", affinity=preferring((60, a100), (10, ssd)))
    assert placed([*nodes, light_on_b]) == {"p": "a"}
    assert placed([*nodes, heavy_on_b]) == {"p": "b"}


def test_a_prefer_no_schedule_node_is_avoided_while_a_clean_one_fits() -> None:
    objs = [node("a", cpu="8", taints=[PREFER]), node("b", cpu="8"),
            pod("old", cpu="6", node_name="a", phase="Running"), pod("p", cpu="2")]
    assert placed(objs) == {"p": "b"}  # binpack alone would take a, the fuller
    assert placed(objs, config(taintToleration={"weight": 0})) == {"p": "a"}
    assert placed(objs, config(taintToleration={"enabled": False})) == {"p": "a"}
    tolerant = pod("p", cpu="2", tolerations=[{"key": "spot", "operator": "Exists"}])
    assert placed([*objs[:3], tolerant]) == {"p": "a"}  # tolerated: the nodes are equal again
    big = pod("p", cpu="7")
    assert placed([node("a", cpu="8", taints=[PREFER]), node("b", cpu="4"), big]) == {"p": "a"}  # the only fit


def test_weights_are_configurable_and_default_to_upstreams() -> None:
    assert (BUILTINS["nodeAffinity"].weight, BUILTINS["taintToleration"].weight) == (2, 3)
    profile = Profile.from_config(config(nodeAffinity={"weight": 7}, taintToleration={"enabled": False}))
    weights = {s.name: s.weight for s in profile.scorers}
    assert weights["nodeAffinity"] == 7 and weights["nodeOrder"] == 1 and "taintToleration" not in weights
    # a preferred node that is also PreferNoSchedule-tainted: 2 x 100 < 3 x 100 by default
    objs = [node("a", {"gpu-type": "a100"}, taints=[PREFER]), node("b"),
            pod("p", cpu="1", affinity=preferring((1, label_in("gpu-type", "a100"))))]
    assert placed(objs) == {"p": "b"}
    assert placed(objs, config(nodeAffinity={"weight": 4})) == {"p": "a"}


# ---------------------------------------------------------------------- cost and memo keys


def _state(w: World, name: str) -> tuple[Session, PodState]:
    session = w.session()
    return session, PodState(session, session.snap.pods[f"default/{name}"], [], [], None, [])


def test_a_pod_without_preferences_skips_both_scorers() -> None:
    """The profile's single-scorer path stays: neither preference scorer has anything to say."""
    w = World([node("a", taints=[{"key": "k", "value": "", "effect": "NoSchedule"}]), node("b"),
               pod("p", cpu="1")])
    _, state = _state(w, "p")
    profile = default_profile()
    everyone = np.arange(2)
    affinity, taints = profile.by_name["nodeAffinity"], profile.by_name["taintToleration"]
    assert isinstance(affinity, NodeAffinity) and isinstance(taints, TaintToleration)
    assert affinity.skips(state, everyone) and taints.skips(state, everyone)


def test_a_scorer_skips_where_the_candidates_score_alike() -> None:
    w = World([node("a", {"x": "1"}, taints=[PREFER]), node("b", {"x": "1"}), node("c"),
               pod("p", cpu="1", affinity=preferring((5, label_in("x", "1"))))])
    _, state = _state(w, "p")
    affinity, taints = NodeAffinity(), TaintToleration()
    assert affinity.skips(state, np.array([0, 1])) and not affinity.skips(state, np.array([1, 2]))
    assert affinity.score(state, np.array([1, 2])).tolist() == [5, 0]
    assert taints.skips(state, np.array([1, 2])) and not taints.skips(state, np.array([0, 1]))
    assert taints.score(state, np.array([0, 1])).tolist() == [1, 0]


def test_vectors_are_computed_once_per_node_list_and_signature() -> None:
    calls: list[int] = []

    def build(nodes: Any, _: Any) -> np.ndarray:
        calls.append(len(nodes))
        return np.ones(len(nodes), dtype=np.int64)

    memo = NodeVectors()
    nodes = [parse_node(node("a"), 0)]
    for _ in range(3):
        memo.vector(nodes, "k", build)
    memo.vector(nodes, "other", build)
    assert calls == [1, 1]
    memo.vector([*nodes, parse_node(node("b"), 1)], "k", build)  # a new list: the nodes changed
    assert calls == [1, 1, 2]


def test_a_lone_preference_scorer_orders_by_normalised_scores() -> None:
    """With nodeOrder off, nodeAffinity alone still normalises (integer division: 1/201 ties with 0)."""
    objs = [node("a"), node("b", {"w": "1"}), node("c", {"w": "1", "x": "1", "y": "1"}),
            pod("p", cpu="1", affinity=preferring((1, label_in("w", "1")), (100, label_in("x", "1")),
                                                  (100, label_in("y", "1"))))]
    w = World(objs, config(nodeOrder={"enabled": False}))
    session, state = _state(w, "p")
    assert session.profile.order(state, np.arange(3)).tolist() == [2, 0, 1]  # a and b tie at 0: name order


def test_preferred_terms_enter_the_eq_key_not_the_static_key() -> None:
    keys = default_profile().pod_keys
    a = parse_pod("d/a", pod("a", cpu="1", affinity=preferring((5, label_in("x", "1")))), {}, keys)
    b = parse_pod("d/b", pod("b", cpu="1", affinity=preferring((6, label_in("x", "1")))), {}, keys)
    c = parse_pod("d/c", pod("c", cpu="1"), {}, keys)
    assert a.static_key == b.static_key == c.static_key
    assert len({a.eq_key, b.eq_key, c.eq_key}) == 3
    off = Profile.from_config(config(nodeAffinity={"enabled": False})).pod_keys
    assert parse_pod("d/a", a.obj, {}, off).eq_key == parse_pod("d/c", c.obj, {}, off).eq_key
