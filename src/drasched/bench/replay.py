"""``drasched bench replay``: the cycles of a scheduler over a large, busy GPU cluster, embedded.

The shape is the largest published replay of a GPU batch scheduler: 4,000 nodes with 8 GPUs
each and 140,000 pods, against which that scheduler reported 2.2 s of snapshot and 0.3 s of
actions per cycle. The pods here make a cluster in the middle of its day:

* 90% of the nodes run a gang of 8 one-GPU pods each (a PodGroup per gang, 10 queues);
* 1 pod in 14 waits: gangs of 8 one-GPU pods spread over the same queues, more than the
  free GPUs hold, so the cycle places some gangs and finds no room for the rest;
* every other pod is a small CPU-only pod, bound, spread evenly over all nodes.

GPUs are device-plugin GPUs (``nvidia.com/gpu`` in the nodes' allocatable), as in the
published replay. The whole scheduler runs as it does in a cluster (its controller: cache
sync, snapshot, actions, the store writes) over the in-memory store, so the figures are the
scheduler's own cost without API round trips. The rounds (:data:`ROUNDS`): the scheduler's
first cycle over the running cluster (cold start), the cycle after the waiting gangs arrive
(what a running scheduler pays per cycle), the quiet one after it, and a fresh scheduler's
first cycle over everything at once (a restart with a backlog). ``--nodes`` and ``--pods``
scale the shape down (tests run it tiny).
"""

from __future__ import annotations

import gc
import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from drasched.api import kinds
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]
NAMESPACE = "replay"
GPU = "nvidia.com/gpu"
GROUP_LABEL = "drasched.io/pod-group"
GANG = 8
"""Pods per gang; one GPU each, so a running gang fills one node of 8 GPUs."""
QUEUES = 10
BUSY_SHARE = 0.9
"""Nodes whose GPUs run a gang when the cycle starts."""
PENDING_SHARE = 14
"""1 pod in this many waits to be placed."""
DEFAULT_NODES, DEFAULT_PODS, GPUS_PER_NODE = 4000, 140_000, 8


@dataclass(frozen=True)
class ReplayShape:
    """How many of each pod a ``nodes`` / ``pods`` replay has (:func:`shape`)."""

    nodes: int
    gpus_per_node: int
    running_gangs: int
    pending_gangs: int
    cpu_pods: int

    @property
    def pods(self) -> int:
        return (self.running_gangs + self.pending_gangs) * GANG + self.cpu_pods

    @property
    def free_gpus(self) -> int:
        return self.nodes * self.gpus_per_node - self.running_gangs * GANG


def shape(nodes: int = DEFAULT_NODES, pods: int = DEFAULT_PODS, gpus_per_node: int = GPUS_PER_NODE) -> ReplayShape:
    running = min(int(nodes * BUSY_SHARE) * gpus_per_node // GANG, pods // GANG)
    pending = max(1, (pods // PENDING_SHARE) // GANG)
    cpu = max(0, pods - (running + pending) * GANG)
    return ReplayShape(nodes, gpus_per_node, running, pending, cpu)


def _node(i: int, gpus: int) -> Obj:
    name = f"node-{i:05d}"
    alloc = {"cpu": "128", "memory": "1Ti", "pods": "250", GPU: str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "rack": f"rack-{i // 16:03d}"}},
            "status": {"allocatable": alloc, "capacity": dict(alloc),
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, *, gpus: int = 0, group: str | None = None, node: str | None = None) -> Obj:
    requests = {"cpu": "4" if gpus else "100m", "memory": "32Gi" if gpus else "128Mi"}
    resources: Obj = {"requests": requests}
    if gpus:
        requests[GPU] = str(gpus)
        resources["limits"] = {GPU: str(gpus)}
    spec: Obj = {"schedulerName": "drasched",
                 "containers": [{"name": "main", "image": "trainer" if gpus else "svc", "resources": resources}]}
    if node is not None:
        spec["nodeName"] = node
    md: Obj = {"name": name, "namespace": NAMESPACE}
    if group is not None:
        md["labels"] = {GROUP_LABEL: group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def _group(name: str, queue: int) -> Obj:
    return {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"minMember": GANG, "queue": f"q{queue}"}}


def running_objects(s: ReplayShape) -> Iterator[tuple[Obj, bool]]:
    """The cluster before the waiting gangs arrive, each object with whether it is a pod already
    running: queues, nodes, the running gangs (a PodGroup each) and the CPU-only pods."""
    quota = str(s.nodes * s.gpus_per_node // QUEUES)
    for q in range(QUEUES):
        yield {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": f"q{q}"},
               "spec": {"resources": {GPU: {"quota": quota}}}}, False
    for i in range(s.nodes):
        yield _node(i, s.gpus_per_node), False
    per_node = s.gpus_per_node // GANG or 1
    for g in range(s.running_gangs):
        name = f"run-{g:05d}"
        yield _group(name, g % QUEUES), False
        node = f"node-{g // per_node:05d}"
        for m in range(GANG):
            yield _pod(f"{name}-{m}", gpus=1, group=name, node=node), True
    for c in range(s.cpu_pods):
        yield _pod(f"svc-{c:06d}", node=f"node-{c % s.nodes:05d}"), True


def arriving_objects(s: ReplayShape) -> Iterator[Obj]:
    """The waiting gangs: a PodGroup and its pods each, spread over the queues."""
    for g in range(s.pending_gangs):
        name = f"wait-{g:05d}"
        yield _group(name, g % QUEUES)
        for m in range(GANG):
            yield _pod(f"{name}-{m}", gpus=1, group=name)


def cluster_objects(s: ReplayShape) -> Iterator[tuple[Obj, bool]]:
    """Every object of the replay, with whether it is a pod already running."""
    yield from running_objects(s)
    for obj in arriving_objects(s):
        yield obj, False


def build_store(s: ReplayShape, arrivals: bool = True) -> tuple[MemoryStore, VirtualClock]:
    """The replay cluster in a memory store (the collector off while it fills: BENCHMARKS.md);
    without ``arrivals``, only what runs (:func:`running_objects`)."""
    clock = VirtualClock()
    store = MemoryStore(clock=clock.now, auto_namespaces=True)
    gc.disable()
    try:
        for obj, running in cluster_objects(s) if arrivals else running_objects(s):
            stored = store.create(obj)
            if running:
                stored["status"] = {**(stored.get("status") or {}), "phase": "Running"}
                store.update_status(stored)
    finally:
        gc.enable()
    return store, clock


WRITES = ("create", "update", "update_status", "patch", "delete")
"""The store calls a scheduler round writes with (BindRequests, pod conditions, Events, Queues)."""


class _PartTimer:
    """CPU seconds spent in some calls of a round, by part: wraps methods of the objects it is
    given (and, for the actions, the controller module's ``run_cycle``) while the replay runs.
    A wrapped call made inside another (a store delete collecting dependents) counts once."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self._inside = False
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, part: str) -> None:
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._inside:
                return inner(*args, **kwargs)
            self._inside = True
            c0 = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.cpu[part] = self.cpu.get(part, 0.0) + time.process_time() - c0
                self._inside = False

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, inner))

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


@dataclass
class CycleCost:
    """One scheduler round: wall seconds in all, the actions' share (wall), CPU in all and by part."""

    seconds: float
    actions: float | None
    cpu: float
    placed: int
    parts: dict[str, float]
    """CPU seconds of: cache sync, snapshot build, actions (the cycle), writes (every store write)."""

    @property
    def writes(self) -> float:
        return self.parts.get("writes", 0.0)


ROUNDS = (
    ("cold start", "cold_start", "a scheduler's first cycle over the running cluster, nothing waiting"),
    ("arrival", "arrival", "the next cycle once the waiting gangs are created: what a running scheduler pays"),
    ("quiet", "quiet", "the cycle after it: its own writes come back, nothing new"),
    ("restart", "restart", "a fresh scheduler's first cycle over everything, the waiting gangs included "
                           "(a restart with a backlog: the worst case)"),
)
"""The rounds :meth:`ReplayResult.lines` prints: label, attribute, what it measures."""


@dataclass
class ReplayResult:
    shape: ReplayShape
    fill_seconds: float
    """Filling the store with the running cluster (nodes, queues, running gangs, CPU-only pods)."""
    cold_start: CycleCost
    arrival_seconds: float
    """Creating the waiting gangs' PodGroups and pods in the store (not the scheduler's cost)."""
    arrival: CycleCost
    quiet: CycleCost
    restart: CycleCost | None
    peak_rss_mib: float
    """The process's peak RSS after the three rounds in operation (before the restart's store)."""
    restart_peak_rss_mib: float | None = None
    """The peak after the restart round too (its store replaces the first one)."""

    def lines(self) -> list[str]:
        s = self.shape
        out = [f"replay  nodes={s.nodes} x {s.gpus_per_node} GPUs  pods={s.pods} "
               f"({s.running_gangs * GANG} running in {s.running_gangs} gangs, {s.cpu_pods} CPU-only running, "
               f"{s.pending_gangs * GANG} waiting in {s.pending_gangs} gangs; {s.free_gpus} GPUs free)",
               f"replay  store filled with the running cluster in {self.fill_seconds:.2f} s; "
               f"{s.pending_gangs * GANG} pods in {s.pending_gangs} gangs arrive after the cold start "
               f"(created in {self.arrival_seconds:.2f} s)"]
        for label, attr, _meaning in ROUNDS:
            c = getattr(self, attr)
            if c is None:
                continue
            split = ", ".join(f"{part} {c.parts.get(part, 0.0):.3f} s" for part in PARTS)
            out.append(f"replay  {label:<10} {c.seconds:8.3f} s wall  {c.cpu:8.3f} s CPU  placed {c.placed:<5}"
                       f"  (CPU: {split})")
        out.append(f"replay  peak RSS {self.peak_rss_mib:.0f} MiB in operation"
                   + (f", {self.restart_peak_rss_mib:.0f} MiB with the restart"
                      if self.restart_peak_rss_mib is not None else ""))
        out += [f"replay  {label + ':':<11} {meaning}" for label, attr, meaning in ROUNDS
                if getattr(self, attr) is not None]
        return out


PARTS = ("cache sync", "snapshot", "actions", "writes")
SETTLE_ROUNDS = 10
"""At most this many unmeasured rounds after the cold start, until the scheduler's own writes
(queue statuses, the default Queue) have come back and a round finds nothing to do."""


def _one_round(scheduler: Any, ctx: SimContext, timer: _PartTimer, store: MemoryStore) -> CycleCost:
    before = sum(1 for _ in store.iter_kind(kinds.BIND_REQUEST))
    timer.cpu = {}
    gc.disable()  # the cycle's objects die by reference counting; a full collection is noise here
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        scheduler.reconcile(ctx)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        gc.enable()
    last = getattr(scheduler, "last", None)
    actions = getattr(last, "seconds", None)
    placed = sum(1 for _ in store.iter_kind(kinds.BIND_REQUEST)) - before
    return CycleCost(seconds, float(actions) if actions is not None else None, cpu, placed, dict(timer.cpu))


class _Timed:
    """A scheduler over ``store`` whose rounds are timed by part (:class:`_PartTimer`)."""

    def __init__(self, store: MemoryStore, clock: VirtualClock) -> None:
        from drasched.scheduler import controller

        self.store = store
        self.ctx = SimContext(store, clock)
        self.scheduler = controller.SchedulerController()
        self.timer = _PartTimer()
        self.timer.wrap(self.scheduler.cache, "sync", "cache sync")
        self.timer.wrap(self.scheduler.builder, "build", "snapshot")
        self.timer.wrap(controller, "run_cycle", "actions")
        for name in WRITES:
            self.timer.wrap(store, name, "writes")

    def round(self) -> CycleCost:
        return _one_round(self.scheduler, self.ctx, self.timer, self.store)

    def settle(self) -> None:
        """Rounds until one finds nothing to do (its own writes read back), unmeasured."""
        for _ in range(SETTLE_ROUNDS):
            if not self.scheduler.reconcile(self.ctx):
                return

    def close(self) -> None:
        self.timer.restore()


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_replay(nodes: int = DEFAULT_NODES, pods: int = DEFAULT_PODS, restart: bool = True) -> ReplayResult:
    """The replay as a running scheduler meets it: fill the store with the running cluster, run
    the scheduler's first cycle (cold start), let it settle, create the waiting gangs, run the
    cycle that places them (arrival) and the one after (quiet). With ``restart``, then a fresh
    scheduler's first cycle over a new store holding everything at once (a restart with a backlog)."""
    s = shape(nodes, pods)
    t0 = time.perf_counter()
    store, clock = build_store(s, arrivals=False)
    fill = time.perf_counter() - t0
    gc.collect()
    gc.freeze()  # the filled store is long-lived: keep it out of the collector's generations
    timed = _Timed(store, clock)
    try:
        cold = timed.round()
        timed.settle()
        t0 = time.perf_counter()
        gc.disable()
        try:
            for obj in arriving_objects(s):
                store.create(obj)
        finally:
            gc.enable()
        created = time.perf_counter() - t0
        arrival = timed.round()
        quiet = timed.round()
    finally:
        timed.close()
    peak = _peak_rss_mib()
    del timed, store
    gc.unfreeze()
    gc.collect()
    if not restart:
        return ReplayResult(s, fill, cold, created, arrival, quiet, None, peak)
    store, clock = build_store(s)
    gc.collect()
    gc.freeze()
    timed = _Timed(store, clock)
    try:
        backlog = timed.round()
    finally:
        timed.close()
    del timed, store
    gc.unfreeze()
    return ReplayResult(s, fill, cold, created, arrival, quiet, backlog, peak, _peak_rss_mib())
