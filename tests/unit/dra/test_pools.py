"""Pool gathering (pools_experimental.go): generations, completeness, validity, node access."""

from __future__ import annotations

from fractions import Fraction

from drasched.dra.allocated_state import AllocatedState
from drasched.dra.nodes import node_selector_matches
from drasched.dra.pools import PoolIndex, format_quantity, qvalue
from tests.unit.dra.dra_builders import DRIVER, device, node, rslice


def pool(slices: list, name: str = "p"):  # type: ignore[no-untyped-def]
    return PoolIndex(slices).pools[(DRIVER, name)]


def test_highest_generation_only() -> None:
    p = pool([rslice("a", [device("old")], node_name="n", pool="p", generation=1),
              rslice("b", [device("new")], node_name="n", pool="p", generation=3)])
    assert p.generation == 3
    assert [d.name for d in p.devices] == ["new"]
    assert p.usable


def test_incomplete_and_invalid_reasons() -> None:
    assert pool([rslice("a", [device("x")], node_name="n", pool="p", count=2)]).incomplete_reason == (
        "has 1 of 2 slices of generation 1")
    mismatch = pool([rslice("a", [device("x")], node_name="n", pool="p", count=2),
                     rslice("b", [device("y")], node_name="n", pool="p", count=3)])
    assert mismatch.invalid_reason and "disagree on resourceSliceCount" in mismatch.invalid_reason
    dup = pool([rslice("a", [device("x")], node_name="n", pool="p", count=2),
                rslice("b", [device("x")], node_name="n", pool="p", count=2)])
    assert dup.invalid_reason == "duplicate device name x"


def test_counter_sets_are_pool_wide() -> None:
    p = pool([
        rslice("c", [], node_name="n", pool="p", count=2,
               sharedCounters=[{"name": "s", "counters": {"mem": {"value": "4Gi"}}}]),
        rslice("d", [device("x", consumesCounters=[{"counterSet": "s", "counters": {"mem": {"value": "1Gi"}}}])],
               node_name="n", pool="p", count=2),
    ])
    assert p.usable
    assert p.counter_sets == {"s": {"mem": Fraction(4 * 2**30)}}
    assert p.devices[0].consumes == [("s", {"mem": Fraction(2**30)})]


def test_for_node_orders_pools_and_filters_access() -> None:
    idx = PoolIndex([
        rslice("z", [device("z0")], node_name="n1", pool="z"),
        rslice("a", [device("a0")], node_name="n1", pool="a"),
        rslice("other", [device("o0")], node_name="n2", pool="o"),
        rslice("all", [device("all0")], pool="everywhere", allNodes=True),
        rslice("per", [device("p1", nodeName="n1"), device("p2", nodeName="n2")], pool="per",
               perDeviceNodeSelection=True),
    ])
    np = idx.for_node(node("n1"))
    assert [d.name for d in np.devices] == ["a0", "all0", "p1", "z0"]
    assert idx.for_node(node("n1")) is np  # cached per node for the cycle


def test_node_selector_operators() -> None:
    n = node("n", {"zone": "a", "gpus": "8"})
    term = lambda *exprs: {"nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}  # noqa: E731
    assert node_selector_matches(term({"key": "zone", "operator": "In", "values": ["a"]}), n)
    assert not node_selector_matches(term({"key": "zone", "operator": "NotIn", "values": ["a"]}), n)
    assert node_selector_matches(term({"key": "gpus", "operator": "Gt", "values": ["4"]}), n)
    assert not node_selector_matches(term({"key": "gpus", "operator": "Lt", "values": ["4"]}), n)
    assert node_selector_matches(term({"key": "x", "operator": "DoesNotExist"}), n)
    assert not node_selector_matches({"nodeSelectorTerms": [{}]}, n)  # an empty term matches nothing
    assert node_selector_matches({"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}, n)


def test_quantities_exact() -> None:
    assert qvalue("1500m") == Fraction(3, 2)
    assert format_quantity(Fraction(3, 2)) == "1500m"
    assert format_quantity(Fraction(3 * 10**9)) == "3G"


def test_allocated_state_ignores_admin_and_tracks_shares() -> None:
    alloc = {"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": "p", "device": "a"},
        {"request": "r", "driver": DRIVER, "pool": "p", "device": "b", "adminAccess": True},
        {"request": "r", "driver": DRIVER, "pool": "p", "device": "c", "shareID": "s1",
         "consumedCapacity": {"bw": "4G"}},
    ]}}
    st = AllocatedState()
    st.add(alloc)
    assert st.devices() == {(DRIVER, "p", "a")}
    assert st.has_shares((DRIVER, "p", "c"))
    assert st.consumed_capacity((DRIVER, "p", "c")) == {f"{DRIVER}/bw": Fraction(4 * 10**9)}
    v = st.pool_version((DRIVER, "p"))
    st.remove(alloc)
    assert not st.devices() and not st.has_shares((DRIVER, "p", "c"))
    assert st.pool_version((DRIVER, "p")) > v


# ---------------------------------------------------------------- per-node gathering (pools_experimental.go)


def _view(slices: list, node_name: str = "n1"):  # type: ignore[no-untyped-def]
    return PoolIndex(slices).for_node(node(node_name))


def test_generation_is_chosen_per_node() -> None:
    # upstream allocator_testing.go "multi-host-resource-pool-complete-update-from-node-1-to-node-2"
    np = _view([rslice("a", [device("x")], node_name="n1", pool="p", generation=1),
                rslice("b", [device("y")], node_name="n2", pool="p", generation=2)])
    assert [d.name for d in np.devices] == ["x"]
    assert np.pools[0].generation == 1


def test_incomplete_generation_older_than_another_nodes_is_obsolete() -> None:
    # upstream "multi-host-resource-pool-with-stale-slice-for-current-node": ignored, not incomplete
    np = _view([rslice("a", [device("x")], node_name="n1", pool="p", generation=1, count=2),
                rslice("b", [device("y")], node_name="n2", pool="p", generation=2, count=2)])
    assert not np.devices and not np.incomplete and not np.invalid


def test_more_slices_than_count_is_incomplete_not_invalid() -> None:
    # upstream GatherPools: complete only when the count matches exactly
    np = _view([rslice("a", [device("x")], node_name="n1", pool="p", count=1),
                rslice("b", [device("y")], node_name="n1", pool="p", count=1)])
    assert [p.reason for p in np.incomplete] == ["has 2 of 1 slices of generation 1"]


def test_counter_slices_are_relevant_to_every_node() -> None:
    # upstream GatherPools: "Always include slices with SharedCounters"
    counters = [{"name": "s", "counters": {"mem": {"value": "4Gi"}}}]
    complete = [rslice("c", [], node_name="n2", pool="p", count=2, sharedCounters=counters),
                rslice("d", [device("x")], node_name="n2", pool="p", count=2)]
    np = _view(complete)
    assert [p.name for p in np.pools] == ["p"] and not np.devices
    np = _view([rslice("c", [], node_name="n2", pool="p", count=3, sharedCounters=counters),
                rslice("d", [device("x")], node_name="n2", pool="p", count=3)])
    assert [str(p) for p in np.incomplete] == [f"{DRIVER}/p"]


def test_duplicate_device_names_only_among_slices_the_node_sees() -> None:
    # upstream buildPool: validateDeviceNames(deviceSlices targeting the node)
    slices = [rslice("a", [device("x")], node_name="n1", pool="p", count=2),
              rslice("b", [device("x")], node_name="n2", pool="p", count=2)]
    assert [d.slice_name for d in _view(slices, "n1").devices] == ["a"]
    assert [d.slice_name for d in _view(slices, "n2").devices] == ["b"]
    both = [rslice("a", [device("x")], node_name="n1", pool="p", count=2),
            rslice("b", [device("x")], node_name="n1", pool="p", count=2)]
    assert [p.reason for p in _view(both).invalid] == ["duplicate device name x"]


def test_binding_condition_pools_come_last_per_node() -> None:
    np = _view([rslice("a", [device("x", bindingConditions=["Ready"])], node_name="n1", pool="a"),
                rslice("b", [device("y")], node_name="n1", pool="b")])
    assert [d.name for d in np.devices] == ["y", "x"]
