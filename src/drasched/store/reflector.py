"""List+watch one kind into a local cache and tell handlers what changed.

The push-style sibling of ``informer.Informer``: where the Informer is polled by a
controller's pass, the Reflector drives callbacks (``on_add``/``on_update``/``on_delete``)
so that a scheduler cache can be fed event by event. It uses only the ClusterStore
contract, so it runs unchanged over the memory store and over a real API server.

Why each rule is here:
- it resumes a watch from the last resourceVersion it saw (an event's or a BOOKMARK's),
  so a watch that times out costs nothing and misses nothing;
- on ``Gone`` (history compacted) it relists, and objects it held that the new list
  lacks get a synthesized delete: the real deletion happened inside the lost history,
  and a cache that never hears of it would keep a ghost forever;
- a handler that raises is logged and the loop goes on: one bad object must not stop
  the cache from following the cluster;
- an event older than the cached object is dropped: :meth:`observe` puts the result of
  our own write in the cache before its watch event arrives (read-your-writes), and a
  late event for an earlier version must not undo it. Versions compare as integers, as
  upstream's assume cache does; if either is not an integer the event simply applies.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
from collections.abc import Callable, Iterator

from drasched.api.errors import Gone
from drasched.api.kinds import ResourceType
from drasched.store.base import ClusterStore, Obj, WatchEvent

log = logging.getLogger(__name__)

Key = tuple[str, str]
AddHandler = Callable[[Obj], None]
UpdateHandler = Callable[[Obj, Obj], None]
DeleteHandler = Callable[[Obj], None]


def key_of(obj: Obj) -> Key:
    """(namespace, name); namespace is "" for cluster-scoped kinds."""
    md = obj.get("metadata") or {}
    return (md.get("namespace") or "", md.get("name") or "")


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop ``metadata.managedFields``: about a third of an object as the server sends it,
    and nothing drasched reads (kube-scheduler's informers drop it too). Writes of such a
    copy keep the server's entries: a write without the field leaves them as they are."""
    md = obj.get("metadata")
    if isinstance(md, dict) and "managedFields" in md:
        obj = {**obj, "metadata": {k: v for k, v in md.items() if k != "managedFields"}}
    return obj


def is_older(rv: str, than: str) -> bool:
    """Whether resourceVersion ``rv`` is strictly older than ``than`` (False when unknown)."""
    try:
        return int(rv) < int(than)
    except ValueError:
        return False


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic GC off while a large list fills a cache (~8x faster, BENCHMARKS.md).

    Counted, so that reflector threads listing at the same time re-enable it only when
    the last of them is done, and never turn on a collector that was off before.
    """
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


class Reflector:
    """A cache of one kind (optionally one namespace), kept current by list+watch.

    Single consumer: call :meth:`step` from one loop, or :meth:`run` in a thread. Reads
    of :attr:`cache` from other threads should go through :meth:`get` / :meth:`items`.
    Cached objects are shared with the handlers; copy before changing one.
    """

    def __init__(
        self,
        store: ClusterStore,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
        watch_timeout: float = 1.0,
        transform: Callable[[Obj], Obj] | None = None,
    ) -> None:
        self.store = store
        self.rt = rt
        self.namespace = namespace if rt.namespaced else None
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self.watch_timeout = watch_timeout
        self.transform = transform
        """Applied to every object before it is cached (e.g. :func:`strip_managed_fields`)."""
        self.cache: dict[Key, Obj] = {}
        self.resource_version: str | None = None
        self.lists = 0
        """How many times the kind was listed (1 after the first sync; more after Gone)."""
        self._lock = threading.Lock()

    # -- reading -----------------------------------------------------------------------

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        with self._lock:
            return self.cache.get(((namespace or "") if self.rt.namespaced else "", name))

    def items(self) -> list[Obj]:
        """Every cached object in (namespace, name) order."""
        with self._lock:
            return [self.cache[k] for k in sorted(self.cache)]

    @property
    def synced(self) -> bool:
        return self.resource_version is not None

    # -- driving -----------------------------------------------------------------------

    def relist(self) -> None:
        """List the kind and reconcile the cache with it, synthesizing deletes."""
        with gc_paused():
            result = self.store.list(self.rt, self.namespace)
            items = result.items if self.transform is None else [self.transform(o) for o in result.items]
            fresh = {key_of(o): o for o in items}
        with self._lock:
            old = self.cache
            self.cache = fresh
            self.resource_version = result.resource_version
            self.lists += 1
        for key in sorted(old.keys() - fresh.keys()):
            self._call(self.on_delete, old[key])
        for key in sorted(fresh):
            prev = old.get(key)
            if prev is None:
                self._call(self.on_add, fresh[key])
            elif _rv(prev) != _rv(fresh[key]):
                self._call(self.on_update, prev, fresh[key])

    def step(self) -> int:
        """One round: the first call lists; later ones watch once from the last version.

        Returns how many changes were applied (bookmarks do not count; a relist counts as
        one). ``Gone`` is handled here (relist); any other error propagates with the cache
        still consistent. On the memory store a watch returns at once, so ``step`` is how
        embedded mode drives a reflector; ``run`` is for a real server, whose watch blocks.
        """
        if self.resource_version is None:
            self.relist()
            return 1
        applied = 0
        try:
            for event in self.store.watch(
                self.rt, self.resource_version, self.namespace, timeout_seconds=self.watch_timeout
            ):
                self._apply(event)
                applied += event.type != "BOOKMARK"
        except Gone as e:
            log.info("%s: watch from %s expired (%s); relisting", self.rt.kind, self.resource_version, e)
            self.relist()
            applied += 1
        return applied

    def run(self, stop: threading.Event, max_backoff: float = 5.0) -> None:
        """Step until ``stop`` is set; errors are logged and retried with backoff.

        After three failed watches in a row it relists, in case the saved version itself
        is what the server rejects.
        """
        failures = 0
        while not stop.is_set():
            try:
                self.step()
                failures = 0
            except Exception:
                if stop.is_set():  # the store was closed under us: a normal shutdown
                    return
                failures += 1
                log.exception("%s reflector: watch failed (%d in a row)", self.rt.kind, failures)
                if failures >= 3:
                    with self._lock:
                        self.resource_version = None
                stop.wait(min(max_backoff, 0.1 * 2**failures))

    def observe(self, obj: Obj) -> None:
        """Apply the result of our own write now, before its watch event arrives.

        Ignored unless the write is newer than everything the watch delivered so far: if
        the watch has passed it, the cache holds this version already or a later state
        (even a deletion, which must not be undone). Does not move ``resource_version``:
        the watch must still deliver every event in between.
        """
        if self.transform is not None:
            obj = self.transform(obj)
        key = key_of(obj)
        rv = _rv(obj)
        with self._lock:
            if self.resource_version is None or not is_older(self.resource_version, rv):
                return
            prev = self.cache.get(key)
            if prev is not None and (_rv(prev) == rv or is_older(rv, _rv(prev))):
                return
            self.cache[key] = obj
        if prev is None:
            self._call(self.on_add, obj)
        else:
            self._call(self.on_update, prev, obj)

    # -- internals ---------------------------------------------------------------------

    def _apply(self, event: WatchEvent) -> None:
        obj = event.object
        rv = _rv(obj)
        if event.type == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        if self.transform is not None:
            obj = self.transform(obj)
        key = key_of(obj)
        with self._lock:
            prev = self.cache.get(key)
            if prev is not None and is_older(rv, _rv(prev)):
                if rv:  # a late event for a version we wrote ourselves already
                    self.resource_version = rv
                return
            if event.type == "DELETED":
                self.cache.pop(key, None)
            else:
                self.cache[key] = obj
            if rv:
                self.resource_version = rv
        if event.type == "DELETED":
            if prev is not None:
                self._call(self.on_delete, obj)
        elif prev is None:
            self._call(self.on_add, obj)
        elif _rv(prev) != rv:
            self._call(self.on_update, prev, obj)

    def _call(self, handler: Callable[..., None] | None, *args: Obj) -> None:
        if handler is None:
            return
        try:
            handler(*args)
        except Exception:
            log.exception("%s reflector: handler %r failed", self.rt.kind, handler)
