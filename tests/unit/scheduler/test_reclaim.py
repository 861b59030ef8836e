"""Reclaim across queues: who may take back, from whom, and how much."""

from __future__ import annotations

from dataclasses import replace

from drasched.api import kinds
from drasched.scheduler.actions.fairness import Fairness
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.cycle import CycleResult
from tests.unit.scheduler.helpers import World, device_class, no_victims, node, pod, podgroup, queue, resource_slice
from tests.unit.scheduler.preemption_helpers import held_claim, minutes_ago, ref, running, uses

GPU = "nvidia.com/gpu"


def _evicted(r: CycleResult) -> list[str]:
    return [e.victim.name for e in r.evictions]


def _nominated(r: CycleResult) -> dict[str, str | None]:
    return {p.name: n for p, n in r.nominations}


def _full_cluster(*extra: dict, qa: dict | None = None, qb: dict | None = None) -> list[dict]:
    """Two nodes of 2 GPUs, all four held by qa's pods (a4 the youngest, a3 and a4 on node b)."""
    return [node("a", gpu=2), node("b", gpu=2), queue("qa", resources=qa), queue("qb", resources=qb),
            *(running(f"a{k}", "a" if k <= 2 else "b", gpu=1, queue="qa", started=minutes_ago(60 - k))
              for k in range(1, 5)),
            *extra]


def test_a_queue_below_its_share_evicts_the_youngest_of_the_queue_above_its_own() -> None:
    w = World(_full_cluster(pod("b1", gpu=1, queue="qb"), pod("b2", gpu=1, queue="qb")))
    r = w.cycle()
    assert _evicted(r) == ["a4", "a3"]
    assert {e.preemptor.name for e in r.evictions} == {"b1", "b2"}
    assert all(e.action == "reclaim" and "queue qb is below its fair share of nvidia.com/gpu" in e.reason
               for e in r.evictions)
    # The preemptors are nominated, not bound: their room is in use until the victims are gone.
    assert r.bind_requests == [] and _nominated(r) == {"b1": "b", "b2": "b"}
    assert {p.name: c["message"] for p, c in r.pod_conditions} == {
        "b1": "nominated to node b: waiting for the pods evicted for it to terminate",
        "b2": "nominated to node b: waiting for the pods evicted for it to terminate"}
    # Queue status: the victims still run and the nominated pods are not bound yet.
    status = {q["metadata"]["name"]: s for q, s in r.queue_statuses}
    assert status["qa"]["allocated"][GPU] == "4" and status["qb"]["allocated"][GPU] == "0"


def test_the_same_cluster_gives_the_same_victims() -> None:
    objs = _full_cluster(pod("b1", gpu=1, queue="qb"), pod("b2", gpu=1, queue="qb"))
    assert _evicted(World(objs).cycle()) == _evicted(World(objs).cycle()) == ["a4", "a3"]


def test_the_preemptor_takes_no_more_than_its_fair_share() -> None:
    w = World(_full_cluster(*(pod(f"b{k}", gpu=1, queue="qb") for k in range(1, 5))))
    r = w.cycle()
    assert len(r.evictions) == 2 and set(_nominated(r)) == {"b1", "b2"}
    msgs = {p.name: c["message"] for p, c in r.pod_conditions}
    # then preempt's PostFilter statuses: qb holds no lower-priority pod to evict
    assert msgs["b3"] == msgs["b4"] == no_victims("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.", 2, 2)


def test_a_victim_queue_is_never_pushed_below_its_deserved_quota() -> None:
    # qa (quota 3) holds 4 GPUs as two 2-GPU pods; qb (quota 1) asks for 1. qa is above its
    # share (3) but evicting a 2-GPU pod would leave it at 2, below its quota: qb waits.
    objs = [node("a", gpu=2), node("b", gpu=2), queue("qa", resources={GPU: {"quota": "3"}}),
            queue("qb", resources={GPU: {"quota": "1"}}),
            running("a1", "a", gpu=2, queue="qa"), running("a2", "b", gpu=2, queue="qa", started=minutes_ago(1)),
            pod("b1", gpu=1, queue="qb")]
    r = World(objs).cycle()
    assert r.evictions == [] and r.nominations == []


def test_a_queue_within_its_share_is_not_a_victim_even_with_the_youngest_pod() -> None:
    objs = [node("a", gpu=2), node("b", gpu=2), queue("qa"), queue("qb"), queue("qc"),
            *(running(f"a{k}", "a" if k <= 2 else "b", gpu=1, queue="qa", started=minutes_ago(60 - k))
              for k in range(1, 4)),
            running("c1", "b", gpu=1, queue="qc", started=minutes_ago(1)),
            pod("b1", gpu=1, queue="qb")]
    r = World(objs).cycle()
    assert _evicted(r) == ["a3"]


def test_siblings_reclaim_from_each_other_whatever_their_parent_holds() -> None:
    objs = [node("a", gpu=2), node("b", gpu=2), queue("p"), queue("qa", parent="p"), queue("qb", parent="p"),
            *(running(f"a{k}", "a" if k <= 2 else "b", gpu=1, queue="qa", started=minutes_ago(60 - k))
              for k in range(1, 5)),
            pod("b1", gpu=1, queue="qb")]
    r = World(objs).cycle()
    assert _evicted(r) == ["a4"] and _nominated(r) == {"b1": "b"}


def test_a_gang_larger_than_its_queues_share_evicts_nothing() -> None:
    # qb's gang needs 3 GPUs together (minMember 3); its fair share is 2.
    objs = _full_cluster(podgroup("g", 3, queue="qb"),
                         *(pod(f"g{k}", gpu=1, group="g") for k in range(1, 4)))
    r = World(objs).cycle()
    assert r.evictions == []


def test_the_budget_bounds_the_search_and_the_rest_waits_a_cycle() -> None:
    cfg = replace(SchedulerConfig.embedded(), preemption_budget=2)
    w = World(_full_cluster(pod("b1", gpu=1, queue="qb"), pod("b2", gpu=1, queue="qb")), cfg)
    r = w.cycle()
    assert len(r.evictions) == 1  # one failed try as is, one simulation on the best node


def test_what_terminating_pods_hold_does_not_count_for_their_queue_dra_claims_included() -> None:
    dim = "deviceclass.resource.kubernetes.io/gpu.example.com"
    w = World([node("a"), device_class(), resource_slice("a", 2), queue("qa"),
               held_claim("c1", "a", "dev-0", consumers=(ref("a1"),)),
               held_claim("c2", "a", "dev-1", consumers=(ref("a2"),)),
               running("a1", "a", queue="qa", claims=uses("c1")), running("a2", "a", queue="qa", claims=uses("c2"))])
    w.store.delete(kinds.POD, "a2", "default")  # evicted in an earlier cycle, still stopping
    fair = Fairness(w.session(), {})
    assert fair.effective("qa", dim) == 1.0
