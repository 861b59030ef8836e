"""Serve mode's binder: a work queue over the shared BindRequest feed (no round barrier)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from drasched.api import kinds
from drasched.binder.binder import Backoff
from drasched.binder.controller import BinderController
from drasched.serve.live import LiveContext
from drasched.serve.metrics import Metrics
from drasched.store.informer import InformedStore, SharedInformers
from tests.unit.serve.blocking_store import BlockingStore


class FlakyBindStore(BlockingStore):
    """The first ``failures`` bindings fail as a dropped connection would."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.binds = 0

    def bind(self, *args: Any, **kwargs: Any) -> Any:
        self.binds += 1
        if self.binds <= self.failures:
            raise ConnectionResetError("connection reset by peer")
        return self._write(self.inner.bind, *args, **kwargs)


def _objects(store: BlockingStore, pods: int) -> None:
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    for i in range(pods):
        store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
                      "spec": {"containers": [{"name": "c", "image": "i"}]}})
        store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
                      "metadata": {"name": f"p{i}", "namespace": "default"},
                      "spec": {"podName": f"p{i}", "selectedNode": "n1"}})


def _run_until_bound(store: BlockingStore, controller: BinderController, pods: int) -> dict[str, Any]:
    informers = SharedInformers(store, watch_timeout=0.2)
    informers.start([kinds.POD, kinds.NODE, kinds.RESOURCE_CLAIM, kinds.BIND_REQUEST])
    assert informers.wait_for_sync(5)
    ctx = LiveContext(InformedStore(store, informers), Metrics())
    deadline = time.monotonic() + 120  # a hang guard, not a speed limit
    try:
        while True:
            controller.reconcile(ctx)
            brs = {b["metadata"]["name"]: b for b in store.list(kinds.BIND_REQUEST).items}
            if all((b.get("status") or {}).get("phase") == "Succeeded" for b in brs.values()) and len(brs) == pods:
                return brs
            assert time.monotonic() < deadline, brs
            wake = ctx.next_wakeup()
            pause = 0.01 if wake is None else min(0.05, max(0.0, (wake - datetime.now(UTC)).total_seconds()))
            time.sleep(pause)
    finally:
        controller.close()
        informers.stop(join_timeout=2.0)


def test_every_request_is_bound_once_and_a_transient_failure_is_retried_after_its_backoff() -> None:
    store = FlakyBindStore(failures=1)
    _objects(store, 20)
    brs = _run_until_bound(store, BinderController(workers=4, backoff=Backoff(initial=0.2)), 20)
    assert store.binds == 21  # one failed attempt, retried once; no request handed to a worker twice
    attempts = sorted(int(b["status"]["attempts"]) for b in brs.values())
    assert attempts == [1] * 19 + [2]
    assert all(p["spec"].get("nodeName") == "n1" for p in store.list(kinds.POD).items)
