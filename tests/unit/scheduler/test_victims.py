"""Victim candidates: whole gangs in a stable order, and what protects a pod."""

from __future__ import annotations

from datetime import UTC, datetime

from drasched.scheduler.session import Session
from drasched.scheduler.victims import VictimIndex
from tests.unit.scheduler.helpers import World, node, pod, podgroup, queue
from tests.unit.scheduler.preemption_helpers import NOW, minutes_ago, priority_class, running


def _index(w: World) -> VictimIndex:
    s = w.session()
    s.now = NOW
    return VictimIndex(s)


def test_order_is_fewest_pods_then_lowest_priority_then_youngest() -> None:
    w = World([node("a", gpu=8), queue("q"), podgroup("g", 2, queue="q"),
               running("g1", "a", gpu=1, group="g", started=minutes_ago(1)),
               running("g2", "a", gpu=1, group="g", started=minutes_ago(1)),
               running("old-low", "a", gpu=1, queue="q", priority=1, started=minutes_ago(30)),
               running("young-low", "a", gpu=1, queue="q", priority=1, started=minutes_ago(10)),
               running("young-high", "a", gpu=1, queue="q", priority=5, started=minutes_ago(2))])
    idx = _index(w)
    assert [v.key for v in idx.gangs] == ["pod:default/young-low", "pod:default/old-low", "pod:default/young-high",
                                          "default/g"]
    assert [len(v.pods) for v in idx.gangs] == [1, 1, 1, 2]
    assert [v.key for v in idx.by_node[0]] == [v.key for v in idx.gangs]


def test_protected_by_class_label_or_annotation_by_min_runtime_and_while_binding() -> None:
    q = queue("q")
    q["spec"]["minRuntime"] = "15m"
    w = World([node("a", gpu=8), q, queue("free"),
               priority_class("keep-l", 0, labels={"drasched.io/preemptible": "false"}),
               priority_class("keep-a", 0, annotations={"drasched.io/preemptible": "false"}),
               running("by-label", "a", gpu=1, queue="free", priorityClassName="keep-l"),
               running("by-annotation", "a", gpu=1, queue="free", priorityClassName="keep-a"),
               running("too-young", "a", gpu=1, queue="q", started=minutes_ago(5)),
               running("old-enough", "a", gpu=1, queue="q", started=minutes_ago(20)),
               podgroup("g", 2, queue="free"), running("bound", "a", gpu=1, group="g"),
               pod("binding", gpu=1, group="g")])
    # One pod of gang g is still being bound: the gang is not a victim until it is.
    w.store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
                    "metadata": {"name": "binding", "namespace": "default"},
                    "spec": {"podName": "binding", "selectedNode": "a"}})
    idx = _index(w)
    assert [v.key for v in idx.gangs] == ["pod:default/old-enough"]
    assert idx.protected == {
        "pod:default/by-label": "PriorityClass keep-l of pod default/by-label is not preemptible "
                                "(drasched.io/preemptible)",
        "pod:default/by-annotation": "PriorityClass keep-a of pod default/by-annotation is not preemptible "
                                     "(drasched.io/preemptible)",
        "pod:default/too-young": "pod default/too-young ran less than the minRuntime of queue q"}
    # The scheduler asks to look again when the protection ends (00:10:00).
    assert idx.session.disruption.wake_at == datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def test_min_runtime_is_inherited_from_the_nearest_queue_that_sets_it() -> None:
    parent = queue("parent")
    parent["spec"]["minRuntime"] = "1h"
    w = World([node("a", gpu=8), parent, queue("child", parent="parent"),
               running("p", "a", gpu=1, queue="child", started=minutes_ago(30))])
    assert _index(w).gangs == []


def test_disruption_budgets_are_spent_as_victims_are_chosen_and_given_back_on_rollback() -> None:
    w = World([node("a", gpu=8), queue("q"),
               *(running(f"w{k}", "a", gpu=1, queue="q", labels={"app": "web"}) for k in range(3))])
    w.store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"maxUnavailable": 2, "selector": {"matchLabels": {"app": "web"}}}})
    idx = _index(w)
    s: Session = idx.session
    a, b, c = idx.gangs
    stmt = s.statement()
    assert idx.budgets.permits(a)
    idx.budgets.spend(a)
    idx.budgets.spend(b)
    assert not idx.budgets.permits(c)
    stmt.rollback()
    assert idx.budgets.permits(c)


def test_a_pod_two_budgets_cover_is_never_a_victim() -> None:
    w = World([node("a", gpu=8), queue("q"), running("w", "a", gpu=1, queue="q", labels={"app": "web"})])
    for name in ("one", "two"):
        w.store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name,
                        "namespace": "default"}, "spec": {"maxUnavailable": 5, "selector": {}}})
    idx = _index(w)
    assert idx.gangs == [] and "more than one PodDisruptionBudget" in idx.protected["pod:default/w"]
