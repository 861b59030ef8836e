"""The claim controller's decisions on plain dicts, without a store.

Upstream reference: ``pkg/controller/resourceclaim/controller.go`` (``podNeedsWork``,
``handleClaim``, ``findPodResourceClaim``, ``syncClaim``, ``reserveForPod``).
"""

from __future__ import annotations

from typing import Any

import pytest

from drasched.controllers.claimdecisions import (
    claim_annotation,
    claim_from_template,
    claim_sync_idle,
    claims_condition,
    delete_reason,
    drops_finalizer,
    find_adoptable,
    goes_without_release,
    group_finalizer_change,
    plan_owner_claims,
    plan_pod,
    plan_release,
    release_reason,
    statuses_list,
)
from drasched.controllers.claimutil import (
    DELETE_PROTECTION_FINALIZER,
    GROUP_CLAIM_FINALIZER,
    MAX_RESERVED_FOR,
    POD_CLAIM_ANNOTATION,
    PODGROUP_CLAIM_ANNOTATION,
    consumer_ref,
)
from tests.unit.controllers.helpers import by_name, claim, from_template, group_ref, pod, pod_ref, podgroup, template

Obj = dict[str, Any]


def _with_uid(obj: Obj, uid: str) -> Obj:
    obj["metadata"]["uid"] = uid
    return obj


def _lookup(*claims: Obj) -> Any:
    by_name = {c["metadata"]["name"]: c for c in claims}
    return by_name.get


def _recorded(p: Obj, **names: str) -> Obj:
    p["status"] = {"resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in names.items()]}
    return p


# ---- pods ---------------------------------------------------------------------------------------


def test_a_new_pod_with_a_template_entry_needs_a_claim_created() -> None:
    p = _with_uid(pod("p", [from_template("gpu", "t"), by_name("nic", "shared-nic")]), "u1")
    plan = plan_pod(p, None, _lookup(), [])
    assert [e["name"] for e in plan.create] == ["gpu"]  # a named claim is the user's to create
    assert plan.needs_work({})


def test_a_recorded_claim_owned_by_the_pod_needs_nothing() -> None:
    p = _with_uid(pod("p", [from_template("gpu", "t")]), "u1")
    c = claim("p-gpu-abcde", allocated=False, finalizer=False, owner=p)
    _recorded(p, gpu="p-gpu-abcde")
    plan = plan_pod(p, None, _lookup(c), [c])
    assert not plan.needs_work({"gpu": "p-gpu-abcde"})


def test_a_recorded_claim_that_is_gone_or_not_the_pods_is_created_again() -> None:
    """Upstream handleClaim: "perhaps it was deleted accidentally. In that case we re-create it"."""
    p = _with_uid(pod("p", [from_template("gpu", "t")]), "u1")
    _recorded(p, gpu="p-gpu-abcde")
    assert [e["name"] for e in plan_pod(p, None, _lookup(), []).create] == ["gpu"]
    other = _with_uid(pod("other"), "u2")
    foreign = claim("p-gpu-abcde", allocated=False, finalizer=False, owner=other)
    assert [e["name"] for e in plan_pod(p, None, _lookup(foreign), []).create] == ["gpu"]


def test_a_claim_created_before_a_crash_is_adopted_not_created_again() -> None:
    """Upstream findPodResourceClaim: owned by the pod and annotated with the entry name."""
    p = _with_uid(pod("p", [from_template("gpu", "t")]), "u1")
    mine = claim("p-gpu-x1", allocated=False, owner=p, annotations={POD_CLAIM_ANNOTATION: "gpu"})
    other_entry = claim("p-nic-x2", allocated=False, owner=p, annotations={POD_CLAIM_ANNOTATION: "nic"})
    plan = plan_pod(p, None, _lookup(mine, other_entry), [other_entry, mine])
    assert plan.adopt == {"gpu": "p-gpu-x1"} and not plan.create
    assert plan.statuses == {"gpu": "p-gpu-x1"}
    deleting = claim("p-gpu-x1", allocated=False, owner=p, annotations={POD_CLAIM_ANNOTATION: "gpu"})
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert find_adoptable(p, "gpu", [deleting]) is None


def test_a_done_or_deleting_pod_needs_no_claims() -> None:
    p = _with_uid(pod("p", [from_template("gpu", "t")]), "u1")
    p["status"] = {"phase": "Succeeded"}
    assert not plan_pod(p, None, _lookup(), []).needs_work({})
    q = _with_uid(pod("q", [from_template("gpu", "t")]), "u2")
    q["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not plan_pod(q, None, _lookup(), []).needs_work({})


def test_a_group_entry_uses_the_groups_claim_once_it_exists() -> None:
    g = _with_uid(podgroup("g", [from_template("shared", "t")]), "g1")
    p = _with_uid(pod("w", [from_template("shared", "t")], group="g"), "u1")
    assert not plan_pod(p, g, _lookup(), []).needs_work({})  # the group has no claim yet: wait
    _recorded(g, shared="g-shared-abc")
    gc = claim("g-shared-abc", allocated=False, finalizer=False, owner=g)
    plan = plan_pod(p, g, _lookup(gc), [])
    assert not plan.create and plan.statuses == {"shared": "g-shared-abc"}


def test_a_bound_pod_gets_its_allocated_claim_reserved_or_its_group() -> None:
    """Upstream syncPod/reserveForPod for a pod bound without the scheduler; KEP-5729:
    the group's claim is reserved for the group as one consumer."""
    p = _with_uid(pod("p", [by_name("gpu", "c")], node="n1"), "u1")
    c = claim("c")
    assert plan_pod(p, None, _lookup(c), []).reserve == [("c", pod_ref(p))]
    assert not plan_pod(p, None, _lookup(claim("c", allocated=False)), []).reserve
    g = _with_uid(podgroup("g", [by_name("gpu", "c")]), "g1")
    member = _with_uid(pod("m", [by_name("gpu", "c")], node="n1", group="g"), "u2")
    assert plan_pod(member, g, _lookup(c), []).reserve == [("c", group_ref(g))]
    held = claim("c", reserved=[group_ref(g)])
    assert not plan_pod(member, g, _lookup(held), []).reserve


def test_a_claim_with_a_full_reserved_for_is_reported_not_written() -> None:
    p = _with_uid(pod("p", [by_name("gpu", "c")], node="n1"), "u1")
    full = claim("c", reserved=[{"resource": "pods", "name": f"o{i}", "uid": f"o{i}"}
                                for i in range(MAX_RESERVED_FOR)])
    plan = plan_pod(p, None, _lookup(full), [])
    assert plan.full == ["c"] and not plan.reserve


def test_claim_from_template_follows_upstream_handle_claim() -> None:
    p = _with_uid(pod("a" * 46, [from_template("gpu-claim0", "t")]), "u1")
    t = template("t", labels={"team": "ml"}, annotations={"note": "x"})
    c = claim_from_template(p, {"name": "gpu-claim0", "resourceClaimTemplateName": "t"}, t)
    md = c["metadata"]
    assert md["generateName"] == "a" * 45 + "-gpu-claim"  # 57-character proportional cut
    assert md["labels"] == {"team": "ml"}
    assert md["annotations"] == {"note": "x", POD_CLAIM_ANNOTATION: "gpu-claim0"}
    # 1.37's handleClaim: controller alone, no blockOwnerDeletion
    assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "a" * 46, "uid": "u1",
                                      "controller": True}]
    assert c["spec"] == t["spec"]["spec"] and c["spec"] is not t["spec"]["spec"]
    g = _with_uid(podgroup("g"), "g1")
    assert PODGROUP_CLAIM_ANNOTATION in claim_from_template(g, {"name": "e"}, t)["metadata"]["annotations"]


def test_statuses_follow_spec_order_and_keep_unknown_entries() -> None:
    p = pod("p", [from_template("b", "t"), from_template("a", "t")])
    assert statuses_list(p, {"zz": None, "a": "p-a-1", "b": "p-b-2"}) == [
        {"name": "b", "resourceClaimName": "p-b-2"}, {"name": "a", "resourceClaimName": "p-a-1"}, {"name": "zz"}]


# ---- release, deallocation, deletion -------------------------------------------------------------


@pytest.mark.parametrize(("consumer", "want"), [
    (None, "pod is gone"),
    ({"metadata": {"uid": "new"}}, "pod was replaced by a new one with the same name"),
    ({"metadata": {"uid": "u1"}, "status": {"phase": "Failed"}}, "pod Failed"),
    # Deleted before it was scheduled: never runs (upstream isPodDone).
    ({"metadata": {"uid": "u1", "deletionTimestamp": "t"}, "spec": {}}, "pod deleted before it was scheduled"),
    # Bound and being deleted: still runs until its kubelet finishes it.
    ({"metadata": {"uid": "u1", "deletionTimestamp": "t"}, "spec": {"nodeName": "n1"}}, None),
    ({"metadata": {"uid": "u1"}, "status": {"phase": "Running"}}, None),
])
def test_release_reason_for_a_pod(consumer: Obj | None, want: str | None) -> None:
    assert release_reason({"resource": "pods", "name": "p", "uid": "u1"}, consumer) == want


def test_release_reason_for_a_group() -> None:
    ref = {"apiGroup": "scheduling.drasched.io", "resource": "podgroups", "name": "g", "uid": "g1"}
    assert release_reason(ref, None) == "PodGroup is gone (orphaned reservation)"
    deleting = {"metadata": {"uid": "g1", "deletionTimestamp": "t"}}
    assert release_reason(ref, deleting, group_has_live_pods=True) is None
    assert release_reason(ref, deleting, group_has_live_pods=False) == (
        "PodGroup is being deleted and none of its pods runs any more")


def test_release_of_the_last_consumer_deallocates() -> None:
    """Upstream syncClaim: "deallocates a claim as soon as the last consumer stops using it"."""
    c = claim("c", reserved=[{"resource": "pods", "name": "a", "uid": "a"},
                             {"resource": "pods", "name": "b", "uid": "b"}])
    c["status"]["devices"] = [{"driver": "d", "pool": "p", "device": "gpu-0"}]
    partial = plan_release(c, ["pod is gone", None])
    assert partial.status == {"allocation": c["status"]["allocation"],
                              "reservedFor": [{"resource": "pods", "name": "b", "uid": "b"}],
                              "devices": c["status"]["devices"]}
    assert not partial.deallocate
    last = plan_release(c, ["pod is gone", "pod Succeeded"])
    assert last.deallocate and last.status == {} and not last.keep


def test_an_allocated_claim_never_reserved_is_left_alone() -> None:
    """Only the transition "used" -> "unused" deallocates (a driver need not reserve)."""
    assert plan_release(claim("c"), []).status is None


def test_a_deleted_unused_claim_is_deallocated_and_unblocked() -> None:
    c = claim("c")
    c["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    plan = plan_release(c, [])
    assert plan.deallocate and plan.status == {}
    c["status"] = plan.status
    assert drops_finalizer(c, just_released=False)


def test_a_claim_no_live_consumer_holds_goes_without_a_release_write() -> None:
    """Deleting it and dropping our finalizer removes it, reservations and allocation with it."""
    a, b = {"resource": "pods", "name": "a", "uid": "a"}, {"resource": "pods", "name": "b", "uid": "b"}
    c = claim("c", reserved=[a, b])
    assert goes_without_release(c, plan_release(c, ["pod is gone", "pod Succeeded"]))
    assert not goes_without_release(c, plan_release(c, ["pod is gone", None])), "b still holds it"
    unreserved = claim("c")
    assert goes_without_release(unreserved, plan_release(unreserved, []))
    assert goes_without_release(claim("c", finalizer=False), plan_release(claim("c", finalizer=False), []))


def test_a_claim_with_someone_elses_finalizer_is_released_as_before() -> None:
    """Another finalizer may keep the object after ours goes: its status must say it is free."""
    c = claim("c", reserved=[{"resource": "pods", "name": "a", "uid": "a"}])
    c["metadata"]["finalizers"].append("example.com/keep")
    assert not goes_without_release(c, plan_release(c, ["pod is gone"]))


def test_the_finalizer_stays_on_an_unreserved_claim_not_being_deleted() -> None:
    """The binder adds it a write before the allocation: never race it."""
    c = claim("c", allocated=False)
    assert DELETE_PROTECTION_FINALIZER in c["metadata"]["finalizers"]
    assert not drops_finalizer(c, just_released=False)
    assert drops_finalizer(c, just_released=True)
    assert not drops_finalizer(claim("c", allocated=True), just_released=True)


def test_a_generated_claim_is_deleted_when_its_pod_is_done_gone_or_replaced() -> None:
    p = _with_uid(pod("p"), "u1")
    c = claim("p-gpu-1", allocated=False, owner=p)
    assert delete_reason(c, p) is None
    assert delete_reason(c, None) == "its pod default/p is gone"
    assert delete_reason(c, _with_uid(pod("p"), "u2")) == "its pod default/p was replaced"
    done = _with_uid(pod("p"), "u1")
    done["status"] = {"phase": "Succeeded"}
    assert delete_reason(c, done) == "its pod default/p is done (pod Succeeded)"
    reserved = claim("p-gpu-1", owner=p, reserved=[pod_ref(p)])
    assert delete_reason(reserved, done) is None  # released first
    assert delete_reason(claim("user-claim", allocated=False), None) is None  # not generated


def test_a_group_claim_is_deleted_once_its_group_is_gone() -> None:
    g = _with_uid(podgroup("g"), "g1")
    c = claim("g-shared-1", allocated=False, owner=g)
    assert delete_reason(c, g) is None
    assert delete_reason(c, None) == "its PodGroup default/g is gone"


# ---- PodGroups -----------------------------------------------------------------------------------


def test_group_finalizer_follows_whether_it_holds_an_allocated_claim() -> None:
    g = podgroup("g")
    assert group_finalizer_change(g, True) == "add"
    assert group_finalizer_change(g, False) is None
    g["metadata"]["finalizers"] = [GROUP_CLAIM_FINALIZER]
    assert group_finalizer_change(g, True) is None
    assert group_finalizer_change(g, False) == "remove"
    g["metadata"]["deletionTimestamp"] = "t"
    assert group_finalizer_change(g, True) is None  # a deleting group waits for its claims
    assert group_finalizer_change(g, False) == "remove"


def test_claims_condition_is_set_on_trouble_and_cleared_once() -> None:
    bad = claims_condition([], ["spec.resourceClaims: Too many: 5: must have at most 4 items"])
    assert bad is not None and bad["status"] == "False" and bad["reason"] == "TooManyResourceClaims"
    assert claims_condition([bad], ["spec.resourceClaims: Too many: 5: must have at most 4 items"]) is None
    fixed = claims_condition([bad], [])
    assert fixed is not None and fixed["status"] == "True"
    assert claims_condition([], []) is None  # never had trouble: no condition at all


# ---- upstream scheduling.k8s.io PodGroups (1.37's controller with DRAWorkloadResourceClaims) ------


def _upstream_group(name: str = "g", uid: str = "ug1", version: str = "v1beta1") -> Obj:
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"resourceClaims": [from_template("gpu", "t")]}}


UPSTREAM_REF = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": "ug1"}


@pytest.mark.parametrize("version", ["v1beta1", "v1alpha2"])
def test_an_upstream_groups_claim_is_what_handle_pod_group_claim_creates(version: str) -> None:
    """The owner reference is the served version's, controller only (no blockOwnerDeletion);
    the entry is named with PodResourceClaimAnnotation, as upstream does for a PodGroup too."""
    t = template("t", labels={"team": "ml"}, annotations={"note": "x"})
    c = claim_from_template(_upstream_group(version=version), {"name": "gpu", "resourceClaimTemplateName": "t"}, t)
    assert c["metadata"] == {
        "generateName": "g-gpu-", "namespace": "default", "labels": {"team": "ml"},
        "annotations": {"note": "x", POD_CLAIM_ANNOTATION: "gpu"},
        "ownerReferences": [{"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup", "name": "g",
                             "uid": "ug1", "controller": True}]}
    assert claim_annotation(_upstream_group()) == POD_CLAIM_ANNOTATION
    assert claim_annotation(podgroup("g")) == PODGROUP_CLAIM_ANNOTATION


def test_an_upstream_groups_claim_made_before_a_crash_is_adopted() -> None:
    g = _upstream_group()
    made = claim("g-gpu-abcde", owner=g, annotations={POD_CLAIM_ANNOTATION: "gpu"})
    plan = plan_owner_claims(g, g["spec"]["resourceClaims"], _lookup(made), [made])
    assert plan.adopt == {"gpu": "g-gpu-abcde"} and not plan.create
    drasched_annotated = claim("g-gpu-fghij", owner=g, annotations={PODGROUP_CLAIM_ANNOTATION: "gpu"})
    assert find_adoptable(g, "gpu", [drasched_annotated]) is None


def test_a_member_pod_uses_its_upstream_groups_claim_and_reserves_it_for_the_group() -> None:
    g = _recorded(_upstream_group(), gpu="g-gpu-abcde")
    shared = claim("g-gpu-abcde", owner=g)
    p = _with_uid(pod("p", [from_template("gpu", "t")], node="n1"), "u1")
    p["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    plan = plan_pod(p, g, _lookup(shared), [])
    assert not plan.create and plan.statuses == {"gpu": "g-gpu-abcde"}
    recorded = _recorded(p, gpu="g-gpu-abcde")
    assert plan_pod(recorded, g, _lookup(shared), []).reserve == [("g-gpu-abcde", UPSTREAM_REF)]
    assert consumer_ref(g) == UPSTREAM_REF


def test_a_pod_whose_upstream_group_is_missing_gets_nothing_yet() -> None:
    p = _with_uid(pod("p", [from_template("gpu", "t"), from_template("own", "t")]), "u1")
    plan = plan_pod(p, None, _lookup(), [], group_missing=True)
    assert not plan.create and not plan.needs_work({})


def test_release_reason_for_an_upstream_group() -> None:
    assert release_reason(UPSTREAM_REF, None) == "PodGroup is gone (orphaned reservation)"
    assert release_reason(UPSTREAM_REF, _upstream_group(uid="other")) == (
        "PodGroup was replaced by a new one with the same name (orphaned reservation)")
    assert release_reason(UPSTREAM_REF, _upstream_group(), group_has_live_pods=False) is None, "not being deleted"
    deleting = _upstream_group()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert release_reason(UPSTREAM_REF, deleting, group_has_live_pods=True) is None
    assert release_reason(UPSTREAM_REF, deleting, group_has_live_pods=False) == (
        "PodGroup is being deleted and none of its pods runs any more")


def test_an_upstream_groups_claim_is_deleted_once_the_group_is_gone_or_ends() -> None:
    g = _upstream_group()
    c = claim("g-gpu-abcde", owner=g, allocated=False, finalizer=False)
    assert delete_reason(c, g, group_has_live_pods=False) is None, "a live group keeps its claim"
    assert delete_reason(c, None) == "its PodGroup default/g is gone"
    deleting = _upstream_group()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert delete_reason(c, deleting, group_has_live_pods=True) is None
    assert delete_reason(c, deleting, group_has_live_pods=False) == (
        "its PodGroup default/g is being deleted and none of its pods runs any more")
    reserved = claim("g-gpu-abcde", owner=g, reserved=[UPSTREAM_REF])
    assert delete_reason(reserved, None) is None, "released first"


def _running(name: str, uid: str) -> dict[str, Any]:
    p = pod(name, uid=uid)
    p["status"] = {"phase": "Running"}
    return p


def test_a_claim_of_live_pods_needs_no_sync_and_any_doubt_queues_it() -> None:
    """``claim_sync_idle``: a claim reserved for and owned by running pods the cache holds gives
    ``syncClaim`` nothing to do; a pod gone, replaced or done, a deletion, or a PodGroup consumer
    means it may."""
    live = _running("p", "u1")
    cache = {"p": live}
    look = cache.get
    assert claim_sync_idle(claim("c", reserved=[pod_ref(live)], owner=live), look)
    assert claim_sync_idle(claim("c", allocated=False, finalizer=False), look)  # no owner, no consumer
    done = {**live, "status": {"phase": "Succeeded"}}
    assert not claim_sync_idle(claim("c", reserved=[pod_ref(live)]), {"p": done}.get)
    assert not claim_sync_idle(claim("c", reserved=[pod_ref(live)]), {"p": _running("p", "u2")}.get)  # replaced
    assert not claim_sync_idle(claim("c", reserved=[pod_ref(live)]), {}.get)  # gone, or not cached yet
    assert not claim_sync_idle(claim("c", owner=live), {}.get)
    deleting = claim("c", reserved=[pod_ref(live)], owner=live)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not claim_sync_idle(deleting, look)
    group = podgroup("g")
    group["metadata"]["uid"] = "g1"
    assert not claim_sync_idle(claim("c", reserved=[group_ref(group)]), look)
