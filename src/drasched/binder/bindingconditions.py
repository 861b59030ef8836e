"""Binding conditions (KEP-5007): a pod whose devices need preparing off the node waits to be bound.

A ResourceSlice device may carry ``bindingConditions`` (and ``bindingFailureConditions``);
the allocator copies them into the claim's allocation result. kube-scheduler's
DynamicResources plugin then holds the pod in PreBind, after the claim is allocated and
reserved, until every such condition is ``True`` in the claim's ``status.devices`` entry for
that device (written by the driver's controller, e.g. once a fabric-attached GPU is attached),
polling every 5 seconds. A failure condition that turns ``True``, or ``bindingTimeout``
(600 s by default) passing since ``allocation.allocationTimestamp``, ends the wait: the
attempt fails, the claim is rolled back and the pod is scheduled again (upstream
``isPodReadyForBinding``, ``isClaimReadyForBinding``, ``isClaimTimeout``).

Pure functions over claims as read; the binder decides what to write.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from drasched.api.meta import parse_time
from drasched.binder.claims import BindFailure
from drasched.dra.claimrules import has_binding_conditions

Obj = dict[str, Any]

BINDING_TIMEOUT = timedelta(seconds=600)
"""kube-scheduler's ``DynamicResourcesArgs.bindingTimeout`` default."""
POLL_INTERVAL = timedelta(seconds=5)
"""How often kube-scheduler's PreBind looks at the claims again while it waits."""
WAITING_REASON = "BindingConditionsPending"
"""The reason of upstream's Event, and of the BindRequest status while the pod waits."""


def claims_have_binding_conditions(claims: Iterable[Obj]) -> bool:
    """Whether any device allocated to ``claims`` must meet binding conditions first."""
    return any(has_binding_conditions((c.get("status") or {}).get("allocation")) for c in claims)


def waiting_for(claims: Iterable[Obj], now: datetime, timeout: timedelta = BINDING_TIMEOUT) -> str | None:
    """What the pod still waits for before it may be bound (None: nothing).

    Raises a permanent :class:`BindFailure` when a binding failure condition of an allocated
    device is ``True`` or a claim's binding timeout has passed, as upstream's PreBind fails.
    """
    for claim in claims:
        pending = _claim_waits_for(claim)
        if pending is None:
            continue
        if _timed_out(claim, now, timeout):
            raise BindFailure("BindingTimeout", f"claim {_name(claim)} binding timeout")
        return pending
    return None


def times_out_at(claims: Iterable[Obj], timeout: timedelta = BINDING_TIMEOUT) -> datetime | None:
    """The first moment :func:`waiting_for` raises the binding timeout for ``claims`` (the
    earliest waiting claim's ``allocationTimestamp`` plus ``timeout``, and a second more, as
    upstream's ``isClaimTimeout`` compares strictly); None when no claim waits with a stamp.
    An embedded run, which does not poll, wakes the binder then."""
    out: datetime | None = None
    for claim in claims:
        if _claim_waits_for(claim) is None:
            continue
        stamp = ((claim.get("status") or {}).get("allocation") or {}).get("allocationTimestamp")
        if not stamp or not any(r.get("bindingConditions") is not None for r in _results(claim)):
            continue
        try:
            at = parse_time(str(stamp)) + timeout + timedelta(seconds=1)
        except ValueError:
            continue
        out = at if out is None or at < out else out
    return out


def _claim_waits_for(claim: Obj) -> str | None:
    """The first unmet binding condition of ``claim`` (None: ready), as ``isClaimReadyForBinding``."""
    if not ((claim.get("status") or {}).get("allocation")):
        return f"claim {_name(claim)} is not allocated"
    for result in _results(claim):
        conditions = result.get("bindingConditions") or []
        if not conditions:
            continue
        device = f"{result.get('driver')}/{result.get('pool')}/{result.get('device')}"
        status = _device_status(claim, result)
        if status is None:
            return f"claim {_name(claim)}: device {device} has no status yet"
        by_type = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
        for cond_type in result.get("bindingFailureConditions") or []:
            failed = by_type.get(cond_type)
            if failed is not None and failed.get("status") == "True":
                raise BindFailure("BindingFailed",
                                  f"claim {_name(claim)} binding failed: reason={failed.get('reason', '')}, "
                                  f"message={failed.get('message', '')!r}")
        for cond_type in conditions:
            cond = by_type.get(cond_type)
            if cond is None or cond.get("status") != "True":
                return f"claim {_name(claim)}: device {device}: condition {cond_type} is not True"
    return None


def _timed_out(claim: Obj, now: datetime, timeout: timedelta) -> bool:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    stamp = allocation.get("allocationTimestamp")
    if not stamp or not any(r.get("bindingConditions") is not None for r in _results(claim)):
        return False
    try:
        return parse_time(str(stamp)) + timeout < now
    except ValueError:
        return False


def _device_status(claim: Obj, result: Obj) -> Obj | None:
    for entry in (claim.get("status") or {}).get("devices") or []:
        if (entry.get("device"), entry.get("driver"), entry.get("pool")) == (
                result.get("device"), result.get("driver"), result.get("pool")):
            return entry
    return None


def _results(claim: Obj) -> list[Obj]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])


def _name(claim: Obj) -> str:
    return str((claim.get("metadata") or {}).get("name", ""))
