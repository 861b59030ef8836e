"""drasched's claim controller and the upstream ``scheduling.k8s.io`` PodGroup (KEP-5729).

What kube-controller-manager 1.37's resourceclaim controller does for an upstream PodGroup
(``pkg/controller/resourceclaim/controller.go``: ``syncPodGroup``, ``handlePodGroupClaim``,
``handleClaim`` with ``resourceclaim.BindTo``, ``syncClaim``), done by drasched's when the
server serves the gang API (serve with ``--enable-claim-controller``), and in ``simulate``,
whose memory store serves the gang API in both versions, each object kept as written.
"""

from __future__ import annotations

from collections.abc import Sequence

from drasched.api import kinds
from drasched.controllers.claimutil import DELETE_PROTECTION_FINALIZER, POD_CLAIM_ANNOTATION
from drasched.controllers.resourceclaim import ResourceClaimController, split_claim_controller
from drasched.sim.context import SimContext
from tests.unit.controllers.helpers import (
    NS,
    allocation,
    claim,
    claims_in,
    decisions,
    events,
    from_template,
    get_claim,
    get_pod,
    must_claim,
    new_ctx,
    pod,
    settle,
    template,
)

Obj = dict
UPSTREAM = kinds.UPSTREAM_POD_GROUP
PROTECTION = "scheduling.k8s.io/podgroup-protection"
"""What 1.37's PodGroupProtection admission plugin puts on every new PodGroup."""


def _controller() -> ResourceClaimController:
    return ResourceClaimController(upstream_groups=UPSTREAM)


def _group(name: str = "trainers", entries: Sequence[Obj] = (from_template("gpu", "gpu"),),
           finalizers: Sequence[str] = (PROTECTION,)) -> Obj:
    md: Obj = {"name": name, "namespace": NS}
    if finalizers:
        md["finalizers"] = list(finalizers)
    return {"apiVersion": UPSTREAM.api_version, "kind": "PodGroup", "metadata": md,
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}, "resourceClaims": list(entries)}}


def _member(name: str, group: str = "trainers", *, node: str | None = None) -> Obj:
    p = pod(name, [from_template("gpu", "gpu")], node=node)
    p["spec"]["schedulingGroup"] = {"podGroupName": group}
    return p


def _upstream(ctx: SimContext, name: str = "trainers") -> Obj | None:
    return ctx.store.peek(UPSTREAM, name, NS)


def _group_ref(g: Obj) -> Obj:
    return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": g["metadata"]["name"],
            "uid": g["metadata"]["uid"]}


def _allocate_for(ctx: SimContext, name: str, consumers: Sequence[Obj]) -> None:
    """Stand in for the scheduler and the binder: the finalizer, the allocation, the reservation."""
    ctx.store.patch(kinds.RESOURCE_CLAIM, name, NS, {"metadata": {"finalizers": [DELETE_PROTECTION_FINALIZER]}})
    ctx.store.patch(kinds.RESOURCE_CLAIM, name, NS, {"status": {"allocation": allocation(),
                                                               "reservedFor": list(consumers)}}, subresource="status")


def _set_phase(ctx: SimContext, name: str, phase: str) -> None:
    ctx.store.patch(kinds.POD, name, NS, {"status": {"phase": phase}}, subresource="status")


def _made_group_claim(ctx: SimContext, pods: int = 3) -> tuple[Obj, str]:
    ctx.store.restore(template("gpu", labels={"team": "a"}, annotations={"note": "from the template"}))
    group = ctx.store.restore(_group())
    for i in range(pods):
        ctx.store.restore(_member(f"t-{i}"))
    settle(ctx, [_controller()])
    (made,) = claims_in(ctx)
    return group, made["metadata"]["name"]


def test_an_upstream_groups_template_claim_is_made_once_as_kube_controller_manager_makes_it() -> None:
    """handlePodGroupClaim: generateName <group>-<entry>-, the template's labels and annotations
    plus resource.kubernetes.io/pod-claim-name, owned by the PodGroup (controller only, no
    blockOwnerDeletion); named in the group's status.resourceClaimStatuses and, through
    handleClaim's BindTo, in each member pod's status."""
    ctx = new_ctx()
    group, name = _made_group_claim(ctx)
    md = must_claim(ctx, name)["metadata"]
    assert md["generateName"] == "trainers-gpu-"
    assert md["labels"] == {"team": "a"}
    assert md["annotations"] == {"note": "from the template", POD_CLAIM_ANNOTATION: "gpu"}
    assert md["ownerReferences"] == [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                      "name": "trainers", "uid": group["metadata"]["uid"], "controller": True}]
    written = _upstream(ctx)
    assert written is not None
    assert written["status"] == {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": name}]}
    assert written["metadata"]["finalizers"] == [PROTECTION], "no finalizer of drasched's on an upstream group"
    for i in range(3):
        assert get_pod(ctx, f"t-{i}")["status"]["resourceClaimStatuses"] == [
            {"name": "gpu", "resourceClaimName": name}]
    assert ctx.store.list(kinds.POD_GROUP).items == [], "nothing is written as a drasched PodGroup"
    assert events(ctx) == []


def test_without_the_served_gang_api_each_member_pod_keeps_its_own_claim_as_before() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    for i in range(2):
        ctx.store.restore(_member(f"t-{i}"))
    settle(ctx, [ResourceClaimController()])
    assert sorted(c["metadata"]["ownerReferences"][0]["name"] for c in claims_in(ctx)) == ["t-0", "t-1"]


def test_a_member_pod_waits_for_its_upstream_group_then_uses_the_groups_claim() -> None:
    """upstream syncPod fails on getPodGroup while the group is missing: no claim of its own."""
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(_member("early"))
    ctrl = _controller()
    settle(ctx, [ctrl])
    assert claims_in(ctx) == []
    assert "status" not in get_pod(ctx, "early") or not get_pod(ctx, "early")["status"].get("resourceClaimStatuses")
    ctx.store.restore(_group())
    settle(ctx, [ctrl])
    (made,) = claims_in(ctx)
    assert made["metadata"]["ownerReferences"][0]["kind"] == "PodGroup"
    assert get_pod(ctx, "early")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": made["metadata"]["name"]}]


def test_a_missing_template_is_a_warning_on_the_upstream_group_in_upstreams_words() -> None:
    ctx = new_ctx()
    ctx.store.restore(_group())
    settle(ctx, [_controller()])
    (warning,) = events(ctx, "FailedResourceClaimCreation", "trainers")
    assert warning["involvedObject"]["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert warning["message"].startswith("PodGroupResourceClaim gpu: resource claim template 'gpu': ")


def test_a_claim_reserved_for_an_upstream_group_is_kept_while_a_member_may_run() -> None:
    ctx = new_ctx()
    group, name = _made_group_claim(ctx, pods=2)
    _allocate_for(ctx, name, [_group_ref(group)])
    _set_phase(ctx, "t-0", "Succeeded")
    ctx.store.delete(UPSTREAM, "trainers", NS)  # the protection finalizer keeps it, Terminating
    settle(ctx, [_controller()])
    assert must_claim(ctx, name)["status"]["reservedFor"] == [_group_ref(group)], "t-1 may still run"
    assert events(ctx, "UnknownConsumer") == [], "an upstream PodGroup is a consumer drasched knows"


def test_deleting_the_groups_pods_and_the_group_deletes_its_claim() -> None:
    """A Terminating upstream group none of whose pods runs: its podgroup-protection finalizer
    is kube-controller-manager's to remove then, and the group is gone; the claim goes now."""
    ctx = new_ctx()
    group, name = _made_group_claim(ctx, pods=2)
    _allocate_for(ctx, name, [_group_ref(group)])
    ctrl = _controller()
    settle(ctx, [ctrl])
    assert must_claim(ctx, name)["status"]["reservedFor"] == [_group_ref(group)]
    for i in range(2):
        ctx.store.delete(kinds.POD, f"t-{i}", NS)
    settle(ctx, [ctrl])
    assert must_claim(ctx, name)["status"]["reservedFor"] == [_group_ref(group)], "the group still exists"
    ctx.store.delete(UPSTREAM, "trainers", NS)
    settle(ctx, [ctrl])
    assert get_claim(ctx, name) is None
    # deleted as it is, reservation and allocation with it: no release write first
    assert [d.action for d in ctx.decisions if d.object.endswith("/" + name) and d.action != "create"] == [
        "delete", "remove-finalizer"]
    (delete,) = decisions(ctx, "delete", name)
    assert delete.message == (f"deleted ResourceClaim {name}: its PodGroup default/trainers is being deleted "
                              "and none of its pods runs any more")
    assert _upstream(ctx) is not None, "the group itself waits for its protection finalizer"


def test_a_gone_upstream_groups_claim_is_deleted() -> None:
    ctx = new_ctx()
    group, name = _made_group_claim(ctx, pods=1)
    _allocate_for(ctx, name, [_group_ref(group)])
    ctx.store.patch(UPSTREAM, "trainers", NS, {"metadata": {"finalizers": None}})
    ctx.store.delete(UPSTREAM, "trainers", NS)
    settle(ctx, [_controller()])
    assert get_claim(ctx, name) is None
    # the garbage collector deleted it (its owner is gone); its finalizer goes with no release write
    assert [d.action for d in ctx.decisions if d.object.endswith("/" + name) and d.action != "create"] == [
        "remove-finalizer"]


def test_a_member_bound_without_the_scheduler_gets_the_group_claim_reserved_for_the_upstream_group() -> None:
    """upstream syncPod: an allocated claim is reserved for BindTo's consumer, the PodGroup."""
    ctx = new_ctx()
    group, name = _made_group_claim(ctx, pods=0)
    _allocate_for(ctx, name, [])
    ctx.store.restore(_member("by-hand", node="node-a"))
    settle(ctx, [_controller()])
    assert must_claim(ctx, name)["status"]["reservedFor"] == [_group_ref(group)]


def test_a_drasched_podgroup_of_the_same_name_wins_for_a_pod_that_names_it_by_label() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(_group())
    ctx.store.restore({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
                       "metadata": {"name": "trainers", "namespace": NS},
                       "spec": {"minMember": 1, "resourceClaims": [from_template("gpu", "gpu")]}})
    labelled = pod("labelled", [from_template("gpu", "gpu")], group="trainers")
    ctx.store.restore(labelled)
    settle(ctx, [_controller()])
    owners = {c["metadata"]["ownerReferences"][0]["apiVersion"]: c["metadata"]["name"] for c in claims_in(ctx)}
    assert set(owners) == {"scheduling.drasched.io/v1alpha1", "scheduling.k8s.io/v1beta1"}
    assert get_pod(ctx, "labelled")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": owners["scheduling.drasched.io/v1alpha1"]}]


def test_serves_split_claim_controller_reads_upstream_groups_in_both_halves() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    group = ctx.store.restore(_group())
    ctx.store.restore(_member("t-0"))
    pods_half, claims_half = split_claim_controller(workers=1, batch=0, upstream_groups=UPSTREAM)
    settle(ctx, [pods_half, claims_half])
    (made,) = claims_in(ctx)
    name = made["metadata"]["name"]
    _allocate_for(ctx, name, [_group_ref(group)])
    ctx.store.delete(kinds.POD, "t-0", NS)
    ctx.store.delete(UPSTREAM, "trainers", NS)
    settle(ctx, [pods_half, claims_half])
    assert get_claim(ctx, name) is None
    assert {d.controller for d in ctx.decisions if d.action in ("release", "delete")} == {"resourceclaim-cleanup"}


def test_a_claim_named_by_an_upstream_group_is_not_the_controllers_to_delete() -> None:
    """A claim the user made (no controller owner) reserved for a deleted group is released only."""
    ctx = new_ctx()
    group = ctx.store.restore(_group(entries=[{"name": "data", "resourceClaimName": "dataset"}], finalizers=()))
    ctx.store.restore(claim("dataset", reserved=[_group_ref(group)]))
    ctx.store.delete(UPSTREAM, "trainers", NS)
    settle(ctx, [_controller()])
    kept = must_claim(ctx, "dataset")
    assert "reservedFor" not in kept.get("status", {}) and "allocation" not in kept.get("status", {})


def test_the_embedded_controller_reads_both_versions_and_writes_each_group_in_its_own() -> None:
    """simulate's store keeps a v1alpha2 (1.36) and a v1beta1 (1.37) PodGroup as written: each gets its
    claim, owned by it in its own apiVersion, named in its own status."""
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    old = {**_group("old"), "apiVersion": "scheduling.k8s.io/v1alpha2"}
    groups = {"old": ctx.store.restore(old), "new": ctx.store.restore(_group("new"))}
    ctx.store.restore(_member("o-0", "old"))
    ctx.store.restore(_member("n-0", "new"))
    settle(ctx, [ResourceClaimController(upstream_groups=(UPSTREAM, kinds.UPSTREAM_POD_GROUP_V1ALPHA2))])
    made = {c["metadata"]["ownerReferences"][0]["name"]: c for c in claims_in(ctx)}
    assert sorted(made) == ["new", "old"]
    for name, rt in (("new", UPSTREAM), ("old", kinds.UPSTREAM_POD_GROUP_V1ALPHA2)):
        assert made[name]["metadata"]["ownerReferences"] == [{
            "apiVersion": rt.api_version, "kind": "PodGroup", "name": name,
            "uid": groups[name]["metadata"]["uid"], "controller": True}]
        written = ctx.store.peek(rt, name, NS)
        assert written is not None
        assert written["status"]["resourceClaimStatuses"] == [
            {"name": "gpu", "resourceClaimName": made[name]["metadata"]["name"]}]
    assert get_pod(ctx, "o-0")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": made["old"]["metadata"]["name"]}]


def test_where_both_versions_hold_a_name_the_v1beta1_group_wins() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore({**_group(), "apiVersion": "scheduling.k8s.io/v1alpha2"})
    beta = ctx.store.restore(_group())
    ctx.store.restore(_member("t-0"))
    settle(ctx, [ResourceClaimController(upstream_groups=(UPSTREAM, kinds.UPSTREAM_POD_GROUP_V1ALPHA2))])
    (made,) = claims_in(ctx)
    assert made["metadata"]["ownerReferences"][0]["uid"] == beta["metadata"]["uid"]
