"""Leadership fences writes: a leader past its renew deadline writes nothing, a standby
never takes over before that deadline has passed, and a lost lease ends the serve loop."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from drasched.api import kinds
from drasched.serve.fencing import FencedStore, LeadershipLost
from drasched.serve.leader import LeaderElector
from drasched.serve.main import run
from drasched.store.memory import MemoryStore


class Clocks:
    """One fake time read as wall clock (datetime) and as monotonic seconds."""

    def __init__(self) -> None:
        self.t = 1000.0

    def wall(self) -> datetime:
        return datetime(2026, 3, 1, tzinfo=UTC) + timedelta(seconds=self.t)

    def mono(self) -> float:
        return self.t


def _setup() -> tuple[MemoryStore, Clocks]:
    s = MemoryStore()
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return s, Clocks()


def _elector(store: MemoryStore, clocks: Clocks, who: str) -> LeaderElector:
    return LeaderElector(store, identity=who, lease_duration=15, renew_deadline=10, retry_period=2,
                         clock=clocks.wall, monotonic=clocks.mono)


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_writes_pass_only_within_the_renew_deadline() -> None:
    store, clocks = _setup()
    a = _elector(store, clocks, "a")
    fenced = FencedStore(store, a)
    with pytest.raises(LeadershipLost):
        fenced.create(_cm("before-leading"))
    assert a.try_acquire_or_renew()
    fenced.create(_cm("leading"))
    clocks.t += 9.9
    fenced.create(_cm("still-fresh"))
    clocks.t += 0.2  # 10.1 s since the renewal began: past the deadline, before the lease ends
    with pytest.raises(LeadershipLost, match="create ConfigMap"):
        fenced.create(_cm("stale"))
    assert fenced.get(kinds.CONFIG_MAP, "leading", "default")["metadata"]["name"] == "leading"  # reads pass
    assert fenced.refused == 2
    assert a.try_acquire_or_renew()  # renewed: writes pass again
    fenced.create(_cm("renewed"))


def test_a_paused_leader_cannot_write_after_a_standby_took_over() -> None:
    """The pause (SIGSTOP) outlasts the lease; on resume the old leader's write is refused,
    and the standby could only take over after the old leader's deadline had passed."""
    store, clocks = _setup()
    a, b = _elector(store, clocks, "a"), _elector(store, clocks, "b")
    old_leader = FencedStore(store, a)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b sees a's record now
    clocks.t += 14.0
    assert not b.try_acquire_or_renew()  # within the lease duration of b's own observation
    clocks.t += 2.0
    assert b.try_acquire_or_renew()
    assert not a.may_write()
    with pytest.raises(LeadershipLost):
        old_leader.bind("default", "p", "n1")
    assert not a.try_acquire_or_renew()
    assert not a.is_leader


def test_expiry_is_measured_on_the_candidates_own_clock() -> None:
    """client-go's observedTime: an old renewTime written by a skewed clock does not let a
    newcomer take a lease that is still being renewed."""
    store, clocks = _setup()
    store.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                  "metadata": {"name": "drasched", "namespace": "kube-system"},
                  "spec": {"holderIdentity": "skewed", "leaseDurationSeconds": 15,
                           "renewTime": "2020-01-01T00:00:00.000000Z"}})
    b = _elector(store, clocks, "b")
    assert not b.try_acquire_or_renew()
    clocks.t += 15.0
    assert b.try_acquire_or_renew()  # the record did not change for a lease duration


def test_timings_must_nest() -> None:
    store, _ = _setup()
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        LeaderElector(store, lease_duration=10, renew_deadline=10, retry_period=2)


class Thief:
    """A controller during whose round the process stalls and another replica takes over."""

    name = "thief"

    def __init__(self, store: MemoryStore, clocks: Clocks) -> None:
        self.store, self.clocks = store, clocks
        self.other = _elector(store, clocks, "other")
        self.refused: list[str] = []
        self.rounds = 0

    def reconcile(self, ctx: Any) -> bool:
        self.rounds += 1
        if self.rounds == 1:
            assert not self.other.try_acquire_or_renew()  # the standby sees the leader's record
        if self.rounds == 2:
            self.clocks.t += 20.0
            assert self.other.try_acquire_or_renew()
            try:
                ctx.store.create(_cm("from-a-stale-cycle"))
            except LeadershipLost as exc:
                self.refused.append(str(exc))
        return True


def test_a_lost_lease_ends_the_loop_and_the_stale_cycle_wrote_nothing() -> None:
    store, clocks = _setup()
    me = _elector(store, clocks, "me")
    thief = Thief(store, clocks)
    with pytest.raises(LeadershipLost):
        run(store, [thief], elector=me, period=0.0, max_loops=10)
    assert thief.refused and thief.rounds == 2
    assert [c["metadata"]["name"] for c in store.list(kinds.CONFIG_MAP, "default").items] == []
    assert store.get(kinds.LEASE, "drasched", "kube-system")["spec"]["holderIdentity"] == "other"
