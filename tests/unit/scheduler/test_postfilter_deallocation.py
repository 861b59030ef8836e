"""Upstream DynamicResources PostFilter: an allocated claim that keeps its pod off every node the
other filters accept, reserved for nobody or for that pod alone, is deallocated."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import Conflict, Forbidden
from drasched.scheduler.controller import SchedulerController
from drasched.scheduler.cycle import DEALLOCATED
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore
from tests.unit.scheduler.helpers import (
    World,
    allocation,
    claim,
    device_class,
    messages,
    node,
    placed_nodes,
    pod,
    podgroup,
    queue,
    resource_slice,
)
from tests.unit.scheduler.preemption_helpers import running

Obj = dict[str, Any]
TAINT = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}
FILTERED = ("0/2 nodes are available: 1 node(s) had untolerated taint {maintenance: true}, "
            "1 resourceclaim not available on the node (claim default/c).")
NOT_HELPFUL = "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
"""DefaultPreemption's status after DynamicResources': both nodes are unresolvable for the pod
(the taint; the claim allocated elsewhere), so its dry run tries neither."""


def pinned_claim(name: str = "c", node_name: str = "a", reserved: list[Obj] | None = None) -> Obj:
    """A claim allocated ``dev-0`` on ``node_name``, its allocation pinned there by a node selector."""
    alloc = allocation(node_name, "dev-0")
    alloc["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    out = claim(name, allocation=alloc)
    if reserved:
        out["status"]["reservedFor"] = reserved
    return out


def user(name: str = "p", uid: str | None = None, **kw: Any) -> Obj:
    out = pod(name, cpu="1", claims=[{"name": "gpu", "resourceClaimName": "c"}], **kw)
    if uid:
        out["metadata"]["uid"] = uid
    return out


def cluster(*extra: Obj) -> list[Obj]:
    """Node ``a`` tainted, ``b`` free, one device on each."""
    return [node("a", taints=[TAINT]), node("b"), device_class(), resource_slice("a", 1), resource_slice("b", 1),
            *extra]


def test_an_unreserved_claim_pinned_where_the_pod_cannot_go_is_deallocated() -> None:
    result = World(cluster(pinned_claim(), user())).cycle()
    assert placed_nodes(result) == {}
    assert [(p.name, c["metadata"]["name"]) for p, c in result.deallocate_claims] == [("p", "c")]
    # FitError.Error(): the PostFilter plugins' statuses joined by ", " (RunPostFilterPlugins); a
    # deallocation is Unschedulable, so DefaultPreemption runs after it
    assert messages(result) == {"p": f"{FILTERED} {DEALLOCATED}, {NOT_HELPFUL}"}


def test_a_claim_reserved_for_the_pod_alone_is_deallocated() -> None:
    ref = {"resource": "pods", "name": "p", "uid": "uid-p"}
    result = World(cluster(pinned_claim(reserved=[ref]), user(uid="uid-p"))).cycle()
    assert [c["metadata"]["name"] for _, c in result.deallocate_claims] == ["c"]


def test_a_claim_another_pod_holds_is_kept() -> None:
    other = {"resource": "pods", "name": "holder", "uid": "uid-holder"}
    world = World(cluster(pinned_claim(reserved=[other]), user()))
    result = world.cycle()
    assert result.deallocate_claims == []
    assert messages(result) == {"p": f"{FILTERED} still not schedulable, {NOT_HELPFUL}"}
    mine = {"resource": "pods", "name": "p", "uid": "uid-p"}
    result = World(cluster(pinned_claim(reserved=[mine, other]), user(uid="uid-p"))).cycle()
    assert result.deallocate_claims == []


def test_nothing_is_deallocated_when_no_node_was_rejected_for_the_claim() -> None:
    objs = cluster(pinned_claim(), user())
    objs[1] = node("b", cpu="500m")  # the pod fits on neither node, whatever the claim
    result = World(objs).cycle()
    assert result.deallocate_claims == []
    # b is short of cpu (Unschedulable: NodeResourcesFit fails before DynamicResources), so
    # DefaultPreemption tries it; the tainted a it does not
    assert messages(result) == {"p": "0/2 nodes are available: 1 Insufficient cpu, "
                                     "1 node(s) had untolerated taint {maintenance: true}. still not schedulable, "
                                     "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
                                     "pod, 1 Preemption is not helpful for scheduling."}


def test_a_gang_member_does_not_deallocate() -> None:
    objs = cluster(pinned_claim(), podgroup("g", 2), user(group="g"), pod("q", cpu="1", group="g"))
    assert World(objs).cycle().deallocate_claims == []


def test_the_deallocation_comes_before_preemptions_message() -> None:
    """FitError.Error: the filters' message, then the PostFilter plugins' statuses joined by ", "
    (DynamicResources runs before DefaultPreemption)."""
    objs = cluster(pinned_claim(), queue("q"),
                   running("low", "b", cpu="1", queue="q", priority=1), user(queue="q", priority=10))
    result = World(objs).cycle()
    assert [c["metadata"]["name"] for _, c in result.deallocate_claims] == ["c"]
    assert result.evictions == []
    message = messages(result)["p"]
    assert message.startswith(f"{FILTERED} {DEALLOCATED}, preemption: 0/2 nodes are available: "), message


def _ctx(store: MemoryStore, objs: list[Obj]) -> SimContext:
    for o in objs:
        created = store.create({k: v for k, v in o.items() if k != "status"})
        if "status" in o:
            store.update_status({**created, "status": o["status"]})
    return SimContext(store, VirtualClock())


def test_the_controller_deallocates_then_the_claim_is_allocated_where_the_pod_fits() -> None:
    claim_obj = pinned_claim()
    claim_obj["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    ctx = _ctx(MemoryStore(auto_namespaces=True), cluster(claim_obj, user()))
    sc = SchedulerController()
    assert sc.reconcile(ctx)
    stored = ctx.store.get(kinds.RESOURCE_CLAIM, "c", "default")
    assert stored.get("status") in (None, {})
    assert stored["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert [(d.action, d.object) for d in ctx.decisions if d.action == "deallocate"] == [
        ("deallocate", "ResourceClaim/default/c")]
    sc.reconcile(ctx)
    br = ctx.store.get(kinds.BIND_REQUEST, "p", "default")
    assert br["spec"]["selectedNode"] == "b"
    assert br["spec"]["resourceClaimAllocations"][0]["allocation"]["devices"]["results"][0]["pool"] == "b"


class _RefusingStore(MemoryStore):
    """Refuses a claim's status update with ``error`` (once, or every time with ``always``)."""

    def __init__(self, error: Exception, always: bool = False) -> None:
        super().__init__(auto_namespaces=True)
        self.error, self.always, self.refused = error, always, 0
        self.armed = False

    def update_status(self, obj: Obj) -> Obj:
        if self.armed and obj.get("kind") == "ResourceClaim" and (self.always or not self.refused):
            self.refused += 1
            raise self.error
        return super().update_status(obj)


def test_a_conflict_is_left_to_the_next_cycle() -> None:
    store = _RefusingStore(Conflict("the object has been modified"))
    ctx = _ctx(store, cluster(pinned_claim(), user()))
    store.armed = True
    sc = SchedulerController()
    sc.reconcile(ctx)  # no exception
    assert store.refused == 1
    assert store.get(kinds.RESOURCE_CLAIM, "c", "default")["status"]["allocation"]
    assert not [d for d in ctx.decisions if d.action in ("deallocate", "error")]
    ctx.clock.advance(1)  # a refused write brings the next cycle soon
    sc.reconcile(ctx)
    assert not store.get(kinds.RESOURCE_CLAIM, "c", "default").get("status")


def test_an_api_error_is_a_decision_not_an_exception() -> None:
    store = _RefusingStore(Forbidden("resourceclaims/status is forbidden"), always=True)
    ctx = _ctx(store, cluster(pinned_claim(), user()))
    store.armed = True
    SchedulerController().reconcile(ctx)
    errors = [d.message for d in ctx.decisions if d.action == "error"]
    assert errors == ["cannot deallocate ResourceClaim for pod default/p: resourceclaims/status is forbidden"]
    assert store.get(kinds.RESOURCE_CLAIM, "c", "default")["status"]["allocation"]
