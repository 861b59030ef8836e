"""The ClusterStore contract: one suite, run on the memory store and on a real kube-apiserver.

Every expectation here was first checked against kube-apiserver v1.36.3, and holds on v1.37.2; the memory store
is right when it passes the same tests. Facts learned along the way are written down in
docs/testing.md ("Real API server behaviour we rely on").
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, Conflict, Forbidden, Gone, Invalid, NotFound, TooManyRequests
from drasched.api.meta import parse_time
from drasched.store.base import ClusterStore, Obj

from .conftest import Backend

UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
# k8s.io/apimachinery/pkg/util/rand.String: consonants and digits that cannot be misread.
GENERATED_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def configmap(ns: str, name: str, labels: dict[str, str] | None = None, **data: str) -> Obj:
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": dict(data)}


def pod(ns: str, name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "schedulerName": "drasched",
            "containers": [{"name": "main", "image": "registry.example/train:1"}],
        },
    }


def claim(ns: str, name: str, request_name: str = "gpu") -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": request_name,
                        "exactly": {
                            "deviceClassName": "gpu.example.com",
                            "allocationMode": "ExactCount",
                            "count": 1,
                        },
                    }
                ]
            }
        },
    }


def allocation(request_name: str = "gpu") -> Obj:
    return {
        "devices": {
            "results": [{"request": request_name, "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]
        }
    }


def without_server_metadata(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    for f in SERVER_METADATA:
        out["metadata"].pop(f, None)
    return out


def names(objs: list[Obj]) -> set[str]:
    return {o["metadata"]["name"] for o in objs}


def rv(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


def events(store: ClusterStore, rt: kinds.ResourceType, since: str, ns: str) -> list[tuple[str, str]]:
    return [
        (e.type, e.object["metadata"]["name"])
        for e in store.watch(rt, since, ns, timeout_seconds=1)
        if e.type != "BOOKMARK"
    ]


# -- create / get / list ------------------------------------------------------------------


def test_create_fills_server_metadata_and_get_list_return_it(store: ClusterStore, ns: str) -> None:
    created = store.create(configmap(ns, "a", {"app": "x"}, k="v"))
    md = created["metadata"]
    assert UID.match(md["uid"])
    assert md["resourceVersion"].isdigit()
    assert TIMESTAMP.match(md["creationTimestamp"])
    assert (created["apiVersion"], created["kind"], created["data"]) == ("v1", "ConfigMap", {"k": "v"})

    assert store.get(kinds.CONFIG_MAP, "a", ns) == created
    listed = store.list(kinds.CONFIG_MAP, ns)
    assert listed.items == [created]  # list items carry apiVersion and kind, like get
    assert int(listed.resource_version) >= rv(created)

    updated = store.update({**created, "data": {"k": "w"}})
    assert rv(updated) > rv(created)
    assert updated["metadata"]["uid"] == md["uid"]
    assert updated["metadata"]["creationTimestamp"] == md["creationTimestamp"]


def test_generate_name_appends_five_random_characters(store: ClusterStore, ns: str) -> None:
    made = set()
    for _ in range(8):
        obj = configmap(ns, "")
        obj["metadata"] = {"generateName": "job-", "namespace": ns}
        got = store.create(obj)
        assert re.fullmatch(f"job-{GENERATED_SUFFIX}", got["metadata"]["name"])
        assert got["metadata"]["generateName"] == "job-"
        made.add(got["metadata"]["name"])
    assert len(made) == 8

    long = configmap(ns, "")
    long["metadata"] = {"generateName": "x" * 70, "namespace": ns}
    name = store.create(long)["metadata"]["name"]
    assert re.fullmatch("x" * 58 + GENERATED_SUFFIX, name)  # the prefix is cut to 63 - 5


def test_create_twice_is_already_exists(store: ClusterStore, ns: str) -> None:
    store.create(configmap(ns, "a"))
    with pytest.raises(AlreadyExists) as e:
        store.create(configmap(ns, "a"))
    assert e.value.code == 409
    assert str(e.value) == 'configmaps "a" already exists'


def test_missing_objects_are_not_found(store: ClusterStore, ns: str) -> None:
    with pytest.raises(NotFound) as e:
        store.get(kinds.CONFIG_MAP, "nope", ns)
    assert str(e.value) == 'configmaps "nope" not found'
    with pytest.raises(NotFound) as e:
        store.get(kinds.RESOURCE_CLAIM, "nope", ns)
    assert str(e.value) == 'resourceclaims.resource.k8s.io "nope" not found'
    with pytest.raises(NotFound):
        store.update(configmap(ns, "nope"))
    with pytest.raises(NotFound):
        store.delete(kinds.CONFIG_MAP, "nope", ns)


def test_namespaced_object_in_a_missing_namespace_is_not_found(store: ClusterStore, ns: str) -> None:
    with pytest.raises(NotFound) as e:
        store.create(configmap(f"{ns}-missing", "a"))
    assert str(e.value) == f'namespaces "{ns}-missing" not found'


def test_update_with_a_stale_resource_version_conflicts(store: ClusterStore, ns: str) -> None:
    first = store.create(configmap(ns, "a", k="1"))
    store.update({**first, "data": {"k": "2"}})
    with pytest.raises(Conflict) as e:
        store.update({**first, "data": {"k": "3"}})
    assert e.value.code == 409
    assert str(e.value) == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert store.get(kinds.CONFIG_MAP, "a", ns)["data"] == {"k": "2"}


# -- status subresource -------------------------------------------------------------------


def test_pod_spec_and_status_are_written_separately(store: ClusterStore, ns: str) -> None:
    created = store.create(pod(ns, "p"))
    assert created["status"]["phase"] == "Pending"

    # The main resource ignores status; labels (metadata) go through.
    main = copy.deepcopy(created)
    main["metadata"]["labels"] = {"team": "a"}
    main["status"]["phase"] = "Running"
    after_main = store.update(main)
    assert after_main["metadata"]["labels"] == {"team": "a"}
    assert after_main["status"]["phase"] == "Pending"

    # The status subresource ignores spec; for pods it DOES keep label changes.
    status = copy.deepcopy(after_main)
    status["spec"]["schedulerName"] = "someone-else"
    status["status"]["phase"] = "Running"
    status["metadata"]["labels"] = {"team": "b"}
    after_status = store.update_status(status)
    assert after_status["status"]["phase"] == "Running"
    assert after_status["spec"]["schedulerName"] == "drasched"
    assert after_status["metadata"]["labels"] == {"team": "b"}
    assert store.get(kinds.POD, "p", ns) == after_status


def test_a_pod_status_write_cannot_strip_the_extended_resource_claim_status(store: ClusterStore, ns: str) -> None:
    """1.37 (pkg/registry/core/pod/strategy.go, podStatusStrategy.PrepareForUpdate): a pods/status
    write that leaves out or nulls a DRA status field keeps the stored one."""
    obj = pod(ns, "p")
    obj["spec"]["containers"][0]["resources"] = {"requests": {"example.com/gpu": "1"},
                                                 "limits": {"example.com/gpu": "1"}}
    created = store.create(obj)
    ext = {"requestMappings": [{"containerName": "main", "resourceName": "example.com/gpu",
                                "requestName": "container-0-request-0"}],
           "resourceClaimName": "p-extended-resources-x7k2q"}
    written = store.patch(kinds.POD, "p", ns, {"status": {"extendedResourceClaimStatus": ext}}, subresource="status")
    assert written["status"]["extendedResourceClaimStatus"] == ext
    stripped = copy.deepcopy(written)
    del stripped["status"]["extendedResourceClaimStatus"]
    assert store.update_status(stripped)["status"]["extendedResourceClaimStatus"] == ext
    nulled = store.patch(kinds.POD, "p", ns, {"status": {"extendedResourceClaimStatus": None}}, subresource="status")
    assert nulled["status"]["extendedResourceClaimStatus"] == ext
    assert created["metadata"]["uid"] == nulled["metadata"]["uid"]


def test_claim_spec_and_status_are_written_separately(store: ClusterStore, ns: str) -> None:
    created = store.create(claim(ns, "c"))
    assert created["status"] == {}  # the real server always writes the (empty) status struct

    main = copy.deepcopy(created)
    main["metadata"]["annotations"] = {"note": "main"}
    main["status"] = {"allocation": allocation()}
    after_main = store.update(main)
    assert after_main["metadata"]["annotations"] == {"note": "main"}
    assert after_main["status"] == {}

    # A claim's status write resets all metadata changes (ResetObjectMetaForStatus).
    status = copy.deepcopy(after_main)
    status["metadata"]["annotations"] = {"note": "status"}
    status["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    status["status"] = {"allocation": allocation()}
    after_status = store.update_status(status)
    assert after_status["status"]["allocation"] == allocation()
    assert after_status["spec"] == created["spec"]
    assert after_status["metadata"]["annotations"] == {"note": "main"}


def test_stale_status_update_conflicts(store: ClusterStore, ns: str) -> None:
    created = store.create(claim(ns, "c"))
    store.update_status({**created, "status": {"allocation": allocation()}})
    with pytest.raises(Conflict):
        store.update_status({**created, "status": {}})


# -- merge patch --------------------------------------------------------------------------


def test_merge_patch_merges_maps_and_null_deletes(store: ClusterStore, ns: str) -> None:
    store.create(configmap(ns, "a", {"keep": "1", "drop": "1"}, k="v"))
    got = store.patch(
        kinds.CONFIG_MAP, "a", ns, {"metadata": {"labels": {"drop": None, "new": "2"}}, "data": {"j": "w"}}
    )
    assert got["metadata"]["labels"] == {"keep": "1", "new": "2"}
    assert got["data"] == {"k": "v", "j": "w"}
    # A list in a merge patch replaces the whole list.
    store.patch(kinds.CONFIG_MAP, "a", ns, {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}})
    got = store.patch(kinds.CONFIG_MAP, "a", ns, {"metadata": {"finalizers": ["example.com/c"]}})
    assert got["metadata"]["finalizers"] == ["example.com/c"]
    store.patch(kinds.CONFIG_MAP, "a", ns, {"metadata": {"finalizers": None}})


def test_merge_patch_of_status_touches_status_only(store: ClusterStore, ns: str) -> None:
    created = store.create(claim(ns, "c"))
    got = store.patch(
        kinds.RESOURCE_CLAIM,
        "c",
        ns,
        {"metadata": {"labels": {"x": "y"}}, "status": {"allocation": allocation()}},
        subresource="status",
    )
    assert got["status"]["allocation"] == allocation()
    assert "labels" not in got["metadata"]
    assert rv(got) > rv(created)


# -- selectors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("a=x", {"ax"}),
        ("a==x", {"ax"}),
        ("a!=x", {"ay", "az", "none"}),
        ("a in (x,y)", {"ax", "ay"}),
        ("a notin (x,y)", {"az", "none"}),
        ("!a", {"none"}),
        ("a", {"ax", "ay", "az"}),
        ("a,b=1", {"ay"}),
        ("a in (x, y),b", {"ay"}),
    ],
)
def test_label_selectors(store: ClusterStore, ns: str, selector: str, expected: set[str]) -> None:
    store.create(configmap(ns, "ax", {"a": "x"}))
    store.create(configmap(ns, "ay", {"a": "y", "b": "1"}))
    store.create(configmap(ns, "az", {"a": "z"}))
    store.create(configmap(ns, "none", {"b": "2"}))
    assert names(store.list(kinds.CONFIG_MAP, ns, label_selector=selector).items) == expected


def test_field_selectors_on_pods(store: ClusterStore, ns: str) -> None:
    for name in ("p1", "p2", "p3"):
        store.create(pod(ns, name))
    store.bind(ns, "p1", "node-1")
    running = store.get(kinds.POD, "p2", ns)
    running["status"]["phase"] = "Running"
    store.update_status(running)

    def sel(s: str, namespace: str | None = ns) -> set[str]:
        return names(store.list(kinds.POD, namespace, field_selector=s).items)

    assert sel("metadata.name=p2") == {"p2"}
    assert sel(f"metadata.namespace={ns}", None) == {"p1", "p2", "p3"}
    assert sel("spec.nodeName=node-1") == {"p1"}
    assert sel("spec.nodeName=") == {"p2", "p3"}  # unbound pods: what a scheduler watches
    assert sel("spec.nodeName!=") == {"p1"}
    assert sel("status.phase=Running") == {"p2"}
    assert sel("status.phase!=Running,spec.nodeName=") == {"p3"}
    assert sel("metadata.name=p1", None) == {"p1"}


def test_field_selector_on_metadata_name_for_any_kind(store: ClusterStore, ns: str) -> None:
    store.create(configmap(ns, "a"))
    store.create(configmap(ns, "b"))
    assert names(store.list(kinds.CONFIG_MAP, ns, field_selector="metadata.name=b").items) == {"b"}
    assert names(store.list(kinds.CONFIG_MAP, ns, field_selector="metadata.name!=b").items) == {"a"}


# -- deletion -----------------------------------------------------------------------------


def test_finalizers_keep_a_deleted_object_until_removed(store: ClusterStore, ns: str) -> None:
    obj = configmap(ns, "a")
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    created = store.create(obj)

    kept = store.delete(kinds.CONFIG_MAP, "a", ns)
    assert kept is not None
    assert TIMESTAMP.match(kept["metadata"]["deletionTimestamp"])
    assert kept["metadata"]["finalizers"] == ["example.com/hold"]
    got = store.get(kinds.CONFIG_MAP, "a", ns)
    assert got["metadata"]["deletionTimestamp"] == kept["metadata"]["deletionTimestamp"]
    assert rv(got) > rv(created)

    got["metadata"]["finalizers"] = []
    store.update(got)
    with pytest.raises(NotFound):
        store.get(kinds.CONFIG_MAP, "a", ns)
    assert events(store, kinds.CONFIG_MAP, created["metadata"]["resourceVersion"], ns) == [
        ("MODIFIED", "a"),
        ("DELETED", "a"),
    ]


def test_delete_without_finalizers_removes_at_once(store: ClusterStore, ns: str) -> None:
    store.create(configmap(ns, "a"))
    assert store.delete(kinds.CONFIG_MAP, "a", ns) is None
    with pytest.raises(NotFound):
        store.get(kinds.CONFIG_MAP, "a", ns)
    store.create(pod(ns, "p"))  # unbound pods need no kubelet: gone at once too
    assert store.delete(kinds.POD, "p", ns) is None
    with pytest.raises(NotFound):
        store.get(kinds.POD, "p", ns)


def test_bound_pod_deletion_waits_for_the_kubelet(store: ClusterStore, ns: str) -> None:
    created = store.create(pod(ns, "p"))
    store.bind(ns, "p", "node-1")
    kept = store.delete(kinds.POD, "p", ns)
    assert kept is not None
    md = kept["metadata"]
    assert md["deletionGracePeriodSeconds"] == 30
    # deletionTimestamp is the deadline (now + grace period), and the pod's generation moves.
    grace = parse_time(md["deletionTimestamp"]) - parse_time(md["creationTimestamp"])
    assert 30 <= grace.total_seconds() <= 40
    assert md["generation"] == created["metadata"]["generation"] + 1
    assert store.get(kinds.POD, "p", ns)["metadata"]["deletionTimestamp"] == md["deletionTimestamp"]
    with pytest.raises(Conflict) as e:
        store.bind(ns, "p", "node-2")
    assert str(e.value).endswith("pod p is being deleted, cannot be assigned to a host")
    # A zero grace period (what a kubelet's final delete sends) removes it.
    assert store.delete(kinds.POD, "p", ns, grace_period_seconds=0) is None
    with pytest.raises(NotFound):
        store.get(kinds.POD, "p", ns)


def test_delete_preconditions(store: ClusterStore, ns: str) -> None:
    created = store.create(configmap(ns, "a"))
    uid, version = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    other = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(Conflict) as e:
        store.delete(kinds.CONFIG_MAP, "a", ns, uid=other)
    assert str(e.value) == (
        f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition ({other}) does '
        f"not match the UID in record ({uid}). The object might have been deleted and then recreated"
    )
    stale = str(int(version) - 1)
    with pytest.raises(Conflict) as e:
        store.delete(kinds.CONFIG_MAP, "a", ns, resource_version=stale)
    assert str(e.value) == (
        f'Operation cannot be fulfilled on ConfigMap "a": the ResourceVersion in the precondition '
        f"({stale}) does not match the ResourceVersion in record ({version}). "
        "The object might have been modified"
    )
    assert store.delete(kinds.CONFIG_MAP, "a", ns, uid=uid, resource_version=version) is None


def _running_ready(store: ClusterStore, ns: str, name: str, labels: dict[str, str]) -> None:
    p = pod(ns, name)
    p["metadata"]["labels"] = labels
    store.create(p)
    store.bind(ns, name, "node-1")
    now = "2026-01-01T00:00:00Z"
    store.patch(kinds.POD, name, ns, {"status": {"phase": "Running", "startTime": now, "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": now}]}}, subresource="status")


def test_eviction_honours_pod_disruption_budgets(store: ClusterStore, ns: str) -> None:
    # A pod that is not running ignores budgets: its eviction is a delete.
    store.create(pod(ns, "pending"))
    store.evict(ns, "pending")
    with pytest.raises(NotFound):
        store.get(kinds.POD, "pending", ns)
    with pytest.raises(NotFound):
        store.evict(ns, "pending")
    for name in ("a", "b"):
        _running_ready(store, ns, name, {"app": "web"})
    pdb = store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web",
                        "namespace": ns}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    # What the disruption controller would write (kube-controller-manager does not run here; the
    # memory store computes the same numbers from the pods).
    store.update_status({**pdb, "status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 2,
                                           "desiredHealthy": 1, "expectedPods": 2}})
    store.evict(ns, "a")  # a bound pod ends gracefully: its kubelet finishes the deletion
    assert store.get(kinds.POD, "a", ns)["metadata"]["deletionTimestamp"]
    with pytest.raises(TooManyRequests) as e:
        store.evict(ns, "b")
    assert e.value.code == 429
    assert str(e.value) == "Cannot evict pod as it would violate the pod's disruption budget."
    assert "deletionTimestamp" not in store.get(kinds.POD, "b", ns)["metadata"]


def _disruption_target(obj: Obj) -> dict[str, Any] | None:
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "DisruptionTarget"]
    return {k: found[0].get(k) for k in ("status", "reason", "message")} if found else None


def test_eviction_writes_the_disruption_target_condition(store: ClusterStore, ns: str) -> None:
    # kubernetes/kubernetes pkg/registry/core/pod/storage/eviction.go addConditionAndDeletePod:
    # DisruptionTarget=True, EvictionByEvictionAPI, "Eviction API: evicting", before the delete.
    _running_ready(store, ns, "a", {"app": "web"})
    store.evict(ns, "a")
    evicted = store.get(kinds.POD, "a", ns)
    assert evicted["metadata"]["deletionTimestamp"]
    assert _disruption_target(evicted) == {"status": "True", "reason": "EvictionByEvictionAPI",
                                           "message": "Eviction API: evicting"}
    # The scheduler's condition (preemption.go prepareCandidate) written first is accepted on the
    # status subresource, and the eviction API replaces it with its own (podutil.UpdatePodCondition).
    _running_ready(store, ns, "b", {"app": "web"})
    now = "2026-01-01T00:00:01Z"
    conditions = [*store.get(kinds.POD, "b", ns)["status"]["conditions"],
                  {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                   "message": "drasched: preempting to accommodate a higher priority pod", "lastTransitionTime": now}]
    marked = store.patch(kinds.POD, "b", ns, {"status": {"conditions": conditions}}, subresource="status")
    assert _disruption_target(marked) == {"status": "True", "reason": "PreemptionByScheduler",
                                          "message": "drasched: preempting to accommodate a higher priority pod"}
    store.evict(ns, "b")
    assert _disruption_target(store.get(kinds.POD, "b", ns)) == {
        "status": "True", "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}


# Garbage collection runs in kube-controller-manager, which LocalCluster does not start
# (the tests need only the API server, and upstream's GC would also need a running
# kubelet-free node lifecycle setup). The real server therefore never removes
# dependents, so this expectation is the memory store's alone.
@pytest.mark.parametrize("backend", ["memory"], indirect=True)
def test_owner_deletion_collects_dependents(store: ClusterStore, ns: str) -> None:
    owner = store.create(pod(ns, "owner"))
    dependent = claim(ns, "c")
    dependent["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "owner",
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    store.create(dependent)
    store.create(claim(ns, "unrelated"))
    store.delete(kinds.POD, "owner", ns)
    assert names(store.list(kinds.RESOURCE_CLAIM, ns).items) == {"unrelated"}


# -- binding ------------------------------------------------------------------------------


def test_bind_sets_node_name_once(store: ClusterStore, ns: str) -> None:
    created = store.create(pod(ns, "p"))
    store.bind(ns, "p", "node-1", pod_uid=created["metadata"]["uid"])
    bound = store.get(kinds.POD, "p", ns)
    assert bound["spec"]["nodeName"] == "node-1"
    scheduled = [c for c in bound["status"].get("conditions", []) if c["type"] == "PodScheduled"]
    assert [c["status"] for c in scheduled] == ["True"]
    assert bound["metadata"]["generation"] == created["metadata"]["generation"] == 1
    assert rv(bound) > rv(created)

    with pytest.raises(Conflict) as e:
        store.bind(ns, "p", "node-2")
    assert str(e.value) == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "node-1"'
    )
    assert store.get(kinds.POD, "p", ns)["spec"]["nodeName"] == "node-1"


def test_bind_clears_the_nominated_node_name(store: ClusterStore, ns: str) -> None:
    # Kubernetes 1.35+: ClearingNominatedNodeNameAfterBinding (beta, on by default) makes the
    # binding clear status.nominatedNodeName (pkg/registry/core/pod/storage/storage.go).
    store.create(pod(ns, "p"))
    nominated = store.patch(kinds.POD, "p", ns, {"status": {"nominatedNodeName": "node-1"}}, subresource="status")
    assert nominated["status"]["nominatedNodeName"] == "node-1"
    store.bind(ns, "p", "node-2")
    bound = store.get(kinds.POD, "p", ns)
    assert bound["spec"]["nodeName"] == "node-2"
    assert "nominatedNodeName" not in bound["status"]


def test_bind_of_a_missing_pod_is_not_found(store: ClusterStore, ns: str) -> None:
    with pytest.raises(NotFound):
        store.bind(ns, "nope", "node-1")


# -- watch --------------------------------------------------------------------------------


def test_watch_replays_changes_after_a_resource_version_in_order(store: ClusterStore, ns: str) -> None:
    start = store.list(kinds.CONFIG_MAP, ns).resource_version
    a = store.create(configmap(ns, "a", k="1"))
    store.create(configmap(ns, "b"))
    store.update({**a, "data": {"k": "2"}})
    store.delete(kinds.CONFIG_MAP, "b", ns)
    seen = list(store.watch(kinds.CONFIG_MAP, start, ns, timeout_seconds=1))
    changes = [e for e in seen if e.type != "BOOKMARK"]
    assert [(e.type, e.object["metadata"]["name"]) for e in changes] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]
    assert changes[2].object["data"] == {"k": "2"}
    versions = [rv(e.object) for e in changes]
    assert versions == sorted(versions) and versions[0] > int(start)
    assert all(e.object["kind"] == "ConfigMap" for e in changes)
    # Resuming from the last event's version yields nothing new.
    assert events(store, kinds.CONFIG_MAP, changes[-1].object["metadata"]["resourceVersion"], ns) == []


def test_watch_is_scoped_to_its_namespace(store: ClusterStore, ns: str) -> None:
    other = f"{ns}-other"
    start = store.list(kinds.CONFIG_MAP, ns).resource_version
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    store.create(configmap(other, "elsewhere"))
    store.create(configmap(ns, "here"))
    assert events(store, kinds.CONFIG_MAP, start, ns) == [("ADDED", "here")]


def test_watch_from_a_compacted_resource_version_is_gone(backend: Backend, ns: str) -> None:
    store = backend.store
    old = store.create(configmap(ns, "a"))
    store.update({**old, "data": {"k": "2"}})
    backend.compact()
    with pytest.raises(Gone) as e:
        list(store.watch(kinds.CONFIG_MAP, old["metadata"]["resourceVersion"], ns, timeout_seconds=1))
    assert e.value.code == 410
    # A fresh list gives a version to watch from again.
    fresh = store.list(kinds.CONFIG_MAP, ns)
    assert names(fresh.items) == {"a"}
    store.create(configmap(ns, "b"))
    assert events(store, kinds.CONFIG_MAP, fresh.resource_version, ns) == [("ADDED", "b")]


# -- validation and DRA kinds -------------------------------------------------------------


def test_invalid_request_name_names_the_field(store: ClusterStore, ns: str) -> None:
    with pytest.raises(Invalid) as e:
        store.create(claim(ns, "c", request_name="Bad_Name"))
    err = e.value
    assert err.code == 422
    assert any(c.field == "spec.devices.requests[0].name" for c in err.causes)
    assert str(err).startswith(
        'ResourceClaim.resource.k8s.io "c" is invalid: spec.devices.requests[0].name: Invalid value: "Bad_Name"'
    )
    with pytest.raises(NotFound):
        store.get(kinds.RESOURCE_CLAIM, "c", ns)


def device_class(name: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {"vendor": "example"}},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": 'device.driver == "gpu.example.com" && '
                        'device.attributes["gpu.example.com"].model == "H100"'
                    }
                }
            ],
            "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "exclusive"}}}],
            "extendedResourceName": f"example.com/{name}",
        },
    }


def full_claim(ns: str, class_name: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "train", "namespace": ns, "annotations": {"team": "ml"}},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {
                            "deviceClassName": class_name,
                            "allocationMode": "ExactCount",
                            "count": 2,
                            "selectors": [
                                {
                                    "cel": {
                                        "expression": 'device.capacity["gpu.example.com"].memory'
                                        '.compareTo(quantity("40Gi")) >= 0'
                                    }
                                }
                            ],
                        },
                    },
                    {
                        "name": "any-gpu",
                        "firstAvailable": [
                            {
                                "name": "big",
                                "deviceClassName": class_name,
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                            {
                                "name": "slice",
                                "deviceClassName": class_name,
                                "allocationMode": "All",
                            },
                        ],
                    },
                ],
                "constraints": [{"requests": ["gpus"], "matchAttribute": "gpu.example.com/numa"}],
            }
        },
    }


def resource_slices(suffix: str) -> list[Obj]:
    """A partitionable GPU as drivers publish it: counters in one slice, devices in another."""
    pool = {"name": f"node-{suffix}", "generation": 1, "resourceSliceCount": 2}
    counters = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"node-{suffix}-counters"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": pool,
            "nodeName": f"node-{suffix}",
            "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}, "sm": {"value": "132"}}}],
        },
    }
    devices = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"node-{suffix}-devices"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": pool,
            "nodeName": f"node-{suffix}",
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {
                        "model": {"string": "H100"},
                        "index": {"int": 0},
                        "driverVersion": {"version": "560.35.3"},
                        "mig": {"bool": False},
                        "gpu.example.com/numa": {"int": 1},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                    "consumesCounters": [
                        {"counterSet": "gpu-0", "counters": {"memory": {"value": "80Gi"}, "sm": {"value": "132"}}}
                    ],
                },
                {
                    "name": "gpu-0-mig-1g",
                    "attributes": {"model": {"string": "H100"}, "profile": {"string": "1g.10gb"}},
                    "capacity": {"memory": {"value": "10Gi"}},
                    "consumesCounters": [
                        {"counterSet": "gpu-0", "counters": {"memory": {"value": "10Gi"}, "sm": {"value": "16"}}}
                    ],
                    "taints": [
                        {
                            "key": "gpu.example.com/ecc-errors",
                            "value": "high",
                            "effect": "NoSchedule",
                            "timeAdded": "2026-01-01T00:00:00Z",
                        }
                    ],
                },
            ],
        },
    }
    return [counters, devices]


def test_dra_objects_round_trip(store: ClusterStore, ns: str) -> None:
    sent: list[Obj] = [device_class(f"gpu-{ns}"), full_claim(ns, f"gpu-{ns}"), *resource_slices(ns)]
    for obj in sent:
        rt = kinds.for_object(obj)
        created = store.create(copy.deepcopy(obj))
        got = store.get(rt, obj["metadata"]["name"], obj["metadata"].get("namespace"))
        assert got == created
        assert UID.match(got["metadata"]["uid"])
        expected = {**obj, "status": {}} if rt is kinds.RESOURCE_CLAIM else obj
        assert without_server_metadata(got) == expected, obj["kind"]
        assert got["metadata"].get("generation", 1) == 1


def test_claim_status_with_allocation_and_reservation(store: ClusterStore, ns: str) -> None:
    created = store.create(claim(ns, "c"))
    p = store.create(pod(ns, "p"))
    status = {
        "allocation": allocation(),
        "reservedFor": [{"resource": "pods", "name": "p", "uid": p["metadata"]["uid"]}],
    }
    got = store.update_status({**created, "status": status})
    assert got["status"] == status
    assert store.get(kinds.RESOURCE_CLAIM, "c", ns)["status"] == status


def test_priority_admission_resolves_the_class(store: ClusterStore, ns: str) -> None:
    # Upstream's Priority admission plugin: priorityClassName -> spec.priority and preemptionPolicy.
    name = f"batch-{ns}"
    store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                  "value": 1000, "preemptionPolicy": "Never"})
    try:
        p = pod(ns, "high")
        p["spec"]["priorityClassName"] = name
        created = store.create(p)
        assert created["spec"]["priority"] == 1000
        assert created["spec"]["preemptionPolicy"] == "Never"
        critical = pod(ns, "critical")
        critical["spec"]["priorityClassName"] = "system-cluster-critical"
        assert store.create(critical)["spec"]["priority"] == 2000000000
        missing = pod(ns, "missing")
        missing["spec"]["priorityClassName"] = "no-such-class"
        with pytest.raises(Forbidden) as e:
            store.create(missing)
        assert "no PriorityClass with name no-such-class was found" in str(e.value)
    finally:
        store.delete(kinds.PRIORITY_CLASS, name)


def test_claim_request_defaults(store: ClusterStore, ns: str) -> None:
    # resource.k8s.io/v1 defaulting: allocationMode ExactCount, then count 1; toleration operator Equal.
    created = store.create({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": ns},
        "spec": {"devices": {"requests": [
            {"name": "one", "exactly": {"deviceClassName": "gpu.example.com",
                                        "tolerations": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}},
            {"name": "all", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "All"}},
            {"name": "pick", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.example.com"}]},
        ]}},
    })
    one, every, pick = created["spec"]["devices"]["requests"]
    assert one["exactly"]["allocationMode"] == "ExactCount" and one["exactly"]["count"] == 1
    assert one["exactly"]["tolerations"][0]["operator"] == "Equal"
    assert every["exactly"]["allocationMode"] == "All" and "count" not in every["exactly"]
    assert pick["firstAvailable"][0]["allocationMode"] == "ExactCount" and pick["firstAvailable"][0]["count"] == 1
