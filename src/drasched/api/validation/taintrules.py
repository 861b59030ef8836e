"""DeviceTaintRule rules, from pkg/apis/resource/validation/validation.go
(``ValidateDeviceTaintRule``, ``validateDeviceTaintSelector``, ``validateDeviceTaint``):
the selector's driver, pool and device names, and the one taint (the same rules as a
taint written in a ResourceSlice)."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.names import bad, check_driver_name, check_label, too_many
from drasched.api.validation.resource import check_pool_name
from drasched.api.validation.slices import check_device_taint

Obj = dict[str, Any]

STATUS_MAX_CONDITIONS = 8
"""``DeviceTaintRuleStatusMaxConditions``."""


def _check_selector(path: str, selector: Any) -> list[Cause]:
    """Only the fields that are set are checked; an absent selector matches no device."""
    if not isinstance(selector, dict):
        return []
    causes: list[Cause] = []
    if selector.get("driver") is not None:
        causes += check_driver_name(f"{path}.driver", selector["driver"])
    if selector.get("pool") is not None:
        causes += check_pool_name(f"{path}.pool", selector["pool"])
    if selector.get("device") is not None:
        causes += check_label(f"{path}.device", selector["device"])
    return causes


def validate_taint_rule(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes = _check_selector("spec.deviceSelector", spec.get("deviceSelector"))
    taint = spec.get("taint")
    causes += check_device_taint("spec.taint", taint if isinstance(taint, dict) else {})
    return causes


def validate_taint_rule_status(obj: Obj) -> list[Cause]:
    """``ValidateDeviceTaintRuleStatusUpdate``: at most eight conditions."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    if isinstance(conditions, list) and len(conditions) > STATUS_MAX_CONDITIONS:
        return [too_many("status.conditions", len(conditions), STATUS_MAX_CONDITIONS)]
    if not isinstance(conditions, list):
        return [bad("status.conditions", conditions, "must be a list")]
    return []
