"""Slow and failing writes: serve talks to the API server through a proxy that delays a
seeded fraction of its writes, answers 500 or 429 for others, and cuts the connection of
some before and some after the server applied them (the client cannot tell whether the
write happened, so every retry must be idempotent)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster
from tests.faults.harness import SIZE, Replica, Report, check_invariants, create_burst, finish, read_audit, settle
from tests.faults.proxy import FaultProxy

pytestmark = pytest.mark.e2e


def test_writes_delayed_refused_and_cut_leave_no_invariant_broken(
    cluster: LocalCluster, admin: KubeStore, tmp_path: Path
) -> None:
    with FaultProxy(cluster.url, Path(cluster.ca_file).parent, seed=16, fault_rate=0.25) as proxy:
        replica = Replica(cluster, "serve-0", tmp_path / "serve-0.log", server=proxy.url)
        replica.start()
        burst = threading.Thread(target=create_burst, args=(cluster.store(), SIZE.pods, 0.02))
        burst.start()
        try:
            burst.join()
            settle(admin, SIZE.pods)
        finally:
            replica.stop()
    report = Report("slow and failing writes")
    check_invariants(admin, report, [replica], read_audit(tmp_path))
    report.counts.update({f"proxied_writes_{k}": v for k, v in sorted(proxy.counts.items())})
    assert sum(v for k, v in proxy.counts.items() if k != "pass") > 0, "the proxy injected no fault"
    finish(report)
