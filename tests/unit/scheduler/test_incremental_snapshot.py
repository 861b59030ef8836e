"""The snapshot builder applies the cache's changes in place, and gets what a full build gets.

Upstream's scheduler cache keeps NodeInfo per node and updates its snapshot from the
changes since the last cycle (``Cache.UpdateSnapshot``, generation-stamped); here the
builder's world plays that part. Each test below can fail in a way a user would see:
a cycle that costs the whole cluster, or a decision that differs from reading the cache whole.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from drasched.api import kinds
from drasched.dra.allocated_state import AllocatedState
from drasched.scheduler.cache import SchedulerCache
from drasched.scheduler.cycle import CycleResult, run_cycle
from drasched.scheduler.groups import GroupInfo
from drasched.scheduler.queues import build_queue_tree
from drasched.scheduler.snapshot import SnapshotBuilder
from drasched.scheduler.usage import ALLOCATED, REQUESTED, PodUsage, UsageLedger
from drasched.scheduler.worldcheck import WorldMismatch, check_same_world
from tests.unit.scheduler.helpers import (
    CLASS,
    World,
    allocation,
    claim,
    device_class,
    node,
    pod,
    podgroup,
    queue,
    resource_slice,
)

Obj = dict[str, Any]


def _bind(w: World, name: str, node_name: str, phase: str = "Running") -> None:
    p = w.store.get(kinds.POD, name, "default")
    p["spec"]["nodeName"] = node_name
    w.store.update(p)
    p = w.store.get(kinds.POD, name, "default")
    p["status"] = {**(p.get("status") or {}), "phase": phase}
    w.store.update_status(p)


def test_a_new_pod_is_added_without_reading_the_cluster_again() -> None:
    w = World([node("a", cpu="8"), node("b", cpu="8"), queue("q"),
               *[pod(f"run-{i}", cpu="1", queue="q") for i in range(6)]])
    for i in range(6):
        _bind(w, f"run-{i}", "a" if i < 4 else "b")
    w.snapshot()
    full = w.builder.full_builds
    w.store.create(pod("new", cpu="5", queue="q"))
    result = w.cycle()
    assert w.builder.full_builds == full  # applied in place
    assert {br["spec"]["podName"]: br["spec"]["selectedNode"] for br in result.bind_requests} == {"new": "b"}


def test_kinds_not_followed_in_place_build_the_world_again() -> None:
    w = World([node("a", cpu="8"), pod("p", cpu="1")])
    w.snapshot()
    full = w.builder.full_builds
    w.store.create(node("b", cpu="8"))
    snap = w.snapshot()
    assert w.builder.full_builds == full + 1
    assert [n.name for n in snap.nodes] == ["a", "b"]


def test_a_node_heartbeat_keeps_the_world_but_a_new_label_rebuilds_it() -> None:
    """kubelets write node status every few minutes (thousands of nodes: every cycle sees some)."""
    w = World([node("a", cpu="8"), pod("p", cpu="1")])
    w.snapshot()
    full = w.builder.full_builds
    n = w.store.get(kinds.NODE, "a")
    n["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:05:00Z"}]
    w.store.update_status(n)
    snap = w.snapshot()
    assert w.builder.full_builds == full
    assert snap.nodes[0].obj["status"]["conditions"][0]["lastHeartbeatTime"] == "2026-01-01T00:05:00Z"
    n = w.store.get(kinds.NODE, "a")
    n["metadata"]["labels"] = {"zone": "z1"}
    w.store.update(n)
    snap = w.snapshot()
    assert w.builder.full_builds == full + 1
    assert snap.nodes[0].labels.get("zone") == "z1"


def test_a_resource_no_row_stands_for_builds_the_world_again() -> None:
    w = World([node("a", cpu="8"), pod("p", cpu="1")])
    w.snapshot()
    full = w.builder.full_builds
    odd = pod("odd", cpu="1")
    odd["spec"]["containers"][0]["resources"]["requests"]["example.com/widget"] = "1"
    odd["spec"]["containers"][0]["resources"]["limits"] = {"example.com/widget": "1"}
    w.store.create(odd)
    snap = w.snapshot()
    assert w.builder.full_builds == full + 1
    assert "example.com/widget" in snap.index.pos


def test_a_queue_status_write_keeps_the_world_but_a_new_queue_rebuilds_it() -> None:
    w = World([node("a", cpu="8"), queue("q"), pod("p", cpu="1", queue="q")])
    w.snapshot()
    full = w.builder.full_builds
    q = w.store.get(kinds.QUEUE, "q")
    q["status"] = {"allocated": {"cpu": "1"}}
    w.store.update_status(q)
    w.snapshot()
    assert w.builder.full_builds == full
    w.store.create(queue("r"))
    snap = w.snapshot()
    assert w.builder.full_builds == full + 1
    assert "r" in snap.queues.queues


def test_a_pod_that_finishes_frees_its_node_and_its_queue_usage_in_place() -> None:
    w = World([node("a", cpu="4"), queue("q"), pod("done", cpu="3", queue="q"), pod("next", cpu="3", queue="q")])
    _bind(w, "done", "a")
    first = w.cycle()
    assert first.bind_requests == []  # 3 of 4 cpus are taken
    full = w.builder.full_builds
    _bind(w, "done", "a", phase="Succeeded")
    snap = w.snapshot()
    assert w.builder.full_builds == full
    assert snap.usage is not None and snap.usage.of(ALLOCATED, "q").get("cpu", 0.0) == 0.0
    result = run_cycle(snap, w.config, "2026-01-01T00:00:00Z")
    assert [br["spec"]["podName"] for br in result.bind_requests] == ["next"]


def test_a_podgroup_created_after_its_pods_unblocks_the_gang_in_place() -> None:
    w = World([node("a", cpu="8"), queue("q"), *[pod(f"m{i}", cpu="1", queue="q", group="g") for i in range(3)]])
    snap = w.snapshot()
    assert snap.groups["default/g"].blocked == 'PodGroup "default/g" does not exist'
    full = w.builder.full_builds
    w.store.create(podgroup("g", 3, queue="q"))
    result = w.cycle()
    assert w.builder.full_builds == full
    assert sorted(br["spec"]["podName"] for br in result.bind_requests) == ["m0", "m1", "m2"]


def _random_step(w: World, rng: random.Random, step: int) -> None:
    pods = sorted(w.store.list(kinds.POD).items, key=lambda o: o["metadata"]["name"])
    roll = rng.random()
    if roll < 0.35 or not pods:
        group = rng.choice([None, None, "g1", "g2"])
        w.store.create(pod(f"p{step}", cpu=rng.choice(["1", "2", "500m"]), queue=rng.choice(["q1", "q2", "nope"]),
                           group=group))
        return
    victim = rng.choice(pods)
    name = victim["metadata"]["name"]
    if roll < 0.55 and not victim["spec"].get("nodeName"):
        _bind(w, name, rng.choice(["a", "b", "c"]))
    elif roll < 0.65:
        _bind(w, name, victim["spec"].get("nodeName") or "a", phase=rng.choice(["Succeeded", "Failed"]))
    elif roll < 0.75:
        w.store.delete(kinds.POD, name, "default")
    elif roll < 0.85:
        group = rng.choice(["g1", "g2"])
        existing = w.store.list(kinds.POD_GROUP).items
        if any(o["metadata"]["name"] == group for o in existing):
            pg = w.store.get(kinds.POD_GROUP, group, "default")
            pg["spec"]["minMember"] = rng.randint(1, 4)
            w.store.update(pg)
        else:
            w.store.create(podgroup(group, rng.randint(1, 4), queue="q1"))
    else:
        p = w.store.get(kinds.POD, name, "default")
        p["metadata"].setdefault("labels", {})["touched"] = str(step)
        w.store.update(p)


def _kept_and_fresh_agree(w: World) -> CycleResult:
    """Build in place and from scratch: the worlds are equal, and a cycle on either snapshot
    places the same pods on the same nodes with the same claims and messages."""
    w.cache.sync(w.store)
    kept = w.builder.build(w.cache)
    fresh_builder = SnapshotBuilder(w.config)
    fresh = fresh_builder.build(w.cache)
    assert w.builder._world is not None and fresh_builder._world is not None
    check_same_world(w.builder._world, fresh_builder._world)
    now = "2026-01-01T00:00:00Z"
    a, b = run_cycle(kept, w.config, now), run_cycle(fresh, w.config, now)
    assert [(p.pod.key, p.node, p.claims) for p in a.placements] == \
           [(p.pod.key, p.node, p.claims) for p in b.placements]
    assert [(p.key, c["message"]) for p, c in a.pod_conditions] == \
           [(p.key, c["message"]) for p, c in b.pod_conditions]
    return a


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_changes_give_the_world_and_the_decisions_of_a_full_build(seed: int) -> None:
    """Every step: the world kept in place equals one built from scratch, and a cycle on either
    snapshot places the same pods on the same nodes with the same messages."""
    rng = random.Random(seed)
    w = World([node("a", cpu="8"), node("b", cpu="8"), node("c", cpu="4"), queue("q1"), queue("q2"),
               pod("first", cpu="1", queue="q1")])  # its namespace exists from the start
    w.builder._check = False  # this test compares by itself
    w.snapshot()
    full_builds = w.builder.full_builds
    for step in range(60):
        _random_step(w, rng, step)
        result = _kept_and_fresh_agree(w)
        for br in result.bind_requests:  # the cycle's placements land, as the binder would write them
            _bind(w, br["spec"]["podName"], br["spec"]["selectedNode"])
    assert w.builder.full_builds == full_builds  # pods and PodGroups only: never a full build


def _claim_step(w: World, rng: random.Random, step: int) -> None:
    """Claims come, get allocated (as the binder writes them), are freed and go; pods name them."""
    claims = sorted(w.store.list(kinds.RESOURCE_CLAIM).items, key=lambda o: o["metadata"]["name"])
    roll = rng.random()
    if roll < 0.3 or not claims:
        w.store.create(claim(f"c{step}", count=rng.randint(1, 2)))
        return
    c = rng.choice(claims)
    name = c["metadata"]["name"]
    if roll < 0.5:
        w.store.create(pod(f"p{step}", cpu="1", queue="q1", claims=[{"name": "gpu", "resourceClaimName": name}]))
    elif roll < 0.7 and not (c.get("status") or {}).get("allocation"):
        taken = {r["device"] for o in claims for r in ((o.get("status") or {}).get("allocation") or {})
                 .get("devices", {}).get("results", []) if r["pool"] == "a"}
        free = [d for d in (f"dev-{i}" for i in range(4)) if d not in taken]
        want = c["spec"]["devices"]["requests"][0]["exactly"]["count"]
        if len(free) >= want:
            c["status"] = {"allocation": {**allocation("a", *free[:want]),
                                          "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                              {"key": "metadata.name", "operator": "In", "values": ["a"]}]}]}}}
            w.store.update_status(c)
    elif roll < 0.85 and (c.get("status") or {}).get("allocation"):
        c["status"] = {}
        w.store.update_status(c)
    else:
        w.store.delete(kinds.RESOURCE_CLAIM, name, "default")


@pytest.mark.parametrize("seed", [7, 8])
def test_random_claim_changes_give_the_world_and_the_decisions_of_a_full_build(seed: int) -> None:
    rng = random.Random(seed)
    w = World([device_class(), node("a", cpu="16"), node("b", cpu="16"), resource_slice("a", 4),
               resource_slice("b", 4), queue("q1"), pod("first", cpu="1", queue="q1")])
    w.builder._check = False
    w.snapshot()
    full_builds = w.builder.full_builds
    for step in range(50):
        _claim_step(w, rng, step)
        _kept_and_fresh_agree(w)
    assert w.builder.full_builds == full_builds  # claims and pods: never a full build


def test_the_check_names_what_differs() -> None:
    w = World([node("a", cpu="8"), pod("p", cpu="1")])
    w.snapshot()
    fresh = SnapshotBuilder(w.config)
    fresh.build(w.cache)
    assert w.builder._world is not None and fresh._world is not None
    w.builder._world.pod_used[0, 0] += 1.0
    with pytest.raises(WorldMismatch, match="pod_used"):
        check_same_world(w.builder._world, fresh._world)


def test_the_cache_log_names_what_changed_and_forgets_what_is_long_past() -> None:
    w = World([node("a"), pod("p")])
    cache: SchedulerCache = w.cache
    cache.sync(w.store)
    since = cache.generation
    w.store.create(pod("q"))
    p = w.store.get(kinds.POD, "p", "default")
    p["metadata"]["labels"] = {"x": "1"}
    w.store.update(p)
    cache.sync(w.store)
    assert cache.changed_since(kinds.POD, since) == {"default/p", "default/q"}
    for i in range(5000):
        obj = w.store.get(kinds.POD, "q", "default")
        obj["metadata"]["labels"] = {"n": str(i)}
        w.store.update(obj)
        cache.sync(w.store)
    assert cache.changed_since(kinds.POD, since) is None  # too far back: read everything


def _tree() -> Any:
    return build_queue_tree([queue("parent"), queue("q", parent="parent")], lambda r: r)


def test_a_claim_shared_by_two_pods_of_a_queue_counts_once_until_its_last_pod_goes() -> None:
    ledger = UsageLedger(_tree())
    gpu = {"c1": {"gpu": 2.0}}
    ledger.set_pod("ns/a", PodUsage("q", (REQUESTED, ALLOCATED), {"cpu": 1.0}, ("c1",)), gpu)
    ledger.set_pod("ns/b", PodUsage("q", (REQUESTED, ALLOCATED), {"cpu": 1.0}, ("c1",)), gpu)
    assert ledger.usage.of(ALLOCATED, "parent") == {"cpu": 2.0, "gpu": 2.0}
    ledger.set_pod("ns/a", None, gpu)
    assert ledger.usage.of(ALLOCATED, "q") == {"cpu": 1.0, "gpu": 2.0}
    ledger.set_pod("ns/b", None, gpu)
    assert ledger.usage.of(ALLOCATED, "q") == {"cpu": 0.0, "gpu": 0.0}
    assert not ledger.usage.claims[ALLOCATED]["q"]


def test_a_claim_allocated_later_counts_its_devices_where_it_is_counted() -> None:
    ledger = UsageLedger(_tree())
    ledger.set_pod("ns/a", PodUsage("q", (REQUESTED,), {}, ("c1",)), {"c1": {"gpu": 1.0}})
    ledger.set_claim("c1", {"gpu": 0.5})  # allocated: half a GPU
    assert ledger.usage.of(REQUESTED, "parent") == {"gpu": 0.5}
    ledger.set_pod("ns/a", None, {})
    assert ledger.usage.of(REQUESTED, "q") == {"gpu": 0.0}


def test_a_cycle_changes_a_copy_of_the_usage_never_the_ledger() -> None:
    ledger = UsageLedger(_tree())
    ledger.set_pod("ns/a", PodUsage("q", (REQUESTED,), {"cpu": 1.0}, ("c1",)), {"c1": {"gpu": 1.0}})
    mine = ledger.usage.copy()
    mine.add(ALLOCATED, "q", {"cpu": 5.0})
    mine.mark(REQUESTED, "q", ("c2",))
    assert ledger.usage.of(ALLOCATED, "q") == {}
    assert ledger.usage.claims[REQUESTED]["q"] == {"c1"}
    assert mine.claims[REQUESTED]["q"] == {"c1", "c2"}


def _fill_and_set(usages: list[tuple[str, PodUsage]]) -> tuple[dict[str, float], dict[str, float]]:
    """The parent queue's allocated usage after one fill, and after set_pod pod by pod."""
    filled, one_by_one = UsageLedger(_tree()), UsageLedger(_tree())
    filled.fill(usages, {})
    for key, u in usages:
        one_by_one.set_pod(key, u, {})
    return filled.usage.of(ALLOCATED, "parent"), one_by_one.usage.of(ALLOCATED, "parent")


def test_a_full_build_sums_pods_of_one_template_exactly_as_pod_by_pod() -> None:
    shared = {"cpu": 100.0, "memory": 32.0 * 2**30}  # one template's demand dict, as the builder shares it
    filled, one_by_one = _fill_and_set([(f"ns/p{i}", PodUsage("q", (REQUESTED, ALLOCATED), shared, ()))
                                        for i in range(1000)])
    assert filled == one_by_one == {"cpu": 100_000.0, "memory": 1000 * 32.0 * 2**30}


def test_fractions_are_summed_pod_by_pod_so_every_build_gets_the_same_floats() -> None:
    # Ten tenths of a GPU add up to 0.9999999999999999, ten times a tenth to 1.0: a build that
    # took the shortcut would see a whole GPU used where adding pod by pod sees a sliver free.
    tenth = {"gpu": 0.1}
    filled, one_by_one = _fill_and_set([(f"ns/p{i}", PodUsage("q", (ALLOCATED,), tenth, ())) for i in range(10)])
    assert filled == one_by_one == {"gpu": sum([0.1] * 10)} and filled["gpu"] != 1.0


def test_node_rows_of_pods_sharing_fractional_requests_are_the_same_in_place_and_from_scratch() -> None:
    pods = [pod(f"f{i}", queue="q", gpu=1) for i in range(10)]
    for p in pods:
        p["metadata"]["annotations"] = {"drasched.io/gpu-fraction": "0.1"}
    w = World([node("a", gpu=1), queue("q"), *pods])
    for i in range(10):
        _bind(w, f"f{i}", "a")
    w.snapshot()
    _bind(w, "f3", "a", phase="Succeeded")  # one finishes: its node column is summed again in place
    snap = w.snapshot()
    fresh = SnapshotBuilder(w.config).build(w.cache)
    gpu = snap.index.pos["nvidia.com/gpu"]
    assert snap.used[gpu, 0] == fresh.used[gpu, 0] == sum([0.1] * 9)


def test_groups_are_built_from_their_members_alone() -> None:
    w = World([node("a"), queue("q"), pod("x", queue="q", group="g"), pod("y", queue="other", group="g"),
               podgroup("g", 2, queue="q")])
    g: GroupInfo = w.snapshot().groups["default/g"]
    assert [p.name for p in g.pods] == ["x", "y"] and g.queue == "q"
    assert [p.name for p in g.label_mismatch] == ["y"]


def test_a_forked_allocated_state_leaves_the_kept_one_as_it_was() -> None:
    kept = AllocatedState()
    kept.add(allocation("a", "dev-0"))
    pool = (CLASS, "a")
    fork = kept.fork()
    fork.add(allocation("a", "dev-1"))
    fork.remove(allocation("a", "dev-0"))
    assert kept.devices() == {(CLASS, "a", "dev-0")} and kept.devices_in_pool(pool) == ["dev-0"]
    assert fork.devices() == {(CLASS, "a", "dev-1")} and fork.devices_in_pool(pool) == ["dev-1"]
    assert fork.pool_version(pool) > kept.pool_version(pool)  # the allocator's counter memo sees the change


def test_a_reservation_the_binder_writes_is_no_longer_assumed_from_the_bind_request() -> None:
    """The binder writes the claim's allocation and reservedFor before it binds the pod: from
    then on the BindRequest's reservation is in the claim's status and not assumed twice."""
    w = World([device_class(), node("a", cpu="8"), resource_slice("a", 2), queue("q1"), claim("c1"),
               pod("p", cpu="1", queue="q1", claims=[{"name": "gpu", "resourceClaimName": "c1"}])])
    result = w.cycle()
    [br] = result.bind_requests
    w.store.create(br)
    w.snapshot()
    entry = br["spec"]["resourceClaimAllocations"][0]
    c = w.store.get(kinds.RESOURCE_CLAIM, "c1", "default")
    c["status"] = {"allocation": entry["allocation"], "reservedFor": [entry["reservedFor"]]}
    w.store.update_status(c)
    w.cache.sync(w.store)
    w.builder.build(w.cache)
    fresh = SnapshotBuilder(w.config)
    fresh.build(w.cache)
    assert w.builder._world is not None and fresh._world is not None
    check_same_world(w.builder._world, fresh._world)
    assert w.builder._world.assumed_res == {}
    assert len(w.builder._world.claims["default/c1"].reserved_for) == 1


def test_pods_that_come_and_go_leave_nothing_behind_in_the_builder() -> None:
    """Serve runs for months: what the builder remembers per pod must go with the pod."""
    w = World([node("a", cpu="64"), queue("q1"), pod("first", cpu="1", queue="q1")])
    w.snapshot()
    for i in range(40):
        w.store.create(pod(f"p{i}", cpu="1", queue="q1"))
        w.cycle()
        w.store.delete(kinds.POD, f"p{i}", "default")
    w.snapshot()
    world = w.builder._world
    assert world is not None and set(world.pods) == {"default/first"}
    assert set(w.builder._pods) <= {"default/first"} and set(w.builder._demands) <= {"default/first"}
    assert set(world.group_of) == {"default/first"} and set(world.groups) == {"pod:default/first"}
