"""The memory store's watch history: every event by kind, shared read-only by every watcher.

An embedded run has a dozen watchers of pods alone (each controller's informers, the
scheduler's cache, the binder), and each drains its kind's history every round. Kept in
one list for all kinds, each drain walked every other kind's events too; copying each
event for each watcher made the fan-out the store's largest cost. So the history is kept
per kind, and a watcher gets the event's object itself: the store's own stored version,
which the store replaces on the next write and never changes in place. Watchers must not
mutate it (informers and caches treat what they hold as read-only already).

With :data:`CHECK_ENV` set (the test suite sets it) every event keeps the JSON of its
object and each hand-out checks it still matches, so a consumer that mutates a shared
object fails the test that made it do so, rather than corrupting another watcher's view.
"""

from __future__ import annotations

import bisect
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgspec

from drasched.api.kinds import ResourceType
from drasched.store.base import Obj, WatchEvent

CHECK_ENV = "DRASCHED_CHECK_SHARED_OBJECTS"
"""When set to a non-empty value other than "0": check shared watch objects for mutation."""


class SharedObjectMutated(AssertionError):
    """A consumer changed an object the memory store shares with every other watcher."""


def _checking() -> bool:
    return os.environ.get(CHECK_ENV, "") not in ("", "0")


class _Entry:
    """One event: its resourceVersion, the event, and (checking) its object's JSON."""

    __slots__ = ("event", "json", "rv")

    def __init__(self, rv: int, event: WatchEvent, json: bytes | None) -> None:
        self.rv = rv
        self.event = event
        self.json = json


class WatchLog:
    """Events by kind in resourceVersion order, trimmed to ``limit`` events overall."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.floor = 0
        """Events at or below this resourceVersion are gone (compacted or trimmed)."""
        self._by_kind: dict[ResourceType, list[_Entry]] = {}
        self._order: list[ResourceType] = []
        """The kind of every retained event, oldest first (which kind to trim next)."""
        self.checking = _checking()

    def record(self, rv: int, rt: ResourceType, event_type: Any, obj: Obj) -> bytes | None:
        """Append an event whose object the store will never change in place; the object's
        JSON when checking."""
        json = object_json(obj) if self.checking else None
        self._by_kind.setdefault(rt, []).append(_Entry(rv, WatchEvent(event_type, obj), json))
        self._order.append(rt)
        if len(self._order) > self.limit:
            self._trim(len(self._order) - self.limit)
        return json

    def _trim(self, drop: int) -> None:
        for rt, count in Counter(self._order[:drop]).items():
            entries = self._by_kind[rt]
            self.floor = max(self.floor, entries[count - 1].rv)
            del entries[:count]
        del self._order[:drop]

    def compact(self, rv: int) -> None:
        """Forget every event: watches from before ``rv`` get Gone."""
        self.floor = rv
        self._by_kind.clear()
        self._order.clear()

    def events_after(self, rt: ResourceType, since: int, namespace: str | None = None) -> Iterator[WatchEvent]:
        """The events of ``rt`` newer than ``since`` (the caller checked ``floor``)."""
        entries = self._by_kind.get(rt)
        if not entries:
            return
        start = bisect.bisect_right(entries, since, key=lambda e: e.rv)
        for entry in entries[start:]:
            ev = entry.event
            if namespace and (ev.object.get("metadata") or {}).get("namespace") != namespace:
                continue
            if entry.json is not None:
                _check_unchanged(ev.object, entry.json, rt)
            yield ev


def object_json(obj: Obj) -> bytes:
    """The JSON of ``obj``, to compare it with itself later (``repr`` for what JSON cannot carry)."""
    try:
        return msgspec.json.encode(obj)
    except (TypeError, OverflowError, msgspec.EncodeError):
        return repr(obj).encode()


def _check_unchanged(obj: Obj, json: bytes, rt: ResourceType) -> None:
    now = object_json(obj)
    if now != json:
        md = obj.get("metadata") or {}
        raise SharedObjectMutated(
            f"{rt.kind} {md.get('namespace') or ''}/{md.get('name')} (resourceVersion {md.get('resourceVersion')}) "
            f"was changed after the memory store handed it to its watchers, who share it read-only: "
            f"{mutation_text(json, now)}")


def mutation_text(was: bytes, now: bytes) -> str:
    """Where two JSON texts of one object part: the first difference, with some context."""
    at = next((i for i, (a, b) in enumerate(zip(was, now, strict=False)) if a != b), min(len(was), len(now)))
    start = max(0, at - 120)
    return f"was ...{was[start:at + 120]!r}..., now ...{now[start:at + 120]!r}..."
