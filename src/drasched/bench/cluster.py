"""Benchmark against a real kube-apiserver + etcd on loopback, drasched or upstream kube-scheduler.

Measured as upstream's scheduler_perf throughput collector does: pods per second from
creation to binding, sampled each second (average, p50/p90/p99), plus per-pod scheduling
latency, the scheduler processes' CPU seconds and peak RSS.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, Gone
from drasched.bench.workloads import NAMESPACE, Workload
from drasched.store.kube import KubeStore

Obj = dict[str, Any]
FEATURE_GATES = ("DRAExtendedResource=true,DRAPartitionableDevices=true,DRADeviceTaints=true,"
                 "DRAConsumableCapacity=true,DRADeviceBindingConditions=true,DRAResourceClaimDeviceStatus=true,"
                 "DRAAdminAccess=true,DRAPrioritizedList=true")
WRITERS = 8
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "APPLY"})


@dataclass
class ClusterResult:
    workload: str
    scheduler: str
    measured: int
    bound: int
    seconds: float
    per_second: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0
    """Scheduler processes' CPU while the measured pods were placed (init phase excluded)."""
    peak_rss_mib: float = 0.0
    server_cpu_seconds: float = 0.0
    """kube-apiserver + etcd CPU over the same span: what the scheduler's requests cost the server."""
    requests: dict[str, int] = field(default_factory=dict)
    """API requests the server counted over the same span, by "VERB resource[/subresource]"."""
    created_seconds: float | None = None
    """How long the benchmark took to create the measured pods of a burst (None: a steady run): the API server and
    the scheduler share the machine, so a control plane that leaves the server more CPU lets
    the burst arrive faster, and its pods then wait longer in the queue (the latency column)."""
    gc_cpu_seconds: float = 0.0
    """The garbage collector's CPU over the same span (it runs beside either scheduler, counted apart)."""

    @property
    def writes_per_pod(self) -> float:
        """Mutating requests per measured pod (the benchmark's own pod creates included)."""
        writes = sum(n for k, n in self.requests.items() if k.split(" ", 1)[0] in WRITE_VERBS)
        return writes / self.measured if self.measured else 0.0

    def request_breakdown(self) -> str:
        """The mutating requests per measured pod, largest first: where the server's work goes."""
        rows = sorted(((n, k) for k, n in self.requests.items() if k.split(" ", 1)[0] in WRITE_VERBS), reverse=True)
        return ", ".join(f"{k} {n / max(self.measured, 1):.2f}" for n, k in rows)

    @property
    def pods_per_second(self) -> float:
        return self.bound / self.seconds if self.seconds > 0 else 0.0

    def pct(self, values: list[float], p: float) -> float:
        if not values:
            return 0.0
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    def line(self) -> str:
        ps = [float(v) for v in self.per_second]
        return (f"{self.workload:<18} {self.scheduler:<15} bound {self.bound}/{self.measured} in {self.seconds:7.2f} s"
                f"  avg {self.pods_per_second:7.1f} pods/s"
                f"  per-second p50/p90/p99 {self.pct(ps, .5):.0f}/{self.pct(ps, .9):.0f}/{self.pct(ps, .99):.0f}"
                f"  latency p50/p90/p99 {self.pct(self.latencies, .5):.2f}/{self.pct(self.latencies, .9):.2f}/"
                f"{self.pct(self.latencies, .99):.2f} s"
                + (f" (burst created in {self.created_seconds:.1f} s)" if self.created_seconds is not None else "")
                + f"  cpu {self.cpu_seconds:.1f} s  rss {self.peak_rss_mib:.0f} MiB"
                f"  server cpu {self.server_cpu_seconds:.1f} s  writes/pod {self.writes_per_pod:.2f}"
                f"  gc cpu {self.gc_cpu_seconds:.1f} s")


def _proc_stats(pid: int) -> tuple[float, float]:
    """(cpu seconds, peak RSS MiB) of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        hwm = 0.0
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
        return cpu, hwm
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0, 0.0


def api_request_counts(store: KubeStore) -> dict[str, int]:
    """The API server's ``apiserver_request_total``, summed by verb and resource/subresource."""
    text = store._request("GET", "/metrics").text
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line[len("apiserver_request_total{"):].rpartition("} ")
        labels = dict(re.findall(r'(\w+)="([^"]*)"', labels_text))
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        key = f"{labels.get('verb', '')} {resource}"
        counts[key] = counts.get(key, 0) + int(float(value))
    return counts


def _diff_counts(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in after.items() if n - before.get(k, 0) > 0}


def _create_all(store: KubeStore, objects: list[Obj]) -> None:
    def one(obj: Obj) -> None:
        with contextlib.suppress(AlreadyExists):
            store.create(obj)

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(one, objects))


def prepare_nodes(store: KubeStore, nodes: list[Obj]) -> None:
    """Nodes without kubelets: clear the not-ready taint and mark them Ready with allocatable."""
    def one(node: Obj) -> None:
        name = node["metadata"]["name"]
        current = store.get(kinds.NODE, name)
        current.setdefault("spec", {})["taints"] = [
            t for t in current["spec"].get("taints") or [] if not t.get("key", "").startswith("node.kubernetes.io/")
        ]
        store.update(current)
        store.patch(kinds.NODE, name, None, {"status": node.get("status") or {}}, subresource="status")

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(one, nodes))


def setup_cluster(store: KubeStore, workload: Workload) -> None:
    ordered = sorted(workload.cluster, key=lambda o: kinds.order_index(kinds.for_object(o)))
    namespaces = [o for o in ordered if o["kind"] == "Namespace"]
    _create_all(store, namespaces)
    for ns in namespaces:
        with contextlib.suppress(AlreadyExists):
            store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                          "metadata": {"name": "default", "namespace": ns["metadata"]["name"]}})
    rest = [o for o in ordered if o["kind"] != "Namespace"]
    _create_all(store, rest)
    prepare_nodes(store, [o for o in rest if o["kind"] == "Node"])


class _BindWatcher:
    """Records when each pod of the namespace is first seen bound (client-side clock)."""

    def __init__(self, store: KubeStore) -> None:
        self.store = store
        self.bound_at: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        rv = self.store.list(kinds.POD, NAMESPACE).resource_version
        while not self.stop.is_set():
            try:
                for ev in self.store.watch(kinds.POD, rv, NAMESPACE, timeout_seconds=5):
                    rv = ev.object.get("metadata", {}).get("resourceVersion", rv)
                    name = ev.object.get("metadata", {}).get("name")
                    if (ev.object.get("spec") or {}).get("nodeName") and name not in self.bound_at:
                        self.bound_at[name] = time.monotonic()
            except Gone:
                listed = self.store.list(kinds.POD, NAMESPACE)
                rv = listed.resource_version
                for p in listed.items:
                    if (p.get("spec") or {}).get("nodeName"):
                        self.bound_at.setdefault(p["metadata"]["name"], time.monotonic())
            except Exception:  # connection reset while the cluster shuts down, or a transient error
                if self.stop.is_set():
                    return
                time.sleep(0.2)


CLIENT_QPS = 5000
"""The client-side rate limit (queries a second, and the burst) of every process under test:
kube-scheduler, kube-controller-manager and drasched alike, high enough that the API server,
not a client's token bucket, sets the pace (drasched's default of 500 capped its bursts at
about 100 pods a second, five writes each, while the peer ran unthrottled)."""


def _start_scheduler(kind: str, kubeconfig: str, workdir: Path, profile: bool = False) -> list[subprocess.Popen[bytes]]:
    log = open(workdir / f"{kind}.log", "wb")  # noqa: SIM115 - lives as long as the process
    if kind == "drasched":
        cmd = [sys.executable, "-m", "drasched.cli", "serve", "--kubeconfig", kubeconfig, "--enable-claim-controller",
               "--no-leader-elect", "--metrics-port", "0", "--bind-address", "127.0.0.1", "--period", "0.05",
               f"--kube-api-qps={CLIENT_QPS}", f"--kube-api-burst={CLIENT_QPS}"]
        if profile:  # py-spy samples of the thread holding the GIL: where the CPU goes
            cmd = ["py-spy", "record", "--format", "raw", "--gil", "--threads", "--rate", "50",
                   "--output", str(workdir / "drasched.pyspy.txt"), "--", *cmd]
        return [subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)]
    cfg = workdir / "kube-scheduler.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{kubeconfig: {kubeconfig}, qps: {CLIENT_QPS}, burst: {CLIENT_QPS}}}\n"
        "leaderElection: {leaderElect: false}\n"
        "profiles:\n- schedulerName: default-scheduler\n"
    )
    scheduler = subprocess.Popen(
        [str(_kube_binary("kube-scheduler")), f"--config={cfg}", f"--feature-gates={FEATURE_GATES}",
         "--secure-port=0"],
        stdout=log, stderr=subprocess.STDOUT)
    return [scheduler, _controller_manager(kubeconfig, "resourceclaim-controller", log)]


def _kube_binary(name: str) -> Path:
    """An upstream binary built from the API server's Kubernetes version (built once, then cached)."""
    from drasched.testing.apiserver import KUBE_VERSION, REPO_ROOT, cache_dir

    binary = cache_dir() / f"kube-{KUBE_VERSION}" / "bin" / name
    if not binary.exists():
        subprocess.run([str(REPO_ROOT / "scripts" / "build-kube.sh"), name], check=True)
    return binary


def _start_garbage_collector(kubeconfig: str, workdir: Path) -> subprocess.Popen[bytes]:
    """kube-controller-manager's garbage collector alone, beside either scheduler, as every cluster
    runs it: it deletes the claims of deleted pods for upstream's claim controller (which leaves
    them to it), and watches every kind in drasched's run as in the peer's. Its CPU is counted
    apart from the scheduler's (:attr:`ClusterResult.gc_cpu_seconds`)."""
    log = open(workdir / "garbage-collector.log", "wb")  # noqa: SIM115 - lives as long as the process
    return _controller_manager(kubeconfig, "garbage-collector-controller", log)


def _controller_manager(kubeconfig: str, controller: str, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """kube-controller-manager running ``controller`` alone, unthrottled, without leader election."""
    return subprocess.Popen(
        [str(_kube_binary("kube-controller-manager")), f"--kubeconfig={kubeconfig}", "--leader-elect=false",
         f"--controllers={controller}", f"--feature-gates={FEATURE_GATES}", "--secure-port=0",
         f"--kube-api-qps={CLIENT_QPS}", f"--kube-api-burst={CLIENT_QPS}"],
        stdout=log, stderr=subprocess.STDOUT)


def _for_scheduler(pods: list[Obj], kind: str) -> list[Obj]:
    name = "drasched" if kind == "drasched" else "default-scheduler"
    out = copy.deepcopy(pods)
    for p in out:
        p["spec"]["schedulerName"] = name
    return out


class SchedulerDied(RuntimeError):
    """The scheduler under test exited during a run; the message carries its log's tail."""


def _log_tail(workdir: Path, kind: str, lines: int = 40) -> str:
    try:
        return "\n".join((workdir / f"{kind}.log").read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def _wait_bound(watcher: _BindWatcher, names: set[str], timeout: float,
                procs: list[subprocess.Popen[bytes]] | None = None, workdir: Path | None = None,
                kind: str = "") -> None:
    """Until every pod in ``names`` is bound or ``timeout`` passes; a dead scheduler fails fast."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not names <= watcher.bound_at.keys():
        for p in procs or []:
            if p.poll() is not None:
                tail = _log_tail(workdir, kind) if workdir else ""
                raise SchedulerDied(f"{kind} exited with code {p.returncode}:\n{tail}")
        time.sleep(0.05)


def _wait_events_written(store: KubeStore, quiet: float = 1.0, timeout: float = 60.0) -> None:
    """Until no new Event has appeared for ``quiet`` seconds: both schedulers write Events from
    a background queue, and the init pods' Events must not be counted in the measured span."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = len(store.list(kinds.EVENT, NAMESPACE).items)
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.2)


def _create_measured(store: KubeStore, pods: list[Obj], arrival_rate: float | None = None) -> dict[str, float]:
    """Create the measured pods, ``WRITERS`` at a time; when each was created (client clock).

    ``arrival_rate`` (pods a second): pod ``i`` is created no sooner than ``i / arrival_rate``
    seconds after the first, so that two schedulers meet the same arrivals. As fast as
    possible, a burst arrives as fast as the machine lets the writers go, which depends on
    how much CPU the scheduler under test leaves them, and its median latency with it."""
    created_at: dict[str, float] = {}
    start = time.monotonic()
    slot = {p["metadata"]["name"]: i / arrival_rate for i, p in enumerate(pods)} if arrival_rate else {}

    def create(p: Obj) -> None:
        name = p["metadata"]["name"]
        wait = start + slot.get(name, 0.0) - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        created_at[name] = time.monotonic()
        store.create(p)

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(create, pods))
    return created_at


def _run_steady(store: KubeStore, watcher: _BindWatcher, pods: list[Obj], count: int, duration: float,
                procs: list[subprocess.Popen[bytes]], workdir: Path, kind: str) -> tuple[dict[str, float],
                                                                                      dict[str, float]]:
    """Keep ``count`` pods in flight for ``duration`` seconds: each bound pod is deleted (grace
    0: no kubelet will finish it) and replaced by the next (upstream's ``steadyState``).

    Returns when each pod was created, and when each pod bound within the duration was.
    """
    supply = iter(pods)
    created_at: dict[str, float] = {}
    bound: dict[str, float] = {}
    in_flight: set[str] = set()
    end = time.monotonic() + duration

    def replace(done: str | None) -> None:
        if done is not None:
            store.delete(kinds.POD, done, NAMESPACE, grace_period_seconds=0)
        p = next(supply, None)
        if p is None:
            raise RuntimeError(f"steady state ran out of its {len(pods)} pods: make the pool larger")
        name = p["metadata"]["name"]
        created_at[name] = time.monotonic()
        in_flight.add(name)
        store.create(p)

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(replace, [None] * count))
        while time.monotonic() < end:
            for p in procs:
                if p.poll() is not None:
                    raise SchedulerDied(f"{kind} exited with code {p.returncode}:\n{_log_tail(workdir, kind)}")
            done = [n for n in list(in_flight) if n in watcher.bound_at]
            if not done:
                time.sleep(0.005)
                continue
            for n in done:
                in_flight.discard(n)
                if watcher.bound_at[n] <= end:
                    bound[n] = watcher.bound_at[n]
            list(pool.map(replace, done))
    return created_at, bound


def run_cluster(workload: Workload, scheduler: str, timeout: float = 600.0,
                log_dir: str | None = None, profile: bool = False,
                arrival_rate: float | None = None) -> ClusterResult:
    """One workload, one scheduler, on a fresh API server.

    The scheduler's log goes to ``log_dir`` when given (kept), else to a temp dir; with
    ``profile`` drasched runs under py-spy and its samples land next to the log.
    """
    from drasched.testing.apiserver import LocalCluster

    with LocalCluster() as cluster, tempfile.TemporaryDirectory(prefix="drasched-bench-") as tmp:
        workdir = Path(tmp)
        if log_dir:
            workdir = Path(log_dir) / f"{workload.name}-{scheduler}"
            workdir.mkdir(parents=True, exist_ok=True)
        store = cluster.store()
        setup_cluster(store, workload)
        collector = _start_garbage_collector(cluster.kubeconfig_path, workdir)
        try:
            procs = _start_scheduler(scheduler, cluster.kubeconfig_path, workdir, profile)
        except BaseException:
            collector.kill()
            raise
        watcher = _BindWatcher(store)
        watcher.start()
        try:
            init = _for_scheduler(workload.init_pods, scheduler)
            _create_all(store, init)
            _wait_bound(watcher, {p["metadata"]["name"] for p in init}, timeout, procs, workdir, scheduler)
            _wait_events_written(store)
            measured = _for_scheduler(workload.measured_pods, scheduler)
            sched_cpu0 = sum(_proc_stats(p.pid)[0] for p in procs)
            gc_cpu0 = _proc_stats(collector.pid)[0]
            server_cpu0 = sum(_proc_stats(pid)[0] for pid in cluster.pids())
            requests0 = api_request_counts(store)
            started = time.monotonic()
            created_seconds: float | None = None
            if workload.steady is not None:
                created_at, bound = _run_steady(store, watcher, measured, workload.steady.count,
                                                workload.steady.duration, procs, workdir, scheduler)
                seconds = workload.steady.duration
                total = len(created_at)
            else:
                created_at = _create_measured(store, measured, arrival_rate)
                created_seconds = max(created_at.values()) - min(created_at.values()) if created_at else 0.0
                names = {p["metadata"]["name"] for p in measured}
                _wait_bound(watcher, names, timeout, procs, workdir, scheduler)
                bound = {n: t for n, t in watcher.bound_at.items() if n in names}
                end = max(bound.values(), default=time.monotonic())
                seconds = max(end - started, 1e-9)
                total = len(measured)
            per_second = [0] * (int(seconds) + 1)
            for t in bound.values():
                per_second[min(int(t - started), len(per_second) - 1)] += 1
            latencies = [t - created_at[n] for n, t in bound.items() if n in created_at]
            cpu = rss = 0.0
            for p in procs:
                c, r = _proc_stats(p.pid)
                cpu += c
                rss += r
            server_cpu = sum(_proc_stats(pid)[0] for pid in cluster.pids()) - server_cpu0
            requests = _diff_counts(api_request_counts(store), requests0)
            return ClusterResult(workload.name, scheduler, total, len(bound), seconds,
                                 per_second, latencies, cpu - sched_cpu0, rss, server_cpu, requests,
                                 created_seconds, _proc_stats(collector.pid)[0] - gc_cpu0)
        finally:
            watcher.stop.set()
            for p in (*procs, collector):
                p.send_signal(signal.SIGINT)  # py-spy writes its samples on SIGINT, not on SIGTERM
            for p in (*procs, collector):
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()


def api_write_ceiling(count: int = 2000) -> str:
    """Creates and bindings per second from a tight client: the physical limit on this machine."""
    from drasched.testing.apiserver import LocalCluster

    with LocalCluster() as cluster:
        store = cluster.store()
        _create_all(store, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
        _create_all(store, [{"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": {"name": "default", "namespace": NAMESPACE}}])
        store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}})
        pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": NAMESPACE},
                 "spec": {"containers": [{"name": "c", "image": "pause"}]}} for i in range(count)]
        t0 = time.monotonic()
        _create_all(store, pods)
        t1 = time.monotonic()
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(lambda p: store.bind(NAMESPACE, p["metadata"]["name"], "n0"), pods))
        t2 = time.monotonic()
        return (f"API server write ceiling ({WRITERS} client threads): {count / (t1 - t0):.0f} pod creates/s, "
                f"{count / (t2 - t1):.0f} bindings/s")


def summarize(results: list[ClusterResult]) -> list[str]:
    """The ratio drasched / kube-scheduler per workload."""
    lines = []
    by = {(r.workload, r.scheduler): r for r in results}
    for wl in sorted({r.workload for r in results}):
        d, k = by.get((wl, "drasched")), by.get((wl, "kube-scheduler"))
        if d and k and k.pods_per_second > 0:
            ratio = d.pods_per_second / k.pods_per_second
            lines.append(f"{wl:<18} drasched/kube-scheduler throughput ratio {ratio:.2f}"
                         f" (median latency {statistics.median(d.latencies or [0]):.2f} s vs "
                         f"{statistics.median(k.latencies or [0]):.2f} s)")
    return lines
