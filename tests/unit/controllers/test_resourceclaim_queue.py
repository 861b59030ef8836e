"""The claim controller is event-driven: changes enqueue the keys they concern, one sync per
key, retries with backoff (upstream ``enqueuePod`` / ``enqueueResourceClaim`` /
``processNextWorkItem``)."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import Conflict
from drasched.controllers.resourceclaim import ResourceClaimController
from drasched.node.sim_kubelet import SimulatedKubelet
from tests.unit.controllers.helpers import (
    NS,
    by_name,
    claim,
    claims_in,
    from_template,
    get_claim,
    get_pod,
    new_ctx,
    pod,
    pod_ref,
    settle,
    template,
)


class CountingStore:
    """The memory store, counting reads of single objects and updates (API round trips in serve)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gets: list[tuple[str, str]] = []
        self.updates: list[str] = []

    def get(self, rt: kinds.ResourceType, name: str, namespace: str | None = None) -> Any:
        self.gets.append((rt.kind, name))
        return self.inner.get(rt, name, namespace)

    def update(self, obj: Any) -> Any:
        self.updates.append(obj["metadata"]["name"])
        return self.inner.update(obj)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def test_a_change_that_concerns_no_claim_queues_nothing() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(pod("p", [from_template("gpu", "gpu")]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    decisions = len(ctx.decisions)
    ctx.store.restore(pod("plain"))  # no resourceClaims
    ctx.store.patch(kinds.POD, "p", NS, {"metadata": {"labels": {"x": "y"}}})  # p needs nothing new
    ctrl.reconcile(ctx)
    assert len(ctrl.queue) == 0 and ctx.next_wakeup() is None
    assert len(ctx.decisions) == decisions


def test_a_template_created_later_gets_the_waiting_pod_its_claim() -> None:
    """The template's own event enqueues the pods that use it: no pass over every pod."""
    ctx = new_ctx()
    ctx.store.restore(pod("p", [from_template("gpu", "late")]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    assert not claims_in(ctx)
    ctx.store.restore(template("late"))
    settle(ctx, [ctrl])
    (c,) = claims_in(ctx)
    assert get_pod(ctx, "p")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": c["metadata"]["name"]}]


def test_a_conflict_is_retried_after_backoff_without_a_second_write() -> None:
    ctx = new_ctx()
    gone = ctx.store.restore(pod("gone"))
    ctx.store.delete(kinds.POD, "gone", NS)
    ctx.store.restore(claim("c", reserved=[pod_ref(gone)]))
    writes: list[str] = []

    class ConflictOnce:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def update_status(self, obj: dict[str, Any]) -> Any:
            writes.append(obj["metadata"]["name"])
            if len(writes) == 1:
                raise Conflict("the object has been modified; please apply your changes to the latest version")
            return self.inner.update_status(obj)

        def __getattr__(self, attr: str) -> Any:
            return getattr(self.inner, attr)

    flaky = new_ctx()
    flaky.store, flaky.clock = ConflictOnce(ctx.store), ctx.clock  # type: ignore[assignment]
    ctrl = ResourceClaimController()
    start = flaky.now()
    assert ctrl.reconcile(flaky)
    wake = flaky.next_wakeup()
    assert wake is not None and (wake - start).total_seconds() == 0.005  # client-go's first backoff
    assert "allocation" in (get_claim(ctx, "c") or {})["status"]
    settle(flaky, [ctrl])
    c = get_claim(ctx, "c")
    assert c is not None and "allocation" not in c["status"]
    assert writes == ["c", "c"]


def test_a_pod_seen_deleted_is_released_without_asking_the_api() -> None:
    """Upstream's deletedObjects cache: a pod the watch saw go is gone for sure; only a pod
    the cache never had is checked against the API server."""
    ctx = new_ctx()
    p = ctx.store.restore(pod("p", [by_name("gpu", "c")], node="node-a"))
    ctx.store.restore(claim("c", reserved=[pod_ref(p)]))
    counting = new_ctx()
    counting.store, counting.clock = CountingStore(ctx.store), ctx.clock  # type: ignore[assignment]
    ctrl = ResourceClaimController()
    settle(counting, [ctrl])
    ctx.store.delete(kinds.POD, "p", NS, grace_period_seconds=0)
    settle(counting, [ctrl, SimulatedKubelet()])
    c = get_claim(ctx, "c")
    assert c is not None and "reservedFor" not in c["status"]
    assert ("Pod", "p") not in counting.store.gets  # type: ignore[attr-defined]


def test_a_claim_of_a_running_pod_is_not_queued_for_each_change_and_goes_when_the_pod_is_done() -> None:
    """A claim whose sync would find nothing (its pod runs) is not queued for every change of
    it; the pod's own event queues it when the pod finishes, and it is released then."""
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(pod("p", [from_template("gpu", "gpu")], node="node-a"))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    (c,) = claims_in(ctx)
    running = get_pod(ctx, "p")
    running["status"]["phase"] = "Running"
    ctx.store.update_status(running)
    ctrl.reconcile(ctx)
    synced: list[Any] = []
    sync_claim = ctrl._sync_claim
    ctrl._sync_claim = lambda key: synced.append(key) or sync_claim(key)  # type: ignore[method-assign]
    ctx.store.patch(kinds.RESOURCE_CLAIM, c["metadata"]["name"], NS, {"metadata": {"labels": {"x": "y"}}})
    ctrl.reconcile(ctx)
    assert synced == []
    done = get_pod(ctx, "p")
    done["status"]["phase"] = "Succeeded"
    ctx.store.update_status(done)
    settle(ctx, [ctrl])
    assert synced and claims_in(ctx) == []  # released and deleted: the pod's event queued it


def test_a_late_event_of_a_claim_gone_with_its_finalizer_sends_no_second_removal() -> None:
    """In serve the watch may bring an older copy (our delete's event) after the finalizer's
    removal took the claim away: syncing it again would be a write the server answers 404."""
    ctx = new_ctx()
    ctx.store.restore(claim("c"))
    ctx.store.delete(kinds.RESOURCE_CLAIM, "c", NS)
    stale = ctx.store.get(kinds.RESOURCE_CLAIM, "c", NS)  # being deleted, finalizer on
    counting = new_ctx()
    counting.store, counting.clock = CountingStore(ctx.store), ctx.clock  # type: ignore[assignment]
    ctrl = ResourceClaimController()
    ctrl.reconcile(counting)  # drops the finalizer; the watch's DELETED event is not read yet
    assert get_claim(ctx, "c") is None
    assert counting.store.updates == ["c"]  # type: ignore[attr-defined]
    ctrl.claims.put(stale)  # our delete's event, read after the removal's answer
    ctrl._sync_claim((NS, "c"))
    assert counting.store.updates == ["c"]  # type: ignore[attr-defined]
