"""The controller context of a real cluster: wall clock, real API server, real Events."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError, NotFound
from drasched.api.eventname import event_name
from drasched.api.kinds import ResourceType
from drasched.api.meta import format_time
from drasched.serve.eventcorrelator import EventCorrelator, spam_key
from drasched.serve.metrics import Metrics
from drasched.store.base import ClusterStore
from drasched.store.informer import CachedReads, InformedStore, SharedInformers, shared_informers

Obj = dict[str, Any]
log = logging.getLogger("drasched")


class EventWriter:
    """Writes Events from background threads, as client-go's recorder does, each through
    the :class:`EventCorrelator` (aggregated, counted, spam-filtered).

    An Event is best effort, and a round trip per Event on a control loop's thread would
    cap scheduling throughput at the API server's latency. A full queue drops the Event
    with a warning rather than stall the loop; :meth:`close` writes what is queued first.
    ``writers=0`` writes on the caller's thread (the single-threaded serve loop).

    Each writer has its own queue, and every Event about one object (from one source) goes to
    the same writer, so they are written in order, one after another, as client-go's single
    recording goroutine writes them: a repeat is counted on the Event its first occurrence
    created, never created a second time by a writer that did not see the first one land.
    """

    def __init__(self, store: ClusterStore, writers: int = 2, queue_size: int = 10_000,
                 correlator: EventCorrelator | None = None) -> None:
        self.store = store
        self._queues: list[queue.Queue[Obj | None]] = [queue.Queue(queue_size) for _ in range(writers)]
        self.correlator = correlator or EventCorrelator()
        self._threads = [threading.Thread(target=self._run, args=(q,), name=f"events-{i}", daemon=True)
                         for i, q in enumerate(self._queues)]
        for t in self._threads:
            t.start()

    def put(self, ev: Obj) -> None:
        if not self._threads:
            self._write(ev)
            return
        try:
            self._queues[hash(spam_key(ev)) % len(self._queues)].put_nowait(ev)
        except queue.Full:
            log.warning("event queue full: dropped event %s on %s", ev.get("reason"),
                        (ev.get("involvedObject") or {}).get("name"))

    def _run(self, events: queue.Queue[Obj | None]) -> None:
        while True:
            ev = events.get()
            try:
                if ev is None:
                    return
                self._write(ev)
            except Exception:  # one Event that cannot be written must not end the writer
                log.exception("could not write event %s on %s", ev.get("reason") if ev else None,
                              ((ev or {}).get("involvedObject") or {}).get("name"))
            finally:
                events.task_done()

    def _write(self, ev: Obj) -> None:
        """Create the Event, or count one more of an Event already written (client-go's correlator)."""
        c = self.correlator.correlate(ev)
        if c.skip:  # the source's budget of Events about this object is spent (client-go's spam filter)
            return
        if c.patch is not None:
            try:
                self.store.patch(kinds.EVENT, c.name, c.namespace, c.patch)
                return
            except NotFound:  # expired by the server's event TTL: write it anew
                self.correlator.forget(c.event, c.key)
            except ApiError as exc:
                log.warning("could not update event %s on %s: %s", ev.get("reason"),
                            (ev.get("involvedObject") or {}).get("name"), exc)
                return
        stored = create_event(self.store, c.event)
        if stored is not None:
            self.correlator.created(c.event, stored, c.key)

    def flush(self) -> None:
        """Wait until every queued Event is written."""
        for q in self._queues:
            q.join()

    def close(self) -> None:
        """Write what is queued, then stop the writer threads."""
        for q in self._queues:
            q.put(None)
        for t in self._threads:
            t.join(30)


def create_event(store: ClusterStore, ev: Obj) -> Obj | None:
    """Create ``ev``; the stored Event, or None if the server refused it (logged, not raised)."""
    try:
        return store.create(ev)
    except ApiError as exc:  # events are best effort, as in client-go's recorder
        log.warning("could not record event %s on %s: %s", ev.get("reason"),
                    (ev.get("involvedObject") or {}).get("name"), exc)
        return None


@dataclass
class LiveContext:
    """One controller's view of a real cluster; Events go through ``events`` when set.

    The serve home of :class:`~drasched.control.ControllerContext`. Built over an
    :class:`~drasched.store.informer.InformedStore` (threaded serve) its controllers share
    the informers' feeds and the binder reads from their cache; over a plain store (serve
    over the memory store, in tests) every controller drains the store's watch itself.
    """

    store: ClusterStore
    metrics: Metrics
    wakeups: set[datetime] = field(default_factory=set)
    events: EventWriter | None = None
    """Where Events go; by default written on the caller's thread, through a correlator."""

    @property
    def informers(self) -> SharedInformers | None:
        return shared_informers(self.store)

    def cached_reads(self, kinds: Iterable[ResourceType]) -> ClusterStore:
        if isinstance(self.store, InformedStore):  # the home built the store: it knows what it is
            return CachedReads(self.store, kinds)
        return self.store

    def now(self) -> datetime:
        return datetime.now(UTC)

    def wake_at(self, when: datetime) -> None:
        self.wakeups.add(when)

    def next_wakeup(self) -> datetime | None:
        now = self.now()
        self.wakeups = {w for w in self.wakeups if w > now}
        return min(self.wakeups) if self.wakeups else None

    def decide(self, controller: str, action: str, obj: Obj | str, message: str) -> None:
        ref = obj if isinstance(obj, str) else f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        log.info("%s %s %s: %s", controller, action, ref, message)
        self.metrics.record_decision(controller, action)

    def event(self, obj: Obj, event_type: str, reason: str, message: str, component: str = "drasched") -> None:
        md = obj.get("metadata") or {}
        ts = format_time(self.now())
        ev = {
            "apiVersion": "v1", "kind": "Event",
            # upstream's recorder: <object name>.<hex of the time in ns>, kept legal for long names
            "metadata": {"name": event_name(str(md.get("name") or "object"), f"{time.time_ns():x}"),
                         "namespace": md.get("namespace") or "default"},
            "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
                               "name": md.get("name"), "uid": md.get("uid"),
                               **({"namespace": md["namespace"]} if md.get("namespace") else {})},
            "type": event_type, "reason": reason, "message": message,
            "source": {"component": component}, "reportingComponent": component,
            "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
        }
        if self.events is None:
            self.events = EventWriter(self.store, writers=0)
        self.events.put(ev)
