"""The scheduler's cache: every object a cycle reads, kept current from store watch events.

Each kind is listed once, then watched from the list's resourceVersion, so a cycle never
relists (a ``Gone`` watch, after compaction, is the one exception). Works on any
:class:`~drasched.store.base.ClusterStore`. Objects are kept as the wire dicts the store
returned (never mutated, never handed back to the store); ``generation`` counts changes so
parsed views can be memoised per object version by the snapshot builder.

Other schedulers' objects (``foreign``: the upstream gang API, KAI-Scheduler's CRDs, those the
server serves) are watched beside them and kept translated under drasched's PodGroup and
Queue kinds (:mod:`drasched.scheduler.foreign_intake`): :meth:`objects` of those kinds is the
merged view, and their change log names every key whose merged object changed.

Two feeds, one cache: embedded mode drains each kind's watch synchronously (the memory
store answers at once, and the run must stay single-threaded and deterministic); given
the context's shared informers (``drasched serve``) the cache takes
what changed from the process's shared background watches, without waiting on any.
"""

from __future__ import annotations

import bisect
import gc
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from drasched.api import kinds
from drasched.api.errors import Gone, NotFound
from drasched.api.kinds import ResourceType
from drasched.scheduler.foreign_intake import ForeignIntake, Problem
from drasched.store.base import ClusterStore, ListResult
from drasched.store.informer import KindFeed, SharedInformers

Obj = dict[str, Any]

WATCHED: tuple[ResourceType, ...] = (
    kinds.NAMESPACE,
    kinds.CONFIG_MAP,
    kinds.PRIORITY_CLASS,
    kinds.NODE,
    kinds.DEVICE_CLASS,
    kinds.RESOURCE_SLICE,
    kinds.QUEUE,
    kinds.RESOURCE_CLAIM_TEMPLATE,
    kinds.RESOURCE_CLAIM,
    kinds.POD_GROUP,
    kinds.POD,
    kinds.BIND_REQUEST,
    kinds.POD_DISRUPTION_BUDGET,
)


def object_key(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name', '')}" if ns else str(md.get("name", ""))


class SchedulerCache:
    """Objects by kind and ``namespace/name`` (or ``name``), fed incrementally."""

    def __init__(self, watched: Iterable[ResourceType] = WATCHED, watch_timeout: float = 0.0,
                 foreign: Iterable[ResourceType] = ()) -> None:
        self.watched = tuple(watched)
        """The kinds readers see (a foreign kind is seen translated, under its drasched kind)."""
        self.foreign = tuple(rt for rt in foreign if rt not in self.watched)
        """The foreign kinds watched and translated (:mod:`~drasched.scheduler.foreign_intake`)."""
        self.watch_timeout = watch_timeout
        fed = (*self.watched, *self.foreign)
        self._objects: dict[ResourceType, dict[str, Obj]] = {rt: {} for rt in fed}
        self._rv: dict[ResourceType, str | None] = dict.fromkeys(fed)
        self._kind_generation: dict[ResourceType, int] = dict.fromkeys(fed, 0)
        self.generation = 0
        self._cursor: dict[ResourceType, int | None] = dict.fromkeys(fed)
        self._log: dict[ResourceType, list[tuple[int, str]]] = {rt: [] for rt in fed}
        """Per kind, (generation, key) of every change, oldest first: what readers diff against."""
        self._log_floor: dict[ResourceType, int] = dict.fromkeys(fed, 0)
        """Changes at or before this generation are no longer in the log."""
        self._intake = ForeignIntake(self.foreign) if self.foreign else None
        self._views: dict[ResourceType, dict[str, Obj]] = (
            {rt: {} for rt in (kinds.POD_GROUP, kinds.QUEUE) if rt in self.watched} if self._intake else {})
        """drasched's PodGroups and Queues merged with the translations (only with ``foreign``)."""
        self._assumed: dict[str, Obj] = {}
        """BindRequests decided but never written (``drasched.control.BindHandoff``), by key: they
        stand in :meth:`objects` over whatever the server has under the same name."""
        self._behind: dict[str, Obj] = {}
        """The server's BindRequest of the same name as an assumed one, while it is assumed."""

    # ------------------------------------------------------------------ feeding

    def sync(self, store: ClusterStore, informers: SharedInformers | None = None) -> bool:
        """Bring every kind up to date; return whether anything changed.

        From ``informers`` when the context has them (serve), else from the store's watch.
        """
        if informers is not None:
            feeds = [informers.feed(rt) for rt in (*self.watched, *self.foreign)]
            if not all(f.synced for f in feeds):
                return False  # never decide on a partial view of the cluster
            changed = False
            for f in feeds:
                changed |= self._sync_feed(f)
            return changed
        changed = False
        for rt in (*self.watched, *self.foreign):
            changed |= self._sync_kind(store, rt)
        return changed

    def _sync_feed(self, feed: KindFeed) -> bool:
        rt = feed.rt
        delta = feed.poll(self._cursor[rt])
        if delta is None:
            return False
        self._cursor[rt] = delta.cursor
        objects = self._objects[rt]
        if delta.full is not None:
            fresh = {_cache_key(k): o for k, o in delta.full.items()}
            if rt is kinds.BIND_REQUEST and self._assumed:
                self._overlay(fresh)
            replaced = [k for k, o in fresh.items() if objects.get(k) is not o]
            replaced += [k for k in objects if k not in fresh]
            self._objects[rt] = fresh
            if replaced:
                self._bump(rt, replaced)
            return bool(replaced)
        keys: list[str] = []
        for k, obj in delta.changed.items():
            key = _cache_key(k)
            if key in self._assumed and rt is kinds.BIND_REQUEST:
                self._hide(key, obj)
                continue
            if obj is None:
                if objects.pop(key, None) is not None:
                    keys.append(key)
            elif objects.get(key) is not obj:
                objects[key] = obj
                keys.append(key)
        if keys:
            self._bump(rt, keys)
        return bool(keys)

    def _sync_kind(self, store: ClusterStore, rt: ResourceType) -> bool:
        rv = self._rv[rt]
        if rv is None:
            return self._relist(store, rt)
        changed = False
        try:
            for ev in store.watch(rt, rv, timeout_seconds=self.watch_timeout):
                new_rv = (ev.object.get("metadata") or {}).get("resourceVersion")
                if new_rv:
                    self._rv[rt] = new_rv
                if ev.type == "BOOKMARK":
                    continue
                self.apply(rt, ev.type, ev.object)
                changed = True
        except Gone:
            return self._relist(store, rt)
        return changed

    def _relist(self, store: ClusterStore, rt: ResourceType) -> bool:
        was_enabled = gc.isenabled()
        gc.disable()  # filling a large cache with the collector on is ~8x slower (BENCHMARKS.md)
        try:
            try:
                listed: ListResult | None = _list(store, rt)
            except NotFound:  # a kind this server does not serve (an older or newer API version)
                listed = None
            fresh = {object_key(o): o for o in listed.items} if listed is not None else {}
            if rt is kinds.BIND_REQUEST and self._assumed:
                self._overlay(fresh)
        finally:
            if was_enabled:
                gc.enable()
        old = self._objects[rt]
        keys = [k for k, o in fresh.items() if k not in old or _rv_of(o) != _rv_of(old[k])]
        keys += [k for k in old if k not in fresh]
        self._objects[rt] = fresh
        self._rv[rt] = listed.resource_version if listed is not None else None  # unserved: asked again
        if keys:
            self._bump(rt, keys)
        return bool(keys)

    def apply(self, rt: ResourceType, event_type: str, obj: Obj) -> None:
        """Apply one watch event (also used by tests to feed the cache directly)."""
        key = object_key(obj)
        if key in self._assumed and rt is kinds.BIND_REQUEST:
            self._hide(key, None if event_type == "DELETED" else obj)
            return
        if event_type == "DELETED":
            self._objects[rt].pop(key, None)
        else:
            self._objects[rt][key] = obj
        self._bump(rt, (key,))

    def _bump(self, rt: ResourceType, keys: Iterable[str]) -> None:
        keys = tuple(keys)
        self._log_change(rt, keys)
        if self._intake is not None and self._intake.feeds(rt):
            merged = self._intake.update(rt, keys, self._objects.__getitem__, self.objects)
            for target, entries in merged.items():
                view = self._views[target]
                for key, obj in entries.items():
                    if obj is None:
                        view.pop(key, None)
                    else:
                        view[key] = obj
                if target != rt:  # a drasched object's own change is in the log already
                    self._log_change(target, entries)

    def _log_change(self, rt: ResourceType, keys: Iterable[str]) -> None:
        self.generation += 1
        self._kind_generation[rt] = self.generation
        log = self._log[rt]
        log.extend((self.generation, k) for k in keys)
        if len(log) > 4096 and len(log) > 2 * len(self.objects(rt)):
            cut = len(log) // 2  # readers this far behind rebuild from the objects instead
            self._log_floor[rt] = log[cut - 1][0]
            del log[:cut]

    # ------------------------------------------------------------------ assumed binds

    def assume(self, br: Obj) -> None:
        """Take ``br`` as a BindRequest that exists, until :meth:`forget_assumed`: readers see it
        in place of the server's object of the same name (a stale one being deleted)."""
        key = object_key(br)
        objects = self._objects[kinds.BIND_REQUEST]
        if key not in self._assumed and key in objects:
            self._behind[key] = objects[key]
        self._assumed[key] = objects[key] = br
        self._bump(kinds.BIND_REQUEST, (key,))

    def forget_assumed(self, key: str) -> None:
        """Readers see the server's BindRequest of this name again (none, mostly)."""
        if self._assumed.pop(key, None) is None:
            return
        objects = self._objects[kinds.BIND_REQUEST]
        real = self._behind.pop(key, None)
        if real is None:
            objects.pop(key, None)
        else:
            objects[key] = real
        self._bump(kinds.BIND_REQUEST, (key,))

    def assumed(self) -> Mapping[str, Obj]:
        """The assumed BindRequests by key (callers must not mutate them)."""
        return self._assumed

    def _hide(self, key: str, obj: Obj | None) -> None:
        """The server's version of an assumed key, kept for when the assumption ends."""
        if obj is None:
            self._behind.pop(key, None)
        else:
            self._behind[key] = obj

    def _overlay(self, fresh: dict[str, Obj]) -> None:
        """A relist of BindRequests: the assumed ones stand over what it found."""
        self._behind = {k: fresh[k] for k in self._assumed if k in fresh}
        fresh.update(self._assumed)

    # ------------------------------------------------------------------ reading

    def objects(self, rt: ResourceType) -> Mapping[str, Obj]:
        """Objects of one kind by key; callers must not mutate them. A PodGroup or Queue
        translated from a foreign kind is among drasched's own, marked with the
        ``drasched.io/translated-from`` annotation."""
        view = self._views.get(rt)
        return view if view is not None else self._objects[rt]

    def get(self, rt: ResourceType, key: str) -> Obj | None:
        return self.objects(rt).get(key)

    def take_problems(self) -> list[Problem]:
        """What translating foreign objects found since the last call (each once), for Events."""
        return self._intake.take_problems() if self._intake is not None else []

    def changed_since(self, rt: ResourceType, generation: int) -> set[str] | None:
        """Keys of ``rt`` added, changed or deleted after cache generation ``generation``;
        ``None`` when the log no longer reaches back that far (read everything instead)."""
        if generation < self._log_floor[rt]:
            return None
        log = self._log[rt]
        start = bisect.bisect_right(log, generation, key=lambda entry: entry[0])
        return {k for _, k in log[start:]}

    def kind_generation(self, rt: ResourceType) -> int:
        """The cache generation of the last change to this kind (for memoising derived data)."""
        return self._kind_generation[rt]


@runtime_checkable
class SharedLister(Protocol):
    """A store that can list its objects without copying them (the memory store): it replaces
    an object on each change and never edits one in place, so a reader that never mutates
    them may hold them."""

    def list_shared(self, rt: ResourceType) -> ListResult: ...


def _list(store: ClusterStore, rt: ResourceType) -> ListResult:
    """One kind, without copies where the store can share its objects (the cache never mutates
    them: copying every object of a large cluster was a third of the first cycle)."""
    if isinstance(store, SharedLister):
        return store.list_shared(rt)
    return store.list(rt)


def _cache_key(key: tuple[str, str]) -> str:
    """A feed's (namespace, name) as :func:`object_key` spells it."""
    ns, name = key
    return f"{ns}/{name}" if ns else name


def _rv_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))
