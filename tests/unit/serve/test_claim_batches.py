"""Serve mode's claim controller serves a burst of pods in batches, oldest first."""

from __future__ import annotations

from drasched.api import kinds
from drasched.controllers.resourceclaim import ResourceClaimController
from drasched.serve.live import LiveContext
from drasched.serve.metrics import Metrics
from tests.unit.serve.blocking_store import BlockingStore


def _pod(name: str, created: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}]}}


def _store_with_template() -> BlockingStore:
    store = BlockingStore()
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "one", "namespace": "default"},
                  "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                      "deviceClassName": "gpu.example.com"}}]}}}})
    return store


def test_a_burst_gets_its_claims_a_batch_per_pass_oldest_first() -> None:
    store = _store_with_template()
    for i, name in enumerate(["e", "d", "c", "b", "a"]):  # e is the oldest
        store.create(_pod(name, f"2026-01-01T00:00:0{i}Z"))
    ctrl = ResourceClaimController(workers=3, batch=2)
    ctx = LiveContext(store, Metrics())

    def served() -> list[str]:
        pods = store.list(kinds.POD).items
        return sorted(p["metadata"]["name"] for p in pods if (p.get("status") or {}).get("resourceClaimStatuses"))

    uid = {p["metadata"]["name"]: p["metadata"]["uid"] for p in store.list(kinds.POD).items}
    try:
        assert ctrl.reconcile(ctx)
        assert served() == ["d", "e"] and len(store.list(kinds.RESOURCE_CLAIM).items) == 2
        # the rest are queued: the scheduler holds their "waiting for a claim" back meanwhile
        assert [n for n in "abcde" if ctrl.queued(uid[n])] == ["a", "b", "c"]
        assert ctrl.reconcile(ctx)
        assert served() == ["b", "c", "d", "e"]
        ctrl.reconcile(ctx)
        assert served() == ["a", "b", "c", "d", "e"] and len(store.list(kinds.RESOURCE_CLAIM).items) == 5
        assert not any(ctrl.queued(u) for u in uid.values())
        assert not ctrl.reconcile(ctx)  # settled: nothing more to write
    finally:
        ctrl.close()


def test_changes_are_handled_as_they_come_without_whole_passes() -> None:
    """Event-driven: a finished pod's claim goes in the next round (no pass period to wait
    for), and a change that concerns no claim queues nothing and writes nothing."""
    store = _store_with_template()
    store.create(_pod("a", "2026-01-01T00:00:00Z"))
    ctrl = ResourceClaimController()
    ctx = LiveContext(store, Metrics())
    assert ctrl.reconcile(ctx)  # a's claim is created and recorded
    while ctrl.reconcile(ctx):
        pass
    (claim,) = store.list(kinds.RESOURCE_CLAIM).items
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain", "namespace": "default"},
                  "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert not ctrl.reconcile(ctx) and len(ctrl.queue) == 0
    store.patch(kinds.POD, "a", "default", {"status": {"phase": "Succeeded"}}, subresource="status")
    assert ctrl.reconcile(ctx)  # at once: the claim of a done pod is deleted
    assert claim["metadata"]["name"] not in [c["metadata"]["name"] for c in store.list(kinds.RESOURCE_CLAIM).items]
    assert ctx.next_wakeup() is None
