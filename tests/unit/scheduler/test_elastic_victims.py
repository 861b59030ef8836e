"""An elastic gang (running more pods than its minMember) as victims: its surplus pod by pod, then the gang whole."""

from __future__ import annotations

from typing import Any

from drasched.scheduler.actions.search import GangEvicted
from drasched.scheduler.victims import VictimGang, VictimIndex
from tests.unit.scheduler.helpers import World, node, pod, podgroup, queue
from tests.unit.scheduler.preemption_helpers import NOW, minutes_ago, priority_class, running

Obj = dict[str, Any]


def _index(w: World) -> VictimIndex:
    s = w.session()
    s.now = NOW
    return VictimIndex(s)


def _classes() -> list[Obj]:
    return [priority_class("low", 100), priority_class("lower", 50), priority_class("high", 1000),
            priority_class("keep", 100, labels={"drasched.io/preemptible": "false"})]


def _elastic(min_member: int, *pods: Obj, gpus: int = 8, q: Obj | None = None) -> list[Obj]:
    return [node("a", gpu=gpus), q or queue("q"), *_classes(), podgroup("e", min_member, queue="q"), *pods]


def _member(name: str, minutes: int, **kw: Any) -> Obj:
    kw.setdefault("priorityClassName", "low")
    return running(name, "a", gpu=1, group="e", started=minutes_ago(minutes), **kw)


def _surplus(idx: VictimIndex) -> list[str]:
    return [v.pods[0][0].name for v in idx.gangs if v.whole is not None]


def test_surplus_units_come_first_lowest_priority_then_youngest_then_highest_index() -> None:
    index = {"batch.kubernetes.io/job-completion-index": "7"}
    w = World(_elastic(2,
                       _member("old", 30), _member("young", 5),
                       _member("same-age-low-index", 10, labels={"batch.kubernetes.io/job-completion-index": "1"}),
                       _member("same-age-high-index", 10, labels=index),
                       _member("lower-priority", 40, priorityClassName="lower")))
    idx = _index(w)
    assert _surplus(idx) == ["lower-priority", "young", "same-age-high-index", "same-age-low-index", "old"]
    whole = idx.gangs[-1]
    assert whole.key == "default/e" and whole.whole is None and len(whole.pods) == 5
    assert [u.key for u in whole.surplus][:2] == ["default/e#lower-priority", "default/e#young"]


def test_a_kubeflow_master_or_launcher_goes_last() -> None:
    w = World(_elastic(1, _member("master", 1, labels={"training.kubeflow.org/job-role": "master"}),
                       _member("worker", 20, labels={"training.kubeflow.org/job-role": "worker"})))
    assert _surplus(_index(w)) == ["worker", "master"]


def test_no_surplus_units_at_min_member_nor_for_a_lone_pod() -> None:
    w = World(_elastic(2, _member("m1", 10), _member("m2", 5), running("lone", "a", gpu=1, queue="q")))
    assert [(v.key, v.whole) for v in _index(w).gangs] == [("pod:default/lone", None), ("default/e", None)]


def test_never_below_min_member_and_the_whole_gang_takes_what_is_left() -> None:
    w = World(_elastic(2, _member("m1", 30), _member("m2", 20), _member("m3", 10), _member("m4", 5)))
    idx = _index(w)
    s = idx.session
    units = [v for v in idx.gangs if v.whole is not None]
    whole = idx.gangs[-1]
    assert [u.pods[0][0].name for u in units] == ["m4", "m3", "m2", "m1"]
    assert all(idx.available(u) for u in units)
    stmt = s.statement()
    for u in units[:2]:
        s.apply(GangEvicted(s.disruption.evicted_gangs, u.key, whole))
    assert whole.taken == 2
    assert not any(idx.available(u) for u in units)  # the gang keeps its minMember 2
    assert [p.name for p, _ in whole.pods] == ["m1", "m2"]  # taken whole now: the rest
    gpu_row = s.snap.index.pos["nvidia.com/gpu"]
    assert whole.demand["nvidia.com/gpu"] == 2.0 and whole.frees[0][gpu_row] == 2.0  # what is left, not stale
    stmt.rollback()
    assert whole.taken == 0 and len(whole.pods) == 4
    assert whole.demand["nvidia.com/gpu"] == 4.0 and whole.frees[0][gpu_row] == 4.0
    s.apply(GangEvicted(s.disruption.evicted_gangs, whole.key))
    assert not any(idx.available(u) for u in units)  # taken whole: no surplus left to take


def test_min_runtime_keeps_the_gang_at_min_member_not_its_surplus() -> None:
    q = queue("q")
    q["spec"]["minRuntime"] = "1h"
    w = World(_elastic(2, _member("m1", 30), _member("m2", 20), _member("m3", 10), q=q))
    idx = _index(w)
    assert [v.key for v in idx.gangs] == ["default/e#m3", "default/e#m2", "default/e#m1"]
    assert "ran less than the minRuntime of queue q" in idx.protected["default/e"]


def test_a_non_preemptible_class_or_a_binding_in_flight_protects_the_surplus_too() -> None:
    w = World(_elastic(1, _member("kept", 10, priorityClassName="keep"), _member("free", 20)))
    idx = _index(w)
    assert [v.key for v in idx.gangs] == ["default/e#free"]
    assert "PriorityClass keep of pod default/kept" in idx.protected["default/e#kept"]
    assert "default/e" in idx.protected  # the gang whole holds the protected pod

    w = World(_elastic(1, _member("m1", 10), _member("m2", 20), pod("binding", gpu=1, group="e")))
    w.store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
                    "metadata": {"name": "binding", "namespace": "default"},
                    "spec": {"podName": "binding", "selectedNode": "a"}})
    assert _index(w).gangs == []


def test_a_budget_counts_the_one_surplus_pod_and_the_rest_of_the_gang() -> None:
    w = World(_elastic(1, *(_member(f"m{k}", 10 * k, labels={"app": "e"}) for k in range(1, 4))))
    w.store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "e", "namespace": "default"},
                    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "e"}}}})
    idx = _index(w)
    units: list[VictimGang] = [v for v in idx.gangs if v.whole is not None]
    whole = idx.gangs[-1]
    assert all(u.budgets == {0: (1, 0)} for u in units) and whole.budgets == {0: (3, 0)}
    assert idx.budgets.permits(units[0]) and not idx.budgets.permits(whole)


def _cycle_evictions(objs: list[Obj]) -> list[str]:
    return sorted(e.victim.name for e in World(objs).cycle().evictions)


def test_preemption_takes_only_the_surplus_it_needs() -> None:
    members = [_member(f"m{k}", 50 - k) for k in range(1, 5)]  # m4 the youngest
    assert _cycle_evictions(_elastic(2, *members, pod("h", gpu=1, queue="q", priorityClassName="high"), gpus=4)) \
        == ["m4"]
    assert _cycle_evictions(_elastic(2, *members, pod("h", gpu=2, queue="q", priorityClassName="high"), gpus=4)) \
        == ["m3", "m4"]
    # Three GPUs: the surplus (2) is not enough, so the gang goes whole (all four pods).
    assert _cycle_evictions(_elastic(2, *members, pod("h", gpu=3, queue="q", priorityClassName="high"), gpus=4)) \
        == ["m1", "m2", "m3", "m4"]


def test_reclaim_takes_surplus_down_to_the_quota_never_below() -> None:
    qa, qb = queue("qa"), queue("qb")
    qa["spec"]["resources"] = {"nvidia.com/gpu": {"quota": "2"}}
    qb["spec"]["resources"] = {"nvidia.com/gpu": {"quota": "2"}}
    members = [running(f"a{k}", "a", gpu=1, group="e", started=minutes_ago(50 - k)) for k in range(1, 5)]
    objs = [node("a", gpu=4), qa, qb, podgroup("e", 1, queue="qa"), *members,
            pod("b1", gpu=1, queue="qb"), pod("b2", gpu=1, queue="qb"), pod("b3", gpu=1, queue="qb")]
    r = World(objs).cycle()
    assert sorted(e.victim.name for e in r.evictions) == ["a3", "a4"]  # qa keeps its quota of 2
    assert all("reclaim: queue qb is below its fair share" in e.reason for e in r.evictions)


def test_a_group_that_asks_to_be_evicted_whole_has_no_surplus_units() -> None:
    # drasched.io/evict-whole: what an upstream PodGroup's disruptionMode {all: {}} translates to.
    objs = _elastic(1, _member("m1", 10), _member("m2", 20), _member("m3", 30))
    group = next(o for o in objs if o["kind"] == "PodGroup")
    group["metadata"]["annotations"] = {"drasched.io/evict-whole": "true"}
    assert [(v.key, len(v.pods)) for v in _index(World(objs)).gangs] == [("default/e", 3)]


def test_surplus_on_the_node_tried_and_the_gang_whole_across_nodes_when_it_is_not_enough() -> None:
    def objs(min_member: int) -> list[Obj]:
        return [node("a", gpu=2), node("b", gpu=2), queue("q"), *_classes(), podgroup("e", min_member, queue="q"),
                running("m1", "a", gpu=1, group="e", started=minutes_ago(40), priorityClassName="low"),
                running("m2", "a", gpu=1, group="e", started=minutes_ago(30), priorityClassName="low"),
                running("m3", "b", gpu=1, group="e", started=minutes_ago(20), priorityClassName="low"),
                running("m4", "b", gpu=1, group="e", started=minutes_ago(10), priorityClassName="low"),
                pod("h", gpu=2, queue="q", priorityClassName="high")]
    # minMember 2: two surplus pods, both on the node of the youngest victims.
    r = World(objs(2)).cycle()
    assert sorted(e.victim.name for e in r.evictions) == ["m3", "m4"]
    assert [(p.name, n) for p, n in r.nominations] == [("h", "b")]
    # minMember 3: one surplus pod frees one GPU of the two needed; the gang goes whole, on both nodes.
    assert _cycle_evictions(objs(3)) == ["m1", "m2", "m3", "m4"]
