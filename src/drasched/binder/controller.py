"""The binder as a controller of an embedded run (``drasched simulate``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from drasched.api import kinds
from drasched.api.errors import Gone
from drasched.binder.binder import TERMINAL, Backoff, Binder

if TYPE_CHECKING:  # sim sits above binder; only its types are needed here
    from drasched.sim.context import SimContext


class BinderController:
    """Runs ``Binder`` over the pending BindRequests each round; backoff in virtual time.

    Follows BindRequests through the store's watch, so a round costs the changes since
    the last one rather than a scan of every BindRequest ever written (they are kept).
    """

    name = "binder"

    def __init__(self, *, max_attempts: int = 5, backoff: Backoff | None = None) -> None:
        self.max_attempts = max_attempts
        self.backoff = backoff
        self._binder: Binder | None = None
        self._store: object | None = None
        self._rv: str | None = None
        self._pending: set[tuple[str, str]] = set()

    def _binder_for(self, ctx: SimContext) -> Binder:
        if self._binder is None or self._store is not ctx.store:
            self._binder = Binder(ctx.store, recorder=ctx, decisions=ctx, max_attempts=self.max_attempts,
                                  backoff=self.backoff, name=self.name)
            self._store, self._rv, self._pending = ctx.store, None, set()
        return self._binder

    def _sync(self, ctx: SimContext) -> None:
        """Bring the set of pending BindRequests up to date: list once, then watch."""
        store = ctx.store
        if self._rv is not None:
            try:
                for ev in store.watch(kinds.BIND_REQUEST, self._rv):
                    md = ev.object.get("metadata") or {}
                    key = (md.get("namespace", ""), md.get("name", ""))
                    if ev.type == "DELETED" or (ev.object.get("status") or {}).get("phase") in TERMINAL:
                        self._pending.discard(key)
                    else:
                        self._pending.add(key)
                self._rv = store.resource_version
                return
            except Gone:
                pass
        listed = store.list(kinds.BIND_REQUEST)
        self._pending = {
            (b["metadata"]["namespace"], b["metadata"]["name"])
            for b in listed.items
            if (b.get("status") or {}).get("phase") not in TERMINAL
        }
        self._rv = listed.resource_version

    def reconcile(self, ctx: SimContext) -> bool:
        binder = self._binder_for(ctx)
        self._sync(ctx)
        progressed = False
        for ns, name in sorted(self._pending):
            if ctx.store.peek(kinds.BIND_REQUEST, name, ns) is None:
                continue
            out = binder.process(ctx.store.get(kinds.BIND_REQUEST, name, ns), ctx.now())
            if out is None:
                continue
            progressed = True
            if out.retry_at is not None:
                ctx.wake_at(out.retry_at)
        return progressed
