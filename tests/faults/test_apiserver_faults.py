"""The API server restarted mid-burst, and etcd compacted so that every watch gets 410.

* Restart: kube-apiserver stopped (SIGTERM) and started again on the same port and etcd
  data while serve places a burst. Every connection and watch ends; the leader cannot
  renew within its renew deadline and exits 1, and comes back (a Supervisor restarts it as
  the kubelet would) to a server that kept every object.
* Compaction: the API server runs without its watch cache, so watches are served from
  etcd; etcd is compacted past every resourceVersion serve holds, then every open watch is
  cut (a proxy resets the streams): each resumes from its last resourceVersion, gets 410
  Gone, and must relist, dropping what it held that the new list lacks.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from drasched.api import kinds
from drasched.serve.main import SERVE_KINDS
from drasched.testing.apiserver import LocalCluster
from tests.faults.harness import (
    NAMESPACE,
    SIZE,
    Replica,
    Report,
    Supervisor,
    check_invariants,
    create_burst,
    create_inventory,
    fault_cluster,
    finish,
    read_audit,
    settle,
    wait_for,
)
from tests.faults.proxy import FaultProxy

pytestmark = pytest.mark.e2e

RESTARTS = 3 if SIZE.kills > 3 else 1


def test_api_server_restarted_mid_burst_loses_nothing(cluster: LocalCluster, tmp_path: Path) -> None:
    admin = cluster.store()
    replica = Replica(cluster, "serve-0", tmp_path / "serve-0.log")
    replica.start()
    burst = threading.Thread(target=create_burst, args=(cluster.store(), SIZE.pods, 0.05))
    burst.start()
    with Supervisor([replica]) as supervisor:
        try:
            for i in range(RESTARTS):
                # Mid-burst on a fast machine as on a loaded one: once serve leads and has
                # created a share of the burst's claims (its claim controller at work), not
                # after a fixed time that a slow start may outlast.
                wanted = SIZE.pods * (i + 1) // (RESTARTS + 1)
                wait_for(f"serve to create {wanted} claims",
                         lambda n=wanted: len(admin.list(kinds.RESOURCE_CLAIM, NAMESPACE).items) >= n)
                cluster.restart_apiserver(down_seconds=1.0)
            burst.join()
            settle(admin, SIZE.pods)
        finally:
            replica.stop()
    report = Report("API server restarted mid-burst")
    check_invariants(admin, report, [replica], read_audit(tmp_path))
    report.counts["apiserver_restarts"] = RESTARTS
    report.counts["serve_restarts_after_lost_lease"] = supervisor.restarts
    finish(report)


def test_etcd_compaction_makes_every_watch_relist(tmp_path: Path) -> None:
    with fault_cluster(tmp_path, watch_cache=False) as cluster:
        admin = cluster.store()
        create_inventory(admin, SIZE.nodes)
        with FaultProxy(cluster.url, Path(cluster.ca_file).parent, seed=0, fault_rate=0.0) as proxy:
            replica = Replica(cluster, "serve-0", tmp_path / "serve-0.log", server=proxy.url)
            replica.start()
            burst = threading.Thread(target=create_burst, args=(cluster.store(), SIZE.pods, 0.05))
            burst.start()
            cuts = 0
            try:
                for _ in range(RESTARTS + 1):
                    time.sleep(2.0)
                    wait_for("serve to watch every kind", lambda: proxy.open_streams() >= len(SERVE_KINDS))
                    # Cut first and hold the reconnects until etcd has compacted: a busy watch
                    # (pods, claims during the burst) would otherwise see an event newer than
                    # the compaction before its cut and resume without a 410.
                    proxy.hold_watches()
                    try:
                        cuts += proxy.cut_streams()
                        cluster.compact()
                        cluster.compact()  # past the marker too: no watch can resume at the compacted revision
                    finally:
                        proxy.release_watches()
                burst.join()
                settle(admin, SIZE.pods)
            finally:
                replica.stop()
        report = Report("etcd compaction, every watch cut")
        check_invariants(admin, report, [replica], read_audit(tmp_path))
    relisted = {ln.split(" watch from ")[0].rsplit(" ", 1)[-1].rstrip(":")
                for ln in replica.log_text().splitlines() if "; relisting" in ln}
    report.counts["watches_cut"] = cuts
    report.counts["kinds_relisted"] = len(relisted)
    missing = {rt.kind for rt in SERVE_KINDS} - relisted
    assert not missing, f"kinds whose watch did not get 410 and relist: {sorted(missing)}"
    finish(report)
