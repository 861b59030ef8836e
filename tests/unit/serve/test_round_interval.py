"""How long serve's scheduler thread rests between rounds: short while few pods wait (each is
placed at once), long in a burst (the rest of the burst joins the next cycle)."""

from __future__ import annotations

from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.controller import QUICK_ROUND_INTERVAL, QUICK_ROUND_PODS, SchedulerController
from drasched.serve.main import _round_interval
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "drasched",
                     "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}


def _waiting(pods: int) -> SchedulerController:
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    for i in range(pods):  # no node: every pod waits
        ctx.store.create(_pod(f"p{i}"))
    sched = SchedulerController(SchedulerConfig())
    sched.reconcile(ctx)
    return sched


def test_few_waiting_pods_get_the_quick_rest() -> None:
    sched = _waiting(QUICK_ROUND_PODS)
    assert sched.waiting_pods == QUICK_ROUND_PODS
    assert _round_interval([sched], 0.05) == QUICK_ROUND_INTERVAL


def test_a_burst_gets_the_longer_rest() -> None:
    sched = _waiting(QUICK_ROUND_PODS + 1)
    assert _round_interval([sched], 0.05) == 0.05


def test_a_lane_without_the_scheduler_keeps_its_own() -> None:
    assert _round_interval([], 0.005) == 0.005
