"""Statements: tentative placements, DRA allocations included, undone exactly by a rollback."""

from __future__ import annotations

import numpy as np

from drasched.scheduler.accounting import ALLOCATED
from drasched.scheduler.actions.task import place_task
from tests.unit.scheduler.helpers import CLASS, World, claim, device_class, node, pod, resource_slice


def _world() -> World:
    return World([node("a"), node("b"), device_class(), resource_slice("a", 2), resource_slice("b", 2),
                  claim("c1", count=2), claim("c2"), claim("shared"),
                  pod("p1", cpu="1", queue="default", claims=[{"name": "x", "resourceClaimName": "c1"}]),
                  pod("p2", cpu="1", claims=[{"name": "x", "resourceClaimName": "c2"},
                                             {"name": "s", "resourceClaimName": "shared"}]),
                  pod("p3", cpu="1", claims=[{"name": "s", "resourceClaimName": "shared"}])])


def test_rollback_restores_vectors_allocator_state_claims_and_queue_usage() -> None:
    s = _world().session()
    snap = s.snap
    before = (s.idle.copy(), s.used.copy(), s.state.devices(), dict(s.usage.of(ALLOCATED, "default")))
    stmt = s.statement()
    for name in ("p1", "p2", "p3"):
        t = snap.pods[f"default/{name}"]
        assert place_task(s, stmt, snap.groups[f"pod:default/{name}"], t, None) is None
    assert len(s.state.devices()) == 4  # c1 takes 2, c2 1, shared 1
    assert s.idle[snap.class_rows[CLASS]].sum() == 0
    assert s.usage.of(ALLOCATED, "default")[f"deviceclass.resource.kubernetes.io/{CLASS}"] == 4  # shared once
    assert set(s.placements) == {"default/p1", "default/p2", "default/p3"}
    stmt.rollback()
    assert np.array_equal(s.idle, before[0]) and np.array_equal(s.used, before[1])
    assert s.state.devices() == before[2] == set()
    assert s.claim_alloc == {} and all(not v for v in s.claim_reserved.values())
    assert {k: v for k, v in s.usage.of(ALLOCATED, "default").items() if v} == before[3]
    assert s.placements == {}


def test_checkpoint_rolls_back_only_what_came_after() -> None:
    s = _world().session()
    snap = s.snap
    stmt = s.statement()
    place_task(s, stmt, snap.groups["pod:default/p1"], snap.pods["default/p1"], None)
    mark = stmt.checkpoint()
    place_task(s, stmt, snap.groups["pod:default/p2"], snap.pods["default/p2"], None)
    stmt.rollback(mark)
    assert set(s.placements) == {"default/p1"}
    assert len(s.state.devices()) == 2


def test_a_shared_claim_is_allocated_once_and_reserved_for_each_pod() -> None:
    s = _world().session()
    snap = s.snap
    stmt = s.statement()
    for name in ("p2", "p3"):
        place_task(s, stmt, snap.groups[f"pod:default/{name}"], snap.pods[f"default/{name}"], None)
    p2, p3 = s.placements["default/p2"], s.placements["default/p3"]
    assert p2.node == p3.node  # the shared device is node-local
    shared2 = next(e for e in p2.claims if e["name"] == "shared")
    shared3 = next(e for e in p3.claims if e["name"] == "shared")
    assert shared2["allocation"] == shared3["allocation"]  # both BindRequests carry it until it is written
    assert [shared2["reservedFor"]["name"], shared3["reservedFor"]["name"]] == ["p2", "p3"]
    assert len(s.state.devices()) == 2
