"""Required inter-pod affinity and anti-affinity: upstream InterPodAffinity's Filter.

Each test names the rule of kubernetes/kubernetes
``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`` it checks
(``satisfyPodAffinity``, ``satisfyPodAntiAffinity``, ``satisfyExistingPodsAntiAffinity``).
"""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.scheduler.config import config_from_dict
from drasched.scheduler.plugins.interpod import MSG_AFFINITY, MSG_ANTI_AFFINITY, MSG_EXISTING_ANTI_AFFINITY
from drasched.scheduler.podinfo import parse_pod
from tests.unit.scheduler.helpers import World, messages, no_victims, node, placed_nodes, pod, podgroup

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def nodes(*zones: str) -> list[Obj]:
    """One node per entry, ``n0``, ``n1`` ..., in the zone named."""
    return [node(f"n{i}", {HOST: f"n{i}", ZONE: z}) for i, z in enumerate(zones)]


def labelled(obj: Obj, **labels: str) -> Obj:
    obj["metadata"]["labels"].update(labels)
    return obj


def term(key: str = HOST, **more: Any) -> Obj:
    out: Obj = {"topologyKey": key}
    out.update(more)
    return out


def with_terms(obj: Obj, kind: str, *terms: Obj) -> Obj:
    obj["spec"].setdefault("affinity", {})[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}
    return obj


def anti(name: str, app: str, *terms: Obj, **kw: Any) -> Obj:
    return with_terms(labelled(pod(name, cpu="1", **kw), app=app), "podAntiAffinity", *terms)


def sel(**labels: str) -> Obj:
    return {"matchLabels": labels}


def msg(n: int, *counts: tuple[int, str]) -> str:
    return f"0/{n} nodes are available: " + ", ".join(f"{k} {m}" for k, m in counts) + "."


def test_satisfy_pod_anti_affinity_one_replica_per_hostname_in_one_cycle() -> None:
    # the repro: a Deployment's replicas with required anti-affinity to themselves on hostname
    pods = [anti(f"r{i}", "vllm", term(labelSelector=sel(app="vllm")), created=f"2026-01-01T00:00:0{i}Z")
            for i in range(4)]
    r = World([*nodes("a", "a", "b"), *pods]).cycle()
    placed = placed_nodes(r)
    assert sorted(placed.values()) == ["n0", "n1", "n2"]
    (left,) = {"r0", "r1", "r2", "r3"} - set(placed)
    assert messages(r)[left] == no_victims(msg(3, (3, MSG_ANTI_AFFINITY)), 3, 3)


def test_satisfy_pod_anti_affinity_against_running_pods_in_the_zone() -> None:
    running = labelled(pod("db", cpu="1", node_name="n0"), app="db")
    new = anti("web", "web", term(ZONE, labelSelector=sel(app="db")))
    r = World([*nodes("a", "a", "b"), running, new]).cycle()
    assert placed_nodes(r) == {"web": "n2"}


def test_anti_affinity_term_without_label_selector_selects_nothing() -> None:
    # metav1.LabelSelectorAsSelector(nil) is labels.Nothing()
    running = labelled(pod("db", cpu="1", node_name="n0"), app="db")
    new = anti("web", "web", term())
    r = World([*nodes("a"), running, new]).cycle()
    assert placed_nodes(r) == {"web": "n0"}


def test_satisfy_existing_pods_anti_affinity_symmetry() -> None:
    # a running pod's anti-affinity keeps a pod it selects off its domain, even a pod without terms
    keeper = anti("keeper", "keeper", term(labelSelector=sel(app="web")), node_name="n0")
    web = labelled(pod("web", cpu="1"), app="web")
    other = labelled(pod("other", cpu="1"), app="other")
    r = World([*nodes("a"), keeper, web, other]).cycle()
    assert placed_nodes(r) == {"other": "n0"}
    assert messages(r)["web"] == no_victims(msg(1, (1, MSG_EXISTING_ANTI_AFFINITY)), 1, 1)


def test_symmetry_counts_pods_placed_earlier_in_the_cycle() -> None:
    first = anti("first", "first", term(labelSelector=sel(app="second")), created="2026-01-01T00:00:01Z")
    second = labelled(pod("second", cpu="1", created="2026-01-01T00:00:02Z"), app="second")
    r = World([*nodes("a", "a"), first, second]).cycle()
    placed = placed_nodes(r)
    assert set(placed) == {"first", "second"} and placed["first"] != placed["second"]


def test_satisfy_pod_affinity_to_a_running_pod_in_its_zone() -> None:
    running = labelled(pod("cache", cpu="1", node_name="n2"), app="cache")
    new = with_terms(labelled(pod("app", cpu="1"), app="app"), "podAffinity",
                     term(ZONE, labelSelector=sel(app="cache")))
    r = World([*nodes("a", "a", "b", "b"), running, new]).cycle()
    assert placed_nodes(r)["app"] in ("n2", "n3")


def test_satisfy_pod_affinity_nothing_matches_and_not_itself() -> None:
    new = with_terms(labelled(pod("app", cpu="1"), app="app"), "podAffinity", term(ZONE, labelSelector=sel(app="x")))
    r = World([*nodes("a", "b"), new]).cycle()
    assert messages(r)["app"] == no_victims(msg(2, (2, MSG_AFFINITY)), 0, 2)


def test_satisfy_pod_affinity_first_of_a_series_matching_its_own_terms() -> None:
    # "This pod may be the first pod in a series that have affinity to themselves": allowed on
    # nodes with every topology key, nowhere else
    mk = [with_terms(labelled(pod(f"p{i}", cpu="1", created=f"2026-01-01T00:00:0{i}Z"), app="s"), "podAffinity",
                     term(ZONE, labelSelector=sel(app="s"))) for i in range(3)]
    bare = node("bare", {HOST: "bare"})
    r = World([bare, *nodes("a", "b"), *mk]).cycle()
    placed = placed_nodes(r)
    assert len(placed) == 3
    zones = {"n0": "a", "n1": "b"}
    assert len({zones[v] for v in placed.values()}) == 1  # the rest follow the first into its zone


def test_satisfy_pod_affinity_node_without_the_key_fails_even_when_pods_match() -> None:
    running = labelled(pod("cache", cpu="1", node_name="n0"), app="cache")
    new = with_terms(labelled(pod("app", cpu="1"), app="app"), "podAffinity",
                     term(ZONE, labelSelector=sel(app="cache")))
    r = World([node("n0", {HOST: "n0", ZONE: "a"}, cpu="1"), node("bare", {HOST: "bare"}), running, new]).cycle()
    assert messages(r)["app"] == no_victims(msg(2, (1, "Insufficient cpu"), (1, MSG_AFFINITY)), 1, 2)


def test_pod_affinity_requires_one_pod_matching_all_terms() -> None:
    # updateWithAffinityTerms counts a pod only if it matches ALL the terms
    a = labelled(pod("a", cpu="1", node_name="n0"), app="a")
    b = labelled(pod("b", cpu="1", node_name="n0"), tier="b")
    new = with_terms(pod("app", cpu="1"), "podAffinity", term(labelSelector=sel(app="a")),
                     term(labelSelector=sel(tier="b")))
    r = World([*nodes("a", "a"), a, b, new]).cycle()
    assert messages(r)["app"] == no_victims(msg(2, (2, MSG_AFFINITY)), 0, 2)
    both = labelled(pod("ab", cpu="1", node_name="n1"), app="a", tier="b")
    r = World([*nodes("a", "a"), a, b, both, new]).cycle()
    assert placed_nodes(r) == {"app": "n1"}


def test_term_namespaces_default_to_the_owners_namespace() -> None:
    running = labelled(pod("db", ns="other", cpu="1", node_name="n0"), app="db")
    new = anti("web", "web", term(labelSelector=sel(app="db")))
    r = World([*nodes("a"), running, new]).cycle()
    assert placed_nodes(r) == {"web": "n0"}  # db is in another namespace
    new = anti("web", "web", term(labelSelector=sel(app="db"), namespaces=["other"]))
    r = World([*nodes("a"), running, new]).cycle()
    assert messages(r)["web"] == no_victims(msg(1, (1, MSG_ANTI_AFFINITY)), 1, 1)


def test_term_namespace_selector_empty_selects_every_namespace_and_labels_select_some() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}}
    running = labelled(pod("db", ns="prod", cpu="1", node_name="n0"), app="db")
    for selector, blocked in (({}, True), ({"matchLabels": {"env": "prod"}}, True),
                              ({"matchLabels": {"env": "dev"}}, False)):
        new = anti("web", "web", term(labelSelector=sel(app="db"), namespaceSelector=selector))
        r = World([ns, *nodes("a"), running, new]).cycle()
        assert (placed_nodes(r) == {}) is blocked, selector


def test_match_label_keys_and_mismatch_label_keys_are_merged_from_the_owners_labels() -> None:
    old = labelled(pod("old", cpu="1", node_name="n0"), app="web", **{"pod-template-hash": "v1"})
    new = labelled(anti("new", "web", term(labelSelector=sel(app="web"), matchLabelKeys=["pod-template-hash"])),
                   **{"pod-template-hash": "v2"})
    r = World([*nodes("a"), old, new]).cycle()
    assert placed_nodes(r) == {"new": "n0"}  # only pods of its own revision keep it away
    new = labelled(anti("new", "web", term(labelSelector=sel(app="web"), mismatchLabelKeys=["pod-template-hash"])),
                   **{"pod-template-hash": "v2"})
    r = World([*nodes("a"), old, new]).cycle()
    assert messages(r)["new"] == no_victims(msg(1, (1, MSG_ANTI_AFFINITY)), 1, 1)


def test_terminating_pods_still_count_for_anti_affinity() -> None:
    # upstream's NodeInfo holds terminating pods until they are gone
    w = World([*nodes("a"), labelled(pod("db", cpu="1", node_name="n0"), app="db")])
    w.store.delete(kinds.POD, "db", "default")  # graceful: bound, so marked as deleting
    assert w.snapshot().pods["default/db"].deleting
    w.store.create(anti("web", "web", term(labelSelector=sel(app="db"))))
    r = w.cycle()
    assert messages(r)["web"] == no_victims(msg(1, (1, MSG_ANTI_AFFINITY)), 1, 1)


def test_a_gang_rolled_back_leaves_no_pod_behind() -> None:
    # a gang of 3 with anti-affinity on 2 nodes does not fit; its 2 tentative placements are
    # rolled back and do not keep a later pod off their nodes
    gang = [anti(f"g{i}", "g", term(labelSelector=sel(app="g")), group="gang", created="2026-01-01T00:00:01Z")
            for i in range(3)]
    later = anti("later", "later", term(labelSelector=sel(app="g")), created="2026-01-01T00:00:09Z")
    r = World([*nodes("a", "a"), podgroup("gang", 3, created="2026-01-01T00:00:01Z"), *gang, later]).cycle()
    assert placed_nodes(r) == {"later": "n0"}


def test_disabled_interpodaffinity_ignores_required_terms() -> None:
    pods = [anti(f"r{i}", "vllm", term(labelSelector=sel(app="vllm"))) for i in range(3)]
    cfg = config_from_dict({"plugins": {"interPodAffinity": {"enabled": False}}, "schedulerNames": []})
    r = World([*nodes("a", "a", "a"), *pods], cfg).cycle()
    assert set(placed_nodes(r).values()) == {"n0"}


def test_pods_with_other_terms_are_not_equivalent() -> None:
    a = parse_pod("default/a", anti("a", "x", term(labelSelector=sel(app="x"))), {})
    b = parse_pod("default/b", anti("b", "x", term(ZONE, labelSelector=sel(app="x"))), {})
    c = parse_pod("default/c", anti("c", "y", term(labelSelector=sel(app="x"))), {})
    d = parse_pod("default/d", anti("d", "x", term(labelSelector=sel(app="x"))), {})
    assert len({a.eq_key, b.eq_key, c.eq_key}) == 3
    assert a.eq_key == d.eq_key
