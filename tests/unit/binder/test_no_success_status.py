"""``drasched serve``'s binder writes no BindRequest status for a bind that succeeds: the
pod's binding is the record. Nothing is bound twice, and a restarted binder walking the old
BindRequests writes nothing and tells nothing (no second ``Scheduled`` event)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from drasched.api import kinds
from drasched.binder.controller import BinderController
from drasched.serve.live import LiveContext
from drasched.serve.metrics import Metrics
from drasched.sim.runner import simulate
from drasched.store.informer import InformedStore, SharedInformers
from drasched.store.memory import MemoryStore
from tests.unit.binder.helpers import FaultyStore

PODS = 12


def _cluster() -> MemoryStore:
    store = MemoryStore()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    for i in range(PODS):
        pod = store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
                            "spec": {"containers": [{"name": "c", "image": "i"}]}})
        store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
                      "metadata": {"name": f"p{i}", "namespace": "default"},
                      "spec": {"podName": f"p{i}", "podUID": pod["metadata"]["uid"], "selectedNode": "n1"}})
    return store


def _serve_binder(store: FaultyStore, rounds_after_bound: int = 5) -> list[str]:
    """Run a serve-mode binder (shared informers, workers) until every pod is bound and a few
    rounds more; the Event reasons it recorded."""
    informers = SharedInformers(store, watch_timeout=0.2)
    informers.start([kinds.POD, kinds.NODE, kinds.RESOURCE_CLAIM, kinds.BIND_REQUEST])
    assert informers.wait_for_sync(5)
    ctx = LiveContext(InformedStore(store, informers), Metrics())
    reasons: list[str] = []
    ctx.event = lambda obj, etype, reason, message, component="drasched": reasons.append(reason)  # type: ignore[method-assign]
    controller = BinderController(workers=4, record_success=False)
    deadline = time.monotonic() + 60  # a hang guard, not a speed limit
    extra = 0
    try:
        while extra < rounds_after_bound:
            controller.reconcile(ctx)
            if all(p["spec"].get("nodeName") for p in store.inner.list(kinds.POD).items) and not controller._in_flight:
                extra += 1
            assert time.monotonic() < deadline
            wake = ctx.next_wakeup()
            time.sleep(0.01 if wake is None else min(0.05, max(0.0, (wake - datetime.now(UTC)).total_seconds())))
    finally:
        controller.close()
        informers.stop(join_timeout=2.0)
    return reasons


def test_serve_binds_each_pod_once_without_a_status_write_and_a_restart_writes_nothing() -> None:
    inner = _cluster()
    first = FaultyStore(inner)
    reasons = _serve_binder(first)

    assert sorted(first.writes) == sorted(f"bind:Pod/p{i}" for i in range(PODS))  # no update_status
    assert reasons == ["Scheduled"] * PODS
    assert all("status" not in b for b in inner.list(kinds.BIND_REQUEST).items)

    restarted = FaultyStore(inner)
    assert _serve_binder(restarted) == [] and restarted.writes == []


def test_simulate_keeps_the_success_status_in_its_record() -> None:
    store = _cluster()
    objects: list[dict[str, Any]] = [o for rt in (kinds.NODE, kinds.POD, kinds.BIND_REQUEST)
                                     for o in store.list(rt).items]
    result = simulate(objects, controllers=[BinderController()])
    phases = {(b.get("status") or {}).get("phase") for b in result.store.list(kinds.BIND_REQUEST).items}
    assert phases == {"Succeeded"}


def test_over_a_plain_store_the_binder_settles_without_the_success_status() -> None:
    """Without shared informers (serve over a plain store) the binder follows the store's watch:
    a request it bound leaves its pending set, so the loop goes quiet."""
    store = _cluster()
    objects: list[dict[str, Any]] = [o for rt in (kinds.NODE, kinds.POD, kinds.BIND_REQUEST)
                                     for o in store.list(rt).items]
    controller = BinderController(record_success=False)
    result = simulate(objects, controllers=[controller])
    assert result.quiescent and controller._pending == set()
    assert all(p["spec"].get("nodeName") == "n1" for p in result.store.list(kinds.POD).items)
    assert all("status" not in b for b in result.store.list(kinds.BIND_REQUEST).items)
    assert [d["action"] for d in result.decisions] == ["bind"] * PODS
