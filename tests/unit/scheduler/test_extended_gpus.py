"""GPU units: shared and partitioned GPUs, and the fraction annotation."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from drasched.scheduler.actions.allocate import place_group
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.constants import GPU
from drasched.scheduler.fraction import FractionError, gpu_fraction
from drasched.scheduler.podinfo import parse_pod
from drasched.scheduler.session import Session
from tests.unit.scheduler.helpers import World, device_class, messages, no_victims, node, placed_nodes, pod

Obj = dict[str, Any]
DRV = "gpu.example.com"
PARTS = "parts.example.com"
ANNOTATION = "drasched.io/gpu-fraction"


def gpu_class() -> Obj:
    return device_class(DRV, driver=DRV, ext=GPU)


def shared_slice(node_name: str, n: int) -> Obj:
    policy = {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-shared"},
            "spec": {"driver": DRV, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "allowMultipleAllocations": True,
                                  "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}}}
                                 for i in range(n)]}}


def partition_slices(node_name: str) -> list[Obj]:
    """One 80Gi, 7-slice GPU: the whole device, a 3g (40Gi, 3 slices) and two 1g (10Gi, 1 slice)."""
    def dev(name: str, mem: str, slices: int) -> Obj:
        return {"name": name, "consumesCounters": [{"counterSet": "gpu-0", "counters": {
            "memory": {"value": mem}, "slices": {"value": str(slices)}}}]}
    pool = {"name": node_name, "generation": 1, "resourceSliceCount": 2}
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-counters"},
         "spec": {"driver": DRV, "nodeName": node_name, "pool": pool,
                  "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"},
                                                                    "slices": {"value": "7"}}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-devices"},
         "spec": {"driver": DRV, "nodeName": node_name, "pool": pool,
                  "devices": [dev("whole", "80Gi", 7), dev("p3g", "40Gi", 3), dev("p1g-0", "10Gi", 1),
                              dev("p1g-1", "10Gi", 1)]}},
    ]


def half_pod(name: str, fraction: str = "0.5") -> Obj:
    p = pod(name, gpu=1)
    p["metadata"]["annotations"] = {ANNOTATION: fraction}
    return p


def test_fraction_annotation_needs_one_gpu_and_a_value_between_0_and_1() -> None:
    assert gpu_fraction({"metadata": {"annotations": {ANNOTATION: "0.25"}}}, {GPU: 1.0}) == Fraction(1, 4)
    assert gpu_fraction({"metadata": {"annotations": {ANNOTATION: "500m"}}}, {GPU: 1.0}) == Fraction(1, 2)
    assert gpu_fraction({"metadata": {}}, {GPU: 2.0}) is None
    for raw, req in (("1", 1.0), ("0", 1.0), ("-0.5", 1.0), ("half", 1.0), ("0.5", 2.0), ("0.5", 0.0)):
        with pytest.raises(FractionError):
            gpu_fraction({"metadata": {"annotations": {ANNOTATION: raw}}}, {GPU: req})


def test_kai_s_fraction_without_a_gpu_request_is_refused_in_a_cluster_with_why() -> None:
    """In serve a pod is read as written: KAI's form (the annotation alone) names what is missing."""
    with pytest.raises(FractionError, match=r"annotation gpu-fraction needs a request of exactly nvidia.com/gpu: 1 "
                                            r"\(the pod asks 0\): the fraction is a share of the one DRA GPU"):
        gpu_fraction({"metadata": {"annotations": {"gpu-fraction": "0.5"}}}, {})


def test_a_fractional_pod_requests_its_fraction_in_the_gpu_dimension() -> None:
    info = parse_pod("default/h", half_pod("h"), {})
    assert info.requests[GPU] == 0.5 and info.gpu_fraction == Fraction(1, 2) and info.error is None
    bad = parse_pod("default/b", half_pod("b", "2"), {})
    assert bad.error is not None and "between 0 and 1" in bad.error


def test_a_shared_gpu_counts_once_and_half_pods_share_it() -> None:
    w = World([node("n"), gpu_class(), shared_slice("n", 1), half_pod("h-0"), half_pod("h-1"), half_pod("h-2")])
    snap = w.snapshot()
    assert list(snap.allocatable[snap.index.pos[GPU]]) == [1.0]
    result = w.cycle()
    assert placed_nodes(result) == {"h-0": "n", "h-1": "n"}
    for br in result.bind_requests:
        ext = br["spec"]["extendedResourceClaimAllocation"]
        assert ext["deviceRequests"][0]["exactly"]["capacity"] == {"requests": {"memory": "40Gi"}}
        assert ext["deviceRequests"][0]["exactly"]["selectors"] == [
            {"cel": {"expression": "device.allowMultipleAllocations"}}]
        assert ext["allocation"]["devices"]["results"][0]["consumedCapacity"] == {"memory": "40Gi"}
    # DRA serves the resource through a claim of its own: DynamicResources' PostFilter has a claim to keep
    assert messages(result)["h-2"] == no_victims("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.", 1, 1,
                                                 "still not schedulable")


def test_a_whole_gpu_request_on_a_shared_gpu_takes_all_of_it() -> None:
    w = World([node("n"), gpu_class(), shared_slice("n", 1), pod("whole", gpu=1)])
    result = w.cycle()
    ext = result.bind_requests[0]["spec"]["extendedResourceClaimAllocation"]
    assert ext["deviceRequests"][0]["exactly"]["capacity"] == {"requests": {"memory": "80Gi"}}
    assert "selectors" not in ext["deviceRequests"][0]["exactly"]


def test_partitions_of_one_gpu_are_one_gpu_and_a_partition_claim_counts_its_share() -> None:
    cfg = SchedulerConfig(scheduler_names=(), gpu_device_classes=frozenset({PARTS}))
    part_class = device_class(PARTS, driver=DRV)
    w = World([node("n"), part_class, *partition_slices("n")], cfg)
    snap = w.snapshot()
    assert list(snap.allocatable[snap.index.pos[GPU]]) == [1.0]
    units = {d.name: snap.gpus.result_units({"driver": DRV, "pool": "n", "device": d.name})
             for d in snap.gpus.devices.values()}
    assert units == {"whole": 1, "p3g": Fraction(1, 2), "p1g-0": Fraction(1, 7), "p1g-1": Fraction(1, 7)}


def test_a_claimed_partition_takes_its_share_of_the_gpu_row_in_the_session() -> None:
    cfg = SchedulerConfig(scheduler_names=(), gpu_device_classes=frozenset({PARTS}))
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "half", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                 "deviceClassName": PARTS, "selectors": [{"cel": {"expression": 'device.capacity["gpu.example.com"]'
                                                                  '.memory.compareTo(quantity("40Gi")) == 0'}}]}}]}}}
    slices = partition_slices("n")
    slices[1]["spec"]["devices"] = [
        {**d, "capacity": {"memory": {"value": d["consumesCounters"][0]["counters"]["memory"]["value"]}}}
        for d in slices[1]["spec"]["devices"]]
    w = World([node("n"), device_class(PARTS, driver=DRV), *slices, claim,
               pod("p", claims=[{"name": "c", "resourceClaimName": "half"}])], cfg)
    s = Session(w.snapshot(), cfg)
    assert place_group(s, s.snap.groups["pod:default/p"])
    gpu_row = s.snap.index.pos[GPU]
    assert np.isclose(s.idle[gpu_row, 0], 0.5)
    result = w.cycle()
    assert result.bind_requests[0]["spec"]["resourceClaimAllocations"][0]["allocation"]["devices"]["results"][0][
        "device"] == "p3g"
