"""Nominated preemptors: bound once their victims are gone, holding their room until then."""

from __future__ import annotations

from drasched.api import kinds
from tests.unit.scheduler.helpers import World, claim, device_class, node, placed_nodes, pod, queue, resource_slice
from tests.unit.scheduler.preemption_helpers import held_claim, priority_class, ref, running, uses


def _nominated(name: str, node_name: str, **kw: object) -> dict:
    p = pod(name, **kw)  # type: ignore[arg-type]
    p["status"] = {"nominatedNodeName": node_name}
    return p


def _world(*pending: dict) -> World:
    """Node a: 2 devices, v1 and v2 (being deleted: evicted for "h") each hold one; node b: 1 free device."""
    w = World([node("a"), node("b"), device_class(), resource_slice("a", 2), resource_slice("b", 1), queue("q"),
               priority_class("low", 100), priority_class("high", 1000),
               held_claim("c1", "a", "dev-0", consumers=(ref("v1"),)),
               held_claim("c2", "a", "dev-1", consumers=(ref("v2"),)),
               running("v1", "a", queue="q", claims=uses("c1"), priorityClassName="low"),
               running("v2", "a", queue="q", claims=uses("c2"), priorityClassName="low"),
               claim("wanted", count=2), claim("small", count=1), *pending])
    for v in ("v1", "v2"):
        w.store.delete(kinds.POD, v, "default")  # graceful: they are terminating
    return w


def test_the_nominated_pod_holds_releasing_room_and_nobody_else_gets_it() -> None:
    w = _world(_nominated("h", "a", queue="q", claims=uses("wanted"), priorityClassName="high"),
               pod("other", queue="q", claims=uses("small"), nodeSelector={"kubernetes.io/hostname": "a"}))
    w.store.patch(kinds.NODE, "a", None, {"metadata": {"labels": {"kubernetes.io/hostname": "a"}}})
    r = w.cycle()
    assert r.bind_requests == [] and r.evictions == []
    assert {p.name: c["message"] for p, c in r.pod_conditions}["h"] == (
        "nominated to node a: waiting for the pods evicted for it to terminate")
    # v2 is gone now: its device is free, but h holds it (v1 still terminates).
    w.store.delete(kinds.POD, "v2", "default", grace_period_seconds=0)
    c2 = w.store.get(kinds.RESOURCE_CLAIM, "c2", "default")
    c2["status"] = {}
    w.store.update_status(c2)
    r = w.cycle()
    assert r.bind_requests == [] and r.nominations == []  # "other" does not get dev-1
    # v1 is gone too: h is bound where it was nominated.
    w.store.delete(kinds.POD, "v1", "default", grace_period_seconds=0)
    c1 = w.store.get(kinds.RESOURCE_CLAIM, "c1", "default")
    c1["status"] = {}
    w.store.update_status(c1)
    r = w.cycle()
    assert placed_nodes(r) == {"h": "a"}


def test_without_a_nomination_releasing_room_is_nobodys() -> None:
    w = _world(pod("other", queue="q", claims=uses("small"), nodeSelector={"kubernetes.io/hostname": "a"}))
    w.store.patch(kinds.NODE, "a", None, {"metadata": {"labels": {"kubernetes.io/hostname": "a"}}})
    r = w.cycle()
    assert r.bind_requests == []


def test_a_nomination_that_cannot_hold_is_cleared() -> None:
    # Nominated to b, where nothing terminates and one device is too few.
    w = _world(_nominated("h", "b", queue="q", claims=uses("wanted"), priorityClassName="high"))
    r = w.cycle()
    assert [(p.name, n) for p, n in r.nominations] == [("h", None)]


def test_a_nomination_survives_while_the_victims_claims_are_being_deallocated() -> None:
    """The victims are gone but the claim controller has not deallocated their claims yet (a
    moment later in a real cluster): the preemptor keeps its nomination and waits, instead of
    failing, losing it and having more pods evicted for it (seen under serve: 8 evictions for a
    gang that needed 6 GPUs)."""
    w = _world(_nominated("h", "a", queue="q", claims=uses("wanted"), priorityClassName="high"))
    for v in ("v1", "v2"):
        w.store.delete(kinds.POD, v, "default", grace_period_seconds=0)  # gone; c1, c2 still allocated to them
    r = w.cycle()
    assert r.bind_requests == [] and r.evictions == [] and r.nominations == []
    assert {p.name: c["message"] for p, c in r.pod_conditions}["h"] == (
        "nominated to node a: waiting for the pods evicted for it to terminate")
    assert "pod:default/h" not in r.failed_gangs
    for c in ("c1", "c2"):  # the claim controller deallocates them
        claim_obj = w.store.get(kinds.RESOURCE_CLAIM, c, "default")
        claim_obj["status"] = {}
        w.store.update_status(claim_obj)
    r = w.cycle()
    assert placed_nodes(r) == {"h": "a"}


def test_an_allocated_claim_waiting_for_its_pods_does_not_hold_a_nomination() -> None:
    """A claim allocated ahead of its pods (reserved for nobody, owned by no pod) is not being
    released: a nomination on its node that cannot hold is cleared as before."""
    w = _world(_nominated("h", "b", queue="q", claims=uses("wanted"), priorityClassName="high"),
               held_claim("pre", "b", "dev-0"))
    r = w.cycle()
    assert [(p.name, n) for p, n in r.nominations] == [("h", None)]
