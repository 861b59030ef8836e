"""Preemption within a queue by priority, and what never preempts or is never preempted."""

from __future__ import annotations

from dataclasses import replace

from drasched.scheduler.config import SchedulerConfig
from tests.unit.scheduler.helpers import World, claim, device_class, node, pod, queue, resource_slice
from tests.unit.scheduler.preemption_helpers import held_claim, minutes_ago, priority_class, ref, running, uses


def _classes() -> list[dict]:
    return [priority_class("low", 100), priority_class("high", 1000), priority_class("waits", 1000, policy="Never"),
            priority_class("keep", 100, labels={"drasched.io/preemptible": "false"})]


def _node_of_low_pods(*pending: dict, classes: tuple[str, str] = ("low", "low")) -> list[dict]:
    return [node("a", gpu=2), queue("q"), queue("other"), *_classes(),
            running("l1", "a", gpu=1, queue="q", started=minutes_ago(9), priorityClassName=classes[0]),
            running("l2", "a", gpu=1, queue="q", started=minutes_ago(8), priorityClassName=classes[1]),
            *pending]


def test_a_higher_priority_pod_evicts_the_youngest_lower_priority_one() -> None:
    r = World(_node_of_low_pods(pod("h", gpu=1, queue="q", priorityClassName="high"))).cycle()
    assert [(e.victim.name, e.preemptor.name, e.action) for e in r.evictions] == [("l2", "h", "preempt")]
    assert "priority 1000 is above the victim's 100 in queue q" in r.evictions[0].reason
    assert [(p.name, n) for p, n in r.nominations] == [("h", "a")]


def test_equal_priority_another_queue_or_preemption_policy_never_preempt_nothing() -> None:
    only_preempt = replace(SchedulerConfig.embedded(), actions=("allocate", "preempt"))
    for pending in (pod("same", gpu=1, queue="q", priorityClassName="low"),
                    pod("elsewhere", gpu=1, queue="other", priorityClassName="high"),  # that is reclaim's business
                    pod("waits", gpu=1, queue="q", priorityClassName="waits")):
        r = World(_node_of_low_pods(pending), only_preempt).cycle()
        assert r.evictions == [] and r.nominations == [], pending["metadata"]["name"]


def test_preemption_policy_never_does_not_reclaim_either() -> None:
    # Upstream's meaning: such a pod waits rather than evict anyone, across queues too.
    r = World(_node_of_low_pods(pod("waits", gpu=1, queue="other", priorityClassName="waits"))).cycle()
    assert r.evictions == []


def test_a_non_preemptible_class_protects_its_pods() -> None:
    r = World(_node_of_low_pods(pod("h", gpu=1, queue="q", priorityClassName="high"), classes=("low", "keep"))).cycle()
    assert [e.victim.name for e in r.evictions] == ["l1"]  # l2 is younger, but its class says never
    r = World(_node_of_low_pods(pod("h", gpu=2, queue="q", priorityClassName="high"), classes=("low", "keep"))).cycle()
    assert r.evictions == []  # l1 alone is not enough, and evicting it for nothing is not done


def test_a_dra_victim_frees_its_device_for_the_preemptor_claim() -> None:
    objs = [node("a"), device_class(), resource_slice("a", 2), queue("q"), *_classes(),
            held_claim("c1", "a", "dev-0", consumers=(ref("l1"),)),
            held_claim("c2", "a", "dev-1", consumers=(ref("l2"),)),
            running("l1", "a", queue="q", claims=uses("c1"), started=minutes_ago(9), priorityClassName="low"),
            running("l2", "a", queue="q", claims=uses("c2"), started=minutes_ago(8), priorityClassName="low"),
            claim("wanted", count=2),
            pod("h", queue="q", claims=uses("wanted"), priorityClassName="high")]
    r = World(objs).cycle()
    assert sorted(e.victim.name for e in r.evictions) == ["l1", "l2"]  # both devices are needed
    assert [(p.name, n) for p, n in r.nominations] == [("h", "a")] and r.bind_requests == []


def test_queue_status_counts_the_victims_until_gone_and_the_preemptor_once_bound() -> None:
    r = World(_node_of_low_pods(pod("h", gpu=1, queue="q", priorityClassName="high"))).cycle()
    status = {q["metadata"]["name"]: s for q, s in r.queue_statuses}
    assert status["q"]["allocated"]["nvidia.com/gpu"] == "2" and status["q"]["requested"]["nvidia.com/gpu"] == "3"


def test_victims_the_pod_turns_out_not_to_need_are_spared() -> None:
    # In victim order young (1 GPU) comes before old (2 GPUs); h needs 2: old alone is enough.
    objs = [node("a", gpu=3), queue("q"), *_classes(),
            running("old", "a", gpu=2, queue="q", started=minutes_ago(30), priorityClassName="low"),
            running("young", "a", gpu=1, queue="q", started=minutes_ago(1), priorityClassName="low"),
            pod("h", gpu=2, queue="q", priorityClassName="high")]
    r = World(objs).cycle()
    assert [e.victim.name for e in r.evictions] == ["old"]
