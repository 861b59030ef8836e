"""Two replicas with leader election (lease 4 s, renew deadline 3 s, retry 1 s), each its
own user of the API server, so that the audit log says which replica made every write.

* The leader killed (-9) mid-burst: the standby takes over within the lease duration of
  the last renewal it saw, so within lease duration + two retry periods of the kill (the
  lease may have been renewed just before the kill, the standby sees that renewal at its
  next poll, up to one retry period later, and acquires at the first poll after expiry,
  up to one more), and no replica writes anything but the Lease while it does not hold it.
* The leader paused (SIGSTOP) past its lease while the standby takes over and schedules,
  then resumed (SIGCONT): the server received no write from it after the resume (it is
  past its renew deadline, so it stops writing and exits 1, as kube-scheduler does).
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster
from tests.faults.harness import (
    LEASE_DURATION,
    LONG,
    RETRY_PERIOD,
    SIZE,
    AuditEntry,
    Replica,
    Report,
    check_invariants,
    create_burst,
    finish,
    lease_holder,
    read_audit,
    settle,
    wait_for,
)

pytestmark = pytest.mark.e2e

FAILOVERS = 6 if LONG else 2


def _lease_won(audit: list[AuditEntry], user: str, after: float) -> float | None:
    """When ``user`` first wrote the Lease successfully after ``after`` (its takeover)."""
    times = [e.received for e in audit
             if e.user == user and e.resource == "leases" and e.code < 300 and e.received > after]
    return min(times, default=None)


def _writes(audit: list[AuditEntry], user: str) -> list[AuditEntry]:
    return [e for e in audit if e.user == user and e.resource != "leases" and e.code < 300]


def test_leader_killed_mid_burst_standby_takes_over_within_the_lease(
    cluster: LocalCluster, admin: KubeStore, tmp_path: Path
) -> None:
    rng = random.Random(5)
    replicas = [Replica(cluster, user, tmp_path / f"{user}.log") for user in ("serve-0", "serve-1")]
    replicas[0].start()
    wait_for("the first replica to take the lease", lambda: lease_holder(admin))
    replicas[1].start()
    burst = threading.Thread(target=create_burst, args=(cluster.store(), SIZE.pods, 0.05))
    burst.start()
    kills: list[tuple[str, float]] = []  # (killed leader, when)
    leader, standby = replicas
    try:
        for _ in range(FAILOVERS):
            time.sleep(rng.uniform(2.0, 5.0))
            holder = lease_holder(admin)
            leader.kill()
            kills.append((leader.user, time.time()))
            wait_for("the standby to take the lease", lambda h=holder: lease_holder(admin) not in ("", h), 60)
            leader.start()  # back as the standby
            leader, standby = standby, leader
        burst.join()
        settle(admin, SIZE.pods)
    finally:
        for r in replicas:
            r.stop()
    audit = read_audit(tmp_path)
    report = Report("leader killed, standby takes over")
    check_invariants(admin, report, replicas, audit)
    takeovers = []
    for killed, at in kills:
        other = next(r.user for r in replicas if r.user != killed)
        won = _lease_won(audit, other, at)
        assert won is not None, f"{other} never took the lease after {killed} was killed"
        takeovers.append(won - at)
        if won - at > LEASE_DURATION + 2 * RETRY_PERIOD:
            report.violation("takeover slower than the lease duration + two retry periods", f"{won - at:.1f} s")
        # between the kill and the takeover nobody may write: the old leader is dead, the
        # standby does not hold the lease yet
        early = [e for e in _writes(audit, other) if at < e.received < won]
        if early:
            report.violation("standby wrote before taking the lease", f"{other}: {early[:3]}")
    report.counts["failovers"] = len(takeovers)
    report.counts["slowest_takeover_ms"] = int(1000 * max(takeovers))
    finish(report)


def test_leader_paused_past_its_lease_writes_nothing_after_it_resumes(
    cluster: LocalCluster, admin: KubeStore, tmp_path: Path
) -> None:
    paused, other = (Replica(cluster, user, tmp_path / f"{user}.log") for user in ("serve-0", "serve-1"))
    paused.start()
    wait_for("the first replica to take the lease", lambda: lease_holder(admin))
    first_holder = lease_holder(admin)
    other.start()
    burst = threading.Thread(target=create_burst, args=(cluster.store(), SIZE.pods, 0.05))
    burst.start()
    try:
        time.sleep(3.0)  # mid-burst: the leader has cycles, binds and events in flight
        paused.pause()
        wait_for("the standby to take the lease", lambda: lease_holder(admin) not in ("", first_holder), 60)
        time.sleep(3.0)  # the new leader schedules while the old one sleeps
        resumed_at = time.time()
        paused.resume()
        assert paused.proc is not None
        code = paused.proc.wait(60)
        burst.join()
        settle(admin, SIZE.pods)
    finally:
        paused.stop()
        other.stop()
    audit = read_audit(tmp_path)
    report = Report("leader paused past its lease and resumed")
    check_invariants(admin, report, [paused, other], audit)
    after = [e for e in audit if e.user == paused.user and e.code < 300 and e.received >= resumed_at]
    for e in after:
        report.violation("write by the paused leader after it resumed",
                         f"{e.verb} {e.resource} {e.name} at +{e.received - resumed_at:.3f} s")
    refused = [e for e in audit if e.user == paused.user and e.code >= 300 and e.received >= resumed_at]
    report.counts["paused_leader_exit_code"] = code
    report.counts["paused_leader_writes_after_resume"] = len(after)
    report.counts["paused_leader_attempts_refused_after_resume"] = len(refused)
    report.counts["failovers"] = 1
    assert code == 1, "a leader past its renew deadline exits 1, as kube-scheduler does"
    finish(report)
