"""An embedded run (no polling) wakes the binder when the binding timeout passes (KEP-5007).

Upstream kube-scheduler dynamicresources.go PreBind polls every 5 s for ``bindingTimeout``
(DynamicResourcesArgs, default 600 s; ``isClaimTimeout``: ``allocationTimestamp + timeout``
before now), then fails the attempt: the claims are rolled back and the pod is tried again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from drasched.binder.bindingconditions import BINDING_TIMEOUT, times_out_at


def _claim(stamp: str | None, ready: bool = False) -> dict:
    result = {"request": "g", "driver": "d", "pool": "p", "device": "x", "bindingConditions": ["attached"]}
    allocation: dict = {"devices": {"results": [result]}}
    if stamp:
        allocation["allocationTimestamp"] = stamp
    status: dict = {"allocation": allocation}
    if ready:
        status["devices"] = [{"driver": "d", "pool": "p", "device": "x",
                              "conditions": [{"type": "attached", "status": "True"}]}]
    return {"metadata": {"name": "c"}, "status": status}


def test_the_wake_up_is_just_past_the_timeout_of_the_waiting_claim() -> None:
    at = times_out_at([_claim("2026-01-01T00:00:00Z")])
    assert at == datetime(2026, 1, 1, tzinfo=UTC) + BINDING_TIMEOUT + timedelta(seconds=1)


def test_no_wake_up_without_a_stamp_or_once_the_conditions_are_met() -> None:
    assert times_out_at([_claim(None)]) is None
    assert times_out_at([_claim("2026-01-01T00:00:00Z", ready=True)]) is None
