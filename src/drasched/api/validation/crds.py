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
    return _minimum("spec.minMember", spec.get("minMember"), 1)
