"""Queue status values: ``allocated``, ``requested``, ``fairShare`` and the ``Valid`` condition.

Written only when they change. Every dimension the queue sets in its spec is reported (zero
included); other dimensions appear once they are non-zero. ``pods`` appears only when the
spec names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from drasched.scheduler.constants import PODS, QUEUE_VALID
from drasched.scheduler.queues import QueueInfo
from drasched.scheduler.resources import format_units

Obj = dict[str, Any]


def _values(dims: list[str], values: Mapping[str, float | Fraction]) -> dict[str, str]:
    return {d: format_units(d, values.get(d, 0)) for d in dims}


def _valid_condition(q: QueueInfo, now: str) -> Obj:
    ok = not q.problems
    old = next((c for c in ((q.obj or {}).get("status") or {}).get("conditions") or []
                if c.get("type") == QUEUE_VALID), None)
    status = "True" if ok else "False"
    since = old.get("lastTransitionTime") if old and old.get("status") == status else now
    return {"type": QUEUE_VALID, "status": status, "reason": "Valid" if ok else "InvalidSpec",
            "message": "" if ok else "; ".join(q.problems), "lastTransitionTime": since}


def queue_status(q: QueueInfo, allocated: Mapping[str, float], requested: Mapping[str, float],
                 share: Mapping[str, Fraction], now: str) -> Obj:
    """The status this cycle computes for one queue."""
    dims = set(q.resources)
    for table in (allocated, requested, share):
        dims.update(d for d, v in table.items() if v > 0 and (d != PODS or d in q.resources))
    ordered = sorted(dims)
    status: Obj = dict((q.obj or {}).get("status") or {})
    status["allocated"] = _values(ordered, allocated)
    status["requested"] = _values(ordered, requested)
    status["fairShare"] = _values(ordered, share)
    others = [c for c in status.get("conditions") or [] if c.get("type") != QUEUE_VALID]
    status["conditions"] = [*others, _valid_condition(q, now)]
    return status


def status_changed(q: QueueInfo, new: Obj) -> bool:
    old = (q.obj or {}).get("status") or {}
    return any(old.get(k) != new.get(k) for k in ("allocated", "requested", "fairShare", "conditions"))
