"""node.k8s.io RuntimeClass rules, from pkg/apis/node/validation/validation.go (``ValidateRuntimeClass``,
``ValidateRuntimeClassUpdate``), in kube-apiserver 1.37's words."""

from __future__ import annotations

import re
from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.core import INTEGER_RESOURCES, check_toleration
from drasched.api.validation.metadata import check_labels
from drasched.api.validation.names import (
    LABEL_REGEX_MSG,
    bad,
    dict_items,
    duplicate,
    forbidden,
    qualified_name_errors,
    required,
)
from drasched.api.validation.resource import is_extended_resource_name
from drasched.quantity import Quantity, QuantityError

Obj = dict[str, Any]

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
"""``helper.IsStandardContainerResourceName`` (hugepages-* besides)."""
STANDARD_RESOURCES = STANDARD_CONTAINER_RESOURCES | INTEGER_RESOURCES | frozenset({
    "requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "requests.storage"})
"""``helper.IsStandardResourceName``'s names (hugepages-* and requests.hugepages-* besides)."""


def validate_runtime_class(obj: Obj) -> list[Cause]:
    """``ValidateRuntimeClass``: the handler is a DNS label, the overhead passes the container
    resource rules (on ``overhead.limits[...]``, as upstream reuses them), the scheduling node
    selector is a label map and its tolerations pod tolerations, each at most once."""
    causes = _check_handler(obj.get("handler"))
    overhead = obj.get("overhead")
    if isinstance(overhead, dict) and isinstance(overhead.get("podFixed"), dict):
        causes += _check_overhead(overhead["podFixed"])
    scheduling = obj.get("scheduling")
    if isinstance(scheduling, dict):
        causes += _check_scheduling(scheduling)
    return causes


def validate_runtime_class_update(old: Obj, new: Obj) -> list[Cause]:
    """``ValidateRuntimeClassUpdate``: the handler is immutable (1.37 prints no value)."""
    if (new.get("handler") or "") != (old.get("handler") or ""):
        return [Cause("handler", "Invalid value: null: field is immutable")]
    return []


def _check_handler(handler: Any) -> list[Cause]:
    """``NameIsDNSLabel``: length in bytes, then the label pattern, "must not contain dots" for a
    name that would be a subdomain."""
    if not isinstance(handler, str) or not handler:
        return [required("handler")]
    causes = [bad("handler", handler, "must be no more than 63 bytes")] if len(handler.encode()) > 63 else []
    if not _LABEL.match(handler):
        detail = "must not contain dots" if _SUBDOMAIN.match(handler) else LABEL_REGEX_MSG
        causes.append(bad("handler", handler, detail))
    return causes


def _check_overhead(pod_fixed: Obj) -> list[Cause]:
    """``validateOverhead`` = ``ValidateResourceRequirements`` of ``{limits: podFixed}``: the
    container resource names (``validateContainerResourceName``), non-negative quantities, whole
    ones for integer resources, hugepages only beside cpu or memory. Sorted by name (Go's map
    order is random)."""
    causes: list[Cause] = []
    for name in sorted(pod_fixed):
        path = f"overhead.limits[{name}]"
        causes += _check_container_resource_name(path, name)
        q = _quantity(pod_fixed[name])
        if q is None:
            continue
        if q.sign() < 0:
            causes.append(bad(path, str(q), "must be greater than or equal to 0"))
        if (name in INTEGER_RESOURCES or is_extended_resource_name(name)) and q.milli_value() % 1000:
            causes.append(bad(path, str(q), "must be an integer"))
    hugepages = any(n.startswith("hugepages-") for n in pod_fixed)
    if hugepages and not {"cpu", "memory"} & set(pod_fixed):
        causes.append(forbidden("overhead", "HugePages require cpu or memory"))
    return causes


def _check_container_resource_name(path: str, name: str) -> list[Cause]:
    """``validateContainerResourceName`` after ``validateResourceName``."""
    errors = qualified_name_errors(name)
    if errors:
        causes = [bad(path, name, msg) for msg in errors]
    elif "/" not in name and name not in STANDARD_RESOURCES and not name.startswith(("hugepages-",
                                                                                     "requests.hugepages-")):
        causes = [bad(path, name, "must be a standard resource type or fully qualified")]
    else:
        causes = []
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            causes.append(bad(path, name, "must be a standard resource for containers"))
    elif not _native(name) and not is_extended_resource_name(name):
        causes.append(bad(path, name, "doesn't follow extended resource name standard"))
    return causes


def _native(name: str) -> bool:
    """``helper.IsNativeResource``: no domain, or one in kubernetes.io."""
    return "/" not in name or "kubernetes.io/" in name


def _check_scheduling(scheduling: Obj) -> list[Cause]:
    """``validateScheduling``: ``ValidateLabels`` on the node selector; ``ValidateTolerations``
    and no two tolerations alike in key, operator, value and effect (the later one is named,
    printed as the Go struct)."""
    causes: list[Cause] = []
    selector = scheduling.get("nodeSelector")
    if isinstance(selector, dict):
        causes += check_labels(selector, "scheduling.nodeSelector")
    seen: set[tuple[str, str, str, str]] = set()
    for i, tol in dict_items(scheduling.get("tolerations")):
        path = f"scheduling.tolerations[{i}]"
        causes += check_toleration(path, tol)
        key = (tol.get("key") or "", tol.get("operator") or "", tol.get("value") or "", tol.get("effect") or "")
        if key in seen:
            causes.append(duplicate(path, {"Key": key[0], "Operator": key[1], "Value": key[2], "Effect": key[3],
                                           "TolerationSeconds": tol.get("tolerationSeconds")}))
        seen.add(key)
    return causes


def _quantity(value: Any) -> Quantity | None:
    try:
        return Quantity.parse(value) if isinstance(value, str | int | float) else None
    except QuantityError:
        return None
