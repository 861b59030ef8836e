"""Consolidation: pods their controller recreates move so that a gang that fits nowhere gets a node."""

from __future__ import annotations

from drasched.api import kinds
from tests.unit.scheduler.helpers import World, node, pod, podgroup, queue
from tests.unit.scheduler.preemption_helpers import minutes_ago, running


def _fragmented(owned: bool, room_elsewhere: bool = True) -> list[dict]:
    """Nodes a and b (4 GPUs), c (1 GPU); one-GPU pods: 2 on a, 2 on b (younger); big needs 4."""
    return [node("a", gpu=4), node("b", gpu=4), *([node("c", gpu=1)] if not room_elsewhere else []), queue("q"),
            running("w1", "a", gpu=1, queue="q", owned=owned, started=minutes_ago(9)),
            running("w2", "a", gpu=1 if room_elsewhere else 3, queue="q", owned=owned, started=minutes_ago(8)),
            running("w3", "b", gpu=1, queue="q", owned=owned, started=minutes_ago(7)),
            running("w4", "b", gpu=1, queue="q", owned=owned, started=minutes_ago(6)),
            pod("big", gpu=4, queue="q")]


def test_pods_a_controller_recreates_move_so_the_big_pod_fits() -> None:
    w = World(_fragmented(owned=True))
    r = w.cycle()
    assert sorted(e.victim.name for e in r.evictions) == ["w3", "w4"]
    assert {e.action for e in r.evictions} == {"consolidate"} and {e.node for e in r.evictions} == {"b"}
    assert [(p.name, n) for p, n in r.nominations] == [("big", "b")]
    assert r.bind_requests == []  # the moved pods' new room is held, nothing is bound for them


def test_bare_pods_are_never_moved() -> None:
    r = World(_fragmented(owned=False)).cycle()
    assert r.evictions == [] and r.nominations == []


def test_pods_that_fit_nowhere_else_are_not_moved() -> None:
    # a holds 1 + 3 GPUs, b 1 + 1, c has 1 free: b's two pods cannot both move (a is full), a's neither.
    r = World(_fragmented(owned=True, room_elsewhere=False)).cycle()
    assert r.evictions == []


def test_a_gang_with_one_bare_running_pod_is_not_moved() -> None:
    objs = _fragmented(owned=True)
    for o in objs:  # w3 and w4 (on b, the youngest) are one gang; w4 has no controller
        if o.get("kind") == "Pod" and o["metadata"]["name"] in ("w3", "w4"):
            o["metadata"]["labels"]["drasched.io/pod-group"] = "pair"
            if o["metadata"]["name"] == "w4":
                del o["metadata"]["ownerReferences"]
    objs.append(podgroup("pair", 2, queue="q"))
    r = World(objs).cycle()
    assert "w4" not in {e.victim.name for e in r.evictions}  # evicting it would end it, not move it
    assert "w3" not in {e.victim.name for e in r.evictions}  # nor its gang mate: gangs move whole


def test_a_bare_pod_adopted_by_a_controller_can_move_in_the_next_cycle() -> None:
    # The gang's movability is kept with the group: a change to one pod must reach it.
    w = World(_fragmented(owned=False))
    assert w.cycle().evictions == []
    for name in ("w3", "w4"):
        p = w.store.get(kinds.POD, name, "default")
        p["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "job",
                                             "uid": "uid-job", "controller": True}]
        w.store.update(p)
    r = w.cycle()
    assert sorted(e.victim.name for e in r.evictions) == ["w3", "w4"]
    assert [(p.name, n) for p, n in r.nominations] == [("big", "b")]
