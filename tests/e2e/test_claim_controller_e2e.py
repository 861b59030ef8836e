"""The ResourceClaim controller against a real kube-apiserver.

Claims from templates (name, owner, annotation, pod status), adoption of a claim left by a
crash, release and deletion when the pod finishes, and a PodGroup's claim reserved for the
group as one consumer. kube-controller-manager does not run here, so these prove that our
own controller's writes are accepted and its cleanup is enough without its GC.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import NotFound
from drasched.controllers.resourceclaim import ResourceClaimController
from drasched.serve.live import LiveContext
from drasched.serve.metrics import Metrics
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace

pytestmark = pytest.mark.e2e
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"


@pytest.fixture
def env(local_cluster: LocalCluster) -> Iterator[tuple[KubeStore, str]]:
    store = local_cluster.store()
    ns = f"claims-{uuid.uuid4().hex[:8]}"
    ensure_namespace(store, ns)
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "one-gpu", "namespace": ns},
                  # upstream copies the template's spec.metadata labels and annotations into the claim
                  "spec": {"metadata": {"labels": {"team": "a"}},
                           "spec": {"devices": {"requests": [
                      {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}})
    yield store, ns


def settle(store: KubeStore, controller: ResourceClaimController, rounds: int = 6) -> None:
    ctx = LiveContext(store, Metrics())
    for _ in range(rounds):
        if not controller.reconcile(ctx):
            return


def pod(ns: str, name: str, entry: str = "gpu") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": "drasched",
                     "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": entry}]}}],
                     "resourceClaims": [{"name": entry, "resourceClaimTemplateName": "one-gpu"}]}}


def claims(store: KubeStore, ns: str) -> list[dict[str, Any]]:
    return store.list(kinds.RESOURCE_CLAIM, ns).items


def test_claim_from_template_then_released_and_deleted_when_the_pod_ends(env: tuple[KubeStore, str]) -> None:
    store, ns = env
    created = store.create(pod(ns, "trainer"))
    controller = ResourceClaimController()
    settle(store, controller)
    [claim] = claims(store, ns)
    md = claim["metadata"]
    assert re.fullmatch(r"trainer-gpu-[a-z0-9]{5}", md["name"])
    assert md["annotations"][POD_CLAIM_NAME] == "gpu"
    assert md["labels"] == {"team": "a"}
    # as kube-controller-manager 1.37's handleClaim writes it: controller alone
    assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "trainer",
                                      "uid": created["metadata"]["uid"], "controller": True}]
    live = store.get(kinds.POD, "trainer", ns)
    assert live["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": md["name"]}]

    # The pod finishes: the claim generated for it is deleted (no kube-controller-manager GC here).
    live["status"]["phase"] = "Succeeded"
    store.update_status(live)
    settle(store, controller)
    with pytest.raises(NotFound):
        store.get(kinds.RESOURCE_CLAIM, md["name"], ns)


def test_claim_left_by_a_crash_is_adopted_not_duplicated(env: tuple[KubeStore, str]) -> None:
    store, ns = env
    created = store.create(pod(ns, "worker"))
    # A controller crashed after creating the claim and before recording it in the pod status.
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"generateName": "worker-gpu-", "namespace": ns,
                               "annotations": {POD_CLAIM_NAME: "gpu"},
                               "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "worker",
                                                    "uid": created["metadata"]["uid"], "controller": True,
                                                    "blockOwnerDeletion": True}]},
                  "spec": {"devices": {"requests": [{"name": "gpu",
                                                     "exactly": {"deviceClassName": "gpu.example.com"}}]}}})
    settle(store, ResourceClaimController())
    [claim] = claims(store, ns)
    status = store.get(kinds.POD, "worker", ns)["status"]
    assert status["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]


def test_group_claim_is_created_once_for_the_podgroup_and_freed_when_it_goes(env: tuple[KubeStore, str]) -> None:
    store, ns = env
    group = store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
                          "metadata": {"name": "serving", "namespace": ns},
                          "spec": {"minMember": 2, "resourceClaims": [
                              {"name": "shared", "resourceClaimTemplateName": "one-gpu"}]}})
    for name in ("a", "b"):
        p = pod(ns, name, entry="shared")
        p["metadata"]["labels"] = {"drasched.io/pod-group": "serving"}
        store.create(p)
    controller = ResourceClaimController()
    settle(store, controller)
    [claim] = claims(store, ns)  # one claim for the group, not one per pod
    assert claim["metadata"]["ownerReferences"][0]["uid"] == group["metadata"]["uid"]
    # The binder reserves it for the group as one consumer (KEP-5729).
    claim["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    claim = store.update(claim)
    claim["status"] = {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1",
                                                "device": "gpu-0"}]}},
        "reservedFor": [{"apiGroup": "scheduling.drasched.io", "resource": "podgroups", "name": "serving",
                         "uid": group["metadata"]["uid"]}],
    }
    store.update_status(claim)
    settle(store, controller)
    assert "scheduling.drasched.io/claim-protection" in store.get(kinds.POD_GROUP, "serving", ns)["metadata"][
        "finalizers"]
    # The group goes: its reservation is released, the claim deallocated, the group's finalizer dropped.
    for name in ("a", "b"):
        store.delete(kinds.POD, name, ns)
    store.delete(kinds.POD_GROUP, "serving", ns)
    settle(store, controller, rounds=10)
    with pytest.raises(NotFound):
        store.get(kinds.POD_GROUP, "serving", ns)
    left = claims(store, ns)
    assert all(not (c.get("status") or {}).get("allocation") for c in left)
