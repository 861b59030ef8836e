"""Topology spread constraints: upstream PodTopologySpread's Filter (``DoNotSchedule``), and that
``ScheduleAnyway`` only scores (its Score: ``test_interpod_scoring.py``).

Each test names the rule of kubernetes/kubernetes
``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go`` (``calPreFilterState``,
``Filter``, ``minMatchNum``) or ``common.go`` (``filterTopologySpreadConstraints``,
``matchNodeInclusionPolicies``, ``countPodsMatchSelector``) it checks.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from drasched.api import kinds
from drasched.scheduler.config import config_from_dict
from drasched.scheduler.plugins.spread import MSG_SPREAD, MSG_SPREAD_LABEL
from drasched.scheduler.podinfo import parse_pod
from tests.unit.scheduler.helpers import World, messages, no_victims, node, placed_nodes, pod

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}


def nodes(*zones: str, **kw: Any) -> list[Obj]:
    return [node(f"n{i}", {HOST: f"n{i}", ZONE: z}, **kw) for i, z in enumerate(zones)]


def spread_pod(name: str, app: str = "s", *constraints: Obj, **kw: Any) -> Obj:
    out = pod(name, cpu="1", **kw)
    out["metadata"]["labels"]["app"] = app
    out["spec"]["topologySpreadConstraints"] = list(constraints) or [constraint()]
    return out


def constraint(key: str = ZONE, skew: int = 1, **more: Any) -> Obj:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "s"}}, **more}


def running(name: str, node_name: str, app: str = "s", ns: str = "default") -> Obj:
    out = pod(name, cpu="1", node_name=node_name, ns=ns)
    out["metadata"]["labels"]["app"] = app
    return out


def zones_of(r: Any, zone: dict[str, str]) -> Counter[str]:
    return Counter(zone[n] for n in placed_nodes(r).values())


def msg(n: int, *counts: tuple[int, str]) -> str:
    return f"0/{n} nodes are available: " + ", ".join(f"{k} {m}" for k, m in counts) + "."


def test_filter_max_skew_one_spreads_over_two_zones_in_one_cycle() -> None:
    # the repro: 4 replicas, maxSkew 1 over two domains -> 2 and 2 (bin-packing would put all on n0)
    pods = [spread_pod(f"p{i}", created=f"2026-01-01T00:00:0{i}Z") for i in range(4)]
    r = World([*nodes("a", "a", "b", "b"), *pods]).cycle()
    assert zones_of(r, {"n0": "a", "n1": "a", "n2": "b", "n3": "b"}) == {"a": 2, "b": 2}


def test_filter_counts_existing_matching_pods_of_the_namespace_only() -> None:
    existing = [running("e0", "n0"), running("e1", "n0"), running("other-app", "n1", app="x"),
                running("other-ns", "n1", ns="elsewhere")]
    r = World([*nodes("a", "b"), *existing, spread_pod("new")]).cycle()
    assert placed_nodes(r) == {"new": "n1"}  # a holds 2 matching pods, b none: 2 + 1 - 0 > 1 on a
    r = World([*nodes("a", "b"), *existing, spread_pod("new", "s", constraint(skew=2))]).cycle()
    assert placed_nodes(r) == {"new": "n1"}  # 2 + 1 - 0 = 3 > 2 on a still


def test_filter_skew_message_and_missing_label_message() -> None:
    # n0 (a) holds a matching pod: 1 + 1 - 0 > 1; n1 (b) is full; bare lacks the zone label
    objs = [node("n0", {HOST: "n0", ZONE: "a"}), node("n1", {HOST: "n1", ZONE: "b"}, cpu="1"),
            node("bare", {HOST: "bare"}), running("e0", "n0"), running("x", "n1", app="x"), spread_pod("new")]
    r = World(objs).cycle()
    # DefaultPreemption tries n0 and n1 (Unschedulable), not bare (UnschedulableAndUnresolvable)
    assert messages(r)["new"] == no_victims(msg(3, (1, "Insufficient cpu"), (1, MSG_SPREAD), (1, MSG_SPREAD_LABEL)),
                                            2, 3)


def test_filter_rejects_nodes_of_the_fuller_domain() -> None:
    existing = [running("e0", "n0"), running("e1", "n1")]
    r = World([*nodes("a", "a", "b", cpu="2"), *existing, spread_pod("x", created="2026-01-01T00:00:01Z"),
               spread_pod("y", created="2026-01-01T00:00:02Z")]).cycle()
    # a holds 2, b none: x must go to b (n2); then a 2, b 1: y may go anywhere with room
    assert placed_nodes(r)["x"] == "n2"


def test_min_match_num_is_zero_while_fewer_domains_than_min_domains() -> None:
    pods = [spread_pod(f"p{i}", "s", constraint(minDomains=3), created=f"2026-01-01T00:00:0{i}Z") for i in range(3)]
    r = World([*nodes("a", "a", "b", "b"), *pods]).cycle()
    assert len(placed_nodes(r)) == 2  # one per domain; a third would make a skew of 2 against 0
    (left,) = {"p0", "p1", "p2"} - set(placed_nodes(r))
    assert messages(r)[left] == no_victims(msg(4, (4, MSG_SPREAD)), 4, 4)


def test_node_affinity_policy_honor_leaves_unselected_domains_out() -> None:
    # nodeSelector zone=a: with Honor (the default) zone b is no domain, all go to a
    pods = [spread_pod(f"p{i}", created=f"2026-01-01T00:00:0{i}Z", nodeSelector={ZONE: "a"}) for i in range(3)]
    r = World([*nodes("a", "a", "b"), *pods]).cycle()
    assert len(placed_nodes(r)) == 3
    # with Ignore, zone b counts (with 0 pods): only one pod fits in a
    pods = [spread_pod(f"p{i}", "s", constraint(nodeAffinityPolicy="Ignore"), created=f"2026-01-01T00:00:0{i}Z",
                       nodeSelector={ZONE: "a"}) for i in range(3)]
    r = World([*nodes("a", "a", "b"), *pods]).cycle()
    assert len(placed_nodes(r)) == 1


def test_node_taints_policy_honor_leaves_untolerated_nodes_out() -> None:
    tainted = node("t", {HOST: "t", ZONE: "c"}, taints=[TAINT])
    pods = [spread_pod(f"p{i}", created=f"2026-01-01T00:00:0{i}Z") for i in range(4)]
    r = World([*nodes("a", "b"), tainted, *pods]).cycle()
    assert len(placed_nodes(r)) == 2  # Ignore (default): zone c counts with 0, a and b get one each
    pods = [spread_pod(f"p{i}", "s", constraint(nodeTaintsPolicy="Honor"), created=f"2026-01-01T00:00:0{i}Z")
            for i in range(4)]
    r = World([*nodes("a", "b"), tainted, *pods]).cycle()
    assert len(placed_nodes(r)) == 4


def test_count_pods_match_selector_leaves_terminating_pods_out() -> None:
    # without e0 both zones hold 0: bin-packing picks n0, which holds a pod; e0 counted would forbid a
    w = World([*nodes("a", "b"), running("e0", "n0"), running("busy", "n0", app="x")])
    w.store.delete(kinds.POD, "e0", "default")  # bound: marked as deleting, not gone
    w.store.create(spread_pod("new"))
    assert placed_nodes(w.cycle()) == {"new": "n0"}
    r = World([*nodes("a", "b"), running("e0", "n0"), running("busy", "n0", app="x"), spread_pod("new")]).cycle()
    assert placed_nodes(r) == {"new": "n1"}


def test_empty_selector_counts_no_pod_but_the_pod_matches_itself() -> None:
    # countPodsMatchSelector returns 0 for an empty selector; Filter's selfMatchNum is 1
    existing = [running("e0", "n0"), running("e1", "n0")]
    r = World([*nodes("a", "b"), *existing, spread_pod("new", "s", constraint(labelSelector={}))]).cycle()
    assert placed_nodes(r) == {"new": "n0"}


def test_match_label_keys_narrow_the_selector_to_the_pods_revision() -> None:
    old = [running("e0", "n0"), running("e1", "n0")]
    for o in old:
        o["metadata"]["labels"]["pod-template-hash"] = "v1"
    new = spread_pod("new", "s", constraint(matchLabelKeys=["pod-template-hash"]))
    new["metadata"]["labels"]["pod-template-hash"] = "v2"
    r = World([*nodes("a", "b"), *old, running("busy", "n0", app="x"), new]).cycle()
    assert placed_nodes(r) == {"new": "n0"}  # v1 pods do not count for a v2 pod


def test_schedule_anyway_constraints_score_but_do_not_filter() -> None:
    """ScheduleAnyway only scores (podtopologyspread/scoring.go): the pods spread 2 and 2 while
    both zones have room; once zone b (room for one pod) is full, the rest still run in zone a."""
    pods = [spread_pod(f"p{i}", "s", constraint(whenUnsatisfiable="ScheduleAnyway"), created=f"2026-01-01T00:00:0{i}Z")
            for i in range(4)]
    r = World([*nodes("a", "b"), *pods]).cycle()
    assert zones_of(r, {"n0": "a", "n1": "b"}) == {"a": 2, "b": 2}
    r = World([*nodes("a"), node("n1", {HOST: "n1", ZONE: "b"}, cpu="1"), *pods]).cycle()
    assert zones_of(r, {"n0": "a", "n1": "b"}) == {"a": 3, "b": 1}


def test_disabled_podtopologyspread_ignores_do_not_schedule() -> None:
    pods = [spread_pod(f"p{i}", created=f"2026-01-01T00:00:0{i}Z") for i in range(4)]
    cfg = config_from_dict({"plugins": {"podTopologySpread": {"enabled": False}}, "schedulerNames": []})
    r = World([*nodes("a", "b"), *pods], cfg).cycle()
    assert set(placed_nodes(r).values()) == {"n0"}


def test_pods_with_other_constraints_are_not_equivalent() -> None:
    a = parse_pod("default/a", spread_pod("a"), {})
    b = parse_pod("default/b", spread_pod("b", "s", constraint(skew=2)), {})
    c = parse_pod("default/c", spread_pod("c", "t"), {})
    d = parse_pod("default/d", spread_pod("d"), {})
    assert len({a.eq_key, b.eq_key, c.eq_key}) == 3
    assert a.eq_key == d.eq_key
