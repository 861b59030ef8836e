"""Fields of a DRA object that its kind does not declare: almost always a typo.

``kubectl apply`` validates strictly by default and the API server then refuses an unknown
field (``strict decoding error: unknown field "spec.devices.requests[0].exactly.allocationmode"``);
without it the field is silently dropped, and a misspelt ``allocationMode: All`` quietly
becomes one device. drasched's views of the ``resource.k8s.io/v1`` kinds declare every
field of the 1.37 API, so a field outside them is reported (:func:`unknown_fields`), the way
the server's ``fieldValidation=Warn`` does. Other kinds' views are partial (drasched reads
only what scheduling needs from a Pod), so they are not checked, nor is ``metadata``
(``managedFields`` and the like are the server's).
"""

from __future__ import annotations

from typing import Any

from drasched.api.kinds import ResourceType
from drasched.api.shapes import Shape, shape_for

Obj = dict[str, Any]

CHECKED_GROUP_VERSION = ("resource.k8s.io", "v1")
"""Older versions are converted first; their shapes are not drasched's views."""
DECLARED_BUT_UNUSED = frozenset({"nodeAllocatableResourceMappings"})
"""Upstream fields (alpha) drasched neither reads nor refuses."""


def unknown_fields(obj: Obj, rt: ResourceType) -> list[str]:
    """The paths of the fields ``obj`` carries that its kind does not declare, in order."""
    if (rt.group, rt.version) != CHECKED_GROUP_VERSION:
        return []
    shape = shape_for(rt)
    if shape.type != "object":
        return []
    found: list[str] = []
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        sub = shape.fields.get(key)
        if sub is None:
            found.append(key)
        else:
            _walk(value, sub, key, found)
    return found


def _walk(value: Any, shape: Shape, path: str, found: list[str]) -> None:
    if shape.type == "object" and isinstance(value, dict):
        for key, sub_value in value.items():
            sub = shape.fields.get(key)
            if sub is None:
                if key not in DECLARED_BUT_UNUSED:
                    found.append(f"{path}.{key}")
            else:
                _walk(sub_value, sub, f"{path}.{key}", found)
    elif shape.type == "array" and isinstance(value, list) and shape.item is not None:
        for i, item in enumerate(value):
            _walk(item, shape.item, f"{path}[{i}]", found)
    elif shape.type == "map" and isinstance(value, dict) and shape.item is not None:
        for key, item in value.items():
            _walk(item, shape.item, f"{path}[{key}]", found)
