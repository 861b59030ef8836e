"""KEP-5004 end to end on a real kube-apiserver: the scheduler's own cycle output, carried
out by the binder, is accepted by the server's validation.

The scheduler reads the real cluster through its cache, decides, writes the BindRequest;
the binder creates the extended-resource claim (requests filled, annotation, pod as
controller owner), writes its status (allocation, reservedFor), patches
``pod.status.extendedResourceClaimStatus`` and binds. A claim a failed bind left behind is
deleted by the scheduler (finalizer off, then delete) and the pod is placed afresh. Every
write goes through KubeStore with ``fieldValidation=Strict``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import NotFound
from drasched.api.meta import format_time
from drasched.bench.cluster import prepare_nodes
from drasched.binder import EXTENDED_CLAIM_ANNOTATION, FINALIZER, Binder
from drasched.scheduler.cache import SchedulerCache
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.controller import SchedulerController
from drasched.scheduler.cycle import run_cycle
from drasched.scheduler.snapshot import SnapshotBuilder
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace

pytestmark = pytest.mark.e2e
NS = "ext-e2e"
SCHEDULER = "drasched-ext-e2e"  # only this test's pods are scheduled, whatever else the shared cluster holds
NODE = "ext-e2e-n1"
CLASS = "ext-e2e.gpu.example.com"
RESOURCE = "example.com/ext-e2e-gpu"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def store(local_cluster: LocalCluster) -> KubeStore:
    s = local_cluster.store()
    ensure_namespace(s, NS)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "test node"}]}}
    s.create({k: v for k, v in node.items() if k != "status"})
    prepare_nodes(s, [node])  # no kubelet: clear the not-ready taint, mark it Ready (docs/design.md)
    s.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
              "spec": {"extendedResourceName": RESOURCE,
                       "selectors": [{"cel": {"expression": f'device.driver == "{CLASS}"'}}]}})
    s.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-gpus"},
              "spec": {"driver": CLASS, "nodeName": NODE,
                       "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                       "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}})
    return s


def make_pod(store: KubeStore, name: str) -> Obj:
    return store.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulerName": SCHEDULER, "nodeSelector": {"kubernetes.io/hostname": NODE},
                 "containers": [{"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": "100m", RESOURCE: "1"},
                                               "limits": {RESOURCE: "1"}}}]},
    })


def extended_claims(store: KubeStore, pod_uid: str) -> list[Obj]:
    return [c for c in store.list(kinds.RESOURCE_CLAIM, NS).items
            if (c["metadata"].get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) == "true"
            and any(r.get("uid") == pod_uid for r in c["metadata"].get("ownerReferences") or [])]


def bind_all(store: KubeStore) -> None:
    binder = Binder(store)
    for br in binder.pending(NS):
        out = binder.process(br, datetime.now(UTC))
        assert out is not None and out.phase == "Succeeded", out


def test_the_cycle_output_bound_by_the_binder_passes_the_real_servers_validation(store: KubeStore) -> None:
    pod = make_pod(store, "trainer-0")
    uid = pod["metadata"]["uid"]
    config = SchedulerConfig(scheduler_names=(SCHEDULER,))
    cache = SchedulerCache()
    cache.sync(store)
    result = run_cycle(SnapshotBuilder(config).build(cache), config, format_time(datetime.now(UTC)))
    why = [(p.name, c["message"]) for p, c in result.pod_conditions]
    assert [br["spec"]["podName"] for br in result.bind_requests] == ["trainer-0"], why
    br = result.bind_requests[0]
    assert br["spec"]["selectedNode"] == NODE
    store.create(br)  # the CRD schema accepts extendedResourceClaimAllocation as the scheduler writes it
    bind_all(store)

    [claim] = extended_claims(store, uid)
    md = claim["metadata"]
    assert md["generateName"] == "trainer-0-extended-resources-" and md["name"].startswith(md["generateName"])
    # as kube-scheduler 1.37 writes it (extendeddynamicresources.go): controller alone
    assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "trainer-0", "uid": uid,
                                      "controller": True}]
    assert FINALIZER in md["finalizers"]
    # cpu sorts before the GPU: request index 1 (upstream naming); the spec went in at creation, immutable after
    assert claim["spec"]["devices"]["requests"] == [{"name": "container-0-request-1", "exactly": {
        "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}}]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["request"], r["driver"], r["pool"], r["device"]) for r in results] == [
        ("container-0-request-1", CLASS, NODE, "gpu-0")]
    reserved = [(r["resource"], r["name"], r["uid"]) for r in claim["status"]["reservedFor"]]
    assert reserved == [("pods", "trainer-0", uid)]
    bound = store.get(kinds.POD, "trainer-0", NS)
    assert bound["spec"]["nodeName"] == NODE
    assert bound["status"]["extendedResourceClaimStatus"] == {
        "resourceClaimName": md["name"],
        "requestMappings": [{"containerName": "main", "resourceName": RESOURCE,
                             "requestName": "container-0-request-1"}],
    }


def test_a_claim_left_by_a_failed_bind_is_deleted_and_the_pod_placed_again(store: KubeStore) -> None:
    pod = make_pod(store, "trainer-1")
    uid = pod["metadata"]["uid"]
    stale = store.create({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"generateName": "trainer-1-extended-resources-", "namespace": NS,
                     "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"}, "finalizers": [FINALIZER],
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "trainer-1", "uid": uid,
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"devices": {"requests": [{"name": "container-0-request-1", "exactly": {
            "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}}]}},
    })
    stale["status"] = {"allocation": {"devices": {"results": [
        {"request": "container-0-request-1", "driver": CLASS, "pool": NODE, "device": "gpu-1"}]}}}
    store.update_status(stale)

    scheduler = SchedulerController(SchedulerConfig(scheduler_names=(SCHEDULER,)))
    ctx = SimContext(store, VirtualClock())  # type: ignore[arg-type]  # any ClusterStore will do
    assert scheduler.reconcile(ctx)
    with pytest.raises(NotFound):
        store.get(kinds.RESOURCE_CLAIM, stale["metadata"]["name"], NS)
    conds = store.get(kinds.POD, "trainer-1", NS)["status"]["conditions"]
    assert any(c["type"] == "PodScheduled" and "left from an earlier failed bind" in c["message"] for c in conds)

    scheduler.reconcile(ctx)  # the next cycle places it on the freed device
    bind_all(store)
    [claim] = extended_claims(store, uid)
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
    assert store.get(kinds.POD, "trainer-1", NS)["spec"]["nodeName"] == NODE


def test_half_gpu_shares_pass_the_real_servers_validation(store: KubeStore) -> None:
    """Fractional GPUs: the special claim asks a capacity share (selector + capacity requests); the
    server compiles the selector, accepts the request and the share's status (shareID,
    consumedCapacity), and two halves share one GPU."""
    node, cls = "ext-e2e-shared", "ext-e2e.shared.example.com"
    status = {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
              "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test node"}]}
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node,
                                                                   "labels": {"kubernetes.io/hostname": node}}})
    prepare_nodes(store, [{"metadata": {"name": node}, "status": status}])
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": cls},
                  "spec": {"extendedResourceName": "nvidia.com/gpu",
                           "selectors": [{"cel": {"expression": f'device.driver == "{cls}"'}}]}})
    policy = {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
                  "spec": {"driver": cls, "nodeName": node,
                           "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                           "devices": [{"name": "gpu-0", "allowMultipleAllocations": True,
                                        "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}}}]}})
    uids = []
    for name in ("half-0", "half-1"):
        uids.append(store.create({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "annotations": {"drasched.io/gpu-fraction": "0.5"}},
            "spec": {"schedulerName": SCHEDULER, "nodeSelector": {"kubernetes.io/hostname": node},
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        })["metadata"]["uid"])
    scheduler = SchedulerController(SchedulerConfig(scheduler_names=(SCHEDULER,)))
    ctx = SimContext(store, VirtualClock())  # type: ignore[arg-type]  # any ClusterStore will do
    scheduler.reconcile(ctx)
    bind_all(store)
    shares = set()
    for uid in uids:
        [claim] = extended_claims(store, uid)
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {"requests": {"memory": "40Gi"}}
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert result["device"] == "gpu-0" and result["consumedCapacity"] == {"memory": "40Gi"}
        shares.add(result["shareID"])
    assert len(shares) == 2
    assert all(store.get(kinds.POD, n, NS)["spec"]["nodeName"] == node for n in ("half-0", "half-1"))
