"""Claims reserved for a whole PodGroup (KEP-5729 on drasched's PodGroup)."""

from __future__ import annotations

from drasched.api import kinds
from drasched.api.meta import get_condition
from drasched.controllers.claimutil import GROUP_CLAIM_FINALIZER, PODGROUP_CLAIM_ANNOTATION
from drasched.controllers.resourceclaim import ResourceClaimController
from drasched.node.sim_kubelet import SimulatedKubelet
from drasched.sim.context import SimContext
from tests.unit.controllers.helpers import (
    NS,
    allocation,
    by_name,
    claim,
    claims_in,
    decisions,
    events,
    from_template,
    get_claim,
    get_pod,
    group_ref,
    must_claim,
    new_ctx,
    pod,
    podgroup,
    settle,
    template,
)


def _allocate(ctx: SimContext, name: str) -> None:
    """Stand in for the scheduler + binder: allocate the claim, reserve nothing."""
    ctx.store.patch(kinds.RESOURCE_CLAIM, name, NS, {"metadata": {"finalizers": [
        "resource.kubernetes.io/delete-protection"]}})
    ctx.store.patch(kinds.RESOURCE_CLAIM, name, NS, {"status": {"allocation": allocation()}}, subresource="status")


def _group(ctx: SimContext, name: str = "g") -> dict:
    return ctx.store.get(kinds.POD_GROUP, name, NS)


def test_group_template_claim_is_created_once_and_owned_by_the_group() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    g = ctx.store.restore(podgroup("g", [from_template("shared", "gpu")]))
    for i in range(3):
        ctx.store.restore(pod(f"w{i}", [from_template("shared", "gpu")], group="g"))
    settle(ctx, [ResourceClaimController()])
    (c,) = claims_in(ctx)
    md = c["metadata"]
    assert md["generateName"] == "g-shared-"
    assert md["annotations"] == {PODGROUP_CLAIM_ANNOTATION: "shared"}
    assert md["ownerReferences"] == [{"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
                                      "name": "g", "uid": g["metadata"]["uid"], "controller": True}]
    assert _group(ctx)["status"]["resourceClaimStatuses"] == [{"name": "shared", "resourceClaimName": md["name"]}]
    for i in range(3):  # KEP-5729: each pod records its group's claim
        assert get_pod(ctx, f"w{i}")["status"]["resourceClaimStatuses"] == [
            {"name": "shared", "resourceClaimName": md["name"]}]
    # as upstream's claim controller, a successful create records no Event (only failures do)
    assert not [e for e in ctx.store.list(kinds.EVENT).items if e["type"] == "Normal"]
    assert any(d.action == "create" and d.controller == "resourceclaim-controller" for d in ctx.decisions)


def test_entry_with_another_template_is_the_pods_own_claim() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(template("other"))
    ctx.store.restore(podgroup("g", [from_template("shared", "gpu")]))
    ctx.store.restore(pod("w", [from_template("shared", "other")], group="g"))
    settle(ctx, [ResourceClaimController()])
    owners = sorted(c["metadata"]["ownerReferences"][0]["kind"] for c in claims_in(ctx))
    assert owners == ["Pod", "PodGroup"]


def test_5000_pods_share_one_group_claim_with_one_reservation() -> None:
    """The point of group claims: one reservedFor entry for the whole group, however many pods.
    (Placing 5,000 pods is the scheduler's test; here they are bound by hand.)"""
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    g = ctx.store.restore(podgroup("g", [from_template("shared", "gpu")]))
    ctrl, kubelet = ResourceClaimController(), SimulatedKubelet()
    settle(ctx, [ctrl])
    (c,) = claims_in(ctx)
    _allocate(ctx, c["metadata"]["name"])
    for i in range(5000):
        ctx.store.restore(pod(f"w{i:04d}", [from_template("shared", "gpu")], group="g", node=f"node-{i % 50}"))
    settle(ctx, [ctrl, kubelet])
    assert must_claim(ctx, c["metadata"]["name"])["status"]["reservedFor"] == [group_ref(g)]
    running = sum(1 for p in ctx.store.iter_kind(kinds.POD) if p["status"]["phase"] == "Running")
    assert running == 5000
    assert GROUP_CLAIM_FINALIZER in _group(ctx)["metadata"]["finalizers"]


def test_group_deletion_waits_for_its_pods_then_releases_and_cleans_up() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    g = ctx.store.restore(podgroup("g", [from_template("shared", "gpu")]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    (c,) = claims_in(ctx)
    name = c["metadata"]["name"]
    _allocate(ctx, name)
    ctx.store.restore(pod("w", [from_template("shared", "gpu")], group="g", node="node-a"))
    settle(ctx, [ctrl])
    assert must_claim(ctx, name)["status"]["reservedFor"] == [group_ref(g)]
    assert _group(ctx)["metadata"]["finalizers"] == [GROUP_CLAIM_FINALIZER]

    ctx.store.delete(kinds.POD_GROUP, "g", NS)
    settle(ctx, [ctrl])
    # A pod of the group still runs: the group stays (deleting) and keeps its devices.
    assert _group(ctx)["metadata"]["deletionTimestamp"]
    assert must_claim(ctx, name)["status"]["allocation"]

    ctx.store.patch(kinds.POD, "w", NS, {"status": {"phase": "Succeeded"}}, subresource="status")
    settle(ctx, [ctrl])
    assert ctx.store.peek(kinds.POD_GROUP, "g", NS) is None
    assert get_claim(ctx, name) is None  # deallocated, unprotected, collected with its owner
    (released,) = decisions(ctx, "release", name)
    assert released.message == ("released for PodGroup g: PodGroup is being deleted and none of its pods "
                                   "runs any more")
    assert len(decisions(ctx, "deallocate", name)) == 1


def test_orphaned_group_reservation_is_removed() -> None:
    """Orphan cleanup: a reservedFor entry naming a PodGroup that no longer
    exists (or was recreated under a new uid) is removed and the claim deallocated."""
    ctx = new_ctx()
    ctx.store.restore(claim("gone", reserved=[{"apiGroup": "scheduling.drasched.io", "resource": "podgroups",
                                              "name": "deleted", "uid": "0000-old"}]))
    ctx.store.restore(podgroup("recreated"))
    ctx.store.restore(claim("replaced", device="gpu-1", reserved=[{
        "apiGroup": "scheduling.drasched.io", "resource": "podgroups", "name": "recreated", "uid": "0000-old"}]))
    settle(ctx, [ResourceClaimController()])
    for name in ("gone", "replaced"):
        c = get_claim(ctx, name)
        assert c is not None and "allocation" not in c["status"] and "reservedFor" not in c["status"]
        assert "orphaned reservation" in decisions(ctx, "release", name)[0].message


def test_unknown_consumer_kind_is_kept_with_a_warning() -> None:
    ctx = new_ctx()
    ref = {"apiGroup": "example.com", "resource": "widgets", "name": "w", "uid": "1"}  # a kind drasched lacks
    ctx.store.restore(claim("c", reserved=[ref]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    settle(ctx, [ctrl])
    assert must_claim(ctx, "c")["status"]["reservedFor"] == [ref]
    assert len(events(ctx, "UnknownConsumer", "c")) == 1


def test_known_non_pod_consumer_that_is_gone_is_removed() -> None:
    ctx = new_ctx()
    ctx.store.restore(claim("c", reserved=[{"apiGroup": "scheduling.drasched.io", "resource": "bindrequests",
                                           "name": "br", "uid": "1"}]))
    settle(ctx, [ResourceClaimController()])
    assert "reservedFor" not in must_claim(ctx, "c")["status"]


def test_group_with_more_than_four_claims_gets_a_condition_and_no_claims() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    entries = [from_template(f"c{i}", "gpu") for i in range(5)]
    ctx.store.restore(podgroup("g", entries))
    ctx.store.restore(pod("w", entries[:1], group="g"))
    ctx.store.restore(pod("solo", [from_template("own", "gpu")]))  # unaffected
    settle(ctx, [ResourceClaimController()])
    cond = get_condition(_group(ctx), "ResourceClaimsValid")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "TooManyResourceClaims")
    assert cond["message"] == "spec.resourceClaims: Too many: 5: must have at most 4 items"
    assert len(events(ctx, "InvalidResourceClaims", "g")) == 1
    assert [c["metadata"]["ownerReferences"][0]["name"] for c in claims_in(ctx)] == ["solo"]
    assert "resourceClaimStatuses" not in get_pod(ctx, "w")["status"]
    # Fixing the group clears the condition and creates the claims.
    ctx.store.patch(kinds.POD_GROUP, "g", NS, {"spec": {"resourceClaims": entries[:4]}})
    settle(ctx, [ResourceClaimController()])
    cond = get_condition(_group(ctx), "ResourceClaimsValid")
    assert cond is not None and cond["status"] == "True"
    assert len(claims_in(ctx)) == 5


def test_group_named_claim_is_reserved_for_the_group_not_the_pods() -> None:
    ctx = new_ctx()
    g = ctx.store.restore(podgroup("g", [by_name("data", "dataset")]))
    ctx.store.restore(claim("dataset"))
    for i in range(3):
        ctx.store.restore(pod(f"w{i}", [by_name("data", "dataset")], group="g", node="node-a"))
    settle(ctx, [ResourceClaimController(), SimulatedKubelet()])
    assert must_claim(ctx, "dataset")["status"]["reservedFor"] == [group_ref(g)]
    assert all(get_pod(ctx, f"w{i}")["status"]["phase"] == "Running" for i in range(3))
