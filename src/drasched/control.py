"""What every control loop sees, in either home (embedded run or real cluster).

Controllers (claim controller, scheduler, binder, simulated kubelet) are written against
this protocol, so the same code runs inside ``drasched simulate`` (SimContext, virtual
clock, memory store) and ``drasched serve`` (LiveContext, wall clock, real API server).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from drasched.store.base import ClusterStore

Obj = dict[str, Any]


class ControllerContext(Protocol):
    @property
    def store(self) -> ClusterStore: ...

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

    def reconcile(self, ctx: Any) -> bool: ...
