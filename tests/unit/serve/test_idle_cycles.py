"""Serve mode: while nothing waits to be placed, changes start a cycle at most every few seconds."""

from __future__ import annotations

from datetime import timedelta

from drasched.api import kinds
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.controller import SchedulerController
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "drasched", "containers": [{"name": "c", "image": "i"}]}}


def _touch(ctx: SimContext, value: str) -> None:
    ctx.store.patch(kinds.NODE, "n1", None, {"metadata": {"labels": {"touched": value}}})


def _cluster() -> tuple[SimContext, VirtualClock]:
    """One node and one pod to place."""
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    ctx.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                      "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
    ctx.store.create(_pod("a"))
    return ctx, clock


def test_changes_with_nothing_to_place_wait_for_the_idle_period_new_pods_do_not() -> None:
    ctx, clock = _cluster()
    sched = SchedulerController(SchedulerConfig(), idle_cycle_period=5.0)
    assert sched.reconcile(ctx) and sched.cycles == 1  # placed: a BindRequest for a
    assert ctx.store.get(kinds.BIND_REQUEST, "a", "default")["spec"]["selectedNode"] == "n1"

    _touch(ctx, "1")  # a is placed by a live BindRequest: nothing waits
    assert not sched.reconcile(ctx) and sched.cycles == 1
    assert ctx.next_wakeup() == clock.now() + timedelta(seconds=5)
    clock.advance(5)
    sched.reconcile(ctx)
    assert sched.cycles == 2  # the refresh (queue statuses) comes at the end of the period

    _touch(ctx, "2")
    assert not sched.reconcile(ctx) and sched.cycles == 2
    ctx.store.create(_pod("b"))  # a pod to place: a cycle at once
    sched.reconcile(ctx)
    assert sched.cycles == 3
    assert ctx.store.get(kinds.BIND_REQUEST, "b", "default")["spec"]["selectedNode"] == "n1"


def test_embedded_runs_a_cycle_per_change() -> None:
    ctx, _ = _cluster()
    sched = SchedulerController(SchedulerConfig())
    sched.reconcile(ctx)
    _touch(ctx, "1")
    sched.reconcile(ctx)
    assert sched.cycles == 2


def _cpu_pod(name: str) -> dict:
    p = _pod(name)
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    return p


def test_a_queues_usage_is_written_at_most_once_a_period_and_its_last_value_at_the_end() -> None:
    ctx, clock = _cluster()
    sched = SchedulerController(SchedulerConfig(), idle_cycle_period=5.0, queue_status_period=1.0)

    def allocated() -> dict:
        return ((ctx.store.get(kinds.QUEUE, "default") or {}).get("status") or {}).get("allocated") or {}

    sched.reconcile(ctx)  # a placed (it requests nothing), the default Queue created
    ctx.store.create(_cpu_pod("b"))
    sched.reconcile(ctx)  # the queue's first status: written at once
    assert allocated() == {"cpu": "2"}
    ctx.store.create(_cpu_pod("c"))
    sched.reconcile(ctx)  # c placed: the numbers moved, but the last write is younger than 1 s
    assert allocated() == {"cpu": "2"}
    assert ctx.next_wakeup() == clock.now() + timedelta(seconds=1)
    clock.advance(1)
    sched.reconcile(ctx)
    assert allocated() == {"cpu": "4"}, "the queue's usage was not written once the period ended"


def test_pods_parked_until_their_claim_exists_start_no_cycle_until_it_does() -> None:
    """A pod naming a claim nobody has created yet fails once and is parked: the changes that
    follow (here a placed pod's label; under churn, every event of the bound pods and their
    claims) start no cycle, as none could place it; the claim's creation does, and it is placed."""
    ctx, _ = _cluster()
    sched = SchedulerController(SchedulerConfig(), idle_cycle_period=5.0)
    sched.reconcile(ctx)  # a placed
    waiting = _pod("w")
    waiting["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "later"}]
    waiting["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    ctx.store.create(waiting)
    sched.reconcile(ctx)
    assert sched.cycles == 2  # tried: it waits for its claim
    ctx.store.patch(kinds.POD, "a", "default", {"metadata": {"labels": {"touched": "1"}}})
    assert not sched.reconcile(ctx) and sched.cycles == 2
    ctx.store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                      "metadata": {"name": "later", "namespace": "default"},
                      "spec": {"devices": {"requests": []}}})
    sched.reconcile(ctx)
    assert sched.cycles == 3
    assert ctx.store.get(kinds.BIND_REQUEST, "w", "default")["spec"]["selectedNode"] == "n1"
