"""Leader election on a Lease and the serve loop, on the memory store."""

from __future__ import annotations

import logging
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from drasched.api import kinds
from drasched.serve.leader import LeaderElector
from drasched.serve.main import _Health, run, start_http
from drasched.serve.metrics import Metrics
from drasched.store.memory import MemoryStore


class FakeClock:
    def __init__(self) -> None:
        self.t = datetime(2026, 3, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.t


def _store() -> MemoryStore:
    s = MemoryStore()
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})
    return s


def test_only_one_candidate_leads_until_the_lease_expires() -> None:
    store, clock = _store(), FakeClock()
    a = LeaderElector(store, identity="a", lease_duration=15, clock=clock)
    b = LeaderElector(store, identity="b", lease_duration=15, clock=clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    clock.t += timedelta(seconds=10)
    assert a.try_acquire_or_renew()  # renewal
    clock.t += timedelta(seconds=10)
    assert not b.try_acquire_or_renew()  # renewed 10 s ago: still valid
    clock.t += timedelta(seconds=16)
    assert b.try_acquire_or_renew()  # a stopped renewing
    lease = store.get(kinds.LEASE, "drasched", "kube-system")
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()


def test_becoming_leader_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """Operators see which replica leads in its log, as kube-scheduler's "successfully acquired lease"."""
    store, clock = _store(), FakeClock()
    a = LeaderElector(store, identity="a", lease_duration=15, clock=clock)
    with caplog.at_level(logging.INFO, logger="drasched.serve.leader"):
        assert a.try_acquire_or_renew()
        clock.t += timedelta(seconds=5)
        assert a.try_acquire_or_renew()  # a renewal says nothing new
    lines = [r.getMessage() for r in caplog.records if r.name == "drasched.serve.leader"]
    assert lines == ["acquired Lease kube-system/drasched as a: this replica leads"]


def test_release_lets_a_standby_take_over_at_once() -> None:
    store, clock = _store(), FakeClock()
    a = LeaderElector(store, identity="a", clock=clock)
    b = LeaderElector(store, identity="b", clock=clock)
    assert a.try_acquire_or_renew()
    a.release()
    clock.t += timedelta(seconds=2)
    assert b.try_acquire_or_renew()


class CountingController:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def reconcile(self, ctx: Any) -> bool:
        self.calls += 1
        ctx.decide("binder", "bound", "Pod/x", "bound")
        return False


def test_loop_runs_controllers_only_while_leading() -> None:
    store, clock = _store(), FakeClock()
    other = LeaderElector(store, identity="other", clock=clock)
    assert other.try_acquire_or_renew()
    c = CountingController()
    metrics = Metrics()
    me = LeaderElector(store, identity="me", clock=clock)
    run(store, [c], metrics=metrics, elector=me, period=0.0, max_loops=3)
    assert c.calls == 0
    clock.t += timedelta(seconds=60)
    run(store, [c], metrics=metrics, elector=me, period=0.0, max_loops=3)
    assert c.calls == 3
    assert metrics.pods_scheduled._value.get() == 3


def test_http_serves_healthz_and_metrics() -> None:
    metrics = Metrics()
    metrics.record_queue({"metadata": {"name": "team-a"}, "status": {"allocated": {"nvidia.com/gpu": "4"}}})
    server = start_http(0, metrics, _Health(), host="127.0.0.1")
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz") as r:
            assert r.read() == b"ok"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as r:
            text = r.read().decode()
        assert 'drasched_queue_allocated{queue="team-a",resource="nvidia.com/gpu"} 4.0' in text
    finally:
        server.shutdown()
