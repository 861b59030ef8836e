"""``drasched bench churn``: a long run of pods created and completed, RSS sampled over time.

What it answers: does ``drasched serve`` hold its memory flat when pods keep coming and going
for hours, and does it log no error doing so? Against a fresh kube-apiserver on loopback it
sets up the claim-template cluster (``--nodes`` nodes x 10 devices, half full), starts
``drasched serve --enable-claim-controller``, then for ``--duration`` seconds keeps
``in_flight`` pods with a claim from a template pending: each pod once bound is completed
(``status.phase: Succeeded``, as its kubelet would write) and deleted, with the BindRequest
it owns (the garbage collector's work in a cluster; none runs here), and a new pod takes its
place. Every ``--interval`` seconds the scheduler process's resident memory (``VmRSS``) and
CPU are sampled. At the end the log is searched for errors (``ERROR``, ``CRITICAL`` and
tracebacks) and warnings.

Growth is the RSS at the end against the RSS at the end of the warm-up (the first quarter of
the run, at least one sample in): caches and pools fill while the first pods go through.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from drasched.api import kinds
from drasched.api.errors import ApiError, NotFound
from drasched.bench import cluster as bench_cluster
from drasched.bench.workloads import NAMESPACE, claim_template_workload, pod
from drasched.store.kube import KubeStore

WARM_UP_SHARE = 0.25
ERROR_MARKERS = (" ERROR ", " CRITICAL ", "Traceback (most recent call last)")


@dataclass
class ChurnSample:
    """One look at the scheduler process ``at`` seconds into the run."""

    at: float
    rss_mib: float
    cpu_seconds: float
    completed: int
    in_flight: int


@dataclass
class ChurnResult:
    nodes: int
    duration: float
    created: int = 0
    completed: int = 0
    samples: list[ChurnSample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Log lines (the first line of a traceback) that say something went wrong."""
    warnings: int = 0
    driver_errors: list[str] = field(default_factory=list)
    """What the benchmark's own requests met (a pod it could not create, complete or delete)."""

    def warm(self) -> ChurnSample | None:
        """The sample that ends the warm-up."""
        if not self.samples:
            return None
        cut = self.duration * WARM_UP_SHARE
        return next((s for s in self.samples if s.at >= cut), self.samples[-1])

    @property
    def growth_mib(self) -> float:
        warm = self.warm()
        return self.samples[-1].rss_mib - warm.rss_mib if warm is not None else 0.0

    def lines(self) -> list[str]:
        out = [f"churn  nodes={self.nodes}  duration {self.duration:.0f} s  created {self.created}  "
               f"completed {self.completed} ({self.completed / max(self.duration, 1e-9):.1f} pods/s)"]
        out += [f"churn  t={s.at:7.0f} s  rss {s.rss_mib:7.1f} MiB  cpu {s.cpu_seconds:8.1f} s  "
                f"completed {s.completed:7d}  in flight {s.in_flight}" for s in self.samples]
        warm = self.warm()
        if warm is not None:
            out.append(f"churn  rss growth after warm-up (t={warm.at:.0f} s, {warm.rss_mib:.1f} MiB): "
                       f"{self.growth_mib:+.1f} MiB")
        out.append(f"churn  log: {len(self.errors)} errors, {self.warnings} warnings")
        out += [f"churn  error: {line}" for line in self.errors[:20]]
        out += [f"churn  benchmark request failed: {line}" for line in self.driver_errors[:20]]
        return out


def _rss_mib(pid: int) -> float:
    """The resident memory of a live process now (``VmRSS``), not its peak."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def scan_log(text: str) -> tuple[list[str], int]:
    """(error lines, number of warnings) of a drasched log."""
    errors = [line.strip() for line in text.splitlines() if any(m in line for m in ERROR_MARKERS)]
    warnings = sum(1 for line in text.splitlines() if " WARNING " in line)
    return errors, warnings


def _names() -> Iterator[str]:
    i = 0
    while True:
        yield f"churn-{i:08d}"
        i += 1


class _Churn:
    """Keeps ``in_flight`` pods pending; completes and replaces each one the watcher sees bound."""

    def __init__(self, store: KubeStore, watcher: bench_cluster._BindWatcher, in_flight: int,
                 result: ChurnResult) -> None:
        self.store, self.watcher, self.in_flight, self.result = store, watcher, in_flight, result
        self.names = _names()
        self.pending: set[str] = set()
        self.lock = threading.Lock()

    def _request(self, what: str, fn: Callable[..., object], *args: object, **kw: object) -> None:
        try:
            fn(*args, **kw)
        except NotFound:
            pass
        except ApiError as exc:
            self.result.driver_errors.append(f"{what}: {exc}")

    def create(self) -> None:
        with self.lock:
            name = next(self.names)
            self.pending.add(name)
            self.result.created += 1
        self._request(f"create {name}", self.store.create, pod(name, template="one-gpu"))

    def complete(self, name: str) -> None:
        """The pod runs to completion (its kubelet's status write), then goes with its BindRequest."""
        self._request(f"complete {name}", self.store.patch, kinds.POD, name, NAMESPACE,
                      {"status": {"phase": "Succeeded"}}, subresource="status")
        self._request(f"delete {name}", self.store.delete, kinds.POD, name, NAMESPACE, grace_period_seconds=0)
        self._request(f"delete BindRequest {name}", self.store.delete, kinds.BIND_REQUEST, name, NAMESPACE)
        with self.lock:
            self.result.completed += 1
        self.create()

    def bound(self) -> list[str]:
        with self.lock:
            done = [n for n in self.pending if n in self.watcher.bound_at]
            self.pending.difference_update(done)
        return done


def run_churn(nodes: int = 50, duration: float = 1800.0, interval: float = 30.0, in_flight: int = 10,
              log_dir: str | None = None, setup_timeout: float = 600.0) -> ChurnResult:
    """One churn run on a fresh API server (see the module docstring)."""
    from drasched.testing.apiserver import LocalCluster

    workload = claim_template_workload(nodes)
    result = ChurnResult(nodes, duration)
    with LocalCluster() as cluster, tempfile.TemporaryDirectory(prefix="drasched-churn-") as tmp:
        workdir = Path(tmp)
        if log_dir:
            workdir = Path(log_dir) / "churn-drasched"
            workdir.mkdir(parents=True, exist_ok=True)
        store = cluster.store()
        bench_cluster.setup_cluster(store, workload)
        procs = bench_cluster._start_scheduler("drasched", cluster.kubeconfig_path, workdir)
        pid = procs[0].pid
        watcher = bench_cluster._BindWatcher(store)
        watcher.start()
        try:
            bench_cluster._create_all(store, workload.init_pods)
            bench_cluster._wait_bound(watcher, {p["metadata"]["name"] for p in workload.init_pods}, setup_timeout,
                                      procs, workdir, "drasched")
            churn = _Churn(store, watcher, in_flight, result)
            started = time.monotonic()
            next_sample = started
            with ThreadPoolExecutor(bench_cluster.WRITERS) as pool:
                list(pool.map(lambda _: churn.create(), range(in_flight)))
                while True:
                    now = time.monotonic()
                    over = now - started >= duration
                    if now >= next_sample or over:  # and once more at the end
                        result.samples.append(ChurnSample(now - started, _rss_mib(pid),
                                                          bench_cluster._proc_stats(pid)[0], result.completed,
                                                          len(churn.pending)))
                        next_sample += interval
                    if over:
                        break
                    if procs[0].poll() is not None:
                        raise bench_cluster.SchedulerDied(f"drasched exited with code {procs[0].returncode}:\n"
                                                          f"{bench_cluster._log_tail(workdir, 'drasched')}")
                    done = churn.bound()
                    if done:
                        list(pool.map(churn.complete, done))
                    else:
                        time.sleep(0.01)
        finally:
            watcher.stop.set()
            for p in procs:
                p.send_signal(signal.SIGINT)
            for p in procs:
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
        result.errors, result.warnings = scan_log((workdir / "drasched.log").read_text(errors="replace"))
    return result
