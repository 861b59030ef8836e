"""kill -9 of ``drasched serve`` at seeded random moments of a burst of DRA pods.

Each kill cuts whatever was in flight: a claim created but not its pod's status, an
allocation written but not the binding, a BindRequest half done. The restarted process
(a new identity: it waits out the dead one's lease, as a rescheduled pod would) must pick
up from what the server holds, not from what it meant to do.
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
    SIZE,
    Replica,
    Report,
    check_invariants,
    create_burst,
    finish,
    read_audit,
    settle,
)

pytestmark = pytest.mark.e2e


def test_kill_9_mid_burst_restarted_each_time_leaves_no_invariant_broken(
    cluster: LocalCluster, admin: KubeStore, tmp_path: Path
) -> None:
    rng = random.Random(16)
    replica = Replica(cluster, "serve-0", tmp_path / "serve-0.log")
    replica.start()
    burst = threading.Thread(target=create_burst, args=(cluster.store(), SIZE.pods, 0.02))
    burst.start()
    try:
        for _ in range(SIZE.kills):
            time.sleep(rng.uniform(1.0, 6.0))  # seeded: the same moments on every run
            replica.kill()
            replica.start()
        burst.join()
        settle(admin, SIZE.pods)
    finally:
        replica.stop()
    report = Report("kill -9 and restart")
    check_invariants(admin, report, [replica], read_audit(tmp_path))
    finish(report)
