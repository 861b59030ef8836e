"""Repeated Events become one Event with a count, as client-go's EventCorrelator does.

client-go's recorder (``tools/record/events_cache.go``) keys an Event by its source,
involved object, type, reason and message; an Event whose key it has seen recently is not
created again: the existing one is patched with ``count + 1`` and the new
``lastTimestamp``. A scheduler that retries an unschedulable pod every cycle then costs the
API server one small patch per retry, not a new object each time, and ``kubectl describe``
shows "(x12 over 3m)" instead of twelve lines.

The decision is pure (:meth:`EventCorrelator.correlate`); :class:`EventWriter` in
``serve/live.py`` carries it out. The cache is an LRU of ``max_keys`` keys (client-go
keeps 4096).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
MAX_KEYS = 4096


def event_key(ev: Obj) -> tuple[str, ...]:
    """client-go's getEventKey: source, involved object, type, reason and message."""
    src = ev.get("source") or {}
    obj = ev.get("involvedObject") or {}
    return (str(src.get("component", "")), str(src.get("host", "")), str(obj.get("kind", "")),
            str(obj.get("namespace", "")), str(obj.get("name", "")), str(obj.get("uid", "")),
            str(obj.get("apiVersion", "")), str(ev.get("type", "")), str(ev.get("reason", "")),
            str(ev.get("message", "")))


@dataclass
class Seen:
    """The Event written for a key: where it lives and how often it happened."""

    namespace: str
    name: str
    count: int
    first_timestamp: str


@dataclass
class Correlated:
    """What to write: a new Event (``patch`` is None) or a patch of the one named."""

    event: Obj
    patch: Obj | None = None
    namespace: str = ""
    name: str = ""


class EventCorrelator:
    """Thread-safe: every writer thread of one recorder shares it."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self._seen: OrderedDict[tuple[str, ...], Seen] = OrderedDict()
        self._lock = threading.Lock()

    def correlate(self, ev: Obj) -> Correlated:
        key = event_key(ev)
        with self._lock:
            seen = self._seen.get(key)
            if seen is None:
                return Correlated(ev)
            self._seen.move_to_end(key)
            seen.count += 1
            patch = {"count": seen.count, "lastTimestamp": ev.get("lastTimestamp")}
            return Correlated(ev, patch, seen.namespace, seen.name)

    def created(self, ev: Obj, stored: Obj) -> None:
        """Remember the Event the server stored for ``ev``'s key."""
        md = stored.get("metadata") or {}
        with self._lock:
            self._seen[event_key(ev)] = Seen(str(md.get("namespace", "")), str(md.get("name", "")),
                                             int(stored.get("count") or 1),
                                             str(stored.get("firstTimestamp") or ""))
            while len(self._seen) > self.max_keys:
                self._seen.popitem(last=False)

    def forget(self, ev: Obj) -> None:
        """The patched Event is gone (expired by the server's TTL): the next one is created anew."""
        with self._lock:
            self._seen.pop(event_key(ev), None)
