"""The ``drasched serve`` loop: lead, reconcile, expose health and metrics."""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from drasched.api import kinds
from drasched.api.errors import ApiError, Forbidden
from drasched.api.kinds import ResourceType
from drasched.control import SCHEDULER_CONFIG_MAP, BindHandoff, Controller
from drasched.scheduler.cache import WATCHED
from drasched.serve.fencing import FencedStore, LeadershipLost
from drasched.serve.leader import LeaderElector
from drasched.serve.live import EventWriter, LiveContext
from drasched.serve.metrics import Metrics
from drasched.store.base import ClusterStore
from drasched.store.informer import InformedStore, SharedInformers
from drasched.store.kube import KubeStore

log = logging.getLogger("drasched")

SERVE_KINDS = WATCHED
"""What the serve controllers read: the scheduler cache's kinds cover the binder's and the
claim controller's. Started together, so that the first round sees a whole cluster."""


def served_taint_rules(store: ClusterStore) -> ResourceType | None:
    """The DeviceTaintRule version the API server serves: v1 (Kubernetes 1.37 on), else
    v1beta2 (1.36 with DRADeviceTaintRules), else None: drasched carries on with the taints
    written in ResourceSlices alone."""
    for rt in (kinds.DEVICE_TAINT_RULE, kinds.DEVICE_TAINT_RULE_V1BETA2):
        try:
            store.list(rt)
        except Forbidden as exc:  # served or not, RBAC answers first: say what is lost
            log.error("cannot list DeviceTaintRules (%s): %s; grant drasched's ServiceAccount get, list and "
                      "watch on resource.k8s.io devicetaintrules (the Helm chart does): until then devices "
                      "tainted by a DeviceTaintRule are handed out", rt.api_version, exc.message)
            continue
        except ApiError as exc:
            log.info("DeviceTaintRules are not served as %s: %s", rt.api_version, exc.message)
            continue
        return rt
    return None


FOREIGN_CHOICES: tuple[tuple[ResourceType, ...], ...] = (
    (kinds.UPSTREAM_POD_GROUP, kinds.UPSTREAM_POD_GROUP_V1ALPHA2),
    (kinds.UPSTREAM_WORKLOAD, kinds.UPSTREAM_WORKLOAD_V1ALPHA2),
    (kinds.KAI_QUEUE,),
    (kinds.KAI_POD_GROUP,),
    (kinds.COSCHEDULING_POD_GROUP,),
)
"""Other schedulers' kinds serve reads, each in the first version served: the gang API as
v1beta1 (Kubernetes 1.37) or v1alpha2 (1.36, same storage: never both), KAI-Scheduler's CRDs
and scheduler-plugins' PodGroup CRD (coscheduling) where installed."""


def served_foreign_kinds(store: ClusterStore) -> tuple[ResourceType, ...]:
    """The kinds of :data:`FOREIGN_CHOICES` the API server serves; one it does not serve is
    logged and left out (drasched carries on without it)."""
    found: list[ResourceType] = []
    for choices in FOREIGN_CHOICES:
        for rt in choices:
            try:
                store.list(rt)
            except Forbidden as exc:
                log.warning("cannot list %s (%s): %s; grant drasched's ServiceAccount get, list and watch on it "
                            "(the Helm chart does) to have it read", rt.kind, rt.api_version, exc.message)
                continue
            except ApiError as exc:
                log.info("%s is not served as %s: %s; not read", rt.kind, rt.api_version, exc.message)
                continue
            found.append(rt)
            break
    return tuple(found)


def build_controllers(enable_claim_controller: bool = False, config_path: str | None = None,
                      taint_rules: ResourceType | None = None,
                      foreign: tuple[ResourceType, ...] = (),
                      config_map: str = SCHEDULER_CONFIG_MAP) -> list[Controller]:
    """The control loops a cluster deployment runs (kube-controller-manager owns claims and
    device taint eviction by default). ``taint_rules``: the DeviceTaintRule version the
    server serves (:func:`served_taint_rules`), None to read none; ``foreign``: the other
    schedulers' kinds it serves (:func:`served_foreign_kinds`), read translated; ``config_map``:
    ``namespace/name`` of the ConfigMap applied on top of ``config_path`` as it changes."""
    from drasched.binder import BinderController
    from drasched.binder.bindingconditions import POLL_INTERVAL
    from drasched.controllers.workloads.gangs import ImplicitGangController, settings_from_file
    from drasched.scheduler.config import load_config
    from drasched.scheduler.controller import SchedulerController

    controllers: list[Controller] = []
    queued = None
    if enable_claim_controller:
        from drasched.controllers.devicetainteviction import DeviceTaintEvictionController
        from drasched.controllers.resourceclaim import split_claim_controller

        # an upstream PodGroup's claims from templates too, where the server serves the gang API
        upstream_groups = next((rt for rt in foreign if rt.group == kinds.UPSTREAM_POD_GROUP.group
                                and rt.kind == kinds.UPSTREAM_POD_GROUP.kind), None)
        claim_controller, claim_cleanup = split_claim_controller(workers=CLAIM_WORKERS, batch=CLAIM_BATCH,
                                                                 upstream_groups=upstream_groups)
        queued = claim_controller.queued
        controllers += [claim_controller, claim_cleanup]
        controllers.append(DeviceTaintEvictionController(rules_kind=taint_rules))
    # In a cluster only pods naming drasched are ours (the config's schedulerNames), unlike simulate.
    config = load_config(config_path)
    # The implicit PodGroups of Jobs, JobSets, LeaderWorkerSets...; the scheduler holds their pods until labelled.
    controllers.append(ImplicitGangController(base=settings_from_file(config_path), schedules=config.schedules,
                                              config_map=config_map))
    handoff = BindHandoff()  # lone pods' binds go to the binder in process, not as BindRequests
    controllers += [SchedulerController(config, claim_wait_grace=CLAIM_WAIT_GRACE,
                                        write_workers=WRITE_WORKERS, idle_cycle_period=IDLE_CYCLE_PERIOD,
                                        claims_queued=queued, config_map_modules=False, config_map=config_map,
                                        allocation_wall_time=ALLOCATION_WALL_TIME,
                                        taint_rules=taint_rules, foreign=foreign,
                                        queue_status_period=QUEUE_STATUS_PERIOD, gang_backoff=True,
                                        bind_handoff=handoff),
                    BinderController(workers=BIND_WORKERS, record_success=False, binding_poll=POLL_INTERVAL,
                                     handoff=handoff)]
    return controllers


WRITE_WORKERS = 16
"""Requests the scheduler keeps in flight to the API server at once (a cycle's BindRequests and
conditions are independent round trips: one after another, a cycle would wait the server's
latency for each, and the scheduler's thread places nothing meanwhile; measured, 16 against 6:
a 1,000-pod burst 21 s -> 18 s, median latency 8.9 s -> 6.5 s)."""

CLAIM_WORKERS = 6
"""Syncs each half of the claim controller runs at once (each a round trip or two)."""

BIND_WORKERS = 16
"""Binds in flight at once: each is several round trips in a row (claim, status, binding),
so it takes more of them to keep a loaded API server busy."""

CLAIM_BATCH = 250
"""Pod keys the claim controller syncs per round in a burst (see ``ResourceClaimController``)."""

IDLE_CYCLE_PERIOD = 5.0
"""Seconds between cycles while no pod waits to be placed (see ``SchedulerController``)."""

ALLOCATION_WALL_TIME = 10.0
"""Seconds one device allocation search may run before it gives up, on top of its step budget
(kube-scheduler's DRA filter has the same 10 s default)."""

QUEUE_STATUS_PERIOD = 1.0
"""Seconds between two writes of one queue's usage numbers (see ``SchedulerController``)."""

CLAIM_WAIT_GRACE = 30.0
"""Seconds a new pod may wait for its template claims before the scheduler says so (see
``SchedulerController._claim_wait_pending``)."""


class _Health:
    """What ``/healthz`` answers: ok, or 500 with the problems, one a line: the control loop
    stalled, or a kind the controllers need cannot be listed (drasched's CRDs not installed, a
    kind the ServiceAccount may not list). The chart's liveness and readiness probes both ask
    it, so a Deployment whose CRDs are missing is never Ready; it is ok once every kind lists."""

    def __init__(self, informers: SharedInformers | None = None) -> None:
        self.last_loop = time.monotonic()
        self.stall_seconds = 60.0
        self.informers = informers
        """The shared informers of the threaded loop (set by :func:`run`), asked which kinds fail to list."""

    def problems(self) -> list[str]:
        out: list[str] = []
        if time.monotonic() - self.last_loop >= self.stall_seconds:
            out.append("control loop stalled")
        if self.informers is not None:
            out += [f"cannot list {e}" for e in self.informers.list_errors()]
        return out

    def healthy(self) -> bool:
        return not self.problems()


def start_http(port: int, metrics: Metrics, health: _Health, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Serve /healthz and /metrics from a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/healthz"):
                problems = health.problems()
                body = "\n".join(problems).encode() if problems else b"ok"
                self.send_response(500 if problems else 200)
                self.send_header("Content-Type", "text/plain")
            elif self.path.startswith("/metrics"):
                body = generate_latest(metrics.registry)
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            else:
                body = b"not found"
                self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="drasched-http").start()
    return server


def run(
    store: ClusterStore,
    controllers: Sequence[Controller],
    *,
    metrics: Metrics | None = None,
    elector: LeaderElector | None = None,
    period: float = 1.0,
    stop: threading.Event | None = None,
    health: _Health | None = None,
    max_loops: int | None = None,
    shared_informers: bool | None = None,
    watch_timeout: float = 30.0,
    min_round_interval: float = 0.05,
) -> int:
    """Run until ``stop`` is set (or ``max_loops`` rounds, for tests); returns rounds run.

    Against a real API server (``shared_informers``, on by default for a
    :class:`~drasched.store.kube.KubeStore`) every kind the controllers read is watched
    once, in the background, and shared by all of them, and the controllers run in
    threads, as separate controllers of a cluster would: one waiting on the API server
    never holds up another (the implicit gangs share the scheduler's thread and run just
    before it, see :func:`_lanes`). A controller sleeps until a watch delivers a change to a
    kind it reads, its wake-up time comes, or ``period`` passes; the main thread keeps the
    lease (``max_loops`` then counts its renewals). The scheduler's thread starts a round at
    most every ``min_round_interval`` seconds (the others every ``IO_ROUND_INTERVAL``), and
    after a round that used T seconds of CPU waits at
    least ``BUSY_FACTOR`` x T; while a burst waits (``SchedulerController.round_interval``) it
    rests the whole interval after each round ends, so that a cycle places the pods that
    arrived meanwhile together (placing one pod a cycle, each cycle paying its fixed part,
    tripled its CPU in a burst: BENCHMARKS.md): a burst of watch events is then one round, not one each,
    and no controller holds the GIL for more than about half the time (a scheduling cycle
    after a large change, or one placing a big burst, is CPU-bound; run back to back, it
    would starve the binder and the claim controller, whose rounds are mostly waiting on
    the network). Over the
    memory store the controllers take turns in one loop and drain its watch themselves,
    as in embedded mode.
    """
    metrics = metrics or Metrics()
    stop = stop or threading.Event()
    health = health or _Health()
    if shared_informers is None:
        shared_informers = isinstance(store, KubeStore)
    if shared_informers:
        return _run_threaded(store, controllers, metrics, elector, period, stop, health, max_loops, watch_timeout,
                             min_round_interval)
    if elector is not None:
        store = FencedStore(store, elector)
    ctx = LiveContext(store, metrics)
    loops = 0
    was_leader = False
    try:
        while not stop.is_set() and (max_loops is None or loops < max_loops):
            loops += 1
            health.last_loop = time.monotonic()
            if elector is not None and not elector.try_acquire_or_renew():
                metrics.is_leader.set(0)
                if was_leader and not elector.is_leader:
                    raise LeadershipLost("leader election lost")
                stop.wait(period)
                continue
            was_leader = True
            metrics.is_leader.set(1)
            progressed = False
            for c in controllers:
                started = time.perf_counter()
                try:
                    progressed = bool(c.reconcile(ctx)) or progressed
                except ApiError as exc:  # a failed request is retried next round
                    log.warning("%s: %s", c.name, exc)
                metrics.cycle_seconds.labels(c.name).observe(time.perf_counter() - started)
            _refresh_queue_metrics(store, metrics, None)
            if not progressed:
                wake = ctx.next_wakeup()
                delay = period if wake is None else max(0.0, min(period, (wake - ctx.now()).total_seconds()))
                stop.wait(delay)
    finally:
        if elector is not None:
            elector.release()
        _close(controllers)
    return loops


SWITCH_INTERVAL = 0.005
"""The GIL switch interval while controllers run in threads (see ``_run_threaded``)."""

SERVE_GC_THRESHOLDS = (50_000, 20, 10)
"""The cyclic collector's thresholds while serve runs (the default's first is 700). Watch
events, decoded JSON trees freed by reference counting, allocate thousands of objects a pod;
at the default thresholds the collector ran every 700 allocations and walked the whole heap
(every cached object) every ~70,000: in a burst's profile, a tenth of the scheduler thread's
samples were such collections, set off when its cycle turned the collector back on."""

BUSY_FACTOR = 2.0
"""After a round that used T seconds of CPU, a controller rests at least this times T."""

SLOW_ROUND_SECONDS = 1.0
"""A controller round at least this long is logged with its duration and CPU time."""

RENEW_SECONDS = 2.0
"""How often the main thread looks at its controllers without leader election."""


def _run_threaded(
    raw_store: ClusterStore,
    controllers: Sequence[Controller],
    metrics: Metrics,
    elector: LeaderElector | None,
    period: float,
    stop: threading.Event,
    health: _Health,
    max_loops: int | None,
    watch_timeout: float,
    min_round_interval: float,
) -> int:
    # A thread back from the network waits for the GIL until the thread holding it has run
    # a whole switch interval. A shorter one than the default 5 ms cut each round trip's
    # wait, but with a few dozen threads the extra handovers cost more CPU than they saved
    # (BENCHMARKS.md): SWITCH_INTERVAL only caps an interval set higher elsewhere.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL))
    gc_thresholds = gc.get_threshold()
    gc.set_threshold(*SERVE_GC_THRESHOLDS)
    informers = SharedInformers(raw_store, watch_timeout=watch_timeout)
    health.informers = informers  # /healthz fails while a kind cannot be listed (missing CRDs)
    informers.start(SERVE_KINDS)
    if not _wait_for_sync(informers, health, stop, 120.0) and not stop.is_set():
        log.warning("informers did not finish their first list in 120 s; controllers wait for them")
    gc.freeze()  # the first lists are long-lived: the collector's full passes need not walk them
    # Every write is fenced by leadership; the elector itself renews through the raw store.
    writer: ClusterStore = FencedStore(raw_store, elector) if elector is not None else raw_store
    store = InformedStore(writer, informers)
    events = EventWriter(store)
    leading = threading.Event()
    done = threading.Event()  # stop, or max_loops reached: the controller threads end
    last_round: dict[str, float] = {}
    lost = False

    def loop(lane: Sequence[Controller]) -> None:
        ctx = LiveContext(store, metrics, events=events)
        name = "+".join(c.name for c in lane)
        min_interval = min_round_interval if any(c.name == "scheduler" for c in lane) else IO_ROUND_INTERVAL
        started = ended = cpu = 0.0
        while not done.is_set():
            last_round[name] = time.monotonic()
            if not leading.is_set():
                leading.wait(period)
                continue
            interval = _round_interval(lane, min_interval)
            pace = max(interval, BUSY_FACTOR * cpu) - (time.perf_counter() - started)
            if interval >= min_interval > IO_ROUND_INTERVAL:
                pace = max(pace, interval - (time.perf_counter() - ended))
            if pace > 0:
                done.wait(pace)
            seen = informers.version
            started, cpu_started = time.perf_counter(), time.thread_time()
            progressed = False
            for c in lane:
                c_started, c_cpu = time.perf_counter(), time.thread_time()
                try:
                    progressed = bool(c.reconcile(ctx)) or progressed
                except ApiError as exc:  # a failed request is retried next round
                    log.warning("%s: %s", c.name, exc)
                except Exception:  # a bug in one pass must not end the controller for good
                    log.exception("%s: reconcile failed", c.name)
                    done.wait(period)
                took = time.perf_counter() - c_started
                metrics.cycle_seconds.labels(c.name).observe(took)
                if took >= SLOW_ROUND_SECONDS:
                    log.info("%s: round took %.2f s (%.2f s of CPU in its thread)", c.name, took,
                             time.thread_time() - c_cpu)
            cpu = time.thread_time() - cpu_started
            ended = time.perf_counter()
            if not progressed:
                wake = ctx.next_wakeup()
                delay = period if wake is None else max(0.0, min(period, (wake - ctx.now()).total_seconds()))
                informers.wait(seen, delay, _lane_watches(lane))  # a change it reads ends the nap at once

    threads = [threading.Thread(target=loop, args=(lane,), name="controller-" + "+".join(c.name for c in lane),
                                daemon=True) for lane in _lanes(controllers)]
    for t in threads:
        t.start()
    loops = 0
    try:
        while not stop.is_set() and (max_loops is None or loops < max_loops):
            loops += 1
            if elector is None or elector.try_acquire_or_renew():
                leading.set()
                metrics.is_leader.set(1)
            else:
                was_leading = leading.is_set()
                leading.clear()
                metrics.is_leader.set(0)
                if was_leading and not elector.is_leader:
                    # as kube-scheduler: a lost lease ends the process (its caches and
                    # half-done cycles with it); the restart starts as a standby
                    log.error("leader election lost: the lease was not renewed within %.0f s",
                              elector.renew_deadline)
                    lost = True
                    break
            now = time.monotonic()
            stalled = [t.name for t in threads if not t.is_alive()]
            if leading.is_set() and not stalled:
                health.last_loop = min(last_round.values(), default=now)
            elif not leading.is_set():
                health.last_loop = now
            _refresh_queue_metrics(store, metrics, informers)
            retry = elector.retry_period if elector is not None else RENEW_SECONDS
            stop.wait(min(period, retry) if max_loops is not None else retry)
    finally:
        done.set()
        leading.set()  # wake the threads that wait for leadership, so that they see `done`
        informers.stop(join_timeout=0)  # also wakes the threads that wait for a change
        if not lost:  # a lost lease ends at once, as kube-scheduler's: nothing to wait for or hand back
            for t in threads:
                t.join(60)
            if elector is not None:
                elector.release()
            _close(controllers)
            events.close()
        sys.setswitchinterval(switch_interval)
        gc.set_threshold(*gc_thresholds)
        gc.unfreeze()
    if lost:
        raise LeadershipLost("leader election lost")
    return loops


def _wait_for_sync(informers: SharedInformers, health: _Health, stop: threading.Event, timeout: float) -> bool:
    """Wait for the informers' first lists, at most ``timeout`` seconds; the loop is not stalled
    meanwhile (``/healthz`` says why a kind does not list, if it does not)."""
    deadline = time.monotonic() + timeout
    while True:
        health.last_loop = time.monotonic()
        if informers.wait_for_sync(timeout=min(5.0, max(0.0, deadline - time.monotonic())), stop=stop):
            return True
        if stop.is_set() or time.monotonic() >= deadline:
            return False


IO_ROUND_INTERVAL = 0.005
"""The shortest time between two rounds of a lane without the scheduler (the binder, the claim
controller's two halves, the taint eviction): their rounds hand round trips to workers or wait on them, cost
little CPU, and a pod waits for each (``min_round_interval`` is the scheduler lane's, where a
longer rest turns a burst into one cycle)."""


def _round_interval(lane: Sequence[Controller], longest: float) -> float:
    """The lane's rest between rounds: ``longest``, or less where a controller asks for less
    (the scheduler, while few pods wait: ``SchedulerController.round_interval``)."""
    rest = longest
    for c in lane:
        ask = getattr(c, "round_interval", None)
        if callable(ask):
            rest = min(rest, float(ask(longest)))
    return rest


def _lane_watches(lane: Sequence[Controller]) -> tuple[ResourceType, ...] | None:
    """The kinds whose changes wake a lane: the union of its controllers' ``watches``; None (every
    change) if one of them does not say."""
    found: list[ResourceType] = []
    for c in lane:
        watches = getattr(c, "watches", None)
        if watches is None:
            return None
        found += [rt for rt in watches if rt not in found]
    return tuple(found)


BEFORE_SCHEDULER = ("implicit-gangs",)
"""Controllers that run in the scheduler's thread, just before it, in this order."""


def _lanes(controllers: Sequence[Controller]) -> list[list[Controller]]:
    """Which controllers share a thread, in order: the implicit gangs run just before the
    scheduler, so a new pod's PodGroup label is on by the time the scheduler looks at it (else
    it would be marked unschedulable, waiting for its implicit PodGroup, a moment before it is
    there); every other controller gets a thread of its own. The claim controller too: in a
    burst it creates the claims of the next pods while the scheduler places those whose claims
    exist (in the scheduler's thread, each waited for the other: measured, a burst's median
    latency 19.4 s there against 11.7 s apart); a pod whose claims it still has queued waits
    for them without a condition (``SchedulerController.claims_queued``)."""
    lanes: list[list[Controller]] = []
    first = sorted((c for c in controllers if c.name in BEFORE_SCHEDULER), key=lambda c: BEFORE_SCHEDULER.index(c.name))
    for c in controllers:
        if c.name in BEFORE_SCHEDULER:
            continue
        lanes.append([*first, c] if c.name == "scheduler" and first else [c])
    if first and not any(first[0] in lane for lane in lanes):
        lanes.append(first)
    return lanes


def _close(controllers: Sequence[Controller]) -> None:
    for c in controllers:
        close = getattr(c, "close", None)
        if callable(close):
            close()


def _refresh_queue_metrics(store: ClusterStore, metrics: Metrics, informers: SharedInformers | None) -> None:
    if informers is not None:
        for q in informers.feed(kinds.QUEUE).items():
            metrics.record_queue(q)
        return
    try:
        for q in store.list(kinds.QUEUE).items:
            metrics.record_queue(q)
    except ApiError:
        pass
