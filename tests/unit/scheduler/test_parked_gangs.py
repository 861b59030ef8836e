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


def _cluster(gang_backoff: bool = False) -> tuple[SimContext, VirtualClock, SchedulerController]:
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    ctx.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                      "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    running = ctx.store.create(_pod("running", "3", node="n1"))
    running["status"]["phase"] = "Running"
    ctx.store.update_status(running)
    ctx.store.create(_pod("big", "2"))
    sched = SchedulerController(SchedulerConfig(), gang_backoff=gang_backoff)
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


def _finish(ctx: SimContext, name: str) -> None:
    pod = ctx.store.get(kinds.POD, name, "default")
    pod["status"]["phase"] = "Succeeded"
    ctx.store.update_status(pod)


def test_with_backoff_what_frees_room_waits_for_the_backoff_to_end() -> None:
    """Upstream's backoff queue: a pod that failed waits ``podInitialBackoffSeconds`` (1 s),
    doubling with each failure up to ``podMaxBackoffSeconds`` (10 s), even when an event that
    may help arrives meanwhile; once the backoff ends it is tried without a further event."""
    ctx, clock, sched = _cluster(gang_backoff=True)
    _finish(ctx, "running")
    sched.reconcile(ctx)
    assert _tried(sched) == set(), "tried during its 1 s backoff"
    assert ctx.next_wakeup() == clock.now() + timedelta(seconds=1)
    clock.advance(1)
    sched.reconcile(ctx)  # nothing new happened: the backoff's end alone starts the cycle
    assert _tried(sched) == {"big"}


def test_with_backoff_each_failure_doubles_the_wait() -> None:
    ctx, clock, sched = _cluster(gang_backoff=True)
    tiny = ctx.store.create(_pod("tiny", "500m", node="n1"))
    tiny["status"]["phase"] = "Running"
    ctx.store.update_status(tiny)
    sched.reconcile(ctx)
    assert _tried(sched) == set()
    clock.advance(1)
    _finish(ctx, "tiny")  # 1 cpu free again: not the 2 big needs
    sched.reconcile(ctx)
    assert _tried(sched) == {"pod:default/big"}  # its first backoff (1 s) over: tried, failed again
    clock.advance(1.5)
    _finish(ctx, "running")  # now it would fit, but its second backoff is 2 s
    sched.reconcile(ctx)
    assert _tried(sched) == set()
    clock.advance(0.5)
    sched.reconcile(ctx)
    assert _tried(sched) == {"big"}


def _gpu_cluster() -> SimContext:
    """One node and a DeviceClass no slice publishes: a pod with a claim fails, with a reason."""
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    ctx.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                      "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    ctx.store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                      "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
    return ctx


def test_with_backoff_a_pod_waiting_for_its_claim_is_tried_as_soon_as_the_claim_is_there() -> None:
    """Not an attempt: upstream holds a pod whose claims do not exist yet before its queue
    (PreEnqueue), so their creation does not wait out a backoff."""
    ctx = _gpu_cluster()
    spec = {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}}
    ctx.store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                      "metadata": {"name": "gpu", "namespace": "default"}, "spec": spec})
    pod = _pod("p", "1")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    ctx.store.create(pod)
    sched = SchedulerController(SchedulerConfig(), gang_backoff=True)
    sched.reconcile(ctx)
    assert sched.last is not None and sched.last.failed_gangs == {"pod:default/p"}
    ctx.store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                      "metadata": {"name": "p-gpu-abcde", "namespace": "default"}, **spec})
    ctx.store.patch(kinds.POD, "p", "default", {"status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]}}, subresource="status")
    sched.reconcile(ctx)  # no time passed: no backoff held it
    assert _tried(sched) == {"pod:default/p"}  # tried (no device publishes the class: it fails again)
    assert "to be created" not in ctx.store.get(kinds.POD, "p", "default")["status"]["conditions"][0]["message"]


def test_a_pod_waiting_for_a_named_claim_is_tried_as_soon_as_the_claim_exists() -> None:
    """A pod naming a ResourceClaim that does not exist yet (``resourceClaimName``, or a
    template's claim its status names but the watch has not delivered) is held, not failed:
    upstream's dynamicresources PreEnqueue keeps it out of the active queue and the claim's
    Add event (its ``isSchedulableAfterClaimChange`` hint) brings it back at once, not after
    ``podMaxInUnschedulablePodsDuration``. The pod's own object does not change meanwhile."""
    ctx = _gpu_cluster()
    pod = _pod("p", "1")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared-gpu"}]
    ctx.store.create(pod)
    sched = SchedulerController(SchedulerConfig(), gang_backoff=True)
    sched.reconcile(ctx)
    assert sched.last is not None and sched.last.failed_gangs == {"pod:default/p"}
    sched.reconcile(ctx)
    assert _tried(sched) == set()  # nothing changed: held
    ctx.store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                      "metadata": {"name": "shared-gpu", "namespace": "default"},
                      "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}})
    sched.reconcile(ctx)  # no time passed
    assert _tried(sched) == {"pod:default/p"}  # tried (no device publishes the class: it fails again)
    message = ctx.store.get(kinds.POD, "p", "default")["status"]["conditions"][0]["message"]
    assert "to be created" not in message


def test_a_gang_waiting_for_a_pod_to_be_near_is_tried_when_pods_change() -> None:
    """InterPodAffinity's events (upstream EventsToRegister: Pod Add/Update/Delete): a pod whose
    required podAffinity no running pod satisfies yet is retried once a pod arrives, not only
    when resources are freed or after 5 minutes; an unrelated gang stays parked meanwhile."""
    ctx, _, sched = _cluster()
    web = _pod("web", "0.5")
    web["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    ctx.store.create(web)
    n1 = ctx.store.get(kinds.NODE, "n1")
    n1["metadata"]["labels"] = {"kubernetes.io/hostname": "n1"}
    ctx.store.update(n1)  # a node change rebuilds the world: big is tried again too
    sched.reconcile(ctx)
    assert sched.last is not None and "pod:default/web" in sched.last.failed_gangs
    sched.reconcile(ctx)
    assert _tried(sched) == set()  # both parked
    cache = _pod("cache", "0.5", node="n1")
    cache["metadata"]["labels"] = {"app": "cache"}
    ctx.store.create(cache)
    sched.reconcile(ctx)
    assert _tried(sched) == {"web"}  # big still waits for room
    assert ctx.store.get(kinds.BIND_REQUEST, "web", "default")["spec"]["selectedNode"] == "n1"


def test_a_gang_waiting_for_a_pod_to_be_near_stays_awake_to_pods_after_a_retry() -> None:
    """Retried after an unrelated pod moved, it fails again with the condition it already has
    (no condition write): it must still wake on the next pod change, not wait 5 minutes."""
    ctx, _, sched = _cluster()
    n1 = ctx.store.get(kinds.NODE, "n1")
    n1["metadata"]["labels"] = {"kubernetes.io/hostname": "n1"}
    ctx.store.update(n1)
    web = _pod("web", "0.5")
    web["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    ctx.store.create(web)
    sched.reconcile(ctx)
    assert sched.last is not None and "pod:default/web" in sched.last.failed_gangs
    ctx.store.create(_pod("filler", "0.1", node="n1"))  # an unrelated pod lands on a node
    sched.reconcile(ctx)
    assert _tried(sched) == {"pod:default/web"}  # tried again, still no cache pod: fails, same message
    cache = _pod("cache", "0.2", node="n1")
    cache["metadata"]["labels"] = {"app": "cache"}
    ctx.store.create(cache)
    sched.reconcile(ctx)
    assert _tried(sched) == {"web"}
