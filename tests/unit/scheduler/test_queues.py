"""Queue specs: hierarchy, per-dimension settings, and bad input turned into conditions."""

from __future__ import annotations

from fractions import Fraction as F

from drasched.api.foreign import translate
from drasched.scheduler.devices import DeviceAccounting
from drasched.scheduler.queues import build_queue_tree, not_a_leaf
from tests.unit.scheduler.helpers import device_class, queue

IMPLICIT = "deviceclass.resource.kubernetes.io/"


def test_defaults_and_default_queue() -> None:
    tree = build_queue_tree([queue("a", resources={"cpu": {"quota": "1500m"}})], lambda r: r)
    a = tree.queues["a"]
    assert a.priority == 100 and a.parent is None and not a.problems
    assert a.resources["cpu"].quota == F(1500)  # millicores
    assert a.resources["cpu"].limit is None and a.resources["cpu"].weight == 1
    assert "default" in tree and tree.queues["default"].obj is None
    assert tree.roots == ["a", "default"]


def test_missing_parent_makes_a_top_level_queue_with_a_problem() -> None:
    tree = build_queue_tree([queue("a", "nope")], lambda r: r)
    assert tree.queues["a"].parent is None
    assert tree.queues["a"].problems == ["parent queue nope does not exist; scheduled as a top-level queue"]


def test_cycles_are_broken_and_reported_on_every_member() -> None:
    tree = build_queue_tree([queue("a", "b"), queue("b", "c"), queue("c", "a"), queue("d", "a")], lambda r: r)
    for q in "abc":
        assert tree.queues[q].parent is None
        assert "parent queues form a cycle (a -> b -> c -> a)" in tree.queues[q].problems[0]
    assert tree.queues["d"].parent == "a" and not tree.queues["d"].problems
    assert tree.ancestors("d") == ["d", "a"]


def test_negative_and_malformed_values_are_ignored() -> None:
    tree = build_queue_tree([queue("a", resources={
        "cpu": {"quota": "-1", "limit": "lots"}, "memory": {"quota": "1Gi", "overQuotaWeight": -2}})], lambda r: r)
    a = tree.queues["a"]
    assert a.resources["cpu"].quota is None and a.resources["cpu"].limit is None
    assert a.resources["memory"].quota == F(1024**3) and a.resources["memory"].weight == 1
    assert len(a.problems) == 3
    assert any("must not be negative" in p for p in a.problems)
    assert any("'lots' is not a quantity" in p for p in a.problems)


def test_aliases_resolve_to_one_dimension_and_the_first_setting_wins() -> None:
    acct = DeviceAccounting([device_class("nv", "gpu.nvidia.com", ext="nvidia.com/gpu"),
                             device_class("fpga", "fpga.example.com", ext="example.com/fpga")])
    tree = build_queue_tree([queue("a", resources={
        IMPLICIT + "nv": {"quota": "3"}, "nvidia.com/gpu": {"quota": "9"},
        "example.com/fpga": {"limit": "2"}})], acct.dim_of)
    a = tree.queues["a"]
    assert a.resources["nvidia.com/gpu"].quota == 3
    assert a.resources[IMPLICIT + "fpga"].limit == 2
    assert a.problems == [f"resources[nvidia.com/gpu] sets dimension nvidia.com/gpu again (already set by "
                          f"{IMPLICIT}nv); the first ({IMPLICIT}nv) is used"]


def test_quota_above_limit_is_reported() -> None:
    tree = build_queue_tree([queue("a", resources={"cpu": {"quota": "4", "limit": "2"}})], lambda r: r)
    assert tree.queues["a"].problems == ["resources[cpu]: quota 4 exceeds limit 2"]


def test_a_kai_parent_queue_takes_no_workloads_and_a_drasched_parent_does() -> None:
    # KAI: pkg/scheduler/actions/utils/jobs_order_by_queues.go, "Skip jobs whose queue is not a leaf queue"
    unlimited = {r: {"limit": -1} for r in ("gpu", "cpu", "memory")}
    kai = translate([{"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name},
                      "spec": {"parentQueue": parent, "resources": unlimited}}
                     for name, parent in (("org", ""), ("team-a", "org"), ("team-b", "org"))]).kept
    tree = build_queue_tree([*kai, queue("ours"), queue("ours-child", "ours")], lambda r: r)
    assert tree.queues["org"].kai and not tree.queues["ours"].kai
    assert not_a_leaf(tree.queues["org"]) == (
        'queue "org" is not a leaf queue (its child queues: team-a, team-b): a KAI queue with child queues takes no '
        "workloads, only its leaf queues do; label the pod with one of them")
    assert not_a_leaf(tree.queues["team-a"]) is None
    assert not_a_leaf(tree.queues["ours"]) is None  # drasched's own parent queue keeps its pods' share
