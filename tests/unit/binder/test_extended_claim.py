"""The extended-resource claim (KEP-5004): find-or-create, status, pod status, rollback."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import Invalid
from drasched.binder import EXTENDED_CLAIM_ANNOTATION, FINALIZER
from drasched.binder.claims import new_extended_claim
from tests.unit.binder.helpers import (
    NS,
    T0,
    FaultyStore,
    add_bind_request,
    add_pod,
    ext_claims,
    ext_spec,
    get_br,
    make_binder,
    make_store,
)


def test_creates_claim_reserves_it_patches_pod_status_and_binds() -> None:
    store, _ = make_store()
    pod = add_pod(store, "trainer-0", gpus=1)
    spec = ext_spec("n1", "gpu-3")
    add_bind_request(store, pod, "n1", extended=spec)

    out = make_binder(store).process(get_br(store, "trainer-0"), T0)

    assert out is not None and out.phase == "Succeeded"
    [claim] = ext_claims(store, "trainer-0")
    md = claim["metadata"]
    prefix = "trainer-0-extended-resources-"
    assert md["generateName"] == prefix and md["name"].startswith(prefix) and len(md["name"]) == len(prefix) + 5
    assert md["annotations"] == {EXTENDED_CLAIM_ANNOTATION: "true"}
    # 1.37's scheduler (extendeddynamicresources.go): the pod as controller, nothing else
    assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "trainer-0",
                                      "uid": pod["metadata"]["uid"], "controller": True}]
    assert md["finalizers"] == [FINALIZER]
    assert claim["spec"]["devices"]["requests"] == spec["deviceRequests"]
    written = claim["status"]["allocation"]
    assert written == {**spec["allocation"], "allocationTimestamp": written["allocationTimestamp"]}
    assert written["allocationTimestamp"].endswith("Z")
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "trainer-0",
                                               "uid": pod["metadata"]["uid"]}]
    got = store.get(kinds.POD, "trainer-0", NS)
    assert got["status"]["extendedResourceClaimStatus"] == {
        "resourceClaimName": md["name"],
        "requestMappings": [{"containerName": "main", "resourceName": "nvidia.com/gpu",
                             "requestName": "container-0-request-0"}],
    }
    assert got["spec"]["nodeName"] == "n1"


def test_finds_the_claim_an_earlier_attempt_created() -> None:
    store, _ = make_store()
    pod = add_pod(store, "p", gpus=1)
    spec = ext_spec()
    add_bind_request(store, pod, "n1", extended=spec)
    earlier = store.create(new_extended_claim(pod, spec["deviceRequests"]))  # crashed right after this

    faulty = FaultyStore(store)
    out = make_binder(faulty).process(get_br(store, "p"), T0)

    assert out is not None and out.phase == "Succeeded"
    assert [c["metadata"]["name"] for c in ext_claims(store, "p")] == [earlier["metadata"]["name"]]
    assert not any(w.startswith("create:") for w in faulty.writes)


def test_duplicates_are_deleted_keeping_the_one_the_pod_status_names() -> None:
    """A create whose answer was lost, then retried, leaves two claims: one survives."""
    store, _ = make_store()
    pod = add_pod(store, "p", gpus=1)
    spec = ext_spec()
    add_bind_request(store, pod, "n1", extended=spec)
    first = store.create(new_extended_claim(pod, spec["deviceRequests"]))
    second = store.create(new_extended_claim(pod, spec["deviceRequests"]))
    named = max(first["metadata"]["name"], second["metadata"]["name"])  # not the first by name order
    store.patch(kinds.POD, "p", NS, {"status": {"extendedResourceClaimStatus": {
        "resourceClaimName": named, "requestMappings": spec["containerMappings"]}}}, subresource="status")

    out = make_binder(store).process(get_br(store, "p"), T0)

    assert out is not None and out.phase == "Succeeded"
    assert [c["metadata"]["name"] for c in ext_claims(store, "p")] == [named]


def test_stale_claim_with_other_requests_is_replaced() -> None:
    store, _ = make_store()
    pod = add_pod(store, "p", gpus=2)
    stale_requests = [{"name": "container-0-request-0", "exactly": {"deviceClassName": "gpu", "count": 2}}]
    stale = store.create(new_extended_claim(pod, stale_requests))
    add_bind_request(store, pod, "n1", extended=ext_spec())

    out = make_binder(store).process(get_br(store, "p"), T0)

    assert out is not None and out.phase == "Succeeded"
    [claim] = ext_claims(store, "p")
    assert claim["metadata"]["name"] != stale["metadata"]["name"]
    assert claim["spec"]["devices"]["requests"] == ext_spec()["deviceRequests"]


def test_server_defaults_do_not_make_a_claim_look_stale() -> None:
    """A real API server fills allocationMode and count: the same requests, not a stale claim."""
    store, _ = make_store()
    pod = add_pod(store, "p", gpus=1)
    spec = ext_spec()
    defaulted = [{"name": "container-0-request-0",
                  "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]
    earlier = store.create(new_extended_claim(pod, defaulted))
    spec["deviceRequests"] = [{"name": "container-0-request-0", "exactly": {"deviceClassName": "gpu"}}]
    add_bind_request(store, pod, "n1", extended=spec)

    assert make_binder(store).process(get_br(store, "p"), T0).phase == "Succeeded"  # type: ignore[union-attr]
    assert [c["metadata"]["name"] for c in ext_claims(store, "p")] == [earlier["metadata"]["name"]]


def test_failed_bind_deletes_the_claim_and_the_pod_status_keeps_its_name() -> None:
    store, _ = make_store()
    pod = add_pod(store, "p", gpus=1)
    add_bind_request(store, pod, "n1", extended=ext_spec())

    def refuse_binding(method: str, args: tuple[Any, ...]) -> None:
        if method == "bind":
            assert ext_claims(store, "p") and "extendedResourceClaimStatus" in store.get(kinds.POD, "p", NS)["status"]
            raise Invalid('Binding "p" is invalid', "Binding", "p")

    out = make_binder(FaultyStore(store, hook=refuse_binding)).process(get_br(store, "p"), T0)

    assert out is not None and out.phase == "Failed"
    assert ext_claims(store, "p") == []
    got = store.get(kinds.POD, "p", NS)
    assert "nodeName" not in got["spec"]
    # 1.37 (podStatusStrategy.PrepareForUpdate): a pods/status write cannot strip the field
    assert got["status"]["extendedResourceClaimStatus"]["resourceClaimName"].startswith("p-extended-resources")


def test_rollback_leaves_other_pods_extended_claims_alone() -> None:
    store, _ = make_store()
    pod, other = add_pod(store, "p", gpus=1), add_pod(store, "q", gpus=1)
    add_bind_request(store, other, "n1", extended=ext_spec("n1", "gpu-1"))
    assert make_binder(store).process(get_br(store, "q"), T0).phase == "Succeeded"  # type: ignore[union-attr]
    add_bind_request(store, pod, "n1", extended=ext_spec("n1", "gpu-0"))
    store.delete(kinds.POD, "p", NS)

    assert make_binder(store).process(get_br(store, "p"), T0).phase == "Failed"  # type: ignore[union-attr]

    assert len(ext_claims(store, "q")) == 1
    assert "extendedResourceClaimStatus" in store.get(kinds.POD, "q", NS)["status"]
