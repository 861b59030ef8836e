"""Fair share numbers, each worked out by hand from the rules in ``drasched.scheduler.fairshare``."""

from __future__ import annotations

from fractions import Fraction as F

from drasched.scheduler.fairshare import SELF_SUFFIX, Member, fair_shares, split_level
from drasched.scheduler.queues import DimSettings, build_queue_tree
from tests.unit.scheduler.helpers import queue


def m(name: str, demand: int, quota: int | None = None, limit: int | None = None, weight: float = 1,
      priority: int = 100) -> Member:
    return Member(name, priority, F(demand), DimSettings(None if quota is None else F(quota),
                                                         None if limit is None else F(limit), F(weight)))


def test_deserved_quota_first_then_the_rest_by_weight() -> None:
    # deserved 2 and 2; the 6 left split 1:3 -> 1.5 and 4.5
    assert split_level(F(10), [m("a", 10, quota=2, weight=1), m("b", 10, quota=2, weight=3)]) == [F(7, 2), F(13, 2)]


def test_a_share_never_exceeds_demand_and_the_rest_flows_on() -> None:
    # a can use only 1: water-filling gives b what a cannot take
    assert split_level(F(10), [m("a", 1), m("b", 20)]) == [F(1), F(9)]


def test_limits_are_hard_caps() -> None:
    assert split_level(F(10), [m("a", 10, limit=2, weight=100), m("b", 10)]) == [F(2), F(8)]


def test_unused_capacity_stays_unassigned() -> None:
    assert split_level(F(10), [m("a", 3), m("b", 2)]) == [F(3), F(2)]


def test_priority_before_weight_for_what_is_left() -> None:
    # the higher priority level takes all it can before weights matter
    got = split_level(F(10), [m("a", 8, weight=1, priority=200), m("b", 8, weight=10, priority=100)])
    assert got == [F(8), F(2)]


def test_overcommitted_quotas_split_in_proportion_within_a_priority() -> None:
    # 6 for quotas 4 and 8: 6*4/12 = 2 and 6*8/12 = 4
    assert split_level(F(6), [m("a", 10, quota=4), m("b", 10, quota=8)]) == [F(2), F(4)]


def test_overcommitted_quotas_go_to_the_higher_priority_first() -> None:
    assert split_level(F(6), [m("a", 10, quota=4, priority=200), m("b", 10, quota=8)]) == [F(4), F(2)]


def test_zero_weight_gets_its_quota_and_nothing_more() -> None:
    assert split_level(F(10), [m("a", 10, quota=2, weight=0), m("b", 10)]) == [F(2), F(8)]


def test_quota_above_demand_is_capped_by_demand() -> None:
    assert split_level(F(10), [m("a", 1, quota=5), m("b", 10, quota=1)]) == [F(1), F(9)]


def _tree() -> tuple[object, dict[str, dict[str, F]]]:
    g = "nvidia.com/gpu"
    tree = build_queue_tree([
        queue("research", resources={g: {"quota": "8", "overQuotaWeight": 1}}),
        queue("prod", resources={g: {"quota": "4", "overQuotaWeight": 3}}),
        queue("vision", "research", {g: {"quota": "4"}}),
        queue("nlp", "research", {g: {"quota": "1", "limit": "2"}}),
        queue("team-a", "vision", {g: {"quota": "2", "limit": "3", "overQuotaWeight": 2}}),
        queue("team-b", "vision", {g: {"quota": "2", "overQuotaWeight": 1}}),
    ], lambda r: r)
    demand = {"team-a": {g: F(5)}, "team-b": {g: F(6)}, "nlp": {g: F(3)}, "prod": {g: F(9)}}
    return tree, demand


def test_three_levels() -> None:
    # Level 1 (16): deserved 8 + 4, the 4 left 1:3 -> research 9, prod 7.
    # Level 2 (9): deserved vision 4, nlp 1; nlp's limit lets it take 1 more, vision 3 -> 7 and 2.
    # Level 3 (7): deserved 2 + 2; team-a stops at its limit 3, team-b takes the rest -> 3 and 4.
    tree, demand = _tree()
    shares = fair_shares(tree, {"nvidia.com/gpu": F(16)}, demand)  # type: ignore[arg-type]
    got = {q: shares[q]["nvidia.com/gpu"] for q in ("research", "prod", "vision", "nlp", "team-a", "team-b")}
    assert got == {"research": 9, "prod": 7, "vision": 7, "nlp": 2, "team-a": 3, "team-b": 4}
    assert shares["default"]["nvidia.com/gpu"] == 0


def test_a_parents_own_pods_share_with_its_children() -> None:
    # parent p gets all 10 (only demand); its own pods (demand 4, weight 1, no quota) and child c
    # (demand 10, quota 2) split it: deserved 0 and 2, the 8 left 1:1 -> own 4 (its demand), c 6.
    r = "example.com/fpga"
    tree = build_queue_tree([queue("p"), queue("c", "p", {r: {"quota": "2"}})], lambda r: r)
    shares = fair_shares(tree, {r: F(10)}, {"p": {r: F(4)}, "c": {r: F(10)}})
    assert shares["p"][r] == 10
    assert shares["c"][r] == 6
    assert shares["p" + SELF_SUFFIX][r] == 4


def test_cpu_quotas_are_in_millicores() -> None:
    tree = build_queue_tree([queue("a", resources={"cpu": {"quota": "2"}}), queue("b")], lambda r: r)
    shares = fair_shares(tree, {"cpu": F(10_000)}, {"a": {"cpu": F(10_000)}, "b": {"cpu": F(10_000)}})
    assert shares["a"]["cpu"] == 6000 and shares["b"]["cpu"] == 4000  # 2 cores deserved, then 4 + 4


def test_unlimited_quota_deserves_all_it_asks_within_its_limit() -> None:
    # quota: unlimited (KAI's -1): deserved is the demand (here 6, and 3 under a limit of 3), before weights
    unlimited = Member("a", 100, F(6), DimSettings(unlimited=True))
    assert split_level(F(8), [unlimited, m("b", 8, weight=10)]) == [F(6), F(2)]
    capped = Member("a", 100, F(6), DimSettings(limit=F(3), unlimited=True))
    assert split_level(F(8), [capped, m("b", 8)]) == [F(3), F(5)]


def test_quota_unlimited_is_read_from_a_queue() -> None:
    tree = build_queue_tree([queue("a", resources={"nvidia.com/gpu": {"quota": "unlimited", "limit": "3"}})],
                            lambda r: r)
    settings = tree.queues["a"].settings("nvidia.com/gpu")
    assert (settings.unlimited, settings.quota, settings.limit, tree.queues["a"].problems) == (True, None, F(3), [])
