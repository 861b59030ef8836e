"""The benchmark harness works end to end: each workload once, at a tiny size.

Not a measurement (CI machines are too small and too noisy for one): it proves that every
workload loads, that drasched places every measured pod embedded and against a real API
server, that upstream kube-scheduler does too where the workload has an upstream
equivalent, and that the printed lines carry figures. The real runs and their results
are in BENCHMARKS.md.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from drasched.bench.cluster import ClusterResult, run_cluster, summarize
from drasched.bench.embedded import run_embedded
from drasched.bench.workloads import WORKLOADS, SteadyState, Workload

NODES = 2
"""Small enough for CI, large enough that every workload has init or measured pods on two nodes."""
TIMEOUT = 120.0
FIGURES = re.compile(r"bound (\d+)/(\d+) in +[\d.]+ s +avg +[\d.]+ pods/s .* latency p50/p90/p99 [\d.]+/[\d.]+/[\d.]+ s"
                     r"( \(burst created in [\d.]+ s\))? +cpu [\d.]+ s +rss \d+ MiB +server cpu [\d.]+ s")

STEADY = SteadyState(count=3, duration=4.0)
"""The steady-state workloads in CI: 3 pods in flight for 4 s."""


def tiny(name: str) -> Workload:
    workload = WORKLOADS[name](NODES)
    if workload.steady is not None:
        workload = dataclasses.replace(workload, steady=STEADY)
    return workload


def assert_all_bound(workload: Workload, measured: int, bound: int, line: str) -> None:
    """Every measured pod bound; in steady state every pod but the last few still in flight."""
    if workload.steady is None:
        assert measured == len(workload.measured_pods) > 0
        assert bound == measured, line
    else:  # each bound pod was replaced: more pods than the count went through, at most count left
        assert bound > workload.steady.count, line
        assert measured - workload.steady.count <= bound <= measured, line


CLUSTER_RUNS = [(name, sched) for name in WORKLOADS for sched in ("drasched", "kube-scheduler")
                if not (sched == "kube-scheduler" and WORKLOADS[name](NODES).drasched_only)]


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_embedded_run_places_every_measured_pod(name: str) -> None:
    workload = tiny(name)
    result = run_embedded(workload, NODES)
    assert_all_bound(workload, result.measured, result.bound, result.line())
    assert result.seconds > 0 and result.peak_rss_mib > 0
    assert re.search(rf"{name} +nodes={NODES} +measured={result.measured} +bound={result.bound} ", result.line())


@pytest.mark.e2e
@pytest.mark.parametrize(("name", "scheduler"), CLUSTER_RUNS, ids=[f"{n}-{s}" for n, s in CLUSTER_RUNS])
def test_cluster_run_binds_every_measured_pod(name: str, scheduler: str) -> None:
    workload = tiny(name)
    result = run_cluster(workload, scheduler, timeout=TIMEOUT)
    line = result.line()
    assert_all_bound(workload, result.measured, result.bound, line)
    assert len(result.latencies) == result.bound and all(lat >= 0 for lat in result.latencies)
    assert sum(result.per_second) == result.bound
    assert result.cpu_seconds > 0 and result.peak_rss_mib > 0 and result.server_cpu_seconds > 0, line
    m = FIGURES.search(line)
    assert m is not None, line
    assert (m.group(1), m.group(2)) == (str(result.bound), str(result.measured))
    # a burst says how long its creation took (its pods' latency depends on it); a steady run has none
    assert (m.group(3) is not None) == (workload.steady is None), line
    # the server's own request counters: every measured pod was created once and bound once
    assert result.requests.get("POST pods", 0) >= result.measured, result.requests
    assert result.requests.get("POST pods/binding", 0) >= result.bound, result.requests
    assert result.writes_per_pod >= 2.0 and "POST pods/binding" in result.request_breakdown()
    # the garbage collector runs beside either scheduler, its CPU counted apart
    assert re.search(r"  gc cpu [\d.]+ s$", line), line


@pytest.mark.e2e
def test_a_burst_at_a_set_arrival_rate_is_created_no_faster_than_that() -> None:
    """``--arrival-rate``: both schedulers meet the same arrivals (pod i no sooner than i/rate s)."""
    workload = tiny("claim-template")
    rate = 20.0
    result = run_cluster(workload, "drasched", timeout=TIMEOUT, arrival_rate=rate)
    assert_all_bound(workload, result.measured, result.bound, result.line())
    assert result.measured > 1
    # the last pod's slot is (measured - 1) / rate after the schedule starts; the first pod is
    # created a moment after that start (its thread has to run), hence the 10 ms
    assert result.created_seconds is not None and result.created_seconds >= (result.measured - 1) / rate - 0.01


def test_summary_prints_the_ratio_per_workload() -> None:
    d = ClusterResult("w", "drasched", 10, 10, 2.0, [5, 5], [0.1] * 10)
    k = ClusterResult("w", "kube-scheduler", 10, 10, 1.0, [10], [0.2] * 10)
    assert summarize([d, k]) == ["w                  drasched/kube-scheduler throughput ratio 0.50"
                                 " (median latency 0.10 s vs 0.20 s)"]
