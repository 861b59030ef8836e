"""The benchmark harness works end to end: each workload once, at a tiny size.

Not a measurement (CI machines are too small and too noisy for one): it proves that every
workload loads, that drasched places every measured pod embedded and against a real API
server, that upstream kube-scheduler does too where the workload has an upstream
equivalent, and that the printed lines carry figures. The real runs and their results
are in BENCHMARKS.md.
"""

from __future__ import annotations

import re

import pytest

from drasched.bench.cluster import ClusterResult, run_cluster, summarize
from drasched.bench.embedded import run_embedded
from drasched.bench.workloads import WORKLOADS

NODES = 2
"""Small enough for CI, large enough that every workload has init or measured pods on two nodes."""
TIMEOUT = 120.0
FIGURES = re.compile(r"bound (\d+)/(\d+) in +[\d.]+ s +avg +[\d.]+ pods/s .* latency p50/p90/p99 [\d.]+/[\d.]+/[\d.]+ s"
                     r" +cpu [\d.]+ s +rss \d+ MiB +server cpu [\d.]+ s")

CLUSTER_RUNS = [(name, sched) for name in WORKLOADS for sched in ("drasched", "kube-scheduler")
                if not (sched == "kube-scheduler" and WORKLOADS[name](NODES).drasched_only)]


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_embedded_run_places_every_measured_pod(name: str) -> None:
    workload = WORKLOADS[name](NODES)
    result = run_embedded(workload, NODES)
    assert result.measured == len(workload.measured_pods) > 0
    assert result.bound == result.measured, result.line()
    assert result.seconds > 0 and result.peak_rss_mib > 0
    assert re.search(rf"{name} +nodes={NODES} +measured={result.measured} +bound={result.measured} ", result.line())


@pytest.mark.e2e
@pytest.mark.parametrize(("name", "scheduler"), CLUSTER_RUNS, ids=[f"{n}-{s}" for n, s in CLUSTER_RUNS])
def test_cluster_run_binds_every_measured_pod(name: str, scheduler: str) -> None:
    workload = WORKLOADS[name](NODES)
    result = run_cluster(workload, scheduler, timeout=TIMEOUT)
    line = result.line()
    assert result.measured == len(workload.measured_pods) > 0
    assert result.bound == result.measured, line
    assert len(result.latencies) == result.measured and all(lat >= 0 for lat in result.latencies)
    assert sum(result.per_second) == result.bound
    assert result.cpu_seconds > 0 and result.peak_rss_mib > 0 and result.server_cpu_seconds > 0, line
    m = FIGURES.search(line)
    assert m is not None, line
    assert m.group(1) == m.group(2) == str(result.measured)


def test_summary_prints_the_ratio_per_workload() -> None:
    d = ClusterResult("w", "drasched", 10, 10, 2.0, [5, 5], [0.1] * 10)
    k = ClusterResult("w", "kube-scheduler", 10, 10, 1.0, [10], [0.2] * 10)
    assert summarize([d, k]) == ["w                  drasched/kube-scheduler throughput ratio 0.50"
                                 " (median latency 0.10 s vs 0.20 s)"]
