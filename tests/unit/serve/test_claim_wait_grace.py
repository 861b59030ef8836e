"""Serve mode holds back "waiting for a claim from a template" while the claim controller catches up."""

from __future__ import annotations

from datetime import timedelta

import pytest

from drasched.api import kinds
from drasched.api.meta import format_time
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.controller import SchedulerController
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore


def _setup() -> tuple[SimContext, str]:
    clock = VirtualClock()
    store = MemoryStore(clock=clock.now, auto_namespaces=True)
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                  "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "one", "namespace": "default"},
                  "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                      "deviceClassName": "gpu.example.com"}}]}}}})
    created = format_time(clock.now())
    store.create({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "p", "namespace": "default", "creationTimestamp": created},
                  "spec": {"schedulerName": "drasched",
                           "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
                           "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}]}})
    return SimContext(store, clock), created


def _touch(ctx: SimContext, value: str) -> None:
    """A change somewhere in the cluster: the scheduler runs a new cycle."""
    ctx.store.patch(kinds.NODE, "n1", None, {"metadata": {"labels": {"touched": value}}})


def _condition(ctx: SimContext) -> str | None:
    pod = ctx.store.get(kinds.POD, "p", "default")
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return str(c.get("message"))
    return None


def test_the_wait_for_a_template_claim_is_written_only_after_the_grace_period() -> None:
    ctx, _ = _setup()
    sched = SchedulerController(SchedulerConfig(), claim_wait_grace=30.0)
    sched.reconcile(ctx)
    assert _condition(ctx) is None  # the claim controller normally creates the claim long before
    wake = ctx.next_wakeup()
    assert wake is not None and wake - ctx.now() == timedelta(seconds=30)
    ctx.clock.advance(31)
    ctx.store.patch(kinds.NODE, "n1", None, {"metadata": {"labels": {"touched": "yes"}}})  # a change: a new cycle
    sched.reconcile(ctx)
    assert "to be created from template" in (_condition(ctx) or "")


def test_without_a_grace_period_the_wait_is_written_at_once_as_embedded() -> None:
    ctx, _ = _setup()
    SchedulerController(SchedulerConfig()).reconcile(ctx)
    assert "to be created from template" in (_condition(ctx) or "")


@pytest.mark.parametrize("pod_age", [0, 300], ids=["new-pod", "pod-older-than-the-grace"])
def test_a_recorded_claim_not_yet_seen_is_held_back_from_the_first_cycle_that_saw_it(pod_age: int) -> None:
    """The pod status names its claim, but the claim's watch event has not arrived yet; the
    grace runs from the first cycle that saw the wait, however old the pod is."""
    ctx, _ = _setup()
    ctx.clock.advance(pod_age)
    ctx.store.patch(kinds.POD, "p", "default",
                    {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x1y2z"}]}},
                    subresource="status")
    sched = SchedulerController(SchedulerConfig(), claim_wait_grace=30.0)
    sched.reconcile(ctx)
    assert _condition(ctx) is None
    ctx.clock.advance(31)
    _touch(ctx, "yes")
    sched.reconcile(ctx)
    assert "waiting for ResourceClaim default/p-gpu-x1y2z to be created" in (_condition(ctx) or "")


def test_no_deadline_while_the_claim_controller_has_the_pod_queued() -> None:
    """A burst longer than the grace period: pods queued for a later pass are not marked."""
    ctx, _ = _setup()
    queued = {"yes": True}
    sched = SchedulerController(SchedulerConfig(), claim_wait_grace=30.0, claims_queued=lambda uid: queued["yes"])
    ctx.clock.advance(120)
    sched.reconcile(ctx)
    assert _condition(ctx) is None
    queued["yes"] = False  # served, yet no claim seen: the grace period starts now
    _touch(ctx, "yes")
    sched.reconcile(ctx)
    assert _condition(ctx) is None
    ctx.clock.advance(31)
    _touch(ctx, "again")
    sched.reconcile(ctx)
    assert "to be created from template" in (_condition(ctx) or "")


def test_a_claim_nobody_creates_is_reported_when_the_grace_ends_with_nothing_else_changing() -> None:
    """A pod naming a resourceClaimName that is never created: once the grace ends the scheduler
    writes why it waits, though nothing in the cluster changed (it waited for its 5 minute park)."""
    clock = VirtualClock()
    store = MemoryStore(clock=clock.now, auto_namespaces=True)
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                  "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
    store.create({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "p", "namespace": "default", "creationTimestamp": format_time(clock.now())},
                  "spec": {"schedulerName": "drasched",
                           "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
                           "resourceClaims": [{"name": "gpu", "resourceClaimName": "no-such-claim"}]}})
    ctx = SimContext(store, clock)
    sched = SchedulerController(SchedulerConfig(), claim_wait_grace=30.0)
    sched.reconcile(ctx)
    assert _condition(ctx) is None
    wake = ctx.next_wakeup()
    assert wake is not None and wake - ctx.now() <= timedelta(seconds=30)
    ctx.clock.advance_to(wake)
    sched.reconcile(ctx)  # woken, nothing changed
    assert "no-such-claim" in (_condition(ctx) or "")

