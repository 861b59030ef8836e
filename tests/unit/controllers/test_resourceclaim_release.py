"""Release and deallocation (upstream syncClaim) and reservations for bound pods (reserveForPod)."""

from __future__ import annotations

from datetime import timedelta

from drasched.api import kinds
from drasched.controllers.claimutil import DELETE_PROTECTION_FINALIZER, POD_CLAIM_ANNOTATION
from drasched.controllers.resourceclaim import ResourceClaimController
from drasched.node.sim_kubelet import SimulatedKubelet
from drasched.sim.clock import DEFAULT_START
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
    must_claim,
    new_ctx,
    normal_events,
    pod,
    pod_ref,
    settle,
    template,
)


def _set_phase(ctx: SimContext, name: str, phase: str) -> None:
    ctx.store.patch(kinds.POD, name, NS, {"status": {"phase": phase}}, subresource="status")


def test_pod_completion_deletes_its_generated_claim_without_a_release_write() -> None:
    """Through the kubelet: Running once reserved, Succeeded after sim-duration, then the
    claim is deleted (upstream: generated claims of a done pod are deleted) and its finalizer
    dropped: no release or deallocation write first, the claim goes with them."""
    ctx = new_ctx()
    p = ctx.store.restore(pod("job", [from_template("gpu", "gpu")], node="node-a",
                             annotations={"drasched.io/sim-duration": "1m30s"}))
    c = ctx.store.restore(claim("job-gpu-abcde", owner=p, annotations={POD_CLAIM_ANNOTATION: "gpu"},
                               reserved=[pod_ref(p)]))
    ctx.store.patch(kinds.POD, "job", NS, {"status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": c["metadata"]["name"]}]}}, subresource="status")
    settle(ctx, [ResourceClaimController(), SimulatedKubelet()])

    assert ctx.clock.now() == DEFAULT_START + timedelta(seconds=90)
    done = get_pod(ctx, "job")
    assert done["status"]["phase"] == "Succeeded"
    assert done["status"]["startTime"] == "2026-01-01T00:00:00Z"
    assert get_claim(ctx, "job-gpu-abcde") is None
    assert [d.action for d in ctx.decisions if d.object.endswith("/job-gpu-abcde")] == [
        "delete", "remove-finalizer"]
    assert decisions(ctx, "delete")[0].message == (
        "deleted ResourceClaim job-gpu-abcde: its pod default/job is done (pod Succeeded)")
    # Upstream's resourceclaim controller records no Normal Event for any of these.
    assert not normal_events(ctx)


def test_shared_claim_stays_allocated_while_another_pod_uses_it() -> None:
    ctx = new_ctx()
    a = ctx.store.restore(pod("a", [by_name("gpu", "shared")], node="node-a"))
    b = ctx.store.restore(pod("b", [by_name("gpu", "shared")], node="node-a"))
    ctx.store.restore(claim("shared", reserved=[pod_ref(a), pod_ref(b)]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    _set_phase(ctx, "a", "Failed")
    settle(ctx, [ctrl])
    c = get_claim(ctx, "shared")
    assert c is not None
    assert c["status"]["reservedFor"] == [pod_ref(b)]
    assert c["status"]["allocation"]
    assert c["metadata"]["finalizers"] == [DELETE_PROTECTION_FINALIZER]
    assert not decisions(ctx, "deallocate")
    # The last user finishing frees it; a user-created claim is not deleted.
    _set_phase(ctx, "b", "Succeeded")
    settle(ctx, [ctrl])
    c = get_claim(ctx, "shared")
    assert c is not None
    assert "allocation" not in c["status"] and "reservedFor" not in c["status"]
    assert "finalizers" not in c["metadata"]


def test_bound_pod_being_deleted_keeps_its_devices_until_the_kubelet_finishes_it() -> None:
    """Never release a device a live consumer holds: a graceful deletion of a bound pod
    leaves containers running until the kubelet force-deletes it (upstream isPodDone)."""
    ctx = new_ctx()
    p = ctx.store.restore(pod("p", [by_name("gpu", "c")], node="node-a"))
    ctx.store.restore(claim("c", reserved=[pod_ref(p)]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    ctx.store.delete(kinds.POD, "p", NS)
    assert get_pod(ctx, "p")["metadata"]["deletionTimestamp"]
    settle(ctx, [ctrl])
    assert must_claim(ctx, "c")["status"]["reservedFor"] == [pod_ref(p)]
    settle(ctx, [ctrl, SimulatedKubelet()])
    assert ctx.store.peek(kinds.POD, "p", NS) is None
    assert "allocation" not in must_claim(ctx, "c")["status"]


def test_unscheduled_deleted_pod_and_replaced_pod_release_at_once() -> None:
    ctx = new_ctx()
    gone = ctx.store.restore(pod("gone", [by_name("gpu", "c")]))
    old = ctx.store.restore(pod("same-name", [by_name("gpu", "c")]))
    stale = pod_ref(old)
    ctx.store.delete(kinds.POD, "gone", NS)
    ctx.store.delete(kinds.POD, "same-name", NS)
    ctx.store.restore(pod("same-name", [by_name("gpu", "c")]))
    ctx.store.restore(claim("c", reserved=[pod_ref(gone), stale]))
    settle(ctx, [ResourceClaimController()])
    c = get_claim(ctx, "c")
    assert c is not None and "reservedFor" not in c["status"] and "allocation" not in c["status"]
    messages = sorted(d.message for d in decisions(ctx, "release"))
    assert messages == ["released for pod gone: pod is gone",
                        "released for pod same-name: pod was replaced by a new one with the same name"]


def test_claim_deleted_while_allocated_but_unused_is_unblocked() -> None:
    ctx = new_ctx()
    ctx.store.restore(claim("c"))
    ctx.store.delete(kinds.RESOURCE_CLAIM, "c", NS)
    assert get_claim(ctx, "c") is not None  # held by the delete-protection finalizer
    settle(ctx, [ResourceClaimController()])
    assert get_claim(ctx, "c") is None
    # dropping the finalizer removes it, allocation and all: no deallocation write first
    assert not decisions(ctx, "deallocate", "c")
    assert [d.message for d in decisions(ctx, "remove-finalizer", "c")] == [
        "resource.kubernetes.io/delete-protection: the claim is being deleted and no consumer is left"]


def test_finalizer_of_an_unreserved_claim_is_left_alone() -> None:
    """The binder adds the finalizer before it writes the allocation; removing it in
    between would let the claim be deleted while allocated (upstream only removes it on
    the used -> unused transition or during deletion)."""
    ctx = new_ctx()
    ctx.store.restore(claim("c", allocated=False))
    ctx.store.restore(claim("d"))  # allocated, never reserved: not "was used", so kept
    settle(ctx, [ResourceClaimController()])
    assert must_claim(ctx, "c")["metadata"]["finalizers"] == [DELETE_PROTECTION_FINALIZER]
    assert must_claim(ctx, "d")["status"]["allocation"]


def test_bound_pod_gets_its_allocated_claim_reserved() -> None:
    """Upstream syncPod/reserveForPod: a pod bound by hand (spec.nodeName) is added."""
    ctx = new_ctx()
    p = ctx.store.restore(pod("p", [by_name("gpu", "c")], node="node-a"))
    ctx.store.restore(claim("c"))
    ctx.store.restore(pod("unbound", [by_name("gpu", "c")]))
    settle(ctx, [ResourceClaimController()])
    assert must_claim(ctx, "c")["status"]["reservedFor"] == [pod_ref(p)]


def test_257_pods_on_a_plain_claim_stop_at_256_and_point_to_group_claims() -> None:
    """reservedFor holds at most 256 entries: the 257th bound pod is not reserved, does not
    start, and is told to use a group claim. (Its placement is the scheduler's part.)"""
    ctx = new_ctx()
    ctx.store.restore(claim("shared"))
    for i in range(257):
        ctx.store.restore(pod(f"p{i:03d}", [by_name("gpu", "shared")], node="node-a"))
    settle(ctx, [ResourceClaimController(), SimulatedKubelet()])
    c = get_claim(ctx, "shared")
    assert c is not None and len(c["status"]["reservedFor"]) == 256
    phases = [get_pod(ctx, f"p{i:03d}")["status"]["phase"] for i in range(257)]
    assert phases.count("Running") == 256
    (left,) = [f"p{i:03d}" for i, ph in enumerate(phases) if ph == "Pending"]
    (warning,) = events(ctx, "ResourceClaimReservedForFull")
    assert warning["involvedObject"]["name"] == left
    assert "PodGroup's spec.resourceClaims" in warning["message"]


def test_an_api_error_on_one_object_does_not_stop_the_others() -> None:
    """Bad input never crashes the loop: the failing object gets a Warning, the rest go on."""
    from drasched.api.errors import ApiError

    class FlakyStore:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def __getattr__(self, attr: str) -> object:
            return getattr(self.inner, attr)

        def update_status(self, obj: dict) -> dict:
            if obj["metadata"]["name"] == "broken":
                raise ApiError("etcdserver: request timed out", 500)
            return self.inner.update_status(obj)  # type: ignore[attr-defined]

    ctx = new_ctx()
    gone = ctx.store.restore(pod("gone"))
    ctx.store.delete(kinds.POD, "gone", NS)
    ctx.store.restore(claim("broken", reserved=[pod_ref(gone)]))
    ctx.store.restore(claim("fine", device="gpu-1", reserved=[pod_ref(gone)]))
    flaky = new_ctx()
    flaky.store, flaky.clock = FlakyStore(ctx.store), ctx.clock  # type: ignore[assignment]
    ctrl = ResourceClaimController()
    ctrl.reconcile(flaky)
    assert "allocation" not in must_claim(ctx, "fine")["status"]
    assert must_claim(ctx, "broken")["status"]["allocation"]
    (warning,) = events(ctx, "ResourceClaimControllerError", "broken")
    assert warning["message"].startswith("etcdserver: request timed out")


def test_serves_two_claim_controllers_split_the_work_between_them() -> None:
    """serve runs the pods' half in the scheduler's thread and the claims' half apart: each does
    only its own half, and the two together do what one does."""
    from drasched.controllers.resourceclaim import split_claim_controller

    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(pod("job", [from_template("gpu", "gpu")], node="node-a"))
    pods_half, claims_half = split_claim_controller(workers=1, batch=0)
    settle(ctx, [claims_half])
    assert claims_in(ctx) == [], "the claims' half created a pod's claim"
    settle(ctx, [pods_half])
    [c] = claims_in(ctx)
    # serve creates it protected already: the binder has no finalizer write before the allocation
    assert c["metadata"]["finalizers"] == [DELETE_PROTECTION_FINALIZER]
    name = c["metadata"]["name"]
    _allocate_and_reserve(ctx, name, get_pod(ctx, "job"))
    _set_phase(ctx, "job", "Succeeded")
    settle(ctx, [pods_half])
    assert get_claim(ctx, name) is not None, "the pods' half released or deleted a claim"
    settle(ctx, [claims_half])
    assert get_claim(ctx, name) is None
    assert [d.action for d in ctx.decisions if d.object.endswith("/" + name)] == [
        "create", "delete", "remove-finalizer"]
    assert {d.controller for d in ctx.decisions if d.action == "delete"} == {"resourceclaim-cleanup"}


def _allocate_and_reserve(ctx: SimContext, name: str, p: dict) -> None:
    ctx.store.patch(kinds.RESOURCE_CLAIM, name, NS, {"metadata": {"finalizers": [DELETE_PROTECTION_FINALIZER]}})
    ctx.store.patch(kinds.RESOURCE_CLAIM, name, NS, {"status": {"allocation": allocation(), "reservedFor": [
        pod_ref(p)]}}, subresource="status")


def test_a_claim_another_finalizer_keeps_is_released_and_deallocated_before_it_is_deleted() -> None:
    """Our finalizer's removal would not remove it: its status must show the devices free."""
    ctx = new_ctx()
    p = ctx.store.restore(pod("job", [from_template("gpu", "gpu")], node="node-a"))
    c = claim("job-gpu-abcde", owner=p, annotations={POD_CLAIM_ANNOTATION: "gpu"}, reserved=[pod_ref(p)])
    c["metadata"]["finalizers"].append("example.com/keep")
    ctx.store.restore(c)
    _set_phase(ctx, "job", "Succeeded")
    settle(ctx, [ResourceClaimController()])
    left = must_claim(ctx, "job-gpu-abcde")
    assert left["metadata"]["deletionTimestamp"] and left["metadata"]["finalizers"] == ["example.com/keep"]
    assert "allocation" not in left["status"] and "reservedFor" not in left["status"]
    assert [d.action for d in ctx.decisions if d.object.endswith("/job-gpu-abcde")] == [
        "release", "deallocate", "remove-finalizer", "delete"]


def _claim_of_a_gone_pod(ctx: SimContext) -> None:
    """A claim generated for a pod that is gone (never stored here, as when the garbage
    collector has not acted yet), allocated and reserved for it."""
    gone = pod("job", [from_template("gpu", "gpu")], node="node-a", uid="gone-uid")
    ctx.store.restore(claim("job-gpu-abcde", owner=gone, annotations={POD_CLAIM_ANNOTATION: "gpu"},
                            reserved=[pod_ref(gone)]))


def test_a_claim_whose_pod_is_gone_waits_for_the_garbage_collector_then_goes_anyway() -> None:
    """Upstream's controller leaves it to the collector (syncClaim: "let the garbage collector
    handle the case that the pod is truly gone"); serve waits the grace, then deletes it itself,
    since a cluster without kube-controller-manager has no collector."""
    ctx = new_ctx()
    _claim_of_a_gone_pod(ctx)
    ctrl = ResourceClaimController(collector_grace=5.0)
    ctrl.reconcile(ctx)
    waiting = must_claim(ctx, "job-gpu-abcde")
    assert waiting["status"]["reservedFor"] and waiting["status"]["allocation"], "no release write meanwhile"
    assert ctx.next_wakeup() == DEFAULT_START + timedelta(seconds=5)
    settle(ctx, [ctrl])
    assert get_claim(ctx, "job-gpu-abcde") is None
    [deleted] = decisions(ctx, "delete", "job-gpu-abcde")
    assert deleted.time == "2026-01-01T00:00:05Z"
    assert deleted.message.endswith("its pod default/job is gone")


def test_the_garbage_collectors_deletion_within_the_grace_leaves_one_write_to_make() -> None:
    ctx = new_ctx()
    _claim_of_a_gone_pod(ctx)
    ctrl = ResourceClaimController(collector_grace=5.0)
    ctrl.reconcile(ctx)
    ctx.store.delete(kinds.RESOURCE_CLAIM, "job-gpu-abcde", NS)  # the collector
    settle(ctx, [ctrl])
    assert get_claim(ctx, "job-gpu-abcde") is None
    [removed] = [d for d in ctx.decisions if d.object.endswith("/job-gpu-abcde")]
    assert removed.action == "remove-finalizer" and removed.time == "2026-01-01T00:00:00Z", "at once"
