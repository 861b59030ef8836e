"""Prometheus metrics of ``drasched serve``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from drasched.quantity import Quantity


class Metrics:
    """One registry per process (tests build their own)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.cycle_seconds = Histogram(
            "drasched_controller_cycle_seconds", "Duration of one reconcile of a controller",
            ["controller"], registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30),
        )
        self.decisions = Counter(
            "drasched_decisions_total", "Decisions recorded by controllers", ["controller", "action"],
            registry=self.registry,
        )
        self.pods_scheduled = Counter(
            "drasched_pods_scheduled_total", "Pods bound to a node by the binder", registry=self.registry
        )
        self.bind_failures = Counter(
            "drasched_bind_failures_total", "BindRequests that failed", registry=self.registry
        )
        self.queue_allocated = Gauge(
            "drasched_queue_allocated", "Allocated amount per queue and resource", ["queue", "resource"],
            registry=self.registry,
        )
        self.queue_fair_share = Gauge(
            "drasched_queue_fair_share", "Fair share per queue and resource", ["queue", "resource"],
            registry=self.registry,
        )
        self.is_leader = Gauge("drasched_leader", "1 while this process holds the lease", registry=self.registry)

    def record_decision(self, controller: str, action: str) -> None:
        self.decisions.labels(controller, action).inc()
        if controller == "binder" and action.lower() in ("bind", "bound", "scheduled"):
            self.pods_scheduled.inc()
        if controller == "binder" and "fail" in action.lower():
            self.bind_failures.inc()

    def record_queue(self, queue: dict) -> None:
        name = (queue.get("metadata") or {}).get("name", "")
        status = queue.get("status") or {}
        for field, gauge in (("allocated", self.queue_allocated), ("fairShare", self.queue_fair_share)):
            for resource, value in (status.get(field) or {}).items():
                try:
                    gauge.labels(name, resource).set(float(Quantity.parse(str(value)).as_approximate_float()))
                except ValueError:
                    continue
