"""The value rules of drasched's own CRDs (deploy/crds), as the API server's OpenAPI schema
validation words them (``minimum``); wrong JSON types belong to the decode layer."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.names import bad

Obj = dict[str, Any]


def _minimum(path: str, value: Any, low: int) -> list[Cause]:
    if isinstance(value, int) and not isinstance(value, bool) and value < low:
        return [bad(path, value, f"{path} in body should be greater than or equal to {low}")]
    return []


def validate_pod_group(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    causes = _minimum("spec.minMember", spec.get("minMember"), 1)
    claims = spec.get("resourceClaims")
    for i, rc in enumerate(claims if isinstance(claims, list) else []):
        if isinstance(rc, dict) and "name" not in rc:  # the CRD's `required: [name]`
            causes.append(Cause(f"spec.resourceClaims[{i}].name", "Required value", "FieldValueRequired"))
    return causes
