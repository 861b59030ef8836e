"""The controller loop in an embedded run: writes once, then stays quiet until something changes."""

from __future__ import annotations

from drasched.api import kinds
from drasched.api.errors import TooManyRequests
from drasched.scheduler.controller import SchedulerController
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore
from tests.unit.scheduler.helpers import node, pod, podgroup, priority_class, queue
from tests.unit.scheduler.preemption_helpers import running


def _ctx(*objs: dict) -> SimContext:
    clock = VirtualClock()
    store = MemoryStore(clock=clock.now, auto_namespaces=True)
    for o in objs:
        store.create(o)
    return SimContext(store, clock)


def test_writes_bind_requests_conditions_and_queue_status_once() -> None:
    ctx = _ctx(node("a", gpu=1), queue("q"), pod("fits", gpu=1, queue="q"), pod("waits", gpu=1, queue="q"))
    sc = SchedulerController()
    assert sc.reconcile(ctx)
    br = ctx.store.get(kinds.BIND_REQUEST, "fits", "default")
    assert br["spec"]["selectedNode"] == "a" and br["metadata"]["ownerReferences"][0]["name"] == "fits"
    waits = ctx.store.get(kinds.POD, "waits", "default")
    cond = next(c for c in waits["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, "
                               "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    q = ctx.store.get(kinds.QUEUE, "q")
    assert q["status"]["allocated"] == {"nvidia.com/gpu": "1"}
    assert q["status"]["requested"] == {"nvidia.com/gpu": "2"}
    events = [e for e in ctx.store.list(kinds.EVENT).items if e["reason"] == "FailedScheduling"]
    assert len(events) == 1
    # Its own writes come back as events: one more cycle, which decides the same and writes nothing.
    assert not sc.reconcile(ctx)
    assert not sc.reconcile(ctx)
    assert sc.cycles == 2
    assert len([e for e in ctx.store.list(kinds.EVENT).items if e["reason"] == "FailedScheduling"]) == 1


def test_the_default_queue_is_created_when_pods_use_it() -> None:
    ctx = _ctx(node("a"), pod("p", cpu="1"))
    sc = SchedulerController()
    sc.reconcile(ctx)
    assert ctx.store.get(kinds.QUEUE, "default")["spec"] == {"priority": 100}  # the CRD's schema default
    sc.reconcile(ctx)
    assert ctx.store.get(kinds.QUEUE, "default")["status"]["allocated"] == {"cpu": "1"}


def _fail_bind(ctx: SimContext, name: str = "p") -> dict:
    br = ctx.store.get(kinds.BIND_REQUEST, name, "default")
    br["status"] = {"phase": "Failed", "reason": "Conflict"}
    return ctx.store.update_status(br)


def test_a_failed_bind_request_is_replaced_after_its_backoff() -> None:
    ctx = _ctx(node("a"), pod("p"))
    sc = SchedulerController()
    sc.reconcile(ctx)
    br = _fail_bind(ctx)
    sc.reconcile(ctx)
    assert ctx.store.get(kinds.BIND_REQUEST, "p", "default")["metadata"]["uid"] == br["metadata"]["uid"]
    ctx.clock.advance(1)  # upstream's podInitialBackoffSeconds
    assert sc.reconcile(ctx)
    again = ctx.store.get(kinds.BIND_REQUEST, "p", "default")
    assert again["metadata"]["uid"] != br["metadata"]["uid"]
    assert (again.get("status") or {}).get("phase") != "Failed"


def test_a_pod_whose_bind_keeps_failing_is_not_placed_in_a_tight_loop() -> None:
    """Each failed bind doubles the wait, 1 s up to 10 s, as upstream's backoff queue
    (kubernetes pkg/scheduler/backend/queue/scheduling_queue.go, calculateBackoffDuration)."""
    ctx = _ctx(node("a"), pod("p"))
    sc = SchedulerController()
    sc.reconcile(ctx)
    placed_at: list[float] = []
    start = ctx.clock.now()
    uid = None
    for _ in range(60):  # 60 cycles, half a second of virtual time apart
        br = ctx.store.get(kinds.BIND_REQUEST, "p", "default")
        if br["metadata"]["uid"] != uid:
            uid = br["metadata"]["uid"]
            placed_at.append((ctx.clock.now() - start).total_seconds())
            _fail_bind(ctx)
            sc.reconcile(ctx)  # the failure is seen at once: its backoff starts now
        ctx.clock.advance(0.5)
        sc.reconcile(ctx)
    assert placed_at == [0.0, 1.0, 3.0, 7.0, 15.0, 25.0]
    events = [e for e in ctx.store.list(kinds.EVENT).items if e["reason"] == "FailedScheduling"]
    assert events == []  # backing off is not "unschedulable"


def test_a_gang_waits_whole_while_one_member_backs_off() -> None:
    ctx = _ctx(node("a", cpu="8"), podgroup("g", 2), pod("p0", cpu="1", group="g"), pod("p1", cpu="1", group="g"))
    sc = SchedulerController()
    sc.reconcile(ctx)
    assert {b["metadata"]["name"] for b in ctx.store.list(kinds.BIND_REQUEST).items} == {"p0", "p1"}
    _fail_bind(ctx, "p0")
    _fail_bind(ctx, "p1")
    sc.reconcile(ctx)
    assert sc.last is not None and sc.last.placements == []
    ctx.clock.advance(1)
    sc.reconcile(ctx)
    assert {p.pod.name for p in sc.last.placements} == {"p0", "p1"}


class _RefusingStore(MemoryStore):
    """Refuses every eviction, as a budget the scheduler could not see would."""

    def __init__(self) -> None:
        super().__init__(auto_namespaces=True)
        self.asked: list[str] = []

    def evict(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        self.asked.append(name)
        raise TooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.")


def _preemption(store: MemoryStore) -> SimContext:
    for o in (node("a", gpu=1), queue("q"), priority_class(1), priority_class(10),
              running("low", "a", gpu=1, queue="q", priority=1), pod("high", gpu=1, queue="q", priority=10)):
        created = store.create({k: v for k, v in o.items() if k != "status"})
        if "status" in o:
            store.update_status({**created, "status": o["status"]})
    return SimContext(store, VirtualClock())


def test_evictions_go_through_the_eviction_api_with_an_event_and_a_nomination() -> None:
    ctx = _preemption(MemoryStore(auto_namespaces=True))
    assert SchedulerController().reconcile(ctx)
    assert ctx.store.get(kinds.POD, "low", "default")["metadata"]["deletionTimestamp"]
    high = ctx.store.get(kinds.POD, "high", "default")
    assert high["status"]["nominatedNodeName"] == "a"
    ev = next(e for e in ctx.store.list(kinds.EVENT).items if e["reason"] == "Preempted")
    assert ev["involvedObject"]["name"] == "low"
    assert ev["message"] == ("evicted by drasched on node a to make room for pod default/high: preemption: "
                             "priority 10 is above the victim's 1 in queue q")
    assert [(d.action, d.object) for d in ctx.decisions if d.action in ("evict", "nominate")] == [
        ("evict", "Pod/default/low"), ("nominate", "Pod/default/high")]


def test_a_refused_eviction_is_reported_and_the_victim_spared_for_a_while() -> None:
    store = _RefusingStore()
    ctx = _preemption(store)
    sc = SchedulerController()
    sc.reconcile(ctx)
    assert store.asked == ["low"]
    refused = [e for e in store.list(kinds.EVENT).items if e["reason"] == "EvictionRefused"]
    assert refused[0]["involvedObject"]["name"] == "high"
    assert refused[0]["message"].startswith("cannot evict pod default/low for it: Cannot evict pod")
    # The nomination of this cycle stands until the next one finds it cannot hold.
    store.patch(kinds.POD, "high", "default", {"metadata": {"labels": {"touched": "yes"}}})
    sc.reconcile(ctx)
    assert store.asked == ["low"]  # not asked again within the back-off
    assert "nominatedNodeName" not in store.get(kinds.POD, "high", "default")["status"]
    ctx.clock.advance(61)
    store.patch(kinds.POD, "high", "default", {"metadata": {"labels": {"touched": "again"}}})
    sc.reconcile(ctx)
    assert store.asked == ["low", "low"]
