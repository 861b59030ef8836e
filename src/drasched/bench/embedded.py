"""Embedded benchmark: drasched alone on the in-memory store, the ceiling without API costs."""

from __future__ import annotations

import gc
import resource
import time
from dataclasses import dataclass

from drasched.api import kinds
from drasched.bench.workloads import Workload
from drasched.sim.runner import Simulation


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
    started = time.perf_counter()
    sim.load(workload.measured_pods)
    sim.run()
    seconds = time.perf_counter() - started
    names = {p["metadata"]["name"] for p in workload.measured_pods}
    bound = sum(
        1 for p in sim.store.iter_kind(kinds.POD)
        if p["metadata"]["name"] in names and (p.get("spec") or {}).get("nodeName")
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gc.unfreeze()
    return EmbeddedResult(workload.name, nodes, len(workload.measured_pods), bound, seconds, peak)
