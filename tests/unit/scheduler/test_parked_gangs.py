"""A gang that failed waits until something gives resources back (upstream's queueing hints).

Upstream's scheduling queue moves an unschedulable pod back to the active queue only on a
cluster event its plugins' ``QueueingHint`` says may help, or after
``podMaxInUnschedulablePodsDuration`` (5 minutes). Here: a new pending pod does not make a
failed gang worth trying again; a pod that finishes does.
"""

from __future__ import annotations

from datetime import timedelta

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.controller import MAX_PARKED_SECONDS, WRITE_RETRY_SECONDS, SchedulerController
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore


def _pod(name: str, cpu: str, node: str | None = None) -> dict:
    spec: dict = {"schedulerName": "drasched",
                  "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _cluster() -> tuple[SimContext, VirtualClock, SchedulerController]:
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    ctx.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                      "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    running = ctx.store.create(_pod("running", "3", node="n1"))
    running["status"]["phase"] = "Running"
    ctx.store.update_status(running)
    ctx.store.create(_pod("big", "2"))
    sched = SchedulerController(SchedulerConfig())
    sched.reconcile(ctx)
    assert sched.last is not None and sched.last.failed_gangs == {"pod:default/big"}
    # The first cycle created the default Queue, with the settings the scheduler assumed without it.
    assert ctx.store.get(kinds.QUEUE, "default")["spec"] == {"priority": 100}
    sched.reconcile(ctx)  # so no queue setting changed: big is not tried again
    assert _tried(sched) == set()
    return ctx, clock, sched


def _tried(sched: SchedulerController) -> set[str]:
    assert sched.last is not None
    return {p.pod.name for p in sched.last.placements} | set(sched.last.failed_gangs)


def test_a_new_pending_pod_does_not_wake_a_failed_gang() -> None:
    ctx, _, sched = _cluster()
    ctx.store.create(_pod("small", "1"))
    sched.reconcile(ctx)
    assert _tried(sched) == {"small"}  # big was not tried: nothing gave anything back


def test_a_pod_that_finishes_wakes_it() -> None:
    ctx, _, sched = _cluster()
    running = ctx.store.get(kinds.POD, "running", "default")
    running["status"]["phase"] = "Succeeded"
    ctx.store.update_status(running)
    sched.reconcile(ctx)
    assert _tried(sched) == {"big"}
    assert ctx.store.get(kinds.BIND_REQUEST, "big", "default")["spec"]["selectedNode"] == "n1"


def test_after_five_minutes_it_is_tried_anyway() -> None:
    ctx, clock, sched = _cluster()
    clock.advance(MAX_PARKED_SECONDS)
    ctx.store.create(_pod("small", "1"))
    sched.reconcile(ctx)
    assert _tried(sched) == {"small", "pod:default/big"}


def test_a_gang_whose_condition_write_was_refused_is_not_parked_and_is_tried_again_soon() -> None:
    """The API server refused the PodScheduled write (restarting): nothing in the cache changes,
    so the scheduler must come back by itself, and must not park a gang it could not report."""
    clock = VirtualClock()
    store = MemoryStore(clock=clock.now, auto_namespaces=True)
    ctx = SimContext(store, clock)
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                  "status": {"allocatable": {"cpu": "1", "memory": "8Gi", "pods": "110"}}})
    store.create(_pod("big", "2"))
    store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "default"},
                  "spec": {}})
    sched = SchedulerController(SchedulerConfig())
    real_patch = store.patch

    def refuse(*args: object, **kwargs: object) -> object:
        raise ApiError("the server is restarting", code=503, reason="ServiceUnavailable")

    store.patch = refuse  # type: ignore[method-assign]
    sched.reconcile(ctx)
    assert sched._parked == {}
    assert ctx.next_wakeup() == clock.now() + timedelta(seconds=WRITE_RETRY_SECONDS)
    store.patch = real_patch  # type: ignore[method-assign]
    clock.advance(WRITE_RETRY_SECONDS)
    sched.reconcile(ctx)
    cond = store.get(kinds.POD, "big", "default")["status"]["conditions"]
    assert [(c["type"], c["status"]) for c in cond] == [("PodScheduled", "False")]


def test_a_queue_setting_change_wakes_it() -> None:
    ctx, _, sched = _cluster()
    queue = ctx.store.get(kinds.QUEUE, "default")
    queue["spec"] = {"priority": 200}
    ctx.store.update(queue)
    sched.reconcile(ctx)
    assert _tried(sched) == {"pod:default/big"}  # tried again (and still does not fit)
