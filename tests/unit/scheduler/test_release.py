"""Releasing a pod in the session (what an eviction frees), and exactly undoing it."""

from __future__ import annotations

import numpy as np

from drasched.scheduler.accounting import ALLOCATED
from drasched.scheduler.release import release, reoccupy
from drasched.scheduler.session import Session
from tests.unit.scheduler.helpers import CLASS, World, device_class, node, podgroup, queue, resource_slice
from tests.unit.scheduler.preemption_helpers import held_claim, ref, running, uses

DIM = f"deviceclass.resource.kubernetes.io/{CLASS}"


def _state(s: Session) -> tuple:
    return (s.idle.copy(), s.used.copy(), s.state.devices(), dict(s.state.consumed_capacity((CLASS, "a", "dev-0"))),
            sorted(s.state.devices_in_pool((CLASS, "a"))), dict(s.claim_alloc), set(s.deallocated),
            {k: set(v) for k, v in s.released.items() if v}, dict(s.usage.of(ALLOCATED, "q")))


def _same(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


def _release(s: Session, name: str) -> object:
    p = s.snap.pods[f"default/{name}"]
    return release(s, p, s.snap.node_pos[p.node_name], "q")


def test_a_released_pod_gives_back_its_requests_its_devices_and_its_queue_usage_and_rollback_undoes_it() -> None:
    w = World([node("a"), device_class(), resource_slice("a", 2), queue("q"),
               held_claim("c", "a", "dev-0", "dev-1", consumers=(ref("p"),)),
               running("p", "a", cpu="2", queue="q", claims=uses("c"))])
    s = w.session()
    before = _state(s)
    row = s.snap.class_rows[CLASS]
    assert s.usage.of(ALLOCATED, "q") == {"cpu": 2000.0, "pods": 1.0, DIM: 2.0}  # cpu in millicores
    stmt = s.statement()
    _release(s, "p")
    assert s.state.devices() == set() and s.idle[row, 0] == 2
    assert s.claim_allocation("default/c") is None and s.reservations("default/c") == []
    assert {d: v for d, v in s.usage.of(ALLOCATED, "q").items() if v} == {}
    stmt.rollback()
    assert _same(_state(s), before)


def test_reoccupy_takes_the_room_back_and_a_rollback_frees_it_again() -> None:
    w = World([node("a"), device_class(), resource_slice("a", 2), queue("q"),
               held_claim("c", "a", "dev-0", consumers=(ref("p"),)), running("p", "a", queue="q", claims=uses("c"))])
    s = w.session()
    before = _state(s)
    stmt = s.statement()
    rel = _release(s, "p")
    freed = _state(s)
    reoccupy(s, rel)
    assert _same(_state(s), before)
    stmt.rollback(stmt.start + 1)
    assert _same(_state(s), freed)


def test_a_claim_another_pod_still_holds_stays_allocated_until_its_last_consumer_goes() -> None:
    w = World([node("a"), device_class(), resource_slice("a", 2), queue("q"),
               held_claim("shared", "a", "dev-0", consumers=(ref("p1"), ref("p2"))),
               running("p1", "a", queue="q", claims=uses("shared")),
               running("p2", "a", queue="q", claims=uses("shared"))])
    s = w.session()
    _release(s, "p1")
    assert s.claim_allocation("default/shared") is not None
    assert [r["name"] for r in s.reservations("default/shared")] == ["p2"]
    _release(s, "p2")
    assert s.claim_allocation("default/shared") is None and s.state.devices() == set()


def test_a_group_claim_reserved_for_the_podgroup_is_never_freed_by_evicting_its_pods() -> None:
    group_ref = {"apiGroup": "scheduling.drasched.io", "resource": "podgroups", "name": "g", "uid": "uid-g"}
    pg = podgroup("g", 1, queue="q", resourceClaims=[{"name": "gpu", "resourceClaimName": "team"}])
    pg["metadata"]["uid"] = "uid-g"
    w = World([node("a"), device_class(), resource_slice("a", 2), queue("q"), pg,
               held_claim("team", "a", "dev-0", consumers=(group_ref,)),
               running("p", "a", queue="q", group="g", claims=uses("team"))])
    s = w.session()
    _release(s, "p")
    assert s.claim_allocation("default/team") is not None and s.state.devices() == {(CLASS, "a", "dev-0")}


def test_shared_counters_and_consumed_capacity_are_given_back() -> None:
    shared = held_claim("share", "a", "dev-0", consumers=(ref("p"),))
    shared["status"]["allocation"]["devices"]["results"][0].update(shareID="s-1", consumedCapacity={"memory": "10Gi"})
    w = World([node("a"), device_class(), resource_slice("a", 2), queue("q"), shared,
               running("p", "a", queue="q", claims=uses("share"))])
    s = w.session()
    before = _state(s)
    assert s.state.consumed_capacity((CLASS, "a", "dev-0")) and s.state.devices_in_pool((CLASS, "a")) == ["dev-0"]
    stmt = s.statement()
    _release(s, "p")
    assert s.state.consumed_capacity((CLASS, "a", "dev-0")) == {} and s.state.devices_in_pool((CLASS, "a")) == []
    stmt.rollback()
    assert _same(_state(s), before)
