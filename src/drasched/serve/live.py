"""The controller context of a real cluster: wall clock, real API server, real Events."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from drasched.api.errors import ApiError
from drasched.api.meta import format_time
from drasched.serve.metrics import Metrics
from drasched.store.base import ClusterStore

Obj = dict[str, Any]
log = logging.getLogger("drasched")


@dataclass
class LiveContext:
    store: ClusterStore
    metrics: Metrics
    wakeups: list[datetime] = field(default_factory=list)

    def now(self) -> datetime:
        return datetime.now(UTC)

    def wake_at(self, when: datetime) -> None:
        self.wakeups.append(when)

    def next_wakeup(self) -> datetime | None:
        now = self.now()
        self.wakeups = [w for w in self.wakeups if w > now]
        return min(self.wakeups) if self.wakeups else None

    def decide(self, controller: str, action: str, obj: Obj | str, message: str) -> None:
        ref = obj if isinstance(obj, str) else f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        log.info("%s %s %s: %s", controller, action, ref, message)
        self.metrics.record_decision(controller, action)

    def event(self, obj: Obj, event_type: str, reason: str, message: str, component: str = "drasched") -> None:
        md = obj.get("metadata") or {}
        ts = format_time(self.now())
        try:
            self.store.create({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": f"{md.get('name', 'object')}.",
                             "namespace": md.get("namespace") or "default"},
                "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
                                   "name": md.get("name"), "uid": md.get("uid"),
                                   **({"namespace": md["namespace"]} if md.get("namespace") else {})},
                "type": event_type, "reason": reason, "message": message,
                "source": {"component": component}, "reportingComponent": component,
                "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
            })
        except ApiError as exc:  # events are best effort, as in client-go's recorder
            log.warning("could not record event %s on %s: %s", reason, md.get("name"), exc)
