"""scheduling.k8s.io PriorityClass rules, from pkg/apis/scheduling/validation/validation.go."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.core import PREEMPTION_POLICIES
from drasched.api.validation.names import forbidden, not_supported, required

Obj = dict[str, Any]

SYSTEM_PREFIX = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
"""The two built-in classes (``scheduling.SystemPriorityClasses``), name to value."""


def _system_class_error(name: str, value: Any, global_default: Any) -> str | None:
    """``scheduling.IsKnownSystemPriorityClass``: the name, value and default must all match."""
    if name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_PRIORITY_CLASSES[name]:
        return f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
    if bool(global_default):
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def validate_priority_class(obj: Obj) -> list[Cause]:
    name = (obj.get("metadata") or {}).get("name") or ""
    value = obj.get("value", 0)
    causes: list[Cause] = []
    if isinstance(name, str) and name.startswith(SYSTEM_PREFIX):
        err = _system_class_error(name, value, obj.get("globalDefault"))
        if err is not None:
            causes.append(forbidden("metadata.name", f"priority class names with '{SYSTEM_PREFIX}' prefix are "
                                                     f"reserved for system use only. error: {err}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(forbidden("value", "maximum allowed value of a user defined priority is "
                                         f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy is not None:
        if policy == "":
            causes.append(required("preemptionPolicy"))
        elif policy not in PREEMPTION_POLICIES:
            causes.append(not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    return causes
