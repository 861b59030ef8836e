"""The structured allocator against upstream semantics (allocator_experimental.go, types.go)."""

from __future__ import annotations

import pytest

from drasched.dra.allocated_state import AllocatedState
from drasched.dra.allocator import Allocator, Features
from drasched.dra.explain import summarize, summarize_nodes
from tests.unit.dra.dra_builders import (
    DRIVER,
    claim,
    device,
    device_class,
    exact,
    first_available,
    gpus,
    names,
    node,
    rslice,
    sub,
)

N1 = node("node-1")


def alloc_for(slices: list, classes: list | None = None, claims_in_use: list | None = None,
              **kw: object) -> Allocator:
    state = AllocatedState.from_claims(claims_in_use or [])
    return Allocator(classes if classes is not None else [device_class()], slices, state, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------- basics


def test_exact_count_first_fit_in_device_order() -> None:
    a = alloc_for([gpus("node-1", 4)])
    out = a.allocate(N1, [claim("c", exact("gpu", count=2))])
    assert out.ok
    assert names(out.allocations[0]) == ["gpu-0", "gpu-1"]
    res = out.allocations[0]["devices"]["results"][0]
    assert res == {"request": "gpu", "driver": DRIVER, "pool": "node-1", "device": "gpu-0"}


def test_default_count_is_one() -> None:
    out = alloc_for([gpus("node-1", 4)]).allocate(N1, [claim("c", exact("gpu"))])
    assert names(out.allocations[0]) == ["gpu-0"]


def test_node_local_devices_pin_the_allocation_to_the_node() -> None:
    out = alloc_for([gpus("node-1", 1)]).allocate(N1, [claim("c", exact("gpu"))])
    assert out.allocations[0]["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}


def test_devices_of_other_nodes_are_not_candidates() -> None:
    out = alloc_for([gpus("node-2", 4)]).allocate(N1, [claim("c", exact("gpu"))])
    assert not out.ok
    assert "not enough gpu.example.com devices" in out.message


def test_not_enough_devices_fails_fast_with_counts() -> None:
    out = alloc_for([gpus("node-1", 2)]).allocate(N1, [claim("c", exact("gpu", count=3))])
    assert not out.ok
    assert out.reasons[0].kind == "insufficient"
    assert out.reasons[0].needed == 3


def test_allocated_devices_are_in_use() -> None:
    taken = claim("old", exact("gpu"), allocation={"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "node-1", "device": "gpu-0"}]}})
    a = alloc_for([gpus("node-1", 2)], claims_in_use=[taken])
    out = a.allocate(N1, [claim("c", exact("gpu"))])
    assert names(out.allocations[0]) == ["gpu-1"]
    out = a.allocate(N1, [claim("c", exact("gpu", count=2))])
    assert not out.ok
    assert "1 in use" in out.message


def test_state_add_and_remove_roll_back_within_a_cycle() -> None:
    a = alloc_for([gpus("node-1", 1)])
    first = a.allocate(N1, [claim("c1", exact("gpu"))])
    assert first.ok
    a.state.add(first.allocations[0])
    assert not a.allocate(N1, [claim("c2", exact("gpu"))]).ok
    a.state.remove(first.allocations[0])
    assert a.allocate(N1, [claim("c2", exact("gpu"))]).ok


def test_two_claims_of_one_pod_do_not_share_a_device() -> None:
    out = alloc_for([gpus("node-1", 2)]).allocate(N1, [claim("a", exact("gpu")), claim("b", exact("gpu"))])
    assert out.ok
    assert names(out.allocations[0]) == ["gpu-0"]
    assert names(out.allocations[1]) == ["gpu-1"]


def test_already_allocated_claim_is_skipped_and_returned_unchanged() -> None:
    existing = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-1",
                                         "device": "gpu-0"}]}}
    shared = claim("shared", exact("gpu"), allocation=existing)
    a = alloc_for([gpus("node-1", 2)], claims_in_use=[shared])
    out = a.allocate(N1, [shared, claim("mine", exact("gpu"))])
    assert out.ok
    assert out.newly_allocated == [False, True]
    assert out.allocations[0] is existing
    assert names(out.allocations[1]) == ["gpu-1"]


def test_allocated_claim_for_another_node_fails() -> None:
    existing = {"devices": {"results": []}, "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}]}}
    out = alloc_for([]).allocate(N1, [claim("c", exact("gpu"), allocation=existing)])
    assert not out.ok
    # upstream dynamicresources.go Filter: "resourceclaim not available on the node"
    assert "resourceclaim not available on the node (claim " in out.message


def test_missing_class_is_a_reason() -> None:
    out = alloc_for([gpus("node-1", 1)], classes=[]).allocate(N1, [claim("c", exact("gpu"))])
    assert not out.ok
    assert out.message == "device class gpu.example.com does not exist"


def test_multiple_requests_in_order() -> None:
    out = alloc_for([gpus("node-1", 3)]).allocate(N1, [claim("c", exact("a", count=2), exact("b"))])
    assert [(r["request"], r["device"]) for r in out.allocations[0]["devices"]["results"]] == [
        ("a", "gpu-0"), ("a", "gpu-1"), ("b", "gpu-2")]


def test_requests_competing_for_the_same_devices() -> None:
    out = alloc_for([gpus("node-1", 3)]).allocate(N1, [claim("c", exact("a", count=2), exact("b", count=2))])
    assert not out.ok
    assert out.reasons


# ---------------------------------------------------------------- All


def test_all_takes_every_matching_device() -> None:
    out = alloc_for([gpus("node-1", 3)]).allocate(N1, [claim("c", exact("gpu", mode="All"))])
    assert names(out.allocations[0]) == ["gpu-0", "gpu-1", "gpu-2"]


def test_all_fails_without_devices() -> None:
    out = alloc_for([]).allocate(N1, [claim("c", exact("gpu", mode="All"))])
    assert not out.ok


def test_all_fails_when_one_device_is_in_use() -> None:
    taken = claim("old", exact("gpu"), allocation={"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "node-1", "device": "gpu-1"}]}})
    out = alloc_for([gpus("node-1", 3)], claims_in_use=[taken]).allocate(N1, [claim("c", exact("gpu", mode="All"))])
    assert not out.ok
    assert "1 in use" in out.message


def test_all_fails_on_incomplete_pool() -> None:
    s = gpus("node-1", 2, count=2)
    out = alloc_for([s]).allocate(N1, [claim("c", exact("gpu", mode="All"))])
    assert not out.ok
    assert "incomplete" in out.message
    # ExactCount skips incomplete pools instead.
    out = alloc_for([s, gpus("node-1", 1, prefix="other", pool="p2")]).allocate(N1, [claim("c", exact("gpu"))])
    assert names(out.allocations[0]) == ["other-0"]


# ---------------------------------------------------------------- pools


def test_only_highest_generation_counts() -> None:
    old = rslice("old", [device("gpu-old")], node_name="node-1", generation=1)
    new = rslice("new", [device("gpu-new")], node_name="node-1", generation=2)
    out = alloc_for([old, new]).allocate(N1, [claim("c", exact("gpu"))])
    assert names(out.allocations[0]) == ["gpu-new"]


def test_invalid_pool_duplicate_device_names_across_slices() -> None:
    s1 = rslice("s1", [device("gpu-0")], node_name="node-1", pool="p", count=2)
    s2 = rslice("s2", [device("gpu-0")], node_name="node-1", pool="p", count=2)
    out = alloc_for([s1, s2]).allocate(N1, [claim("c", exact("gpu"))])
    assert not out.ok
    assert "duplicate device name gpu-0" in out.message


def test_pools_sorted_by_driver_and_name_binding_conditions_last() -> None:
    bc = rslice("a", [device("bc", bindingConditions=["ready"])], node_name="node-1", pool="a-pool")
    plain = rslice("b", [device("plain")], node_name="node-1", pool="b-pool")
    out = alloc_for([bc, plain]).allocate(N1, [claim("c", exact("gpu"))])
    assert names(out.allocations[0]) == ["plain"]
    out = alloc_for([bc]).allocate(N1, [claim("c", exact("gpu"))])
    res = out.allocations[0]["devices"]["results"][0]
    assert res["bindingConditions"] == ["ready"]


def test_all_nodes_slice_has_no_node_selector() -> None:
    s = rslice("net", [device("nic-0")], pool="fabric", allNodes=True)
    out = alloc_for([s]).allocate(N1, [claim("c", exact("gpu"))])
    assert out.ok
    assert "nodeSelector" not in out.allocations[0]


def test_node_selector_slice_is_copied_into_the_allocation() -> None:
    sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    s = rslice("rack", [device("switch-0")], pool="rack-1", nodeSelector=sel)
    out = alloc_for([s]).allocate(node("node-1", {"rack": "r1"}), [claim("c", exact("gpu"))])
    assert out.allocations[0]["nodeSelector"] == sel
    assert not alloc_for([s]).allocate(node("node-1", {"rack": "r2"}), [claim("c", exact("gpu"))]).ok


def test_binds_to_node_pins_the_node() -> None:
    s = rslice("net", [device("nic-0", bindsToNode=True)], pool="fabric", allNodes=True)
    out = alloc_for([s]).allocate(N1, [claim("c", exact("gpu"))])
    assert "node-1" in str(out.allocations[0]["nodeSelector"])


# ---------------------------------------------------------------- firstAvailable


def test_first_available_prefers_earlier_subrequests() -> None:
    c = claim("c", first_available("gpu", sub("big", count=4), sub("small", count=2)))
    out = alloc_for([gpus("node-1", 4)]).allocate(N1, [c])
    assert {r["request"] for r in out.allocations[0]["devices"]["results"]} == {"gpu/big"}
    out = alloc_for([gpus("node-1", 3)]).allocate(N1, [c])
    assert [r["request"] for r in out.allocations[0]["devices"]["results"]] == ["gpu/small", "gpu/small"]


# ---------------------------------------------------------------- admin access


def test_admin_access_needs_the_namespace_label() -> None:
    c = claim("c", exact("gpu", adminAccess=True))
    a = alloc_for([gpus("node-1", 1)])
    out = a.allocate(N1, [c], {})
    assert not out.ok
    assert "admin access" in out.message
    out = a.allocate(N1, [c], {"resource.kubernetes.io/admin-access": "true"})
    assert out.ok
    assert out.allocations[0]["devices"]["results"][0]["adminAccess"] is True


def test_admin_access_uses_devices_in_use_and_does_not_take_them() -> None:
    taken = claim("old", exact("gpu"), allocation={"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "node-1", "device": "gpu-0"}]}})
    a = alloc_for([gpus("node-1", 1)], claims_in_use=[taken])
    out = a.allocate(N1, [claim("c", exact("gpu", adminAccess=True))], {"resource.kubernetes.io/admin-access": "true"})
    assert out.ok
    a.state.remove(taken["status"]["allocation"])
    a.state.add(out.allocations[0])
    assert a.allocate(N1, [claim("d", exact("gpu"))]).ok


def test_admin_access_feature_off_fails_the_pod() -> None:
    out = alloc_for([gpus("node-1", 1)], features=Features(admin_access=False)).allocate(
        N1, [claim("c", exact("gpu", adminAccess=True))], {"resource.kubernetes.io/admin-access": "true"})
    assert out.pod_error and "feature is disabled" in out.pod_error


# ---------------------------------------------------------------- taints


def tainted_slice(effect: str) -> object:
    return rslice("s", [device("bad", taints=[{"key": "broken", "value": "yes", "effect": effect}]),
                        device("good")], node_name="node-1")


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_tainted_devices_are_skipped(effect: str) -> None:
    out = alloc_for([tainted_slice(effect)]).allocate(N1, [claim("c", exact("gpu"))])
    assert names(out.allocations[0]) == ["good"]
    out = alloc_for([tainted_slice(effect)]).allocate(N1, [claim("c", exact("gpu", count=2))])
    assert not out.ok
    assert "1 tainted" in out.message and "broken=yes:" + effect in out.message


def test_none_effect_taints_are_informational() -> None:
    out = alloc_for([tainted_slice("None")]).allocate(N1, [claim("c", exact("gpu", count=2))])
    assert out.ok


@pytest.mark.parametrize("tol", [
    {"key": "broken", "operator": "Exists"},
    {"key": "broken", "value": "yes"},
    {"key": "broken", "operator": "Equal", "value": "yes", "effect": "NoSchedule"},
    {"operator": "Exists"},
])
def test_tolerations_allow_tainted_devices(tol: dict) -> None:
    out = alloc_for([tainted_slice("NoSchedule")]).allocate(N1, [claim("c", exact("gpu", count=2, tolerations=[tol]))])
    assert out.ok
    assert out.allocations[0]["devices"]["results"][0]["tolerations"] == [tol]


@pytest.mark.parametrize("tol", [
    {"key": "broken", "value": "no"},
    {"key": "other", "operator": "Exists"},
    {"key": "broken", "operator": "Exists", "effect": "NoExecute"},
])
def test_non_matching_tolerations(tol: dict) -> None:
    out = alloc_for([tainted_slice("NoSchedule")]).allocate(N1, [claim("c", exact("gpu", count=2, tolerations=[tol]))])
    assert not out.ok


def test_taints_ignored_when_feature_off() -> None:
    out = alloc_for([tainted_slice("NoSchedule")], features=Features(device_taints=False)).allocate(
        N1, [claim("c", exact("gpu", count=2))])
    assert out.ok


# ---------------------------------------------------------------- partitionable devices


def partitioned(node_name: str = "node-1", memory: str = "40Gi") -> list:
    counters = rslice(f"{node_name}-counters", [], node_name=node_name, pool=node_name, count=2,
                      sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": memory}}}])
    devs = [device("gpu-0-full", consumesCounters=[{"counterSet": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}])]
    devs += [device(f"gpu-0-mig-{i}", consumesCounters=[{"counterSet": "gpu-0",
                                                         "counters": {"memory": {"value": "10Gi"}}}])
             for i in range(4)]
    return [counters, rslice(f"{node_name}-devices", devs, node_name=node_name, pool=node_name, count=2)]


def test_shared_counters_bound_partitions() -> None:
    a = alloc_for(partitioned())
    out = a.allocate(N1, [claim("c", exact("gpu", count=4))])
    # The full device uses all memory: no partition fits next to it; backtracking finds 4 partitions.
    assert names(out.allocations[0]) == [f"gpu-0-mig-{i}" for i in range(4)]
    out = a.allocate(N1, [claim("c", exact("gpu", count=5))])
    assert not out.ok


def test_counters_consumed_by_allocated_devices() -> None:
    taken = claim("old", exact("gpu"), allocation={"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "node-1", "device": "gpu-0-mig-0"}]}})
    a = alloc_for(partitioned(), claims_in_use=[taken])
    out = a.allocate(N1, [claim("c", exact("gpu"))])
    assert names(out.allocations[0]) == ["gpu-0-mig-1"]
    out = a.allocate(N1, [claim("c", exact("gpu", count=4))])
    assert not out.ok
    assert "counters exhausted" in out.message and "counter set gpu-0" in out.message


def test_unknown_counter_set_makes_the_pool_invalid() -> None:
    s = rslice("s", [device("d", consumesCounters=[{"counterSet": "nope", "counters": {"x": {"value": "1"}}}])],
               node_name="node-1")
    out = alloc_for([s]).allocate(N1, [claim("c", exact("gpu"))])
    assert not out.ok
    assert "counter set nope not found" in out.message


def test_per_device_node_selection() -> None:
    s = rslice("s", [device("a", nodeName="node-1"), device("b", nodeName="node-2"), device("all", allNodes=True)],
               pool="p", perDeviceNodeSelection=True)
    out = alloc_for([s]).allocate(node("node-2"), [claim("c", exact("gpu", count=2))])
    assert names(out.allocations[0]) == ["b", "all"]
    assert "node-2" in str(out.allocations[0]["nodeSelector"])
    out = alloc_for([s]).allocate(N1, [claim("c", exact("gpu", mode="All"))])
    assert names(out.allocations[0]) == ["a", "all"]


# ---------------------------------------------------------------- consumable capacity


def shared_nic(policy: dict | None = None) -> object:
    cap: dict = {"value": "10G"}
    if policy:
        cap["requestPolicy"] = policy
    return rslice("nics", [device("nic-0", capacity={"bandwidth": cap}, allowMultipleAllocations=True)],
                  node_name="node-1")


def test_multi_allocation_device_shared_by_capacity() -> None:
    a = alloc_for([shared_nic()])
    c = claim("c", exact("nic", capacity={"requests": {"bandwidth": "4G"}}))
    out = a.allocate(N1, [c])
    res = out.allocations[0]["devices"]["results"][0]
    assert res["consumedCapacity"] == {"bandwidth": "4G"}
    assert res["shareID"]
    a.state.add(out.allocations[0])
    out2 = a.allocate(N1, [claim("d", exact("nic", capacity={"requests": {"bandwidth": "4G"}}))])
    assert out2.ok
    assert out2.allocations[0]["devices"]["results"][0]["shareID"] != res["shareID"]
    a.state.add(out2.allocations[0])
    out3 = a.allocate(N1, [claim("e", exact("nic", capacity={"requests": {"bandwidth": "4G"}}))])
    assert not out3.ok
    assert "capacity exhausted" in out3.message


def test_no_capacity_request_consumes_everything_without_policy() -> None:
    a = alloc_for([shared_nic()])
    out = a.allocate(N1, [claim("c", exact("nic"))])
    assert out.allocations[0]["devices"]["results"][0]["consumedCapacity"] == {"bandwidth": "10G"}


def test_request_policy_default_and_valid_range_step() -> None:
    policy = {"default": "1G", "validRange": {"min": "1G", "max": "8G", "step": "1G"}}
    a = alloc_for([shared_nic(policy)])
    out = a.allocate(N1, [claim("c", exact("nic"))])
    assert out.allocations[0]["devices"]["results"][0]["consumedCapacity"] == {"bandwidth": "1G"}
    out = a.allocate(N1, [claim("c", exact("nic", capacity={"requests": {"bandwidth": "2500M"}}))])
    assert out.allocations[0]["devices"]["results"][0]["consumedCapacity"] == {"bandwidth": "3G"}
    out = a.allocate(N1, [claim("c", exact("nic", capacity={"requests": {"bandwidth": "9G"}}))])
    assert not out.ok


def test_request_policy_valid_values_round_up() -> None:
    policy = {"default": "1G", "validValues": ["1G", "5G", "10G"]}
    a = alloc_for([shared_nic(policy)])
    out = a.allocate(N1, [claim("c", exact("nic", capacity={"requests": {"bandwidth": "2G"}}))])
    assert out.allocations[0]["devices"]["results"][0]["consumedCapacity"] == {"bandwidth": "5G"}


def test_capacity_request_for_unknown_capacity_skips_the_device() -> None:
    out = alloc_for([shared_nic()]).allocate(N1, [claim("c", exact("nic", capacity={"requests": {"iops": "1"}}))])
    assert not out.ok
    assert "1 lack a requested capacity, 0 free" in out.message


def test_capacity_request_filters_exclusive_devices() -> None:
    s = rslice("s", [device("small", capacity={"memory": "8Gi"}), device("big", capacity={"memory": "80Gi"})],
               node_name="node-1")
    out = alloc_for([s]).allocate(N1, [claim("c", exact("gpu", capacity={"requests": {"memory": "40Gi"}}))])
    assert names(out.allocations[0]) == ["big"]
    assert "shareID" not in out.allocations[0]["devices"]["results"][0]


# ---------------------------------------------------------------- limits and time


def test_more_than_32_devices_per_claim_is_refused() -> None:
    out = alloc_for([gpus("node-1", 40)]).allocate(N1, [claim("c", exact("gpu", count=33))])
    assert not out.ok
    assert "exceeds the claim limit of 32" in out.message
    assert alloc_for([gpus("node-1", 40)]).allocate(N1, [claim("c", exact("gpu", count=32))]).ok


def test_first_available_falls_back_below_the_32_limit() -> None:
    c = claim("c", exact("a", count=20), first_available("b", sub("many", count=20), sub("few", count=4)))
    out = alloc_for([gpus("node-1", 64)]).allocate(N1, [c])
    assert out.ok
    assert {r["request"] for r in out.allocations[0]["devices"]["results"]} == {"a", "b/few"}


def test_distinct_attribute_with_too_few_values_fails_without_search() -> None:
    s = gpus("node-1", 40, attrs=lambda i: {"color": f"c{i % 7}"})
    c = claim("c", exact("gpu", count=8), constraints=[{"distinctAttribute": f"{DRIVER}/color"}])
    a = alloc_for([s])
    out = a.allocate(N1, [c])
    assert not out.ok
    assert a.stats["search_steps"] <= 1
    assert "constraint unmet: distinctAttribute gpu.example.com/color" in out.message


def _numa_colors(i: int) -> dict:
    # Each NUMA node has 7 colors, the node 8: counting cannot see that 8 distinct colors on
    # one NUMA node do not exist, so a search for 8 runs until its budget is spent.
    numa = i % 2
    return {"numa": numa, "color": f"c{(i // 2) % 7 + numa}"}


HOPELESS = claim("c", exact("gpu", count=8), constraints=[
    {"distinctAttribute": f"{DRIVER}/color"}, {"matchAttribute": f"{DRIVER}/numa"}])


def test_step_budget_ends_a_hopeless_search() -> None:
    a = alloc_for([gpus("node-1", 64, attrs=_numa_colors)], step_budget=3000)
    out = a.allocate(N1, [HOPELESS])
    assert not out.ok
    assert out.reasons[0].kind == "timed-out"
    assert out.message == "allocation search gave up (after 3000 search steps)"
    assert a.stats["search_steps"] == 3001 and a.stats["timeouts"] == 1


def test_step_budget_gives_the_same_answer_whatever_the_clock() -> None:
    # A generous wall-clock limit changes nothing: the steps decide, not the machine's speed.
    answers = []
    for limit in (None, 3600.0):
        a = alloc_for([gpus("node-1", 64, attrs=_numa_colors)], step_budget=2000, wall_time_limit=limit)
        out = a.allocate(N1, [HOPELESS])
        answers.append((out.ok, out.message, a.stats["search_steps"]))
    assert answers[0] == answers[1] == (False, "allocation search gave up (after 2000 search steps)", 2001)


def test_wall_time_limit_is_optional_and_stops_the_search() -> None:
    a = alloc_for([gpus("node-1", 64, attrs=_numa_colors)], step_budget=10**9, wall_time_limit=0.0)
    out = a.allocate(N1, [HOPELESS])
    assert out.message.startswith("allocation search gave up (after 1024 search steps, at the wall-clock limit")


def test_a_claim_that_cannot_be_met_alone_fails_the_pod_without_joint_search() -> None:
    # Upstream's search would backtrack through all C(48, 20) choices of the first claim.
    first = claim("first", exact("gpu", count=20))
    second = claim("second", exact("gpu", count=20), constraints=[{"matchAttribute": f"{DRIVER}/nope"}])
    a = alloc_for([gpus("node-1", 48)])
    out = a.allocate(N1, [first, second])
    assert not out.ok
    assert out.message == "constraint unmet: matchAttribute gpu.example.com/nope"
    assert a.stats["search_steps"] == 0


def test_thirty_two_unmeetable_constraints_fail_at_once() -> None:
    first = claim("first", exact("gpu", count=20))
    second = claim("second", exact("gpu", count=20),
                   constraints=[{"matchAttribute": f"{DRIVER}/nope{i}"} for i in range(32)])
    a = alloc_for([gpus("node-1", 48)])
    out = a.allocate(N1, [first, second])
    assert not out.ok and out.reasons[0].kind == "constraint"
    assert a.stats["search_steps"] == 0


def test_match_attribute_with_no_common_value_across_requests_fails_without_search() -> None:
    s = gpus("node-1", 8, attrs=lambda i: {"numa": i % 2, "kind": "a" if i < 4 else "b"})
    c = claim("c", exact("a", count=1, selectors=[f'device.attributes["{DRIVER}"].kind == "a" && '
                                                 f'device.attributes["{DRIVER}"].numa == 0']),
              exact("b", count=1, selectors=[f'device.attributes["{DRIVER}"].numa == 1']),
              constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
    a = alloc_for([s])
    out = a.allocate(N1, [c])
    assert not out.ok and out.reasons[0].kind == "constraint"
    assert a.stats["search_steps"] == 0


def test_a_claim_failing_alone_after_a_search_names_only_itself() -> None:
    # Counting cannot see this one (8 distinct colors exist, but not on one NUMA node): the
    # claim's own search fails, and the pod fails without trying the first claim's choices.
    first = claim("first", exact("gpu", count=4))
    second = claim("second", exact("gpu", count=8), constraints=[
        {"distinctAttribute": f"{DRIVER}/color"}, {"matchAttribute": f"{DRIVER}/numa"}])
    s = gpus("node-1", 16, attrs=_numa_colors)
    a = alloc_for([s])
    out = a.allocate(N1, [first, second])
    assert not out.ok
    assert out.reasons[0].kind == "constraint" and out.reasons[0].claim == "default/second"


# ---------------------------------------------------------------- config


def test_config_naming_every_request_is_written_for_all_but_subrequests_of_one_are_not() -> None:
    """kubernetes/kubernetes#139803 (fixed for 1.37): a config covering every request of the
    claim, by name or by the chosen subrequest, is written with ``requests`` empty; one that
    names two subrequests of one request keeps its scope, though it has as many names as the
    claim has requests."""
    first_choice = {"name": "x", "firstAvailable": [{"name": "a", "deviceClassName": DRIVER},
                                                    {"name": "b", "deviceClassName": DRIVER}]}
    params = {"driver": DRIVER, "parameters": {}}
    c = claim("c", first_choice, exact("y"), config=[
        {"requests": ["x/a", "x/b"], "opaque": params},
        {"requests": ["x/a", "y"], "opaque": params},
        {"requests": ["x", "y"], "opaque": params},
    ])
    out = alloc_for([gpus("node-1", 2)]).allocate(N1, [c])
    assert out.ok
    assert [e.get("requests") for e in out.allocations[0]["devices"]["config"]] == [["x/a", "x/b"], None, None]


def test_config_from_class_then_claim_with_request_scoping() -> None:
    opaque = {"driver": DRIVER, "parameters": {"a": 1}}
    cls = device_class(DRIVER, config=[{"opaque": opaque}])
    c = claim("c", exact("x"), exact("y"), config=[
        {"opaque": {"driver": DRIVER, "parameters": {"all": True}}},
        {"requests": ["y"], "opaque": {"driver": DRIVER, "parameters": {"y": True}}},
        {"requests": ["z"], "opaque": {"driver": DRIVER, "parameters": {"z": True}}},
    ])
    out = alloc_for([gpus("node-1", 2)], classes=[cls]).allocate(N1, [c])
    # the class config covers both requests: written with requests empty (upstream since 1.37)
    assert out.allocations[0]["devices"]["config"] == [
        {"opaque": opaque, "source": "FromClass"},
        {"opaque": {"driver": DRIVER, "parameters": {"all": True}}, "source": "FromClaim"},
        {"requests": ["y"], "opaque": {"driver": DRIVER, "parameters": {"y": True}}, "source": "FromClaim"},
    ]


def test_reasons_from_two_nodes_merge_without_summing() -> None:
    a = alloc_for([gpus("node-1", 1), gpus("node-2", 1)], claims_in_use=[claim(
        "old", exact("gpu"), allocation={"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": "node-2", "device": "gpu-0"}]}})])
    r1 = a.allocate(N1, [claim("c", exact("gpu", count=2))]).reasons
    r2 = a.allocate(node("node-2"), [claim("c", exact("gpu", count=2))]).reasons
    assert summarize(r1) == "not enough gpu.example.com devices: 1 free, need 2"
    assert summarize_nodes([(1, r1), (1, r2)]) == [
        (2, "not enough gpu.example.com devices: on each node up to 1 in use, at most 1 free, need 2")]


def test_first_available_subrequests_count_each_device_once() -> None:
    # One node, its 2 GPUs taken; three subrequests all fail on the same 2 devices.
    held = claim("old", exact("gpu", count=2), allocation={"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "node-1", "device": f"gpu-{i}"} for i in range(2)]}})
    subs = {"name": "gpu", "firstAvailable": [{"name": f"s{i}", "deviceClassName": DRIVER, "count": i + 1}
                                              for i in range(3)]}
    out = alloc_for([gpus("node-1", 2)], claims_in_use=[held]).allocate(N1, [claim("c", subs)])
    assert not out.ok and len(out.reasons) == 3
    assert out.message == "not enough gpu.example.com devices: 2 in use, 0 free, need 1"


# ---------------------------------------------------------------- memo and errors


def test_failure_memo_follows_pool_versions_and_claim_names() -> None:
    a = alloc_for([gpus("node-1", 1)])
    first = a.allocate(N1, [claim("c1", exact("gpu"))])
    a.state.add(first.allocations[0])
    out = a.allocate(N1, [claim("c2", exact("gpu"))])
    again = a.allocate(N1, [claim("c3", exact("gpu"))])
    assert not out.ok and not again.ok
    assert [r.claim for r in again.reasons] == ["default/c3"]
    a.state.remove(first.allocations[0])  # the pool changed: the memo must not answer
    assert a.allocate(N1, [claim("c4", exact("gpu"))]).ok


def test_cel_runtime_error_fails_the_pod_not_just_the_node() -> None:
    c = claim("c", exact("gpu", selectors=[f'device.attributes["{DRIVER}"].missing == 1']))
    out = alloc_for([gpus("node-1", 1)]).allocate(N1, [c])
    assert not out.ok
    assert out.pod_error is not None
    assert out.pod_error.startswith("claim default/c, request gpu: selector #0: CEL runtime error")


def test_cel_error_on_device_in_use_is_not_reached() -> None:
    # Upstream checks "in use" before evaluating selectors: the broken device is never evaluated.
    s = rslice("s", [device("odd"), device("good", {"model": "a100"})], node_name="node-1")
    taken = claim("old", exact("gpu"), allocation={"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "node-1", "device": "odd"}]}})
    c = claim("c", exact("gpu", selectors=[f'device.attributes["{DRIVER}"].model == "a100"']))
    out = alloc_for([s], claims_in_use=[taken]).allocate(N1, [c])
    assert out.ok
    assert names(out.allocations[0]) == ["good"]


def test_class_selectors_with_cel() -> None:
    cls = device_class(DRIVER, f'device.driver == "{DRIVER}"')
    s = [gpus("node-1", 2), rslice("nic", [device("nic-0")], node_name="node-1", pool="nics", driver="nic.example.com")]
    out = alloc_for(s, classes=[cls]).allocate(N1, [claim("c", exact("gpu", count=3))])
    assert not out.ok
    assert out.message == "not enough gpu.example.com devices: 1 failed class selector, 2 free, need 3"


def test_all_with_partitionable_counters() -> None:
    # All takes every matching device together: two 40Gi partitions of one 40Gi GPU cannot both be taken.
    counters = rslice("c", [], node_name="node-1", pool="node-1", count=2,
                      sharedCounters=[{"name": "g", "counters": {"memory": {"value": "40Gi"}}}])
    devs = rslice("d", [device(f"half-{i}", consumesCounters=[{"counterSet": "g", "counters": {
        "memory": {"value": "20Gi"}}}]) for i in range(3)], node_name="node-1", pool="node-1", count=2)
    out = alloc_for([counters, devs]).allocate(N1, [claim("c", exact("gpu", mode="All"))])
    assert not out.ok
    assert "counters exhausted" in out.message


def test_results_are_deterministic() -> None:
    s = gpus("node-1", 16, attrs=lambda i: {"numa": i % 4})
    c = claim("c", exact("a", count=2), exact("b", count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
    first = alloc_for([s]).allocate(N1, [c]).allocations
    for _ in range(3):
        assert alloc_for([s]).allocate(N1, [c]).allocations == first
    assert names(first[0]) == ["gpu-0", "gpu-4", "gpu-8", "gpu-12"]


def test_only_serve_adds_a_wall_clock_to_the_step_budget() -> None:
    from drasched.scheduler.controller import SchedulerController
    from drasched.serve.main import ALLOCATION_WALL_TIME, build_controllers

    (served,) = [c for c in build_controllers() if isinstance(c, SchedulerController)]
    assert served.builder.allocation_wall_time == ALLOCATION_WALL_TIME == 10.0
    assert SchedulerController().builder.allocation_wall_time is None  # embedded: steps alone


def test_joint_search_that_does_not_settle_tries_each_claim_alone() -> None:
    # Counting cannot see that the second claim is hopeless (8 distinct colors exist, but
    # never 8 on one NUMA node); jointly, every choice of the first claim's 20 devices would be
    # tried under it. After a short probe each claim is searched alone, and the second fails.
    first = claim("first", exact("gpu", count=20))
    second = claim("second", exact("gpu", count=8), constraints=[
        {"distinctAttribute": f"{DRIVER}/color"}, {"matchAttribute": f"{DRIVER}/numa"}])
    a = alloc_for([gpus("node-1", 48, attrs=_numa_colors)], step_budget=100_000)
    out = a.allocate(N1, [first, second])
    assert not out.ok
    assert [(r.kind, r.claim) for r in out.reasons] == [("constraint", "default/second")]
    assert a.stats["timeouts"] == 0 and a.stats["search_steps"] < 100_000
