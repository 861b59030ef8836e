"""Snapshot: resource rows, vectors, assumed BindRequests, groups and capacity."""

from __future__ import annotations

import numpy as np
import pytest

from drasched.api import kinds
from drasched.scheduler.config import SchedulerConfig
from tests.unit.scheduler.helpers import (
    CLASS,
    World,
    allocation,
    claim,
    device_class,
    node,
    pod,
    podgroup,
    resource_slice,
)

IMPLICIT = f"deviceclass.resource.kubernetes.io/{CLASS}"


def _bind_request(pod_name: str, node_name: str, uid: str = "", phase: str | None = None,
                  claims: list[dict] | None = None) -> dict:
    br: dict = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
                "metadata": {"name": pod_name, "namespace": "default"},
                "spec": {"podName": pod_name, "podUID": uid, "selectedNode": node_name,
                         "resourceClaimAllocations": claims or []}}
    if phase:
        br["status"] = {"phase": phase}
    return br


def test_rows_are_fixed_and_one_array_per_resource() -> None:
    runtime = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "zzz"},
               "handler": "zzz", "overhead": {"podFixed": {"example.com/zzz": "1"}}}
    w = World([node("b", gpu=2), node("a", cpu="4", memory="1Gi", pods=None), runtime,
               pod("p", cpu="1", runtimeClassName="zzz"), device_class()])  # its overhead names zzz
    snap = w.snapshot()
    assert snap.index.names == ("cpu", "memory", "pods", "nvidia.com/gpu", IMPLICIT, "example.com/zzz")
    assert [n.name for n in snap.nodes] == ["a", "b"]
    row = snap.allocatable[snap.index.pos["cpu"]]
    assert row.flags["C_CONTIGUOUS"] and row.shape == (2,)
    assert list(row) == [4000, 32000]  # millicores
    assert list(snap.allocatable[snap.index.pos["memory"]]) == [1024**3, 64 * 1024**3]
    assert list(snap.allocatable[snap.index.pos["pods"]]) == [0, 110]  # no pods listed: none (upstream's NodeInfo)
    assert list(snap.allocatable[snap.index.pos["nvidia.com/gpu"]]) == [0, 2]
    with pytest.raises(ValueError):
        snap.idle[0, 0] = 1  # read-only: sessions copy


def test_used_idle_and_releasing_from_pods_on_nodes() -> None:
    w = World([node("a", gpu=4),
               pod("run", cpu="500m", gpu=1, node_name="a", phase="Running"),
               pod("done", cpu="8", node_name="a", phase="Succeeded"),
               pod("pending", cpu="1")])
    w.store.delete(kinds.POD, "run", "default")  # graceful: stays until its kubelet finishes it
    snap = w.snapshot()
    cpu, gpu, pods = (snap.index.pos[r] for r in ("cpu", "nvidia.com/gpu", "pods"))
    assert snap.used[cpu, 0] == 500 and snap.used[gpu, 0] == 1 and snap.used[pods, 0] == 1
    assert snap.releasing[cpu, 0] == 500  # being deleted, still holding its resources
    assert snap.idle[cpu, 0] == 32000 - 500
    assert np.array_equal(snap.idle, snap.allocatable - snap.used)


def test_pending_bind_request_is_assumed_and_a_failed_one_is_replaced() -> None:
    w = World([node("a", gpu=4), pod("x", gpu=1), pod("y", gpu=2), _bind_request("x", "a"),
               _bind_request("y", "a", phase="Failed")])
    snap = w.snapshot()
    gpu = snap.index.pos["nvidia.com/gpu"]
    assert snap.assumed == {"default/x": "a"}
    assert snap.used[gpu, 0] == 1
    assert set(snap.stale_bind_requests) == {"default/y"}
    pending = [p.name for g in snap.groups.values() for p in g.pending]
    assert pending == ["y"]


def test_bind_request_for_an_older_pod_of_the_same_name_is_stale() -> None:
    w = World([node("a"), pod("x"), _bind_request("x", "a", uid="someone-else")])
    snap = w.snapshot()
    assert snap.assumed == {} and "default/x" in snap.stale_bind_requests


def test_class_rows_count_matching_devices_and_devices_in_use() -> None:
    other = device_class("nic", "nic.example.com")
    w = World([node("a"), node("b"), device_class(), other, resource_slice("a", 3), resource_slice("b", 2),
               resource_slice("b", 5, driver="nic.example.com"),
               claim("held", allocation=allocation("a", "dev-0", "dev-2")),
               claim("assumed"), pod("p", claims=[{"name": "c", "resourceClaimName": "assumed"}]),
               _bind_request("p", "b", claims=[{"name": "assumed", "allocation": allocation("b", "dev-1")}])])
    snap = w.snapshot()
    row = snap.class_rows[CLASS]
    assert list(snap.allocatable[row]) == [3, 2]
    assert list(snap.used[row]) == [2, 1]  # one from a claim's status, one assumed from a BindRequest
    assert list(snap.allocatable[snap.class_rows["nic"]]) == [0, 5]
    assert snap.claims["default/assumed"].assumed
    assert snap.device_nodes[(CLASS, "a", "dev-0")] == [0]


def test_gpu_classes_join_the_gpu_dimension_in_capacity() -> None:
    w = World([node("dp", gpu=8), node("dra"), node("both", gpu=2),
               device_class("nv", "gpu.nvidia.com", ext="nvidia.com/gpu"), device_class(),
               resource_slice("dra", 4, driver="gpu.nvidia.com"), resource_slice("both", 4, driver="gpu.nvidia.com"),
               resource_slice("dra", 3)])
    snap = w.snapshot()
    # device plugin 8 + 2; DRA GPUs 4 on "dra" (on "both" the device plugin wins); gpu.example.com separate
    assert snap.capacity["nvidia.com/gpu"] == 14
    assert snap.capacity[IMPLICIT] == 3
    assert "deviceclass.resource.kubernetes.io/nv" not in snap.capacity


def test_groups_implicit_and_explicit() -> None:
    w = World([node("a"), podgroup("g", 2, queue="q"), pod("m1", group="g"), pod("m2", group="g", queue="other"),
               pod("solo", queue="q2"), pod("lost", group="ghost"), pod("bound", group="g", node_name="a")])
    snap = w.snapshot()
    g = snap.groups["default/g"]
    assert g.queue == "q" and g.min_member == 2 and g.placed == 1
    assert [p.name for p in g.pending] == ["m1", "m2"]
    assert [p.name for p in g.label_mismatch] == ["m2"]
    solo = snap.groups["pod:default/solo"]
    assert solo.implicit and solo.queue == "q2" and solo.min_member == 1
    assert snap.groups["default/ghost"].blocked == 'PodGroup "default/ghost" does not exist'
    assert g.blocked == 'queue "q" does not exist'


def test_pods_of_other_schedulers_are_not_scheduled_but_use_their_nodes() -> None:
    other = pod("theirs", cpu="2", node_name="a")
    other["spec"]["schedulerName"] = "default-scheduler"
    mine_pending = pod("ours", cpu="1")
    theirs_pending = pod("theirs-pending", cpu="1")
    theirs_pending["spec"]["schedulerName"] = "default-scheduler"
    w = World([node("a"), other, mine_pending, theirs_pending], SchedulerConfig())
    snap = w.snapshot()
    assert snap.used[snap.index.pos["cpu"], 0] == 2000
    assert [p.name for g in snap.groups.values() for p in g.pending] == ["ours"]


def test_unchanged_pods_are_not_parsed_again() -> None:
    w = World([node("a"), pod("p"), pod("q")])
    first = w.snapshot()
    p_info, q_info = first.pods["default/p"], first.pods["default/q"]
    q = w.store.get(kinds.POD, "q", "default")
    q["metadata"]["labels"] = {"x": "y"}
    w.store.update(q)
    second = w.snapshot()
    assert second.pods["default/p"] is p_info
    assert second.pods["default/q"] is not q_info


def test_pools_are_parsed_again_only_when_a_slice_changes_and_follow_node_labels() -> None:
    selected = resource_slice("a", 2)
    del selected["spec"]["nodeName"]  # a pool for the nodes labelled rack=r1 (upstream nodeSelector)
    selected["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    w = World([node("a"), node("b", labels={"rack": "r1"}), device_class(), selected])
    first = w.snapshot()
    row = first.class_rows[CLASS]
    assert list(first.allocatable[row]) == [0, 2]
    a = w.store.get(kinds.NODE, "a")  # node a joins the rack: the same pools, seen from a again
    a["metadata"]["labels"]["rack"] = "r1"
    w.store.update(a)
    second = w.snapshot()
    assert second.allocator.index is first.allocator.index
    assert list(second.allocatable[row]) == [2, 2]
    w.store.create(resource_slice("b", 3, driver="other.example.com"))  # a slice changed: parsed again
    third = w.snapshot()
    assert third.allocator.index is not first.allocator.index
    assert list(third.allocatable[row]) == [2, 2]
