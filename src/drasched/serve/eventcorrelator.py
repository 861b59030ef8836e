"""Events filtered, aggregated and counted as client-go's EventCorrelator does them.

client-go's recorder (``tools/record/events_cache.go``, ``EventCorrelator.EventCorrelate``)
runs every Event through three steps before it reaches the API server, and so does
drasched's :class:`EventCorrelator`:

1. **Aggregate.** Events that differ only in their message (same source, involved object,
   type, reason, reporting controller) are similar. From the 10th distinct message of a
   similar group within 10 minutes on, the Event written instead is one whose message is
   ``(combined from similar events): <message>``, counted under the group's key, so a pod
   retried with ever-changing reasons costs one Event, not one per reason.
2. **Count.** An Event whose key (source, involved object, type, reason, message) was
   written recently is not created again: the existing one is patched with ``count + 1``
   and the new ``lastTimestamp`` (``kubectl describe`` shows "(x12 over 3m)").
3. **Filter spam.** Each source + involved object has a token bucket of 25 Events,
   refilled at one per 5 minutes; an Event beyond it is dropped.

The decision is pure and in memory (:meth:`EventCorrelator.correlate`);
:class:`~drasched.serve.live.EventWriter` carries it out. Each cache is an LRU of
``max_keys`` keys (client-go keeps 4096).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from drasched.api.eventname import event_name

Obj = dict[str, Any]
MAX_KEYS = 4096
AGGREGATE_MAX_EVENTS = 10
"""client-go's defaultAggregateMaxEvents: distinct messages of a similar group before aggregating."""
AGGREGATE_INTERVAL_SECONDS = 600.0
"""client-go's defaultAggregateIntervalInSeconds: a group quiet this long starts afresh."""
SPAM_BURST = 25
"""client-go's defaultSpamBurst: Events a source may write about one object at once."""
SPAM_QPS = 1.0 / 300.0
"""client-go's defaultSpamQPS: the refill rate after the burst (one Event per 5 minutes)."""
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """A bounded map that forgets the least recently used key (groupcache's lru.Cache)."""

    def __init__(self, max_keys: int) -> None:
        self.max_keys = max_keys
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.max_keys:
            self._items.popitem(last=False)

    def pop(self, key: K) -> None:
        self._items.pop(key, None)


def _involved(ev: Obj) -> tuple[str, ...]:
    src, obj = ev.get("source") or {}, ev.get("involvedObject") or {}
    return (str(src.get("component", "")), str(src.get("host", "")), str(obj.get("kind", "")),
            str(obj.get("namespace", "")), str(obj.get("name", "")))


def event_key(ev: Obj) -> tuple[str, ...]:
    """client-go's getEventKey: source, involved object, type, reason and message."""
    obj = ev.get("involvedObject") or {}
    return (*_involved(ev), str(obj.get("fieldPath", "")), str(obj.get("uid", "")),
            str(obj.get("apiVersion", "")), str(ev.get("type", "")), str(ev.get("reason", "")),
            str(ev.get("message", "")))


def spam_key(ev: Obj) -> tuple[str, ...]:
    """client-go's getSpamKey: source and involved object."""
    obj = ev.get("involvedObject") or {}
    return (*_involved(ev), str(obj.get("uid", "")), str(obj.get("apiVersion", "")))


def aggregate_key(ev: Obj) -> tuple[str, ...]:
    """client-go's EventAggregatorByReasonFunc: everything but the message."""
    return (*spam_key(ev), str(ev.get("type", "")), str(ev.get("reason", "")),
            str(ev.get("reportingComponent", "")), str(ev.get("reportingInstance", "")))


@dataclass
class Seen:
    """The Event written for a key: where it lives and how often it happened."""

    namespace: str
    name: str
    count: int
    first_timestamp: str


@dataclass
class Correlated:
    """What to write: nothing (``skip``), a new Event (``patch`` is None) or a patch of the one named.

    ``key`` is the cache key the written Event is counted under (the Event's own key, or
    its similar group's key for an aggregated Event): hand it back to
    :meth:`EventCorrelator.created` or :meth:`EventCorrelator.forget`.
    """

    event: Obj
    patch: Obj | None = None
    namespace: str = ""
    name: str = ""
    key: tuple[str, ...] = ()
    skip: bool = False


@dataclass
class _Group:
    """A similar group: the distinct messages seen, and when one was last seen."""

    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass
class _Bucket:
    """A token bucket (client-go's flowcontrol token bucket rate limiter)."""

    tokens: float
    at: float


class EventCorrelator:
    """Thread-safe: every writer thread of one recorder shares it. ``clock``: seconds (monotonic)."""

    def __init__(self, max_keys: int = MAX_KEYS, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_keys = max_keys
        self.clock = clock
        self._seen: _Lru[tuple[str, ...], Seen] = _Lru(max_keys)
        self._groups: _Lru[tuple[str, ...], _Group] = _Lru(max_keys)
        self._buckets: _Lru[tuple[str, ...], _Bucket] = _Lru(max_keys)
        self._lock = threading.Lock()

    def correlate(self, ev: Obj) -> Correlated:
        """Aggregate, count, then filter ``ev`` (client-go's EventCorrelate order)."""
        with self._lock:
            ev, key = self._aggregate(ev)
            seen = self._seen.get(key)
            if seen is None:
                out = Correlated(ev, key=key)
            else:
                seen.count += 1
                out = Correlated(ev, {"count": seen.count, "lastTimestamp": ev.get("lastTimestamp")},
                                 seen.namespace, seen.name, key)
            out.skip = self._spam(ev)
            return out

    def created(self, ev: Obj, stored: Obj, key: tuple[str, ...] | None = None) -> None:
        """Remember the Event the server stored for ``key`` (default: ``ev``'s own key)."""
        md = stored.get("metadata") or {}
        with self._lock:
            self._seen.put(key or event_key(ev), Seen(str(md.get("namespace", "")), str(md.get("name", "")),
                                                      int(stored.get("count") or 1),
                                                      str(stored.get("firstTimestamp") or "")))

    def forget(self, ev: Obj, key: tuple[str, ...] | None = None) -> None:
        """The patched Event is gone (expired by the server's TTL): the next one is created anew."""
        with self._lock:
            self._seen.pop(key or event_key(ev))

    def _aggregate(self, ev: Obj) -> tuple[Obj, tuple[str, ...]]:
        now = self.clock()
        gkey = aggregate_key(ev)
        group = self._groups.get(gkey)
        if group is None or now - group.last > AGGREGATE_INTERVAL_SECONDS:
            group = _Group()
        group.messages.add(str(ev.get("message", "")))
        group.last = now
        self._groups.put(gkey, group)
        if len(group.messages) < AGGREGATE_MAX_EVENTS:
            return ev, event_key(ev)
        group.messages.pop()  # do not grow the set beyond the threshold
        ts = ev.get("lastTimestamp")
        obj = ev.get("involvedObject") or {}
        md = ev.get("metadata") or {}
        combined = {**ev, "metadata": {"name": event_name(str(obj.get("name") or "object"),
                                                          f"{time.time_ns():x}"),
                                       "namespace": md.get("namespace") or obj.get("namespace") or "default"},
                    "message": COMBINED_PREFIX + str(ev.get("message", "")), "count": 1,
                    "firstTimestamp": ts, "lastTimestamp": ts}
        return combined, gkey

    def _spam(self, ev: Obj) -> bool:
        """Whether the source has spent its Events about this object (token bucket)."""
        now = self.clock()
        skey = spam_key(ev)
        bucket = self._buckets.get(skey)
        if bucket is None:
            bucket = _Bucket(float(SPAM_BURST), now)
        bucket.tokens = min(float(SPAM_BURST), bucket.tokens + (now - bucket.at) * SPAM_QPS)
        bucket.at = now
        self._buckets.put(skey, bucket)
        if bucket.tokens < 1.0:
            return True
        bucket.tokens -= 1.0
        return False

