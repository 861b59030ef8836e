"""Core (v1) kinds' rules, from pkg/apis/core/validation/validation.go."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.names import check_label, required

Obj = dict[str, Any]


def validate_pod(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not containers:
        causes.append(required("spec.containers"))
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(group) or []):
            path = f"spec.{group}[{i}]"
            causes += check_label(f"{path}.name", c.get("name"))
            if c.get("name") in seen:
                causes.append(Cause(f"{path}.name", f'Duplicate value: "{c.get("name")}"', "FieldValueDuplicate"))
            seen.add(c.get("name"))
            if not c.get("image"):
                causes.append(required(f"{path}.image"))
    for i, rc in enumerate(spec.get("resourceClaims") or []):
        path = f"spec.resourceClaims[{i}]"
        causes += check_label(f"{path}.name", rc.get("name"))
        has_claim, has_tmpl = bool(rc.get("resourceClaimName")), bool(rc.get("resourceClaimTemplateName"))
        if has_claim == has_tmpl:
            causes.append(Cause(path, "Invalid value: must specify one of: `resourceClaimName`, "
                                      "`resourceClaimTemplateName`"))
    return causes
