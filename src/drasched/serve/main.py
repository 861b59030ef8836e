"""The ``drasched serve`` loop: lead, reconcile, expose health and metrics."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.control import Controller
from drasched.serve.leader import LeaderElector
from drasched.serve.live import LiveContext
from drasched.serve.metrics import Metrics
from drasched.store.base import ClusterStore

log = logging.getLogger("drasched")


def build_controllers(enable_claim_controller: bool = False, config_path: str | None = None) -> list[Controller]:
    """The control loops a cluster deployment runs (kube-controller-manager owns claims by default)."""
    from drasched.binder import BinderController
    from drasched.scheduler.config import load_config
    from drasched.scheduler.controller import SchedulerController

    controllers: list[Controller] = []
    if enable_claim_controller:
        from drasched.controllers.resourceclaim import ResourceClaimController

        controllers.append(ResourceClaimController())
    # In a cluster only pods naming drasched are ours (the config's schedulerNames), unlike simulate.
    controllers += [SchedulerController(load_config(config_path)), BinderController()]
    return controllers


class _Health:
    def __init__(self) -> None:
        self.last_loop = time.monotonic()
        self.stall_seconds = 60.0

    def healthy(self) -> bool:
        return time.monotonic() - self.last_loop < self.stall_seconds


def start_http(port: int, metrics: Metrics, health: _Health, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Serve /healthz and /metrics from a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/healthz"):
                ok = health.healthy()
                body = b"ok" if ok else b"control loop stalled"
                self.send_response(200 if ok else 500)
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
) -> int:
    """Run until ``stop`` is set (or ``max_loops`` rounds, for tests); returns rounds run."""
    metrics = metrics or Metrics()
    stop = stop or threading.Event()
    health = health or _Health()
    ctx = LiveContext(store, metrics)
    loops = 0
    try:
        while not stop.is_set() and (max_loops is None or loops < max_loops):
            loops += 1
            health.last_loop = time.monotonic()
            if elector is not None and not elector.try_acquire_or_renew():
                metrics.is_leader.set(0)
                stop.wait(period)
                continue
            metrics.is_leader.set(1)
            progressed = False
            for c in controllers:
                started = time.perf_counter()
                try:
                    progressed = bool(c.reconcile(ctx)) or progressed
                except ApiError as exc:  # a failed request is retried next round
                    log.warning("%s: %s", c.name, exc)
                metrics.cycle_seconds.labels(c.name).observe(time.perf_counter() - started)
            _refresh_queue_metrics(store, metrics)
            if not progressed:
                wake = ctx.next_wakeup()
                delay = period if wake is None else max(0.0, min(period, (wake - ctx.now()).total_seconds()))
                stop.wait(delay)
    finally:
        if elector is not None:
            elector.release()
    return loops


def _refresh_queue_metrics(store: ClusterStore, metrics: Metrics) -> None:
    try:
        for q in store.list(kinds.QUEUE).items:
            metrics.record_queue(q)
    except ApiError:
        pass
