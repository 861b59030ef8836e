"""The allocate action: gangs all-or-nothing, minMember, priorities, queues, topology, messages."""

from __future__ import annotations

import importlib
from typing import Any

from drasched.api import kinds
from drasched.scheduler.cycle import run_cycle
from tests.unit.scheduler.helpers import (
    CLASS,
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

allocate_module = importlib.import_module("drasched.scheduler.actions.allocate")
"""The module (the package exports its ``allocate`` function under the same name)."""
Obj = dict[str, Any]


def test_a_gang_that_does_not_fit_whole_places_nothing() -> None:
    w = World([node("a", gpu=4), podgroup("g", 3), *[pod(f"g{i}", gpu=2, group="g") for i in range(3)]])
    r = w.cycle()
    assert placed_nodes(r) == {}
    assert messages(r)["g0"] == ("pod group default/g: 2 of the 3 pods needed to reach minMember 3 fit together; "
                                 "g2: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    assert r.group_messages["default/g"] == messages(r)["g2"]


def test_beyond_min_member_pods_are_placed_as_far_as_they_fit() -> None:
    w = World([node("a", gpu=3), podgroup("g", 2), *[pod(f"g{i}", gpu=1, group="g") for i in range(5)]])
    r = w.cycle()
    assert sorted(placed_nodes(r)) == ["g0", "g1", "g2"]
    assert messages(r) == {"g3": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
                           "g4": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}
    assert r.groups_placed == {"default/g": 3}


def test_members_already_placed_count_toward_min_member() -> None:
    w = World([node("a", gpu=2), podgroup("g", 3), pod("g0", gpu=1, group="g", node_name="a"),
               pod("g1", gpu=1, group="g", node_name="a"), pod("g2", gpu=1, group="g"), pod("g3", gpu=1, group="g")])
    r = w.cycle()
    # 2 placed, minMember 3: one more is needed and nothing fits
    assert placed_nodes(r) == {}
    assert messages(r)["g2"].startswith("pod group default/g: 0 of the 1 pods needed to reach minMember 3")


def test_gangs_go_by_priority_then_age() -> None:
    w = World([node("a", gpu=2),
               podgroup("old", 1, created="2026-01-01T00:00:01Z"), pod("old0", gpu=2, group="old", priority=10),
               podgroup("new", 1, created="2026-01-01T00:00:02Z"), pod("new0", gpu=2, group="new", priority=10),
               podgroup("vip", 1, created="2026-01-01T00:00:03Z"), pod("vip0", gpu=2, group="vip", priority=50)])
    assert placed_nodes(w.cycle()) == {"vip0": "a"}
    w2 = World([node("a", gpu=2),
                podgroup("old", 1, created="2026-01-01T00:00:01Z"), pod("old0", gpu=2, group="old"),
                podgroup("new", 1, created="2026-01-01T00:00:02Z"), pod("new0", gpu=2, group="new")])
    assert placed_nodes(w2.cycle()) == {"old0": "a"}


def test_queues_take_turns_by_fair_share_deficit() -> None:
    # equal shares of 4 GPUs: each queue gets 2 although q1's pods are older
    w = World([node("a", gpu=4), queue("q1"), queue("q2"),
               *[pod(f"a{i}", gpu=1, queue="q1", created=f"2026-01-01T00:00:0{i}Z") for i in range(4)],
               *[pod(f"b{i}", gpu=1, queue="q2", created=f"2026-01-01T00:01:0{i}Z") for i in range(4)]])
    r = w.cycle()
    assert sorted(placed_nodes(r)) == ["a0", "a1", "b0", "b1"]
    shares = {q: r.shares[q]["nvidia.com/gpu"] for q in ("q1", "q2")}
    assert shares == {"q1": 2, "q2": 2}


def test_queue_limit_stops_a_pod_and_says_so() -> None:
    w = World([node("a", gpu=8), queue("q", resources={"nvidia.com/gpu": {"limit": "3"}}),
               pod("p1", gpu=2, queue="q"), pod("p2", gpu=2, queue="q")])
    r = w.cycle()
    assert list(placed_nodes(r)) == ["p1"]
    # the PostFilter's statuses follow, as for any FitError (no lower-priority pod of q to evict)
    assert messages(r) == {"p2": "0/1 nodes are available: queue q over its limit for nvidia.com/gpu. no new claims "
                                 "to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found "
                                 "for incoming pod."}


def test_a_parents_limit_applies_to_its_children() -> None:
    w = World([node("a", gpu=8), queue("top", resources={"nvidia.com/gpu": {"limit": "2"}}), queue("leaf", "top"),
               pod("p1", gpu=2, queue="leaf"), pod("p2", gpu=1, queue="leaf")])
    assert messages(w.cycle()) == {"p2": "0/1 nodes are available: queue top over its limit for nvidia.com/gpu. "
                                         "no new claims to deallocate, preemption: 0/1 nodes are available: 1 No "
                                         "preemption victims found for incoming pod."}


def test_equivalent_pods_share_predicate_and_allocator_work() -> None:
    w = World([node("a"), node("b"), device_class(), resource_slice("a", 1), resource_slice("b", 1),
               *[claim(f"c{i}") for i in range(3)],
               *[pod(f"p{i}", claims=[{"name": "g", "resourceClaimName": f"c{i}"}], nodeSelector={"k": "v"})
                 for i in range(3)]])
    for n in ("a", "b"):
        obj = w.store.get(kinds.NODE, n)
        obj["metadata"]["labels"] = {"k": "v"}
        w.store.update(obj)
    snap = w.snapshot()
    r = run_cycle(snap, w.config, "2026-01-01T00:00:00Z")
    assert sorted(placed_nodes(r).values()) == ["a", "b"]
    assert messages(r)["p2"].startswith("0/2 nodes are available: 2 not enough gpu.example.com devices")
    # two placements, and the third pod is turned away by the device counts without asking the allocator
    assert snap.allocator.stats["allocate_calls"] <= 2 + 2  # + explanations of the 2 rejected nodes


def test_claim_pods_wait_for_their_claims_with_a_clear_message() -> None:
    tmpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": CLASS}}]}}}}
    w = World([node("a"), tmpl,
               pod("by-name", claims=[{"name": "g", "resourceClaimName": "nope"}]),
               pod("by-template", claims=[{"name": "g", "resourceClaimTemplateName": "t"}]),
               pod("no-template", claims=[{"name": "g", "resourceClaimTemplateName": "missing"}])])
    assert messages(w.cycle()) == {
        "by-name": "waiting for ResourceClaim default/nope to be created",
        "by-template": "waiting for a ResourceClaim to be created from template default/t (entry g)",
        "no-template": "waiting for ResourceClaimTemplate default/missing, which does not exist",
    }


def test_required_topology_keeps_later_members_in_the_domain_of_placed_ones() -> None:
    rack = "rack"
    w = World([node("a1", {rack: "a"}, gpu=4), node("b1", {rack: "b"}, gpu=4), node("b2", {rack: "b"}, gpu=4),
               podgroup("g", 1, topologyConstraint={"requiredTopologyKey": rack}),
               pod("g0", gpu=1, group="g", node_name="a1"), pod("g1", gpu=4, group="g")])
    r = w.cycle()
    # rack b has room, but g0 already runs in rack a, where g1 does not fit
    assert placed_nodes(r) == {}
    assert messages(r)["g1"] == ("pod group default/g: minMember 1 is reached (1 placed); the pods beyond it wait: "
                                 "no room left in the pod group's rack domain a, where its placed pods run")


def test_a_pod_beyond_a_reached_min_member_is_not_told_0_of_0_pods_are_needed() -> None:
    # KAI's topology example: minMember 2 reached in rack a, the third pod has no room there
    rack = "rack"
    w = World([node("a1", {rack: "a"}, gpu=8), node("a2", {rack: "a"}, gpu=8), node("b1", {rack: "b"}, gpu=8),
               podgroup("g", 2, topologyConstraint={"requiredTopologyKey": rack}),
               pod("g0", gpu=8, group="g", node_name="a1"), pod("g1", gpu=8, group="g", node_name="a2"),
               pod("g2", gpu=8, group="g")])
    r = w.cycle()
    assert placed_nodes(r) == {}
    assert messages(r)["g2"] == ("pod group default/g: minMember 2 is reached (2 placed); the pods beyond it wait: "
                                 "no room left in the pod group's rack domain a, where its placed pods run")


def test_unchanged_conditions_are_not_written_again() -> None:
    w = World([node("a", gpu=1), pod("big", gpu=2)])
    first = w.cycle()
    (_, cond), = first.pod_conditions
    obj = w.store.get(kinds.POD, "big", "default")
    obj["status"]["conditions"] = [cond]
    w.store.update_status(obj)
    assert w.cycle().pod_conditions == []


def test_an_allocated_claim_pins_its_pods_to_its_nodes() -> None:
    pinned = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}]}
    alloc = {**allocation("c", "dev-0"), "nodeSelector": pinned}
    w = World([node("a"), node("b"), node("c", cpu="1"), device_class(), resource_slice("c", 1),
               claim("held", allocation=alloc),
               pod("p1", claims=[{"name": "g", "resourceClaimName": "held"}]),
               pod("p2", cpu="2", claims=[{"name": "g", "resourceClaimName": "held"}])])
    snap = w.snapshot()
    r = run_cycle(snap, w.config, "2026-01-01T00:00:00Z")
    assert placed_nodes(r) == {"p1": "c"}
    assert snap.allocator.stats["allocate_calls"] == 1  # only node c was asked
    # sort.Strings on "<count> <reason>", as upstream's FitError.Error: "1 ..." before "2 ..."
    # then the PostFilter's: node c is short of cpu (resolvable: tried, no victim), DRA rejects a and b
    # as unresolvable (not tried)
    assert messages(r)["p2"] == ("0/3 nodes are available: 1 Insufficient cpu, "
                                 "2 resourceclaim not available on the node (claim default/held). still not "
                                 "schedulable, preemption: 0/3 nodes are available: 1 No preemption victims found "
                                 "for incoming pod, 2 Preemption is not helpful for scheduling.")


def test_a_claim_reserved_for_the_maximum_takes_no_new_consumer() -> None:
    full = claim("busy", allocation=allocation("a", "dev-0"))
    full["status"]["reservedFor"] = [{"resource": "pods", "name": f"x{i}", "uid": f"u{i}"} for i in range(256)]
    w = World([node("a"), device_class(), resource_slice("a", 1), full,
               pod("late", claims=[{"name": "g", "resourceClaimName": "busy"}])])
    assert messages(w.cycle()) == {"late": "ResourceClaim default/busy is already reserved for 256 consumers, "
                                           "the maximum; to share it with more pods, list it in their PodGroup's "
                                           "spec.resourceClaims: it is then reserved for the group as one consumer"}


def _gang(name: str, size: int, created: str, gpu: int = 1) -> list[Obj]:
    return [podgroup(name, size, created=created), *[pod(f"{name}{i}", gpu=gpu, group=name) for i in range(size)]]


def test_a_gang_like_one_that_failed_gets_its_message_with_its_own_pod_names(monkeypatch: Any) -> None:
    # upstream kube-scheduler's equivalence classes: an equivalent gang, with nothing placed
    # since, fails the same way; it is told so without being tried on every node again
    tried: list[str] = []
    real = allocate_module.place_task

    def counting(session: Any, stmt: Any, g: Any, t: Any, mask: Any) -> str | None:
        tried.append(t.name)
        return real(session, stmt, g, t, mask)

    monkeypatch.setattr(allocate_module, "place_task", counting)
    w = World([node("a", gpu=2), *_gang("a", 2, "2026-01-01T00:00:01Z"), *_gang("b", 2, "2026-01-01T00:00:02Z"),
               *_gang("c", 2, "2026-01-01T00:00:03Z")])
    r = w.cycle()
    assert sorted(placed_nodes(r)) == ["a0", "a1"]
    why = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    for g in ("b", "c"):
        expected = f"pod group default/{g}: 0 of the 2 pods needed to reach minMember 2 fit together; {g}0: {why}"
        assert messages(r)[f"{g}0"] == messages(r)[f"{g}1"] == r.group_messages[f"default/{g}"] == expected
    assert tried == ["a0", "a1", "b0"]


def test_a_placement_in_between_makes_an_equivalent_gang_be_tried_again() -> None:
    # b falls short with one GPU left; c takes it; d, shaped like b, meets a fuller node
    w = World([node("a", gpu=3), *_gang("a", 2, "2026-01-01T00:00:01Z"), *_gang("b", 2, "2026-01-01T00:00:02Z"),
               *_gang("c", 1, "2026-01-01T00:00:03Z"), *_gang("d", 2, "2026-01-01T00:00:04Z")])
    r = w.cycle()
    assert sorted(placed_nodes(r)) == ["a0", "a1", "c0"]
    why = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    short = "pods needed to reach minMember 2 fit together"
    assert messages(r)["b0"] == f"pod group default/b: 1 of the 2 {short}; b1: {why}"
    assert messages(r)["d0"] == f"pod group default/d: 0 of the 2 {short}; d0: {why}"
