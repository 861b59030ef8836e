"""The binder against a real kube-apiserver: the server accepts every write it makes.

Claim finalizer and status (allocation + reservedFor), the extended-resource claim with
its generated name, owner and annotation, ``pod.status.extendedResourceClaimStatus``, the
binding subresource, and on the rollback path: deallocation, finalizer removal, claim
deletion and clearing the pod status field. All writes use ``fieldValidation=Strict``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from drasched.api import kinds
from drasched.binder import EXTENDED_CLAIM_ANNOTATION, FINALIZER, Binder
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster
from tests.unit.binder.helpers import Crash, FaultyStore, allocation, ext_spec

pytestmark = pytest.mark.e2e
NS = "default"


@pytest.fixture(scope="module")
def store() -> Iterator[KubeStore]:
    with LocalCluster() as cluster:
        s = cluster.store()
        s.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        s.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                  "spec": {"extendedResourceName": "nvidia.com/gpu"}})
        yield s


def make(store: KubeStore, pod_name: str, claim_name: str, device: str, finalizers: list[str] = ()  # type: ignore[assignment]
         ) -> tuple[dict[str, Any], dict[str, Any]]:
    claim = store.create({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": claim_name, "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    })
    md: dict[str, Any] = {"name": pod_name, "namespace": NS}
    if finalizers:
        md["finalizers"] = list(finalizers)
    pod = store.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": md,
        "spec": {"schedulerName": "drasched", "containers": [{
            "name": "main", "image": "busybox",
            "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"},
                          "claims": [{"name": "c"}]}}],
            "resourceClaims": [{"name": "c", "resourceClaimName": claim_name}]},
    })
    store.create({
        "apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
        "metadata": {"name": pod_name, "namespace": NS},
        "spec": {"podName": pod_name, "podUID": pod["metadata"]["uid"], "selectedNode": "n1",
                 "resourceClaimAllocations": [{"name": claim_name, "uid": claim["metadata"]["uid"],
                                               "allocation": allocation("n1", device)}],
                 "extendedResourceClaimAllocation": ext_spec("n1", f"{device}-x")},
    })
    return pod, claim


def ext_claims(store: KubeStore, pod_uid: str) -> list[dict[str, Any]]:
    return [c for c in store.list(kinds.RESOURCE_CLAIM, NS).items
            if (c["metadata"].get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) == "true"
            and any(r["uid"] == pod_uid for r in c["metadata"].get("ownerReferences") or [])]


def test_bind_after_a_crash_is_accepted_by_the_real_server(store: KubeStore) -> None:
    pod, _ = make(store, "trainer-0", "scratch", "gpu-0")
    uid = pod["metadata"]["uid"]
    now = datetime.now(UTC)
    # The first binder dies right after creating the extended-resource claim.
    with pytest.raises(Crash):
        Binder(FaultyStore(store, at=0, only="create", after=True)).process(
            store.get(kinds.BIND_REQUEST, "trainer-0", NS), now)
    assert len(ext_claims(store, uid)) == 1

    out = Binder(store).process(store.get(kinds.BIND_REQUEST, "trainer-0", NS), now)

    assert out is not None and (out.phase, out.reason) == ("Succeeded", "Bound"), out
    got = store.get(kinds.POD, "trainer-0", NS)
    assert got["spec"]["nodeName"] == "n1"
    [ext] = ext_claims(store, uid)  # found by owner + annotation, not created twice
    assert ext["metadata"]["name"].startswith("trainer-0-extended-resources-")
    assert ext["metadata"]["finalizers"] == [FINALIZER]
    assert ext["status"]["reservedFor"] == [{"resource": "pods", "name": "trainer-0", "uid": uid}]
    assert ext["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0-x"
    assert got["status"]["extendedResourceClaimStatus"] == {
        "resourceClaimName": ext["metadata"]["name"],
        "requestMappings": [{"containerName": "main", "resourceName": "nvidia.com/gpu",
                             "requestName": "container-0-request-0"}],
    }
    claim = store.get(kinds.RESOURCE_CLAIM, "scratch", NS)
    assert claim["metadata"]["finalizers"] == [FINALIZER]
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "trainer-0", "uid": uid}]
    br = store.get(kinds.BIND_REQUEST, "trainer-0", NS)
    assert br["status"] == {"phase": "Succeeded", "attempts": 1, "reason": "Bound",
                            "message": "Successfully assigned default/trainer-0 to n1"}


def test_rollback_is_accepted_by_the_real_server(store: KubeStore) -> None:
    """The pod starts terminating just before the bind: the server refuses the binding
    (409, pod being deleted) and every write is undone."""
    pod, _ = make(store, "doomed", "doomed-scratch", "gpu-1", finalizers=["example.com/hold"])
    uid = pod["metadata"]["uid"]

    def delete_pod_first(method: str, args: tuple[Any, ...]) -> None:
        if method == "bind":
            assert ext_claims(store, uid)  # everything before the bind was written
            store.delete(kinds.POD, "doomed", NS)

    out = Binder(FaultyStore(store, hook=delete_pod_first)).process(
        store.get(kinds.BIND_REQUEST, "doomed", NS), datetime.now(UTC))

    assert out is not None and (out.phase, out.reason) == ("Failed", "PodDeleted"), out
    claim = store.get(kinds.RESOURCE_CLAIM, "doomed-scratch", NS)
    assert "finalizers" not in claim["metadata"]
    assert not (claim.get("status") or {}).get("allocation")
    assert ext_claims(store, uid) == []
    got = store.get(kinds.POD, "doomed", NS)
    assert "nodeName" not in got["spec"]
    # 1.37 keeps extendedResourceClaimStatus through a pods/status write that nulls it
    # (podStatusStrategy.PrepareForUpdate): it stays, naming the claim the rollback deleted
    assert got["status"]["extendedResourceClaimStatus"]["resourceClaimName"] not in {
        c["metadata"]["name"] for c in store.list(kinds.RESOURCE_CLAIM, NS).items}
    store.patch(kinds.POD, "doomed", NS, {"metadata": {"finalizers": None}})
