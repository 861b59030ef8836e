"""The controller loop in an embedded run: writes once, then stays quiet until something changes."""

from __future__ import annotations

from drasched.api import kinds
from drasched.scheduler.controller import SchedulerController
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore
from tests.unit.scheduler.helpers import node, pod, queue


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
    assert cond["message"] == "0/1 nodes are available: 1 insufficient nvidia.com/gpu."
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


def test_a_failed_bind_request_is_replaced() -> None:
    ctx = _ctx(node("a"), pod("p"))
    sc = SchedulerController()
    sc.reconcile(ctx)
    br = ctx.store.get(kinds.BIND_REQUEST, "p", "default")
    br["status"] = {"phase": "Failed", "reason": "Conflict"}
    ctx.store.update_status(br)
    assert sc.reconcile(ctx)
    again = ctx.store.get(kinds.BIND_REQUEST, "p", "default")
    assert again["metadata"]["uid"] != br["metadata"]["uid"]
    assert (again.get("status") or {}).get("phase") != "Failed"
