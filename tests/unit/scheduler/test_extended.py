"""KEP-5004 in the scheduler: GPU injection, per-node routes, the special claim, stale claims."""

from __future__ import annotations

from typing import Any

import numpy as np

from drasched.api import kinds
from drasched.scheduler.accounting import ALLOCATED
from drasched.scheduler.actions.allocate import place_group
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.constants import GPU
from drasched.scheduler.session import Session
from tests.unit.scheduler.helpers import (
    World,
    device_class,
    messages,
    no_victims,
    node,
    placed_nodes,
    pod,
    podgroup,
    queue,
)

Obj = dict[str, Any]
GPU_CLASS = "gpu.nvidia.com"
FPGA_CLASS = "fpga.example.com"
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def gpu_class() -> Obj:
    return device_class(GPU_CLASS, driver=GPU_CLASS, ext=GPU)


def fpga_class() -> Obj:
    return device_class(FPGA_CLASS, driver=FPGA_CLASS, ext="example.com/fpga")


def slice_(node_name: str, driver: str, devices: list[Obj], name: str | None = None) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{node_name}-{driver}"},
            "spec": {"driver": driver, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def gpus(n: int) -> list[Obj]:
    return [{"name": f"gpu-{i}"} for i in range(n)]


def ext_pod(name: str, resources: dict[str, str], **kw: Any) -> Obj:
    p = pod(name, **kw)
    p["spec"]["containers"][0]["resources"] = {"limits": resources}
    return p


def ext_claim(pod_name: str, uid: str, devices: list[tuple[str, str, str]], *, suffix: str = "abcde") -> Obj:
    """An extended-resource claim as the binder writes it, owned by the pod."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{pod_name}-extended-resources-{suffix}", "namespace": "default",
                         "annotations": {ANNOTATION: "true"},
                         "finalizers": ["resource.kubernetes.io/delete-protection"],
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid,
                                              "controller": True}]},
            "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
                "deviceClassName": devices[0][0] if devices else GPU_CLASS, "count": len(devices)}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "container-0-request-0", "driver": drv, "pool": pool, "device": dev}
                for drv, pool, dev in devices]}}}}


def row(snap: Any, name: str) -> list[float]:
    return [float(v) for v in snap.allocatable[snap.index.pos[name]]]


# ---------------------------------------------------------------------- GPU capacity


def test_dra_gpus_fill_the_gpu_row_where_the_device_plugin_serves_none() -> None:
    w = World([node("dp", gpu=2), node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(4))])
    snap = w.snapshot()
    assert row(snap, GPU) == [2.0, 4.0]
    assert snap.capacity[GPU] == 6


def test_device_plugin_wins_on_a_node_that_has_both() -> None:
    w = World([node("both", gpu=2), gpu_class(), slice_("both", GPU_CLASS, gpus(4))])
    snap = w.snapshot()
    assert row(snap, GPU) == [2.0]
    assert snap.capacity[GPU] == 2


def test_only_devices_a_gpu_class_selector_matches_are_gpus() -> None:
    w = World([node("n"), gpu_class(), slice_("n", GPU_CLASS, gpus(2)),
               slice_("n", "nic.example.com", [{"name": "nic-0"}]), device_class("nic", driver="nic.example.com")])
    snap = w.snapshot()
    assert row(snap, GPU) == [2.0]


def test_a_class_marked_gpu_in_the_config_counts_in_the_gpu_row() -> None:
    cfg = SchedulerConfig(scheduler_names=(), gpu_device_classes=frozenset({"accel"}))
    w = World([node("n"), device_class("accel", driver="accel.example.com"),
               slice_("n", "accel.example.com", gpus(3))], cfg)
    assert row(w.snapshot(), GPU) == [3.0]


# ---------------------------------------------------------------------- the special claim


def test_a_cycle_binds_the_allocation_found_in_filter_with_requests_and_mappings() -> None:
    w = World([node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(2)),
               ext_pod("p", {"cpu": "1", "memory": "1Gi", GPU: "2"})])
    result = w.cycle()
    assert placed_nodes(result) == {"p": "dra"}
    ext = result.bind_requests[0]["spec"]["extendedResourceClaimAllocation"]
    assert ext["deviceRequests"] == [{"name": "container-0-request-2", "exactly": {
        "deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": 2}}]
    assert ext["containerMappings"] == [{"containerName": "c", "resourceName": GPU,
                                         "requestName": "container-0-request-2"}]
    results = ext["allocation"]["devices"]["results"]
    assert [(r["request"], r["device"]) for r in results] == [("container-0-request-2", "gpu-0"),
                                                               ("container-0-request-2", "gpu-1")]
    assert ext["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["dra"]


def test_a_device_plugin_node_needs_no_special_claim() -> None:
    w = World([node("dp", gpu=2), gpu_class(), ext_pod("p", {GPU: "1"})])
    result = w.cycle()
    assert placed_nodes(result) == {"p": "dp"}
    assert "extendedResourceClaimAllocation" not in result.bind_requests[0]["spec"]


def test_requests_of_zero_are_ignored() -> None:
    w = World([node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(1)),
               ext_pod("p", {"cpu": "1", GPU: "0"})])
    snap = w.snapshot()
    assert snap.extended.pod(snap.pods["default/p"]) is None
    result = w.cycle()
    assert placed_nodes(result) == {"p": "dra"}
    assert "extendedResourceClaimAllocation" not in result.bind_requests[0]["spec"]


def test_each_pod_gets_its_own_in_memory_claim() -> None:
    w = World([node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(2)),
               ext_pod("a", {GPU: "1"}), ext_pod("b", {GPU: "1"})])
    snap = w.snapshot()
    ext = snap.extended
    a, b = snap.pods["default/a"], snap.pods["default/b"]
    ca = ext.special_claim(a, ext.pod(a), 0)
    cb = ext.special_claim(b, ext.pod(b), 0)
    assert ca is not None and cb is not None
    assert ca is ext.special_claim(a, ext.pod(a), 0)  # memoised: parsed once by the allocator
    assert ca.claim["metadata"]["name"] == "<extended-resources>"
    assert ca.claim["metadata"]["uid"] != cb.claim["metadata"]["uid"]  # distinct shareIDs
    result = w.cycle()
    devices = {br["spec"]["podName"]: br["spec"]["extendedResourceClaimAllocation"]["allocation"]["devices"]
               ["results"][0]["device"] for br in result.bind_requests}
    assert sorted(devices.values()) == ["gpu-0", "gpu-1"]


def test_a_pending_bind_request_keeps_its_devices_until_the_binder_writes_the_claim() -> None:
    w = World([node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(2)), ext_pod("a", {GPU: "1"})])
    first = w.cycle()
    w.store.create(first.bind_requests[0])
    w.store.create(ext_pod("b", {GPU: "1"}))
    second = w.cycle()
    taken = first.bind_requests[0]["spec"]["extendedResourceClaimAllocation"]["allocation"]["devices"]["results"]
    got = second.bind_requests[0]["spec"]["extendedResourceClaimAllocation"]["allocation"]["devices"]["results"]
    assert taken[0]["device"] != got[0]["device"]
    w.store.create(ext_pod("c", {GPU: "1"}))
    w.store.create(second.bind_requests[0])
    third = w.cycle()
    assert "c" in messages(third) and "Insufficient nvidia.com/gpu" in messages(third)["c"]


def test_an_unmapped_resource_the_node_lacks_does_not_fit() -> None:
    w = World([node("n"), gpu_class(), slice_("n", GPU_CLASS, gpus(1)), ext_pod("p", {"example.com/x": "1"})])
    assert messages(w.cycle())["p"] == no_victims("0/1 nodes are available: 1 Insufficient example.com/x.", 1, 1)


def test_nvidia_gpu_without_a_mapping_is_device_plugin_only() -> None:
    # A GPU class marked by config but no class maps nvidia.com/gpu: the DRA node's GPU row has
    # 2 GPUs, yet a pod asking nvidia.com/gpu cannot use them (upstream: neither allocatable nor mapped).
    cfg = SchedulerConfig(scheduler_names=(), gpu_device_classes=frozenset({"accel"}))
    w = World([node("n"), device_class("accel", driver="accel.example.com"),
               slice_("n", "accel.example.com", gpus(2)), ext_pod("p", {GPU: "1"})], cfg)
    assert messages(w.cycle())["p"] == no_victims("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.", 1, 1)


# ---------------------------------------------------------------------- vectors


def test_a_bound_pod_never_drives_a_dra_delegated_row_negative() -> None:
    uid = "00000000-0000-4000-8000-000000000001"
    p = ext_pod("p", {"example.com/fpga": "1", GPU: "1"}, node_name="dra", phase="Running")
    p["metadata"]["uid"] = uid
    w = World([node("dra"), gpu_class(), fpga_class(), slice_("dra", GPU_CLASS, gpus(2)),
               slice_("dra", FPGA_CLASS, [{"name": "f-0"}]),
               ext_claim("p", uid, [(FPGA_CLASS, "dra", "f-0"), (GPU_CLASS, "dra", "gpu-0")]), p])
    snap = w.snapshot()
    assert (snap.idle >= 0).all()
    pos = snap.index.pos
    assert snap.used[pos["example.com/fpga"], 0] == 0
    assert snap.used[snap.class_rows[FPGA_CLASS], 0] == 1  # the device, through the claim
    assert snap.used[pos[GPU], 0] == 1  # the container request; the claim's GPU not again


def test_the_route_is_chosen_per_node_for_a_non_gpu_resource() -> None:
    w = World([node("dp"), node("dra"), fpga_class(), slice_("dra", FPGA_CLASS, [{"name": "f-0"}]),
               ext_pod("p", {"example.com/fpga": "1"})])
    w.store.update_status({**w.store.get(kinds.NODE, "dp"),
                           "status": {"allocatable": {"cpu": "4", "memory": "1Gi", "example.com/fpga": "1"}}})
    snap = w.snapshot()
    s = Session(snap, w.config)
    ext = snap.extended
    px = ext.pod(snap.pods["default/p"])
    assert px is not None
    assert list(ext.fit(s.idle, px, np.ones(2, dtype=bool))) == [True, True]
    assert ext.special_claim(snap.pods["default/p"], px, 0) is None  # device plugin on dp
    assert ext.special_claim(snap.pods["default/p"], px, 1) is not None
    assert [n.name for n in ext.dp_needs(px, 0)] == ["example.com/fpga"]
    assert ext.dp_needs(px, 1) == []


def test_a_rolled_back_gang_frees_the_special_claim_devices() -> None:
    w = World([node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(3)), podgroup("g", 2),
               ext_pod("g-0", {GPU: "2"}, group="g"), ext_pod("g-1", {GPU: "2"}, group="g")])
    s = w.session()
    before_idle = s.idle.copy()
    assert not place_group(s, s.snap.groups["default/g"])
    assert not s.placements
    assert s.state.devices() == set()
    assert np.array_equal(s.idle, before_idle)


# ---------------------------------------------------------------------- no double counting


def test_a_pods_gpus_count_once_whatever_the_route() -> None:
    uid = "00000000-0000-4000-8000-000000000002"
    p = ext_pod("p", {GPU: "2"}, node_name="dra", phase="Running", queue="q")
    p["metadata"]["uid"] = uid
    w = World([node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(4)), queue("q"),
               ext_claim("p", uid, [(GPU_CLASS, "dra", "gpu-0"), (GPU_CLASS, "dra", "gpu-1")]), p])
    s = w.session()
    assert s.usage.of(ALLOCATED, "q")[GPU] == 2.0  # the container request; the annotated claim is skipped
    assert s.snap.used[s.snap.index.pos[GPU], 0] == 2
    assert s.state.devices() == {(GPU_CLASS, "dra", "gpu-0"), (GPU_CLASS, "dra", "gpu-1")}


# ---------------------------------------------------------------------- stale claims


def test_a_stale_claim_makes_the_pod_wait_one_cycle_and_is_deleted() -> None:
    uid = "00000000-0000-4000-8000-000000000003"
    p = ext_pod("p", {GPU: "1"})
    p["metadata"]["uid"] = uid
    stale = ext_claim("p", uid, [(GPU_CLASS, "dra", "gpu-0")], suffix="stale")
    w = World([node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(1)), stale, p])
    result = w.cycle()
    assert not result.bind_requests
    assert "left from an earlier failed bind" in messages(result)["p"]
    assert [c["metadata"]["name"] for c in result.delete_claims] == ["p-extended-resources-stale"]


def test_a_claim_of_a_pod_being_bound_or_of_another_scheduler_is_not_stale() -> None:
    uid = "00000000-0000-4000-8000-000000000004"
    other = ext_pod("other", {GPU: "1"}, schedulerName="default-scheduler")
    other["metadata"]["uid"] = uid
    w = World([node("dra"), gpu_class(), slice_("dra", GPU_CLASS, gpus(2)), other,
               ext_claim("other", uid, [(GPU_CLASS, "dra", "gpu-0")])],
              SchedulerConfig(scheduler_names=("drasched",)))
    snap = w.snapshot()
    assert snap.extended.stale == {}
    assert (GPU_CLASS, "dra", "gpu-0") in snap.allocator.state.devices()
