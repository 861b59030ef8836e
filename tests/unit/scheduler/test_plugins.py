"""Predicates, vector fit, node order and topology domains, one node list at a time."""

from __future__ import annotations

from collections import Counter

import numpy as np

from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.framework.profile import Profile
from drasched.scheduler.messages import Diagnosis
from drasched.scheduler.plugins.fit import RowNeed, class_reasons, fit_mask, fit_reasons
from drasched.scheduler.plugins.nodeorder import order_nodes
from drasched.scheduler.plugins.predicates import static_filter, tolerates, untolerated_taint
from drasched.scheduler.plugins.topology import domains, order_domains
from drasched.scheduler.podinfo import parse_node, parse_pod
from tests.unit.scheduler.helpers import node, pod

TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}


def _filters(config: SchedulerConfig) -> list:
    return Profile.from_config(config).static_filters


def _nodes(*objs: dict) -> list:
    return [parse_node(o, i) for i, o in enumerate(objs)]


def test_toleration_matching_follows_upstream() -> None:
    assert tolerates({"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, TAINT)
    assert tolerates({"key": "gpu", "operator": "Exists"}, TAINT)
    assert tolerates({"operator": "Exists"}, TAINT)  # empty key + Exists tolerates everything
    assert not tolerates({"key": "gpu", "value": "false"}, TAINT)
    assert not tolerates({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}, TAINT)
    soft = {"key": "x", "effect": "PreferNoSchedule"}
    assert untolerated_taint([soft, TAINT], []) is TAINT
    assert untolerated_taint([soft], []) is None


def test_static_filter_reasons_per_node() -> None:
    nodes = _nodes(node("cordoned", {"pool": "gpu"}, unschedulable=True),
                   node("tainted", {"pool": "gpu"}, taints=[TAINT]),
                   node("other", {"pool": "cpu"}), node("ok", {"pool": "gpu", "zone": "z1"}))
    p = parse_pod("default/p", pod("p", nodeSelector={"pool": "gpu"}), {})
    res = static_filter(nodes, p, _filters(SchedulerConfig()))
    assert list(res.ok) == [False, False, False, True]
    assert res.reasons == ["node(s) were unschedulable", "node(s) had untolerated taint {gpu: true}",
                           "node(s) didn't match Pod's node affinity/selector", None]


def test_required_node_affinity_and_disabled_plugins() -> None:
    nodes = _nodes(node("a", {"zone": "z1"}), node("b", {"zone": "z2"}), node("c", {}, taints=[TAINT]))
    aff = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]}]}}}}
    p = parse_pod("default/p", pod("p", **aff), {})
    assert list(static_filter(nodes, p, _filters(SchedulerConfig())).ok) == [False, True, False]
    lenient = SchedulerConfig(disabled_plugins=frozenset({"nodeAffinity", "taintToleration"}))
    assert list(static_filter(nodes, p, _filters(lenient)).ok) == [True, True, True]


def test_fit_compares_only_requested_rows_and_counts_reasons() -> None:
    idle = np.array([[4000.0, 1000.0, 8000.0], [5.0, 5.0, 0.0], [1.0, 2.0, 2.0]])
    needs = [RowNeed(0, "cpu", 2000.0), RowNeed(2, "pods", 1.0)]
    base = np.array([True, True, True])
    assert list(fit_mask(idle, needs, base)) == [True, False, True]
    counts: Counter[str] = Counter()
    failing = fit_reasons(idle, [RowNeed(0, "cpu", 2000.0), RowNeed(1, "nvidia.com/gpu", 1.0)], base, counts)
    assert list(failing) == [False, True, True]
    assert counts == {"Insufficient cpu": 1, "Insufficient nvidia.com/gpu": 1}


def test_class_reasons_keep_each_nodes_numbers_in_the_allocators_words() -> None:
    # Nodes with the same numbers share a reason; numbers are never summed over nodes.
    idle = np.array([[0.0, 1.0, 3.0, 1.0]])
    used = np.array([[4.0, 3.0, 1.0, 3.0]])
    nodes, reasons = class_reasons(idle, used, [("gpu.example.com", RowNeed(0, "x", 2.0))], np.ones(4, dtype=bool))
    assert nodes == 3
    assert sorted((r.nodes, r.message) for r in reasons) == [
        (1, "not enough gpu.example.com devices: 4 in use, 0 free, need 2"),
        (2, "not enough gpu.example.com devices: 3 in use, 1 free, need 2")]
    d = Diagnosis(4)
    d.add_dra(nodes, reasons)
    assert d.message() == ("0/4 nodes are available: 3 not enough gpu.example.com devices: "
                           "on each node up to 4 in use, at most 1 free, need 2.")


def test_binpack_prefers_the_fullest_node_and_spread_the_emptiest() -> None:
    alloc = np.array([[8.0, 8.0, 8.0, 4.0]])
    used = np.array([[2.0, 6.0, 0.0, 2.0]])
    needs = [RowNeed(0, "nvidia.com/gpu", 1.0)]
    cands = np.array([0, 1, 2, 3])
    assert list(order_nodes(alloc, used, needs, cands, "binpack", {})) == [1, 3, 0, 2]
    assert list(order_nodes(alloc, used, needs, cands, "spread", {})) == [2, 0, 3, 1]


def test_ties_keep_node_order() -> None:
    alloc = np.array([[8.0, 8.0, 8.0]])
    used = np.zeros((1, 3))
    cands = np.array([0, 1, 2])
    for strategy in ("binpack", "spread"):
        assert list(order_nodes(alloc, used, [RowNeed(0, "x", 1.0)], cands, strategy, {})) == [0, 1, 2]


def test_domains_and_their_order() -> None:
    nodes = _nodes(node("a1", {"z": "a"}), node("a2", {"z": "a"}), node("b1", {"z": "b"}), node("b2", {"z": "b"}),
                   node("c1", {"z": "c"}), node("none"))
    doms = domains(nodes, "z")
    assert [(d.value, list(d.nodes)) for d in doms] == [("a", [0, 1]), ("b", [2, 3]), ("c", [4])]
    alloc = np.full((1, 6), 4.0)
    idle = np.array([[4.0, 4.0, 1.0, 2.0, 2.0, 4.0]])
    # need 3: c (1 node) has 2 -> out; a and b have 2 nodes; b (3 free) is tighter than a (8 free)
    assert [d.value for d in order_domains(doms, idle, alloc, {0: 3.0})] == ["b", "a"]
    # need 2: c fits and is smallest
    assert [d.value for d in order_domains(doms, idle, alloc, {0: 2.0})] == ["c", "b", "a"]
