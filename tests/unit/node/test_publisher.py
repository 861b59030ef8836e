"""ResourceSlice publishing against the memory store."""

from __future__ import annotations

import pytest

from drasched.api import kinds
from drasched.node.driver import PoolSpec
from drasched.node.gpu_driver import DRIVER_NAME, GpuDriver, MockGpuConfig
from drasched.node.publisher import PublishError, SlicePublisher
from drasched.store.memory import MemoryStore

from .helpers import NODE, store_with_node


def _slices(store: MemoryStore, driver: str = DRIVER_NAME) -> list[dict]:
    return [s for s in store.list(kinds.RESOURCE_SLICE).items if s["spec"]["driver"] == driver]


def _devices(n: int, **extra: object) -> list[dict]:
    return [{"name": f"dev-{i}", **extra} for i in range(n)]


def test_first_publish_then_resync_writes_nothing() -> None:
    store = store_with_node()
    pub = SlicePublisher(store, DRIVER_NAME, NODE)
    pools = GpuDriver.mock(NODE, MockGpuConfig(count=4)).pools(NODE)
    first = pub.publish(pools)
    assert first.created == [f"{NODE}-{DRIVER_NAME}-0"] and not first.updated and not first.deleted
    (s,) = _slices(store)
    assert s["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 1}
    assert s["spec"]["nodeName"] == NODE
    assert [d["name"] for d in s["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    node_uid = store.get(kinds.NODE, NODE)["metadata"]["uid"]
    assert s["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": node_uid, "controller": True}]
    rv = s["metadata"]["resourceVersion"]
    again = pub.publish(pools)
    assert not again.changed
    assert _slices(store)[0]["metadata"]["resourceVersion"] == rv


def test_every_change_bumps_the_generation_of_every_slice() -> None:
    store = store_with_node()
    pub = SlicePublisher(store, DRIVER_NAME, NODE)
    pub.publish({NODE: PoolSpec(devices=_devices(200))})
    slices = _slices(store)
    assert [len(s["spec"]["devices"]) for s in slices] == [128, 72]
    assert {(s["spec"]["pool"]["generation"], s["spec"]["pool"]["resourceSliceCount"]) for s in slices} == {(1, 2)}
    # One device more in the second slice: both slices move to generation 2.
    res = pub.publish({NODE: PoolSpec(devices=_devices(201))})
    assert sorted(res.updated) == [f"{NODE}-{DRIVER_NAME}-0", f"{NODE}-{DRIVER_NAME}-1"]
    assert {s["spec"]["pool"]["generation"] for s in _slices(store)} == {2}
    # Shrinking to one slice deletes the other and tells readers there is one slice now.
    res = pub.publish({NODE: PoolSpec(devices=_devices(3))})
    assert res.deleted == [f"{NODE}-{DRIVER_NAME}-1"] and res.updated == [f"{NODE}-{DRIVER_NAME}-0"]
    (s,) = _slices(store)
    assert s["spec"]["pool"] == {"name": NODE, "generation": 3, "resourceSliceCount": 1}


def test_taints_or_counters_limit_a_slice_to_64_devices_and_counters_go_alone() -> None:
    store = store_with_node()
    driver = GpuDriver.mock(NODE, MockGpuConfig(count=10), partitions=True)  # 13 devices and 1 counter set per GPU
    pools = driver.pools(NODE)
    SlicePublisher(store, DRIVER_NAME, NODE).publish(pools)
    slices = _slices(store)
    counters = [s for s in slices if "sharedCounters" in s["spec"]]
    devices = [s for s in slices if "devices" in s["spec"]]
    assert [len(s["spec"]["sharedCounters"]) for s in counters] == [8, 2]
    assert all("devices" not in s["spec"] for s in counters)
    assert [len(s["spec"]["devices"]) for s in devices] == [64, 64, 2]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {5}

    tainted = SlicePublisher(store, "taint.example.com", NODE)
    tainted.publish({NODE: PoolSpec(devices=_devices(100, taints=[{"key": "k", "effect": "NoSchedule"}]))})
    assert [len(s["spec"]["devices"]) for s in _slices(store, "taint.example.com")] == [64, 36]


def test_shutdown_removes_every_slice_of_the_driver_on_the_node_only() -> None:
    store = store_with_node()
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-2"}})
    mine = SlicePublisher(store, DRIVER_NAME, NODE)
    other_node = SlicePublisher(store, DRIVER_NAME, "node-2")
    other_driver = SlicePublisher(store, "other.example.com", NODE)
    mine.publish({NODE: PoolSpec(devices=_devices(300)), "extra-pool": PoolSpec(devices=_devices(1))})
    other_node.publish({"node-2": PoolSpec(devices=_devices(1))})
    other_driver.publish({NODE: PoolSpec(devices=_devices(1))})
    assert len(mine.existing()) == 4
    gone = mine.unpublish()
    assert len(gone) == 4 and mine.existing() == []
    assert len(other_node.existing()) == 1 and len(other_driver.existing()) == 1


def test_a_pool_no_longer_declared_is_deleted_and_an_empty_pool_still_publishes() -> None:
    store = store_with_node()
    pub = SlicePublisher(store, DRIVER_NAME, NODE)
    pub.publish({NODE: PoolSpec(devices=_devices(2)), "old": PoolSpec(devices=_devices(2))})
    res = pub.publish({NODE: PoolSpec()})
    assert res.deleted == [f"{NODE}-{DRIVER_NAME}-old-0"]
    (s,) = _slices(store)
    assert s["spec"]["devices"] == [] and s["spec"]["pool"]["generation"] == 2


def test_slices_edited_or_deleted_by_someone_else_are_restored() -> None:
    store = store_with_node()
    pub = SlicePublisher(store, DRIVER_NAME, NODE)
    pub.publish({NODE: PoolSpec(devices=_devices(2))})
    (s,) = _slices(store)
    s["spec"]["devices"] = []
    store.update(s)
    res = pub.publish({NODE: PoolSpec(devices=_devices(2))})
    assert res.updated == [s["metadata"]["name"]]
    assert len(_slices(store)[0]["spec"]["devices"]) == 2
    store.delete(kinds.RESOURCE_SLICE, s["metadata"]["name"])
    res = pub.publish({NODE: PoolSpec(devices=_devices(2))})
    assert res.created == [s["metadata"]["name"]]


def test_bad_pools_are_refused_before_anything_is_written() -> None:
    store = store_with_node()
    pub = SlicePublisher(store, DRIVER_NAME, NODE)
    with pytest.raises(PublishError, match="duplicate device name dev-0"):
        pub.publish({NODE: PoolSpec(devices=[{"name": "dev-0"}, {"name": "dev-0"}])})
    with pytest.raises(PublishError, match="consumes counter set 'nope', which the pool does not declare"):
        pub.publish({NODE: PoolSpec(devices=[{"name": "d", "consumesCounters": [{"counterSet": "nope"}]}])})
    with pytest.raises(PublishError, match="is not a DNS label"):
        pub.publish({NODE: PoolSpec(devices=[{"name": "Not_A_Label"}])})
    assert _slices(store) == []


def test_without_a_node_object_slices_have_no_owner() -> None:
    store = MemoryStore()
    SlicePublisher(store, DRIVER_NAME, "ghost").publish({"ghost": PoolSpec(devices=_devices(1))})
    (s,) = _slices(store)
    assert "ownerReferences" not in s["metadata"]
