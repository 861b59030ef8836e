"""A BindRequest create whose answer was lost is read back before the next cycle decides.

The connection to the API server can be cut after the server applied a write (the fault
tests' proxy does it on purpose). The scheduler then does not know whether the BindRequest
exists, and its cache will not show it until the watch does. A cycle run in between sees
the pod pending and its device free, and gave that device to another pod while the binder
carried out the first BindRequest: two claims held one device (a fault test caught it).
kube-scheduler keeps such a pod assumed until its bind is known to have failed; here the
next cycle waits until each such create is read back.
"""

from __future__ import annotations

from collections.abc import Iterator

from drasched.api import kinds
from drasched.api.errors import ApiError, NotFound
from drasched.scheduler.controller import SchedulerController
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.base import WatchEvent
from drasched.store.memory import MemoryStore
from tests.unit.scheduler.helpers import claim, device_class, node, pod, resource_slice

Obj = dict


class CutAnswers(MemoryStore):
    """A memory store whose next BindRequest create answers as a cut connection does, applied
    (``apply``) or not; its BindRequest watch stays silent while ``lagging``, as a slow watch is,
    and its reads fail while ``down``."""

    def __init__(self, clock: VirtualClock, apply: bool) -> None:
        super().__init__(clock=clock.now, auto_namespaces=True)
        self.apply_cut = apply
        self.cut_next = True
        self.lagging = True
        self.down = False

    def create(self, obj: Obj) -> Obj:
        if obj.get("kind") == "BindRequest" and self.cut_next:
            self.cut_next = False
            if self.apply_cut:
                super().create(obj)
            raise ApiError("POST bindrequests: no answer from the API server: connection reset",
                           code=503, reason="ServiceUnavailable")
        return super().create(obj)

    def get(self, rt: kinds.ResourceType, name: str, namespace: str | None = None) -> Obj:
        if self.down:
            raise ApiError("GET: no answer from the API server", code=503, reason="ServiceUnavailable")
        return super().get(rt, name, namespace)

    def watch(self, rt: kinds.ResourceType, resource_version: str, namespace: str | None = None,
              timeout_seconds: float = 1.0) -> Iterator[WatchEvent]:
        if rt is kinds.BIND_REQUEST and self.lagging:
            return iter(())
        return super().watch(rt, resource_version, namespace, timeout_seconds)


NEVER_PREEMPTS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                  "value": 1000, "preemptionPolicy": "Never"}


def _claimed(name: str, claim_name: str, **kw: object) -> Obj:
    p = pod(name, claims=[{"name": "g", "resourceClaimName": claim_name}], **kw)
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "g"}]
    return p


def _cluster(apply: bool) -> tuple[SimContext, CutAnswers, SchedulerController]:
    clock = VirtualClock()
    store = CutAnswers(clock, apply)
    ctx = SimContext(store, clock)
    for obj in (node("n1"), device_class(), resource_slice("n1", 1), NEVER_PREEMPTS,
                claim("c-a"), claim("c-b"), _claimed("a", "c-a")):
        store.create(obj)
    sched = SchedulerController()
    sched.reconcile(ctx)  # places a on the one device; the create is applied or not, the answer lost
    assert sched.last is not None and [p.pod.name for p in sched.last.placements] == ["a"]
    # b comes next; it outranks a, but may not preempt: only a free device places it
    store.create(_claimed("b", "c-b", priorityClassName="high"))
    return ctx, store, sched


def _bind_requests(store: MemoryStore) -> dict[str, list[str]]:
    """Pod name -> the devices its BindRequest allocates, as the server has them."""
    return {br["spec"]["podName"]: [r["device"] for c in br["spec"].get("resourceClaimAllocations") or []
                                    for r in c["allocation"]["devices"]["results"]]
            for br in store.list(kinds.BIND_REQUEST).items}


def test_a_create_applied_but_unanswered_keeps_its_device_from_the_next_pod() -> None:
    ctx, store, sched = _cluster(apply=True)
    assert _bind_requests(store) == {"a": ["dev-0"]}  # the server has it; the watch does not show it yet
    sched.reconcile(ctx)
    assert _bind_requests(store) == {"a": ["dev-0"]}  # b was not given a's device
    assert sched.last is not None and not sched.last.placements
    store.lagging = False
    sched.reconcile(ctx)
    assert _bind_requests(store) == {"a": ["dev-0"]}


def test_a_create_not_applied_places_the_pods_again() -> None:
    ctx, store, sched = _cluster(apply=False)
    assert _bind_requests(store) == {}
    sched.reconcile(ctx)  # read back: not there, so the device is free: b outranks a and takes it
    assert _bind_requests(store) == {"b": ["dev-0"]}


def test_while_the_server_does_not_answer_the_read_back_no_cycle_decides() -> None:
    ctx, store, sched = _cluster(apply=True)
    store.down = True
    cycles = sched.cycles
    assert sched.reconcile(ctx) is False
    assert sched.cycles == cycles and _bind_requests(store) == {"a": ["dev-0"]}
    assert ctx.next_wakeup() is not None  # it comes back on its own to try again
    store.down = False
    sched.reconcile(ctx)
    assert _bind_requests(store) == {"a": ["dev-0"]}
    try:
        store.get(kinds.BIND_REQUEST, "b", "default")
        raise AssertionError("b got a BindRequest for a device that is a's")
    except NotFound:
        pass
