"""Local copies of the cluster, kept current from the store's watch: list once, then deltas.

Controllers read from caches instead of listing every round, so a pass costs what changed,
not a copy of the whole cluster (no full relist per cycle). Two ways to feed one:

* **Synchronously** from the store's own watch (:class:`Informer` without a shared feed).
  That is embedded mode: the memory store's watch returns at once, every controller
  drains it in its turn, and a run stays single-threaded and deterministic.
* **From shared feeds** (:class:`SharedInformers`): against a real API server a watch
  blocks until something happens, so each kind gets ONE background thread running a
  :class:`~drasched.store.reflector.Reflector`, shared by every controller of the
  process. Each feed keeps a log of changed keys numbered by one process-wide sequence;
  a consumer polls "what changed since my cursor" without blocking, and the serve loop
  sleeps on :meth:`SharedInformers.wait` until any feed moves. :class:`InformedStore`
  wraps the real store so that the result of every write this process makes is in the
  feeds at once (read-your-writes: the scheduler never sees a state older than its own
  BindRequests, the binder's claim allocations included).

Cached objects are shared between consumers: callers copy before they change one.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from drasched.api import kinds as kinds_mod
from drasched.api.errors import ApiError, Conflict, Forbidden, Gone, NotFound
from drasched.api.kinds import ResourceType
from drasched.api.meta import controller_uid
from drasched.store.base import ClusterStore, ListResult, Obj, WatchEvent
from drasched.store.reflector import Key, Reflector, key_of, strip_managed_fields
from drasched.store.wire import clone

log = logging.getLogger(__name__)

_Key = Key


def _key(obj: Obj) -> _Key:
    return key_of(obj)


# ---------------------------------------------------------------------------------------- feeds


@dataclass
class FeedDelta:
    """What changed in one kind since a cursor.

    ``full`` is the whole kind when the consumer must start over (first poll, or its cursor
    fell off the trimmed log); otherwise ``changed`` maps each changed key to its current
    object, or None when it is gone. Objects are shared: never mutate them.
    """

    cursor: int
    full: dict[_Key, Obj] | None
    changed: dict[_Key, Obj | None]


class KindFeed:
    """One kind followed by a Reflector in a thread, plus a log of changed keys.

    The log holds keys, not objects: a poll reads each changed key's current object from
    the reflector's cache, so the order in which handlers ran (the watch thread and a
    writer's :meth:`observe` may race) cannot leave a consumer with an older version.
    """

    def __init__(self, owner: SharedInformers, rt: ResourceType, watch_timeout: float, max_log: int) -> None:
        self.rt = rt
        self._owner = owner
        self._max_log = max_log
        self._lock = threading.Lock()
        self._seqs: list[int] = []
        self._keys: list[_Key] = []
        self._floor = 0
        """Entries with a sequence at or below this were trimmed: older cursors start over."""
        self._synced = threading.Event()
        self.last_seq = 0
        """The sequence number of this feed's latest change (see :meth:`SharedInformers.wait`)."""
        self.relists = 0
        """Relists after the first list (a watch that got 410 Gone or kept failing)."""
        self.reflector = _ReplacingReflector(
            owner.store, rt,
            on_add=self._touch_obj, on_update=lambda _old, new: self._touch_obj(new), on_delete=self._touch_obj,
            watch_timeout=watch_timeout, transform=strip_managed_fields, on_replace=self._replaced,
        )
        self._thread = threading.Thread(target=self._run, name=f"informer-{rt.plural}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        stop = self._owner.stopped
        failures = 0
        while not self.reflector.synced and not stop.is_set():
            try:
                self.reflector.relist()
            except ApiError as exc:  # the server answered: its message says it all, no traceback
                if stop.is_set():
                    return
                failures += 1
                log.error("%s informer: list failed (%d in a row): %s%s", self.rt.kind, failures, exc.message,
                          _missing_kind_hint(self.rt) if isinstance(exc, NotFound) else "")
                stop.wait(min(5.0, 0.1 * 2**failures))
            except Exception:
                if stop.is_set():
                    return
                failures += 1
                log.exception("%s informer: list failed (%d in a row)", self.rt.kind, failures)
                stop.wait(min(5.0, 0.1 * 2**failures))
        with self._lock:
            self.last_seq = self._owner._next_seq()
            self._synced.set()
        self._owner._notify(self.rt)
        self.reflector.run(stop)

    def _touch_obj(self, obj: Obj) -> None:
        if not self._synced.is_set():
            return  # the first list: every consumer starts from the whole cache
        key = key_of(obj)
        with self._lock:
            seq = self.last_seq = self._owner._next_seq()
            self._seqs.append(seq)
            self._keys.append(key)
            if len(self._seqs) > self._max_log:
                drop = len(self._seqs) // 2
                self._floor = self._seqs[drop - 1]
                del self._seqs[:drop]
                del self._keys[:drop]
        self._owner._notify(self.rt)

    def _replaced(self) -> None:
        """A relist replaced the cache: every consumer starts over from the whole kind.

        As client-go's DeltaFIFO ``Replace`` hands every listed object to every handler
        again (an update even when nothing changed), not only those whose version moved:
        a relist follows a watch that broke (the API server away, 410 Gone), and a
        consumer may have dropped or parked work meanwhile (a sync that failed while the
        server was down waits in its backoff); starting over re-examines every key, now.
        What did change (deleted, modified or added while no watch ran) was already
        logged by the reflector's diff.
        """
        if not self._synced.is_set():
            return  # the first list: every consumer starts from the whole cache anyway
        with self._lock:
            self.relists += 1
            self._floor = self.last_seq = self._owner._next_seq()
            self._seqs.clear()
            self._keys.clear()
            relists = self.relists
        log.info("%s informer: relisted (%d so far); its consumers start over from the whole kind",
                 self.rt.kind, relists)
        self._owner._notify(self.rt)

    def nudge(self) -> None:
        """Wake whoever waits for this kind without a change to it: something in the process
        that readers of the kind also read changed (see ``SharedInformers.nudge``)."""
        with self._lock:
            self.last_seq = self._owner._next_seq()
        self._owner._notify(self.rt)

    @property
    def synced(self) -> bool:
        """Whether the first list is in; polls answer None before."""
        return self._synced.is_set()

    def poll(self, cursor: int | None) -> FeedDelta | None:
        """Changes after ``cursor`` (None: everything); None while the first list runs."""
        if not self.synced:
            return None
        with self._lock:
            # Every sequence number this feed was given so far is in the log (they are
            # drawn under this lock), so the global version is a safe cursor.
            now = self._owner.version
            if cursor is None or cursor < self._floor:
                full = True
                keys: list[_Key] = []
            else:
                full = False
                keys = self._keys[bisect.bisect_right(self._seqs, cursor):]
        if full:
            with self.reflector._lock:
                return FeedDelta(now, dict(self.reflector.cache), {})
        changed: dict[_Key, Obj | None] = {}
        with self.reflector._lock:
            cache = self.reflector.cache
            for k in keys:
                changed[k] = cache.get(k)
        return FeedDelta(now, None, changed)

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        return self.reflector.get(name, namespace)

    def items(self) -> list[Obj]:
        return self.reflector.items()

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    @property
    def list_error(self) -> str | None:
        """Why the kind cannot be listed, while its latest list was refused as not served (404) or
        not allowed (403): what no retry mends, only an operator (installing the CRDs, granting
        RBAC); None once a list succeeds. A server that does not answer is no such error: a
        reflector waits that out on its own."""
        exc = self.reflector.list_error
        if not isinstance(exc, NotFound | Forbidden):
            return None
        hint = _missing_kind_hint(self.rt) if isinstance(exc, NotFound) else ""
        return f"{self.rt.kind} ({self.rt.api_version} {self.rt.plural}): {exc.message}{hint}"


def _missing_kind_hint(rt: ResourceType) -> str:
    """What a 404 on listing a kind means: the server does not serve it."""
    if rt.group == kinds_mod.DRASCHED:
        return (f" ({rt.group}/{rt.version} {rt.plural} is not served: install drasched's CRDs, "
                "kubectl apply -f deploy/crds/ or the Helm chart, which carries them)")
    return f" ({rt.api_version} {rt.plural} is not served by this API server)"


class _ReplacingReflector(Reflector):
    """A Reflector that tells its feed when a relist replaced the cache (see ``KindFeed._replaced``),
    and keeps the error of its latest list while listing fails (see ``KindFeed.list_error``)."""

    def __init__(self, *args: Any, on_replace: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.on_replace = on_replace
        self.list_error: ApiError | None = None

    def relist(self) -> None:
        try:
            super().relist()
        except ApiError as exc:
            self.list_error = exc
            raise
        self.list_error = None
        self.on_replace()


class SharedInformers:
    """One background watch per kind, shared by every controller of the process.

    Feeds start lazily on first use (:meth:`feed`) or together (:meth:`start`). ``version``
    moves whenever any feed changes; :meth:`wait` sleeps until it does, which is what lets
    the serve loop react within milliseconds of a change instead of after a period.
    """

    def __init__(self, store: ClusterStore, *, watch_timeout: float = 30.0, max_log: int = 200_000) -> None:
        self.store = store
        self.watch_timeout = watch_timeout
        self.max_log = max_log
        self.stopped = threading.Event()
        self._feeds: dict[ResourceType, KindFeed] = {}
        self._lock = threading.Lock()
        self._seq = 0
        self._waiters: dict[threading.Event, frozenset[ResourceType] | None] = {}
        """Each thread in :meth:`wait`: its wake-up, and the kinds that end its wait (None: any)."""

    # -- sequence and wake-ups -------------------------------------------------------------

    def _next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def _notify(self, rt: ResourceType | None = None) -> None:
        """Wake the threads waiting for a change of ``rt`` (None: every waiting thread).

        Only those: every watch event and every bind handed over notifies, and waking each
        controller's thread for each one (a ``notify_all``) cost the scheduler's thread, which
        hands binds over holding the GIL, a wake-up of every other thread per pod (BENCHMARKS.md)."""
        with self._lock:
            wake = [e for e, kinds in self._waiters.items() if rt is None or kinds is None or rt in kinds]
        for event in wake:
            event.set()

    @property
    def version(self) -> int:
        """Moves forward on every change any feed sees (and when a feed finishes listing)."""
        return self._seq

    def wait(self, since: int, timeout: float, kinds: Iterable[ResourceType] | None = None) -> int:
        """Block until ``version`` passes ``since`` or ``timeout`` seconds pass; the version.

        With ``kinds``, only a change to one of those kinds (or a feed of theirs finishing
        its list) ends the wait: a controller that reads BindRequests is not woken by every
        pod heartbeat of the cluster.
        """
        interest: frozenset[ResourceType] | None
        if kinds is None:
            interest = None

            def changed() -> bool:
                return self._seq > since
        else:
            interest = frozenset(kinds)
            feeds = [self.feed(rt) for rt in interest]

            def changed() -> bool:
                return any(f.last_seq > since for f in feeds)
        woken = threading.Event()
        with self._lock:  # registered before the check: a change after it sets ``woken``
            self._waiters[woken] = interest
        try:
            deadline = time.monotonic() + max(0.0, timeout)
            while not (changed() or self.stopped.is_set()):
                left = deadline - time.monotonic()
                if left <= 0 or not woken.wait(left):
                    break
                woken.clear()  # a change of a watched kind that the check below may not count yet
        finally:
            with self._lock:
                del self._waiters[woken]
        return self._seq

    # -- feeds -------------------------------------------------------------------------------

    def feed(self, rt: ResourceType) -> KindFeed:
        """The feed of ``rt``, started on first use."""
        with self._lock:
            f = self._feeds.get(rt)
            if f is None:
                f = KindFeed(self, rt, self.watch_timeout, self.max_log)
                self._feeds[rt] = f
                f.start()
            return f

    def nudge(self, rt: ResourceType) -> None:
        """End the wait of every controller that waits for ``rt``, though the server's objects of
        that kind did not change: the scheduler handed the binder a bind it did not write
        (``drasched.control.BindHandoff``), or the binder hands back one that failed."""
        f = self._feeds.get(rt)
        if f is not None:
            f.nudge()
        else:
            self._notify()

    def has_feed(self, rt: ResourceType) -> bool:
        return rt in self._feeds

    def start(self, kinds: Iterable[ResourceType]) -> None:
        for rt in kinds:
            self.feed(rt)

    def wait_for_sync(self, timeout: float = 60.0, stop: threading.Event | None = None) -> bool:
        """Whether every started feed finished its first list within ``timeout`` seconds; gives up
        at once when ``stop`` is set (a SIGTERM must not wait out a server that cannot list)."""
        deadline = time.monotonic() + timeout
        for f in list(self._feeds.values()):
            while not f.wait_synced(min(0.2, max(0.0, deadline - time.monotonic()))):
                if (stop is not None and stop.is_set()) or time.monotonic() >= deadline:
                    return False
        return True

    def list_errors(self) -> list[str]:
        """For each started feed whose kind the server refuses to list (not served, not allowed),
        in start order, why (:attr:`KindFeed.list_error`): ``/healthz`` fails with these."""
        with self._lock:
            feeds = list(self._feeds.values())
        return [e for f in feeds if (e := f.list_error) is not None]

    def observe(self, obj: Obj | None) -> None:
        """Put the result of our own write into its kind's feed (a private copy)."""
        if not obj or not isinstance(obj.get("metadata"), dict):
            return
        try:
            rt = kinds_mod.for_object(obj)
        except Exception:
            return
        f = self._feeds.get(rt)
        if f is not None and f.synced:
            f.reflector.observe(clone(strip_managed_fields(obj)))

    def stop(self, join_timeout: float = 0.0) -> None:
        """Ask every feed thread to stop, and wake whoever waits for a change.

        A feed thread ends when its current watch returns (``watch_timeout`` at most);
        they are daemons, so nothing waits for them unless ``join_timeout`` says so.
        """
        self.stopped.set()
        self._notify()
        if join_timeout > 0:
            deadline = time.monotonic() + join_timeout
            for f in self._feeds.values():
                f._thread.join(max(0.0, deadline - time.monotonic()))


class InformedStore:
    """A ClusterStore that puts the result of each write into the shared feeds at once.

    Reads and watches go to the wrapped store unchanged; consumers that want the cache
    find it through :func:`shared_informers`. Deletes are left to the watch: a delete's
    answer does not carry the version at which the object went away.
    """

    def __init__(self, inner: ClusterStore, informers: SharedInformers | None = None) -> None:
        self.inner = inner
        self.informers = informers or SharedInformers(inner)

    def _seen(self, obj: Obj) -> Obj:
        self.informers.observe(obj)
        return obj

    def create(self, obj: Obj) -> Obj:
        return self._seen(self.inner.create(obj))

    def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj:
        return self.inner.get(rt, name, namespace)

    def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ListResult:
        return self.inner.list(rt, namespace, label_selector, field_selector)

    def update(self, obj: Obj) -> Obj:
        return self._seen(self.inner.update(obj))

    def update_status(self, obj: Obj) -> Obj:
        return self._seen(self.inner.update_status(obj))

    def patch(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None,
        patch: Obj,
        subresource: str | None = None,
    ) -> Obj:
        return self._seen(self.inner.patch(rt, name, namespace, patch, subresource))

    def delete(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Obj | None:
        left = self.inner.delete(rt, name, namespace, uid=uid, resource_version=resource_version,
                                 grace_period_seconds=grace_period_seconds)
        if left is not None:  # still there (finalizers, graceful termination): a newer version
            self.informers.observe(left)
        return left

    def bind(self, namespace: str, pod_name: str, node_name: str, pod_uid: str | None = None) -> None:
        self.inner.bind(namespace, pod_name, node_name, pod_uid)

    def watch(
        self,
        rt: ResourceType,
        resource_version: str,
        namespace: str | None = None,
        timeout_seconds: float = 1.0,
    ) -> Iterator[WatchEvent]:
        return self.inner.watch(rt, resource_version, namespace, timeout_seconds)

    def close(self) -> None:
        self.informers.stop()
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # request(), server, ... of the wrapped store
        return getattr(self.inner, name)


class CachedReads:
    """A view of an :class:`InformedStore` whose ``get`` answers from the shared cache.

    For the binder: every write it makes carries a precondition (resourceVersion on
    claims, uid on pods, and a binding refuses a pod that has a node), so a stale read
    costs a conflict and a re-read, never a wrong write; while a fresh one saves a round
    trip to the API server per object, three per bind. After a write of an object fails
    with a conflict, its next read goes to the server. An object not in the cache (created
    a moment ago) is asked of the server too. Answers are private copies.
    """

    def __init__(self, store: InformedStore, cached: Iterable[ResourceType]) -> None:
        self.store = store
        self.cached = frozenset(cached)
        self._from_server: set[tuple[ResourceType, str, str]] = set()
        self._indexes: dict[ResourceType, _ControllerIndex] = {}
        self._index_lock = threading.Lock()

    def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj:
        ns = (namespace or "") if rt.namespaced else ""
        informers = self.store.informers
        if rt in self.cached and informers.has_feed(rt) and (rt, ns, name) not in self._from_server:
            feed = informers.feed(rt)
            obj = feed.get(name, namespace) if feed.synced else None
            if obj is not None:
                return clone(obj)
        self._from_server.discard((rt, ns, name))
        return self.store.get(rt, name, namespace)

    def controlled_by(self, rt: ResourceType, namespace: str, owner_uid: str) -> list[Obj]:
        """Objects of ``rt`` in ``namespace`` whose controller owner has ``owner_uid`` (copies).

        What the binder asks to find a pod's extended-resource claim. Answered from an index
        by controller kept current from the feed: a list per bind would fetch and decode
        every claim of the namespace, and even a scan of the cache is O(claims) per bind.
        """
        informers = self.store.informers
        feed = informers.feed(rt) if rt in self.cached and informers.has_feed(rt) else None
        if feed is None or not feed.synced:
            items = self.store.list(rt, namespace).items
            return [o for o in items if controller_uid(o) == owner_uid]
        with self._index_lock:
            index = self._indexes.get(rt)
            if index is None:
                index = self._indexes[rt] = _ControllerIndex(feed)
            found = index.lookup(namespace, owner_uid)
        return [clone(o) for o in found]

    def _conflicted(self, rt: ResourceType, name: str, namespace: str | None) -> None:
        self._from_server.add((rt, (namespace or "") if rt.namespaced else "", name))

    def _write(self, obj: Obj, write: Any) -> Obj:
        try:
            result: Obj = write(obj)
            return result
        except Conflict:
            md = obj.get("metadata") or {}
            self._conflicted(kinds_mod.for_object(obj), str(md.get("name", "")), md.get("namespace"))
            raise

    def update(self, obj: Obj) -> Obj:
        return self._write(obj, self.store.update)

    def update_status(self, obj: Obj) -> Obj:
        return self._write(obj, self.store.update_status)

    def patch(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None,
        patch: Obj,
        subresource: str | None = None,
    ) -> Obj:
        try:
            return self.store.patch(rt, name, namespace, patch, subresource)
        except Conflict:
            self._conflicted(rt, name, namespace)
            raise

    def bind(self, namespace: str, pod_name: str, node_name: str, pod_uid: str | None = None) -> None:
        try:
            self.store.bind(namespace, pod_name, node_name, pod_uid)
        except (Conflict, NotFound):
            self._conflicted(kinds_mod.POD, pod_name, namespace)
            raise

    def __getattr__(self, name: str) -> Any:  # create, list, delete, watch, ... unchanged
        return getattr(self.store, name)


class _ControllerIndex:
    """Keys of one kind by (namespace, controller owner uid), caught up from a feed on use."""

    def __init__(self, feed: KindFeed) -> None:
        self.feed = feed
        self.cursor: int | None = None
        self.by_owner: dict[tuple[str, str], set[_Key]] = {}
        self.owner_of: dict[_Key, tuple[str, str]] = {}

    def _put(self, key: _Key, obj: Obj | None) -> None:
        old = self.owner_of.pop(key, None)
        if old is not None:
            keys = self.by_owner.get(old)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_owner[old]
        uid = controller_uid(obj) if obj is not None else None
        if uid:
            owner = (key[0], uid)
            self.owner_of[key] = owner
            self.by_owner.setdefault(owner, set()).add(key)

    def lookup(self, namespace: str, owner_uid: str) -> list[Obj]:
        delta = self.feed.poll(self.cursor)
        if delta is not None:
            self.cursor = delta.cursor
            if delta.full is not None:
                self.by_owner, self.owner_of = {}, {}
                for key, obj in delta.full.items():
                    self._put(key, obj)
            for key, changed in delta.changed.items():
                self._put(key, changed)
        keys = sorted(self.by_owner.get((namespace, owner_uid), ()))
        found = [self.feed.reflector.get(name, ns) for ns, name in keys]
        return [o for o in found if o is not None and controller_uid(o) == owner_uid]


def _same_version(cached: Obj | None, new: Obj) -> bool:
    """Whether ``new`` is the version we hold already (our own write's result, put before its
    event came): the same resourceVersion, or, without one, the same content."""
    if cached is None:
        return False
    if cached is new:
        return True
    rv = (new.get("metadata") or {}).get("resourceVersion")
    if rv:
        return bool((cached.get("metadata") or {}).get("resourceVersion") == rv)
    return cached == new


def shared_informers(store: object) -> SharedInformers | None:
    """The shared feeds behind ``store``, or None for a store that consumers drain themselves."""
    informers = getattr(store, "informers", None) if isinstance(store, InformedStore) else None
    return informers if isinstance(informers, SharedInformers) else None


# ---------------------------------------------------------------------------------------- Informer


class Informer:
    """Objects of one kind by (namespace, name), updated by :meth:`sync`.

    Fed from the store's shared feed when it has one, else from its own list+watch.
    """

    def __init__(self, store: ClusterStore, rt: ResourceType, watch_timeout: float = 0.0) -> None:
        self.store = store
        self.rt = rt
        self.watch_timeout = watch_timeout
        self._objects: dict[_Key, Obj] = {}
        self._rv: str | None = None
        informers = shared_informers(store)
        self._feed = informers.feed(rt) if informers is not None else None
        self._cursor: int | None = None
        self._changed: set[_Key] | None = None
        """Keys added, changed or removed since :meth:`take_changed` (None: everything)."""

    def take_changed(self) -> set[_Key] | None:
        """What changed since the last call, as (namespace, name) keys; None after a relist
        (everything may have). Our own :meth:`put` and :meth:`forget` count too."""
        changed, self._changed = self._changed, set()
        return changed

    def _note(self, key: _Key) -> None:
        if self._changed is not None:
            self._changed.add(key)

    def sync(self) -> bool:
        """Catch up with the store; True when any object was added, changed or removed."""
        if self._feed is not None:
            return self._sync_feed(self._feed)
        if self._rv is None:
            return self._relist()
        changed = False
        objects, noted = self._objects, self._changed  # every event of every round passes here
        try:
            for ev in self.store.watch(self.rt, self._rv, timeout_seconds=self.watch_timeout):
                md = ev.object.get("metadata") or {}
                if md.get("resourceVersion"):
                    self._rv = md["resourceVersion"]
                if ev.type == "BOOKMARK":
                    continue
                key = (md.get("namespace") or "", md.get("name") or "")  # key_of, inline
                if noted is not None:
                    noted.add(key)
                if ev.type == "DELETED":
                    changed = objects.pop(key, None) is not None or changed
                else:
                    changed = changed or not _same_version(objects.get(key), ev.object)
                    objects[key] = ev.object
        except Gone:
            return self._relist()
        return changed

    def _sync_feed(self, feed: KindFeed) -> bool:
        delta = feed.poll(self._cursor)
        if delta is None:
            return False
        self._cursor = delta.cursor
        if delta.full is not None:
            changed = delta.full.keys() != self._objects.keys() or any(
                self._objects[k] is not o for k, o in delta.full.items())
            self._objects = dict(delta.full)
            self._changed = None
            return changed
        changed = False
        for key, obj in delta.changed.items():
            self._note(key)
            if obj is None:
                changed = self._objects.pop(key, None) is not None or changed
            elif self._objects.get(key) is not obj:
                self._objects[key] = obj
                changed = True
        return changed

    def _relist(self) -> bool:
        result = self.store.list(self.rt)
        fresh = {_key(o): o for o in result.items}
        changed = fresh != self._objects
        self._objects = fresh
        self._rv = result.resource_version
        self._changed = None
        return changed

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        return self._objects.get(((namespace or "") if self.rt.namespaced else "", name))

    def values(self) -> Iterator[Obj]:
        """Every cached object, in (namespace, name) order so passes are deterministic."""
        for key in sorted(self._objects):
            yield self._objects[key]

    def __len__(self) -> int:
        return len(self._objects)

    def put(self, obj: Obj) -> None:
        """Record the result of our own write now, before its watch event arrives."""
        self._objects[_key(obj)] = obj
        self._note(_key(obj))

    def forget(self, name: str, namespace: str | None = None) -> None:
        """Drop an object we just deleted."""
        key = ((namespace or "") if self.rt.namespaced else "", name)
        self._objects.pop(key, None)
        self._note(key)
