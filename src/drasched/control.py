"""What every control loop sees, in either home (embedded run or real cluster).

Every controller (claim controller, scheduler, binder, simulated kubelet and drivers) is
written against :class:`ControllerContext`, so the same code runs inside ``drasched
simulate`` (``SimContext``: virtual clock, memory store, decision record kept for the
report) and ``drasched serve`` (``LiveContext``: wall clock, real API server, shared
informers, decisions logged and counted). What differs between the two homes is a
property of the context, never something a controller finds out by probing the store.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol

from drasched.api.kinds import BIND_REQUEST, ResourceType
from drasched.store.base import ClusterStore
from drasched.store.informer import SharedInformers

SCHEDULER_CONFIG_MAP = "kube-system/drasched-scheduler"
"""The ConfigMap (``namespace/name``) whose ``data["config.yaml"]`` the scheduler and the implicit
gang controller apply as it changes, unless told another (``drasched serve --config-map``)."""

Obj = dict[str, Any]


class ControllerContext(Protocol):
    """The store, the reads, the clock, the event recorder and the decision record."""

    @property
    def store(self) -> ClusterStore:
        """Where writes go (and uncached reads): the memory store, or the API server."""
        ...

    @property
    def informers(self) -> SharedInformers | None:
        """Watch feeds shared by every controller (serve), or None: each drains the store's watch."""
        ...

    def cached_reads(self, kinds: Iterable[ResourceType]) -> ClusterStore:
        """A view of :attr:`store` whose reads of ``kinds`` may be answered from a cache.

        Writes go to the store unchanged. Only for a controller whose every write carries a
        precondition, so a stale read costs a conflict and a re-read, never a wrong write.
        """
        ...

    def now(self) -> datetime: ...

    def wake_at(self, when: datetime) -> None:
        """Ask to be run again at ``when`` even if nothing changes before then."""
        ...

    def event(self, obj: Obj, event_type: str, reason: str, message: str, component: str = "drasched") -> None:
        """Record a core/v1 Event about ``obj``."""
        ...

    def decide(self, controller: str, action: str, obj: Obj | str, message: str) -> None:
        """Add an entry to the decision record."""
        ...


class Controller(Protocol):
    """A level-triggered control loop: look at the store, act, say whether anything changed."""

    name: str

    def reconcile(self, ctx: ControllerContext) -> bool: ...


class BindHandoff:
    """BindRequests the scheduler decided and did not write, handed to the binder in process.

    ``drasched serve`` writes a BindRequest only where it buys something: a gang's member,
    a claim reserved for a PodGroup, a device with binding conditions (the request's status
    is where the wait is told). A lone pod's placement goes from the scheduler's thread to
    the binder's through here, and the binder's writes are its record: the claim's
    allocation and ``reservedFor`` (a restarted scheduler places a pod whose claims are
    allocated for it on their node again), then the pod's binding (upstream's scheduler
    keeps no other record either: it assumes the pod in its cache and binds). A bind that
    fails comes back with ``status.phase: Failed``, as a written BindRequest's would.

    Both sides poll from their own threads; ``wake`` (set from the context's informers)
    ends the other side's nap.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._to_binder: list[Obj] = []
        self._reports: list[Obj] = []
        self.informers: SharedInformers | None = None
        """Whose BindRequest feed is nudged when something is handed over (serve)."""

    def hand(self, brs: Iterable[Obj]) -> None:
        """The scheduler: bind these (in-memory BindRequests, each with a ``uid``); one wake-up."""
        with self._lock:
            before = len(self._to_binder)
            self._to_binder.extend(brs)
            handed = len(self._to_binder) > before
        if handed:
            self._wake()

    def take(self) -> list[Obj]:
        """The binder: the requests handed over since the last call."""
        with self._lock:
            out, self._to_binder = self._to_binder, []
        return out

    def report(self, br: Obj) -> None:
        """The binder: this handed-over request ended ``Failed`` (its ``status`` says why)."""
        with self._lock:
            self._reports.append(br)
        self._wake()

    def take_reports(self) -> list[Obj]:
        """The scheduler: the requests that failed since the last call."""
        with self._lock:
            out, self._reports = self._reports, []
        return out

    def _wake(self) -> None:
        if self.informers is not None:
            self.informers.nudge(BIND_REQUEST)
