"""ObjectMeta rules (apimachinery's ValidateObjectMeta) shared by every kind."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import Cause
from drasched.api.kinds import ResourceType
from drasched.api.validation.names import check_label, check_subdomain, required

Obj = dict[str, Any]


def validate_metadata(obj: Obj, rt: ResourceType) -> list[Cause]:
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return [required("metadata")]
    causes: list[Cause] = []
    name = md.get("name")
    if name is None and not md.get("generateName"):
        causes.append(Cause("metadata.name", "Required value: name or generateName is required",
                            "FieldValueRequired"))
    elif name is not None:
        checker = check_label if rt in (kinds.NAMESPACE,) else check_subdomain
        causes += checker("metadata.name", name)
    for field in ("labels", "annotations"):
        value = md.get(field)
        if value is not None and (
            not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
        ):
            causes.append(Cause(f"metadata.{field}", "Invalid value: values must be strings"))
    if rt.namespaced and md.get("namespace") is not None:
        causes += check_label("metadata.namespace", md.get("namespace"))
    return causes
