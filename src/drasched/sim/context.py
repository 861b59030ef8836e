"""What a controller sees in an embedded run: the store, the clock, events and decisions."""

from __future__ import annotations

import copy
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from drasched.api.eventname import event_name
from drasched.api.kinds import ResourceType
from drasched.api.meta import controller_uid, format_time
from drasched.control import Controller, ControllerContext
from drasched.sim.clock import VirtualClock
from drasched.store.base import ClusterStore
from drasched.store.informer import SharedInformers
from drasched.store.memory import MemoryStore

__all__ = ["Controller", "ControllerContext", "Decision", "SimContext"]

Obj = dict[str, Any]


@dataclass
class Decision:
    """One thing a controller decided, for the decision record."""

    time: str
    controller: str
    action: str
    object: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"time": self.time, "controller": self.controller, "action": self.action,
                "object": self.object, "message": self.message}


@dataclass
class SimContext:
    """The embedded home of :class:`~drasched.control.ControllerContext`.

    No shared informers: each controller drains the memory store's watch in its turn, so
    a run stays single-threaded and deterministic. Cached reads are the store itself, plus
    a scan for "objects controlled by this uid" that copies only what it returns.
    """

    store: MemoryStore
    clock: VirtualClock
    decisions: list[Decision] = field(default_factory=list)
    _wakeups: list[datetime] = field(default_factory=list)
    _event_seq: int = 0
    _time_cache: tuple[datetime | None, str] = (None, "")

    @property
    def informers(self) -> SharedInformers | None:
        return None

    def cached_reads(self, kinds: Iterable[ResourceType]) -> ClusterStore:
        return ControlledScan(self.store)

    def now(self) -> datetime:
        return self.clock.now()

    def wake_at(self, when: datetime) -> None:
        """Ask the runner to advance virtual time to ``when`` once nothing else is left to do."""
        if when > self.clock.now():
            heapq.heappush(self._wakeups, when)

    def next_wakeup(self) -> datetime | None:
        while self._wakeups and self._wakeups[0] <= self.clock.now():
            heapq.heappop(self._wakeups)
        return self._wakeups[0] if self._wakeups else None

    def _now_text(self) -> str:
        """The clock's time as metav1.Time text, formatted once per instant: every decision
        and Event is stamped, and the virtual clock stands still for a whole burst."""
        now = self.clock.now()
        if now != self._time_cache[0]:
            self._time_cache = (now, format_time(now))
        return self._time_cache[1]

    def decide(self, controller: str, action: str, obj: Obj | str, message: str) -> None:
        ref = obj if isinstance(obj, str) else _ref(obj)
        self.decisions.append(Decision(self._now_text(), controller, action, ref, message))

    def event(self, obj: Obj, event_type: str, reason: str, message: str, component: str = "drasched") -> None:
        """Record a core/v1 Event about ``obj``, as a real controller would."""
        md = obj.get("metadata") or {}
        self._event_seq += 1
        ts = self._now_text()
        namespace = md.get("namespace") or "default"
        self.store.create({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name(md.get("name") or "unknown", f"{self._event_seq:016x}"),
                         "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": md.get("name"),
                **({"namespace": md["namespace"]} if md.get("namespace") else {}),
                "uid": md.get("uid"),
            },
            "type": event_type,
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
            "reportingComponent": component,
        })


def _ref(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{obj.get('kind')}/{ns + '/' if ns else ''}{md.get('name')}"


class ControlledScan:
    """The memory store, plus "objects controlled by this uid" without copying the namespace.

    The binder looks for a pod's extended-resource claim on every bind; a list of the
    namespace copies every claim in it, so thousands of binds cost O(claims) each. The
    answer is the same list the filter over ``list`` gives, so embedded runs stay
    byte-identical.
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def controlled_by(self, rt: ResourceType, namespace: str, owner_uid: str) -> list[Obj]:
        return [copy.deepcopy(o) for o in self.store.iter_kind(rt)
                if (o.get("metadata") or {}).get("namespace") == namespace and controller_uid(o) == owner_uid]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)
