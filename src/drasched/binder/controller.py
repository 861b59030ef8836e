"""The binder as a controller: ``drasched simulate`` and ``drasched serve`` both run it."""

from __future__ import annotations

import functools
import heapq
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from drasched.api import kinds
from drasched.api.errors import Gone
from drasched.binder.binder import FAILED, SUCCEEDED, TERMINAL, Backoff, Binder, BindOutcome
from drasched.control import BindHandoff, ControllerContext
from drasched.store.informer import KindFeed, SharedInformers
from drasched.store.wire import clone

_Key = tuple[str, str]
log = logging.getLogger(__name__)

CACHED_READS = (kinds.POD, kinds.NODE, kinds.RESOURCE_CLAIM)
"""What the binder reads through the context's cached reads (every write it makes has a precondition)."""


class BinderController:
    """Runs ``Binder`` over the pending BindRequests each round; backoff in the context's time.

    Follows BindRequests through the store's watch, so a round costs the changes since
    the last one rather than a scan of every BindRequest ever written (they are kept).
    Embedded, it drains the memory store's watch and binds one request after another, so
    a run is deterministic. Behind a shared informer (``drasched serve``) it reads the
    shared BindRequest feed and binds up to ``workers`` pods at once: one bind is several
    round trips to the API server, and doing them one by one would cap throughput at the
    latency of a round trip, not at what the server can take.

    With ``record_success`` off (``drasched serve``) a bound pod's BindRequest keeps no
    phase, so the controller itself remembers which versions it finished: they are not
    handed to a worker again, not even after a relist.

    With a ``handoff`` (``drasched serve``) it also binds the requests the scheduler handed it
    without writing them (lone pods): the same steps, their status kept here; one that fails
    goes back to the scheduler through the handoff, as a written one's status would.
    """

    name = "binder"
    watches = (kinds.BIND_REQUEST, kinds.POD)
    """What wakes it in serve: a request, and a pod (a bind finishing shows as one)."""

    def __init__(self, *, max_attempts: int = 5, backoff: Backoff | None = None, workers: int = 16,
                 record_success: bool = True, binding_poll: timedelta | None = None,
                 handoff: BindHandoff | None = None) -> None:
        self.handoff = handoff
        self._assumed: dict[_Key, dict[str, Any]] = {}
        """Handed-over requests not finished, as last recorded here (their status: attempts, backoff)."""
        self._handed: dict[_Key, dict[str, Any]] = {}
        """The handed-over request each worker has, by key."""
        self.max_attempts = max_attempts
        self.record_success = record_success
        self.binding_poll = binding_poll
        """See :attr:`Binder.binding_poll`: serve polls as upstream; an embedded run does not."""
        self.backoff = backoff
        self.workers = workers
        self._binder: Binder | None = None
        self._store: object | None = None
        self._rv: str | None = None
        self._pending: set[_Key] = set()
        self._latest: dict[_Key, dict[str, Any]] = {}
        """Embedded: each pending request as the store's watch (or list) last showed it, which
        is the stored version (the binder writes a request's status once a round, after
        reading it). Shared with the store's other watchers: read, never changed."""
        self._feed: KindFeed | None = None
        self._cursor: int | None = None
        self._cached: dict[_Key, dict[str, Any]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._in_flight: dict[_Key, Future[BindOutcome | None]] = {}
        self._submitted: dict[_Key, str | None] = {}
        """The resourceVersion each request was last handed to a worker at (serve mode)."""
        self._retry_at: dict[_Key, datetime | None] = {}
        self._retries: list[tuple[datetime, _Key]] = []
        self._ready: set[_Key] = set()
        """Requests to look at in the next round: new or changed in the feed, back from a worker."""
        self._done: dict[_Key, str | None] = {}
        """Requests bound without a status write: the resourceVersion they were finished at."""

    def _binder_for(self, ctx: ControllerContext) -> Binder:
        if self._binder is None or self._store is not ctx.store:
            informers = ctx.informers
            self._binder = Binder(ctx.cached_reads(CACHED_READS), recorder=ctx, decisions=ctx,
                                  max_attempts=self.max_attempts, backoff=self.backoff, name=self.name,
                                  record_success=self.record_success, binding_poll=self.binding_poll)
            self._store, self._rv, self._pending, self._latest = ctx.store, None, set(), {}
            self._feed = informers.feed(kinds.BIND_REQUEST) if informers is not None else None
            self._cursor, self._cached, self._done = None, {}, {}
        return self._binder

    def _sync(self, ctx: ControllerContext) -> None:
        """Bring the set of pending BindRequests up to date: list once, then watch."""
        if self._feed is not None:
            self._sync_feed(self._feed)
            return
        store = ctx.store
        if self._rv is not None:
            try:
                for ev in store.watch(kinds.BIND_REQUEST, self._rv):
                    md = ev.object.get("metadata") or {}
                    self._rv = md.get("resourceVersion") or self._rv
                    if ev.type == "BOOKMARK":
                        continue
                    key = (md.get("namespace", ""), md.get("name", ""))
                    if ev.type == "DELETED":
                        self._done.pop(key, None)
                    if ev.type == "DELETED" or (ev.object.get("status") or {}).get("phase") in TERMINAL \
                            or self._finished(key, ev.object):
                        self._pending.discard(key)
                        self._latest.pop(key, None)
                    else:
                        self._pending.add(key)
                        self._latest[key] = ev.object
                return
            except Gone:
                pass
        listed = store.list(kinds.BIND_REQUEST)
        self._latest = {
            (b["metadata"]["namespace"], b["metadata"]["name"]): b
            for b in listed.items
            if (b.get("status") or {}).get("phase") not in TERMINAL and not self._finished(
                (b["metadata"]["namespace"], b["metadata"]["name"]), b)
        }
        self._pending = set(self._latest)
        self._rv = listed.resource_version

    def _sync_feed(self, feed: KindFeed) -> None:
        delta = feed.poll(self._cursor)
        if delta is None:
            return
        self._cursor = delta.cursor
        if delta.full is not None:
            self._pending, self._cached, self._ready = set(self._assumed), dict(self._assumed), set(self._assumed)
            changed: dict[_Key, Any] = dict(delta.full)
            self._done = {k: rv for k, rv in self._done.items() if k in changed}  # gone while not watched
        else:
            changed = dict(delta.changed)
        for key, br in changed.items():
            if key in self._assumed:
                continue  # the server's request of that name is stale: the handed-over one stands
            if br is None:
                self._done.pop(key, None)
            if br is None or (br.get("status") or {}).get("phase") in TERMINAL or self._finished(key, br):
                self._pending.discard(key)
                self._cached.pop(key, None)
                self._submitted.pop(key, None)
                self._retry_at.pop(key, None)
            else:
                self._pending.add(key)
                self._cached[key] = br
                self._ready.add(key)

    def reconcile(self, ctx: ControllerContext) -> bool:
        binder = self._binder_for(ctx)
        self._sync(ctx)
        if self._feed is not None:
            return self._reconcile_parallel(ctx, binder)
        progressed = False
        for ns, name in sorted(self._pending):
            br = self._latest.get((ns, name))
            if br is None:
                continue
            out = binder.process(br, ctx.now())
            if out is None:
                continue
            progressed = True
            if out.phase == SUCCEEDED and not self.record_success:  # no status write will say so
                self._finish((ns, name), br["metadata"].get("resourceVersion"))
                self._pending.discard((ns, name))
                self._latest.pop((ns, name), None)
            if out.retry_at is not None:
                ctx.wake_at(out.retry_at)
        return progressed

    def _reconcile_parallel(self, ctx: ControllerContext, binder: Binder) -> bool:
        """Hand pending requests to the workers without waiting for them (a work queue).

        A round only submits: a bind that takes many round trips never holds up the ones
        that arrive after it. A round looks only at requests that are new or changed in the
        feed, whose worker finished, or whose backoff ended, so its cost follows the
        changes, not the number of requests pending. Each request is in one worker at a
        time, and is submitted again only when the feed shows it changed (a retry recorded,
        a replacement) or its backoff ends, never because the watch has not yet caught up
        with our own write.
        """
        now = ctx.now()
        progressed = self._take_handed(ctx)
        for key, future in list(self._in_flight.items()):
            if not future.done():
                continue
            del self._in_flight[key]
            self._ready.add(key)  # look again: it may have changed while the worker had it
            handed = self._handed.pop(key, None)
            if future.exception() is not None:  # process() handles API errors; this is a bug: retry later
                log.error("bind %s/%s: %s", *key, future.exception())
                self._later(ctx, key, now + timedelta(seconds=1))
                continue
            out = future.result()
            if handed is not None:
                progressed |= self._handed_back(ctx, key, handed, out)
                continue
            if out is not None and out.phase == SUCCEEDED and not self.record_success:
                progressed = True
                self._finish(key, self._submitted.get(key))
                if self._finished(key, self._cached.get(key) or {}):  # not replaced meanwhile
                    self._pending.discard(key)
                    self._cached.pop(key, None)
                    self._ready.discard(key)
                    self._submitted.pop(key, None)
                continue
            if out is not None:
                progressed = True
                if out.retry_at is not None:
                    self._later(ctx, key, out.retry_at)
        while self._retries and self._retries[0][0] <= now:
            _, key = heapq.heappop(self._retries)
            due_at = self._retry_at.get(key)
            if due_at is not None and due_at <= now:  # not superseded by a later backoff
                self._ready.add(key)
        ready, self._ready = self._ready, set()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="binder")
        for key in sorted(ready & self._pending):
            if key in self._in_flight:
                continue
            br = self._cached[key]
            rv = br["metadata"].get("resourceVersion")
            retry_at = self._retry_at.get(key)
            if self._submitted.get(key) == rv and (retry_at is None or retry_at > now):
                continue  # already tried at this version: wait for the feed or the backoff
            due = binder.not_before(br)
            if due is not None and due > now:
                self._later(ctx, key, due)
                continue
            self._submitted[key] = rv
            self._retry_at.pop(key, None)
            if key in self._assumed:
                self._handed[key] = br
                future = self._pool.submit(binder.process, clone(br), now, assumed=True)
                if ctx.informers is not None:  # its end writes nothing the feeds would show
                    future.add_done_callback(functools.partial(_nudge_binds, ctx.informers))
                self._in_flight[key] = future
                continue
            self._in_flight[key] = self._pool.submit(binder.process, clone(br), now)
        return progressed

    def _take_handed(self, ctx: ControllerContext) -> bool:
        """The requests the scheduler handed over since the last round, ready to bind."""
        if self.handoff is None:
            return False
        if self.handoff.informers is None:
            self.handoff.informers = ctx.informers
        taken = self.handoff.take()
        for br in taken:
            md = br["metadata"]
            key = (md.get("namespace", ""), md.get("name", ""))
            self._assumed[key] = self._cached[key] = br
            self._pending.add(key)
            self._ready.add(key)
            self._retry_at.pop(key, None)
        return bool(taken)

    def _handed_back(self, ctx: ControllerContext, key: _Key, br: dict[str, Any], out: BindOutcome | None) -> bool:
        """A worker finished a handed-over request: done, failed (back to the scheduler), or
        to be tried again (its status kept here, under a new resourceVersion)."""
        if self._assumed.get(key) is not br:
            return False  # the scheduler handed over a newer one meanwhile
        if out is None:  # nothing done (in backoff): no watch event will bring it back, so look again
            self._later(ctx, key, ctx.now() + timedelta(seconds=1))
            return False
        status = {"phase": out.phase, "attempts": out.attempts, "reason": out.reason, "message": out.message}
        if out.phase in (SUCCEEDED, FAILED):
            del self._assumed[key]
            self._pending.discard(key)
            self._cached.pop(key, None)
            self._submitted.pop(key, None)
            self._retry_at.pop(key, None)
            if out.phase == FAILED and self.handoff is not None:
                self.handoff.report({**br, "status": status})
            return True
        md = br["metadata"]
        again = {**br, "metadata": {**md, "resourceVersion": f"{md.get('uid')}/{out.attempts}"}, "status": status}
        self._assumed[key] = self._cached[key] = again
        if out.retry_at is not None:
            self._later(ctx, key, out.retry_at)
        return True

    def _finish(self, key: _Key, rv: str | None) -> None:
        """``key`` at ``rv`` is bound and nothing was written to say so: remember it."""
        self._done[key] = rv

    def _finished(self, key: _Key, br: dict[str, Any]) -> bool:
        """Whether ``br`` is a version this controller already bound (``_finish``)."""
        return key in self._done and self._done[key] == (br.get("metadata") or {}).get("resourceVersion")

    def _later(self, ctx: ControllerContext, key: _Key, when: datetime) -> None:
        """Look at ``key`` again at ``when`` (a backoff)."""
        self._retry_at[key] = when
        heapq.heappush(self._retries, (when, key))
        ctx.wake_at(when)

    def close(self) -> None:
        """Stop the bind workers (serve mode)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _nudge_binds(informers: SharedInformers, done: Future[BindOutcome | None]) -> None:
    """A handed-over bind finished without binding (failed, or to be tried again): wake the
    binder's lane (and the scheduler's) to take its outcome. A bind that succeeded needs no
    nudge: the pod's binding comes through the pod watch, which wakes them both."""
    if done.cancelled():
        return
    out = None if done.exception() is not None else done.result()
    if out is None or out.phase != SUCCEEDED:
        informers.nudge(kinds.BIND_REQUEST)
