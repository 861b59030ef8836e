"""A scheduling cycle leaves no reference cycle behind: what it built is freed by reference
counting as soon as its result is.

``drasched serve`` runs a cycle every few milliseconds under churn. When a cycle's session
stayed reachable from itself (its journal's operations point back at it), each session, its
copies of the node rows and every object of its placements waited for the cyclic
collector: in serve, most of what the collector found, and the collections held the GIL.
"""

from __future__ import annotations

import collections
import gc

import pytest

from drasched.scheduler.snapshot import CHECK_ENV
from tests.unit.scheduler.helpers import World, claim, device_class, node, pod, queue, resource_slice


def test_a_cycle_that_places_pods_leaves_nothing_for_the_cyclic_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    # the suite's check builds every snapshot a second time from scratch: not what serve runs
    monkeypatch.delenv(CHECK_ENV, raising=False)
    w = World([node("n1"), node("n2"), device_class(), resource_slice("n1", 2), claim("c1"),
               queue("org"), queue("team-a", parent="org"), queue("team-b", parent="org"),
               pod("a", cpu="1", queue="team-a"),
               pod("b", cpu="1", queue="team-b", claims=[{"name": "g", "resourceClaimName": "c1"}])])
    w.cycle()  # the first one fills the builder's caches, which live on
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = w.cycle()
        assert sorted(p.pod.name for p in result.placements) == ["a", "b"]
        del result
        found = gc.collect()
        kinds = collections.Counter(type(o).__name__ for o in gc.garbage).most_common(8)
        assert found == 0, f"left for the cyclic collector: {kinds}"
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
