"""Embedded benchmark: drasched alone on the in-memory store, the ceiling without API costs."""

from __future__ import annotations

import gc
import resource
import time
from dataclasses import dataclass
from typing import Any

from drasched.api import kinds
from drasched.bench.workloads import Workload
from drasched.sim.runner import RUN_GC_THRESHOLDS, Simulation

Obj = dict[str, Any]


MEASURED_GC_THRESHOLDS = RUN_GC_THRESHOLDS
"""The collector's thresholds while the measured pods run: those of ``drasched simulate``
(:data:`drasched.sim.runner.RUN_GC_THRESHOLDS`, which says why)."""


@dataclass
class EmbeddedResult:
    workload: str
    nodes: int
    measured: int
    bound: int
    seconds: float
    peak_rss_mib: float

    @property
    def pods_per_second(self) -> float:
        return self.bound / self.seconds if self.seconds > 0 else 0.0

    @property
    def ms_per_pod(self) -> float:
        return 1000 * self.seconds / self.bound if self.bound else float("inf")

    def line(self) -> str:
        return (f"{self.workload:<18} nodes={self.nodes:<6} measured={self.measured:<7} bound={self.bound:<7} "
                f"{self.seconds:8.2f} s  {self.pods_per_second:9.1f} pods/s  {self.ms_per_pod:7.2f} ms/pod  "
                f"peak RSS {self.peak_rss_mib:7.0f} MiB")


def run_embedded(workload: Workload, nodes: int) -> EmbeddedResult:
    """Place the init pods, then time the measured pods from creation until the binder is done."""
    sim = Simulation()
    gc.disable()  # filling the store: the default GC makes this several times slower (BENCHMARKS.md)
    sim.load(workload.cluster + workload.init_pods)
    gc.enable()
    sim.run()
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(*MEASURED_GC_THRESHOLDS)
    started = time.perf_counter()
    if workload.steady is not None:
        measured, bound = _run_steady(sim, workload.measured_pods, workload.steady.count, workload.steady.duration)
    else:
        sim.load(workload.measured_pods)
        sim.run()
        names = {p["metadata"]["name"] for p in workload.measured_pods}
        measured = len(names)
        bound = sum(
            1 for p in sim.store.iter_kind(kinds.POD)
            if p["metadata"]["name"] in names and (p.get("spec") or {}).get("nodeName")
        )
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gc.set_threshold(*thresholds)
    gc.unfreeze()
    return EmbeddedResult(workload.name, nodes, measured, bound, seconds, peak)


def _run_steady(sim: Simulation, pods: list[Obj], count: int, duration: float) -> tuple[int, int]:
    """``count`` pods at a time until ``duration`` seconds pass: load them, run the control
    plane until it settles, delete the bound ones (grace 0) and let it settle again.

    Returns (pods created, pods bound).
    """
    end = time.perf_counter() + duration
    created = bound = 0
    for start in range(0, len(pods), count):
        if time.perf_counter() >= end:
            break
        batch = pods[start:start + count]
        sim.load(batch)
        sim.run()
        created += len(batch)
        for p in batch:
            md = p["metadata"]
            current = sim.store.get(kinds.POD, md["name"], md["namespace"])
            if (current.get("spec") or {}).get("nodeName"):
                bound += 1
            sim.store.delete(kinds.POD, md["name"], md["namespace"], grace_period_seconds=0)
        sim.run()
    return created, bound
