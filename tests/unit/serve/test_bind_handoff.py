"""Serve mode: a lone pod's placement goes to the binder in process, with no BindRequest written;
a gang's members still get theirs (drasched.scheduler.bindrecord)."""

from __future__ import annotations

import time
from typing import Any

from drasched.api import kinds
from drasched.api.errors import Invalid
from drasched.binder.controller import BinderController
from drasched.control import BindHandoff
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.controller import SchedulerController
from drasched.serve.live import LiveContext
from drasched.serve.metrics import Metrics
from drasched.store.informer import InformedStore, SharedInformers
from tests.unit.serve.blocking_store import BlockingStore

NS = "default"
DRIVER = "gpu.example.com"


class RefusingBindStore(BlockingStore):
    """The first ``refusals`` bindings are refused for good (the binder rolls back and fails)."""

    def __init__(self, refusals: int = 0) -> None:
        super().__init__()
        self.refusals = refusals
        self.binds = 0

    def bind(self, *args: Any, **kwargs: Any) -> Any:
        self.binds += 1
        if self.binds <= self.refusals:
            raise Invalid("binding refused for the test")
        return self._write(self.inner.bind, *args, **kwargs)


def _cluster(store: BlockingStore) -> None:
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                  "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpus"},
                  "spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1,
                                                                       "resourceSliceCount": 1},
                           "devices": [{"name": f"gpu-{i}"} for i in range(4)]}})


def _pod(name: str, *, claim: str | None = None, group: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "i"}
    spec: dict[str, Any] = {"schedulerName": "drasched", "containers": [container]}
    if claim:
        container["resources"] = {"claims": [{"name": "gpu"}]}
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    md: dict[str, Any] = {"name": name, "namespace": NS}
    if group:
        md["labels"] = {"drasched.io/pod-group": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def _claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}


def _serve(store: BlockingStore, want_bound: set[str],
           failed: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The scheduler and the binder over shared informers, as serve wires them, until every pod
    of ``want_bound`` is bound; the pods as the store holds them then. ``failed`` collects the
    failed requests the scheduler's bind backoff counted."""
    handoff = BindHandoff()
    sched = SchedulerController(SchedulerConfig(), bind_handoff=handoff, gang_backoff=True)
    observe = sched.bind_backoff.observe

    def counted(batch: Any, now: Any) -> None:
        batch = list(batch)
        if failed is not None:
            failed.extend(br for _, _, br in batch)
        observe(batch, now)

    sched.bind_backoff.observe = counted  # type: ignore[method-assign]
    binder = BinderController(workers=4, record_success=False, handoff=handoff)
    informers = SharedInformers(store, watch_timeout=0.2)
    informers.start([*sched.cache.watched, kinds.NODE])
    assert informers.wait_for_sync(5)
    ctx = LiveContext(InformedStore(store, informers), Metrics())
    deadline = time.monotonic() + 120  # a hang guard, not a speed limit
    try:
        while True:
            sched.reconcile(ctx)
            binder.reconcile(ctx)
            pods = store.list(kinds.POD).items
            if {p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")} >= want_bound:
                return pods
            assert time.monotonic() < deadline, [(p["metadata"]["name"], p.get("status")) for p in pods]
            time.sleep(0.02)
    finally:
        binder.close()
        sched.close()
        informers.stop(join_timeout=2.0)


def test_a_lone_pod_is_bound_without_a_bindrequest_its_claim_is_the_record() -> None:
    store = RefusingBindStore()
    _cluster(store)
    store.create(_claim("one-gpu"))
    store.create(_pod("lone", claim="one-gpu"))
    store.create(_pod("plain"))

    _serve(store, {"lone", "plain"})

    assert store.list(kinds.BIND_REQUEST).items == []  # neither placement was written as a request
    claim = store.get(kinds.RESOURCE_CLAIM, "one-gpu", NS)
    assert claim["status"]["allocation"]["devices"]["results"][0]["pool"] == "n1"
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["lone"]
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    events = [(e["involvedObject"]["name"], e["reason"]) for e in store.list(kinds.EVENT).items]
    assert ("lone", "Scheduled") in events and ("plain", "Scheduled") in events


def test_a_gangs_members_are_still_written_as_bindrequests() -> None:
    store = RefusingBindStore()
    _cluster(store)
    store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
                  "metadata": {"name": "g", "namespace": NS}, "spec": {"minMember": 2}})
    for i in range(2):
        store.create(_pod(f"g-{i}", group="g"))
    store.create(_pod("lone"))

    _serve(store, {"g-0", "g-1", "lone"})

    assert sorted(b["metadata"]["name"] for b in store.list(kinds.BIND_REQUEST).items) == ["g-0", "g-1"]


def test_a_handed_over_bind_that_fails_is_rolled_back_backs_off_and_is_placed_again() -> None:
    store = RefusingBindStore(refusals=1)
    _cluster(store)
    store.create(_claim("one-gpu"))
    store.create(_pod("lone", claim="one-gpu"))

    failed: list[dict[str, Any]] = []
    (pod,) = _serve(store, {"lone"}, failed)

    assert store.binds == 2  # refused once, bound on the second placement
    # the failure came back to the scheduler as a failed request would, and its backoff counted it once
    assert {(br["spec"]["podUID"], br["status"]["phase"], br["status"]["reason"]) for br in failed} == {
        (pod["metadata"]["uid"], "Failed", "Invalid")}
    assert store.list(kinds.BIND_REQUEST).items == []
    events = [(e["reason"], e["message"]) for e in store.list(kinds.EVENT).items
              if e["involvedObject"]["name"] == "lone"]
    assert any(reason == "FailedScheduling" and "binding refused for the test" in message
               for reason, message in events)
    claim = store.get(kinds.RESOURCE_CLAIM, "one-gpu", NS)
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["lone"]  # allocated again after the rollback
