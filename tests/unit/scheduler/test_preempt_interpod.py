"""Preemption for pods that inter-pod anti-affinity or topology spread rejects, as upstream's DefaultPreemption.

Each test names what of kubernetes/kubernetes it checks: ``SelectVictimsOnNode`` (victims are
lower-priority pods on the node; remove them, filter again, reprieve the most important first),
``RemovePod`` of InterPodAffinity and PodTopologySpread (the PreFilter counts follow a removed
pod), ``findCandidates`` (only nodes rejected as ``Unschedulable``), and the PostFilter message
``FitError.Error()`` appends (``preemption: 0/N nodes are available: ...``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from drasched.api import kinds
from drasched.scheduler.actions.preemptor import (
    MSG_NO_VICTIMS,
    MSG_NOT_HELPFUL,
    MSG_PDB,
    PostFilter,
    preemptor,
)
from drasched.scheduler.actions.search import GangEvicted
from drasched.scheduler.cycle import CycleResult
from drasched.scheduler.plugins.interpod import MSG_AFFINITY, MSG_ANTI_AFFINITY, InterPodAffinity
from drasched.scheduler.plugins.spread import MSG_SPREAD
from drasched.scheduler.release import release
from tests.unit.scheduler.helpers import World, messages, node, placed_nodes, pod, podgroup, queue
from tests.unit.scheduler.preemption_helpers import minutes_ago, priority_class, running

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _classes() -> list[Obj]:
    return [queue("q"), priority_class("low", 100), priority_class("high", 1000), priority_class("top", 2000)]


def _node(name: str, cpu: str = "8", zone: str | None = None) -> Obj:
    labels = {HOST: name, **({ZONE: zone} if zone else {})}
    return node(name, labels, cpu=cpu)


def _terms(obj: Obj, kind: str, app: str, key: str = HOST) -> Obj:
    obj["spec"]["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}
    return obj


def _run(name: str, node_name: str, app: str, klass: str = "low", cpu: str = "1", age: int = 60,
         labels: dict[str, str] | None = None) -> Obj:
    return running(name, node_name, cpu=cpu, queue="q", labels={"app": app, **(labels or {})},
                   started=minutes_ago(age), priorityClassName=klass)


def _preemptor(app: str = "api", klass: str = "high", cpu: str = "1") -> Obj:
    p = pod("h", cpu=cpu, queue="q", priorityClassName=klass)
    p["metadata"]["labels"]["app"] = app
    return p


def _evicted(r: CycleResult) -> list[str]:
    return sorted(e.victim.name for e in r.evictions)


def _nominated(r: CycleResult) -> list[tuple[str, str | None]]:
    return [(p.name, n) for p, n in r.nominations]


def _spread(obj: Obj, key: str = ZONE) -> Obj:
    obj["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                                                  "labelSelector": {"matchLabels": {"app": "web"}}}]
    return obj


# ---------------------------------------------------------------------- who is a victim


def test_select_victims_on_node_evicts_the_pod_the_preemptors_anti_affinity_matches_and_no_other() -> None:
    # batch is younger, first in victim order, and frees as much: only removing web lifts the filter
    r = World([_node("n1"), *_classes(), _run("web", "n1", "web", age=60), _run("batch", "n1", "batch", age=5),
               _terms(_preemptor(), "podAntiAffinity", "web")]).cycle()
    assert _evicted(r) == ["web"] and _nominated(r) == [("h", "n1")]
    assert "priority 1000 is above the victim's 100" in r.evictions[0].reason


def test_remove_pod_lifts_an_existing_pods_anti_affinity_that_matches_the_preemptor() -> None:
    # satisfyExistingPodsAntiAffinity: web's own term forbids app=cache on its node
    web = _terms(_run("web", "n1", "web"), "podAntiAffinity", "cache")
    r = World([_node("n1"), *_classes(), web, _run("batch", "n1", "batch", age=5),
               _preemptor(app="cache")]).cycle()
    assert _evicted(r) == ["web"] and _nominated(r) == [("h", "n1")]


def test_victims_come_only_from_the_node_itself_not_its_topology_domain() -> None:
    # zone anti-affinity: the blocker on n1 has the preemptor's priority; n2 shares the zone and its
    # low-priority pod lifts nothing (upstream SelectVictimsOnNode removes pods of one node)
    r = World([_node("n1", zone="a"), _node("n2", zone="a"), *_classes(),
               _run("web", "n1", "web", klass="high"), _run("filler", "n2", "batch"),
               _terms(_preemptor(), "podAntiAffinity", "web", key=ZONE)]).cycle()
    assert r.evictions == [] and r.nominations == []
    assert messages(r)["h"].endswith(f"preemption: 0/2 nodes are available: 1 {MSG_NO_VICTIMS}, 1 {MSG_ANTI_AFFINITY}.")


def test_a_blocking_gang_is_evicted_whole() -> None:
    # the PodGroup's two pods run on n1 and n2; evicting it for n1 takes both, as for resources
    group = {"drasched.io/pod-group": "web"}
    r = World([_node("n1"), _node("n2", cpu="1"), *_classes(), podgroup("web", 2, priorityClassName="low"),
               _run("w1", "n1", "web", labels=group), _run("w2", "n2", "web", cpu="1", labels=group),
               _terms(_preemptor(), "podAntiAffinity", "web")]).cycle()
    assert _evicted(r) == ["w1", "w2"] and _nominated(r) == [("h", "n1")]


def test_pod_topology_spread_remove_pod_one_victim_in_the_crowded_zone_the_older_reprieved() -> None:
    # zone a: web-old, web-young (low); zone b: web-b (top) fills n2. maxSkew 1 forbids zone a (2+1-1);
    # removing one web pod there is enough, and reprieve keeps the more important (older) one
    r = World([_node("n1", zone="a"), _node("n2", cpu="1", zone="b"), *_classes(),
               _run("web-old", "n1", "web", age=90), _run("web-young", "n1", "web", age=10),
               _run("web-b", "n2", "web", klass="top"), _spread(_preemptor(app="web"))]).cycle()
    assert _evicted(r) == ["web-young"] and _nominated(r) == [("h", "n1")]


def test_pods_outside_the_spread_selector_or_namespace_are_no_victims_for_the_skew() -> None:
    other_ns = _run("web-elsewhere", "n1", "web")
    other_ns["metadata"]["namespace"] = "other"
    r = World([_node("n1", zone="a"), _node("n2", cpu="1", zone="b"), *_classes(),
               _run("web-1", "n1", "web", klass="high"), _run("web-2", "n1", "web", klass="high"), other_ns,
               _run("batch", "n1", "batch"), _run("web-b", "n2", "web", klass="top"),
               _spread(_preemptor(app="web"))]).cycle()
    assert r.evictions == []
    assert messages(r)["h"].endswith(f"preemption: 0/2 nodes are available: 1 {MSG_NO_VICTIMS}, 1 {MSG_SPREAD}.")


def test_consolidation_moves_an_equal_priority_blocker_its_controller_recreates() -> None:
    # not preemption: the one victim search serves consolidation too, which moves a Job's pod
    # (it must fit elsewhere first: n2) so that the pod fitting nowhere gets n1
    web = running("web", "n1", cpu="1", queue="q", labels={"app": "web"}, owned=True, priorityClassName="high")
    r = World([_node("n1", cpu="4"), _node("n2", cpu="4"), *_classes(), web,
               _run("fill", "n2", "fill", klass="high", cpu="3"),
               _terms(_preemptor(cpu="2"), "podAntiAffinity", "web")]).cycle()
    assert [(e.victim.name, e.action) for e in r.evictions] == [("web", "consolidate")]
    assert _nominated(r) == [("h", "n1")]


# ---------------------------------------------------------------------- who is not


def test_is_preemption_allowed_only_for_lower_priority_blockers_and_the_message_says_why() -> None:
    # n1: the blocker has the preemptor's priority (batch, lower, lifts nothing); n2: a higher one
    r = World([_node("n1"), _node("n2"), *_classes(),
               _run("web-1", "n1", "web", klass="high"), _run("batch", "n1", "batch"),
               _run("web-2", "n2", "web", klass="top"), _terms(_preemptor(), "podAntiAffinity", "web")]).cycle()
    assert r.evictions == [] and r.nominations == []
    # DynamicResources' PostFilter status comes first, joined to DefaultPreemption's by ", "
    # (RunPostFilterPlugins), as a 1.34+ kube-scheduler with DRA on writes it for a claimless pod
    assert messages(r)["h"] == (f"0/2 nodes are available: 2 {MSG_ANTI_AFFINITY}. no new claims to deallocate, "
                                f"preemption: 0/2 nodes are available: 1 {MSG_NO_VICTIMS}, 1 {MSG_ANTI_AFFINITY}.")
    # where the queue holds no possible victim at all the search does not run, yet upstream's dry
    # run tries the node all the same (anti-affinity is Unschedulable) and finds no victim there
    r = World([_node("n1"), *_classes(), _run("web", "n1", "web", klass="high"),
               _terms(_preemptor(), "podAntiAffinity", "web")]).cycle()
    assert messages(r)["h"] == (f"0/1 nodes are available: 1 {MSG_ANTI_AFFINITY}. no new claims to deallocate, "
                                f"preemption: 0/1 nodes are available: 1 {MSG_NO_VICTIMS}.")


def test_satisfy_pod_affinity_is_never_bought_by_evicting_the_pod_it_matches() -> None:
    # db is h's only match and fills n1: evicting it would make room and break the affinity
    r = World([_node("n1", cpu="4"), *_classes(), _run("db", "n1", "db", cpu="4"),
               _terms(_preemptor(cpu="2"), "podAffinity", "db")]).cycle()
    assert r.evictions == [] and r.nominations == []
    assert messages(r)["h"].endswith(f"preemption: 0/1 nodes are available: 1 {MSG_AFFINITY}.")


def test_a_node_failing_affinity_first_is_no_candidate_unresolvable() -> None:
    # findCandidates: n2 fits but has no app=db pod (UnschedulableAndUnresolvable); n1 is full of a
    # low-priority pod that is not db either: upstream's dry run ends on the affinity there too
    r = World([_node("n1", cpu="4"), _node("n2", cpu="4"), *_classes(), _run("filler", "n1", "batch", cpu="4"),
               _run("x", "n2", "x", cpu="1"),
               _terms(_preemptor(cpu="2"), "podAffinity", "db")]).cycle()
    assert r.evictions == []
    assert messages(r)["h"].endswith(f"preemption: 0/2 nodes are available: 1 {MSG_NOT_HELPFUL}, 1 {MSG_AFFINITY}.")


def test_a_disruption_budget_keeps_the_only_blocker() -> None:
    w = World([_node("n1"), *_classes(), _run("web", "n1", "web"), _terms(_preemptor(), "podAntiAffinity", "web")])
    w.store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    r = w.cycle()
    assert r.evictions == []
    assert messages(r)["h"].endswith(f"preemption: 0/1 nodes are available: 1 {MSG_PDB}.")


# ---------------------------------------------------------------------- the counts follow evictions


def test_inter_pod_counts_follow_an_eviction_and_its_rollback() -> None:
    w = World([_node("n1"), *_classes(), _run("web", "n1", "web"), _terms(_preemptor(), "podAntiAffinity", "web")])
    s = w.session()
    snap = s.snap
    h, web = snap.pods["default/h"], snap.pods["default/web"]
    view = preemptor(s, h, None)
    plugin = InterPodAffinity()
    everywhere = np.ones(snap.n_nodes, dtype=bool)
    assert view.candidates[0] and view.rejected(0)  # Unschedulable, not ...AndUnresolvable
    assert not plugin.filter(view.state, everywhere)[0]
    stmt = s.statement()
    release(s, web, 0, "q")
    s.apply(GangEvicted(s.disruption.evicted_gangs, snap.group_of[web.key]))
    assert plugin.filter(view.state, everywhere)[0]  # RemovePod: web counts nowhere while evicted
    stmt.rollback()
    assert not plugin.filter(view.state, everywhere)[0]  # AddPod: back on rollback


def test_postfilter_message_counts_one_status_per_node() -> None:
    post = PostFilter(np.array([True, True, False, True]), lambda j: j == 3)
    post.note(0, "Insufficient cpu")
    assert post.message() == ("preemption: 0/4 nodes are available: 1 Insufficient cpu, "
                              f"1 {MSG_NO_VICTIMS}, 1 {MSG_NOT_HELPFUL}, "
                              "1 not tried this cycle (preemption.nodesPerTask, preemption.budget).")


def test_a_nominated_preemptor_keeps_its_node_while_its_anti_affinity_victim_terminates() -> None:
    """After the eviction, the victim terminates for its grace period (drasched serve): the
    preemptor stays nominated and holds the node (upstream keeps ``nominatedNodeName`` and waits,
    ``PodEligibleToPreemptOthers``) rather than losing it and preempting again; it is bound once
    the victim is gone."""
    w = World([_node("n1"), *_classes(), _run("web", "n1", "web"), _terms(_preemptor(), "podAntiAffinity", "web")])
    r = w.cycle()
    assert _evicted(r) == ["web"] and _nominated(r) == [("h", "n1")]
    for p, n in r.nominations:
        pod_obj = w.store.get(kinds.POD, p.name, "default")
        pod_obj["status"]["nominatedNodeName"] = n
        w.store.update_status(pod_obj)
    w.store.delete(kinds.POD, "web", "default")  # graceful: still on n1, terminating
    r = w.cycle()
    assert r.evictions == [] and r.nominations == [] and r.bind_requests == []  # nomination kept, nothing new
    assert messages(r)["h"] == "nominated to node n1: waiting for the pods evicted for it to terminate"
    w.store.delete(kinds.POD, "web", "default", grace_period_seconds=0)
    assert placed_nodes(w.cycle()) == {"h": "n1"}
