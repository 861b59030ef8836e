"""Small helpers over wire-form objects (plain dicts)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


def meta(obj: Obj) -> dict[str, Any]:
    return obj.setdefault("metadata", {})


def name_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def namespace_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("namespace", "")


def key_of(obj: Obj) -> str:
    """``namespace/name`` for namespaced objects, ``name`` otherwise."""
    ns = namespace_of(obj)
    return f"{ns}/{name_of(obj)}" if ns else name_of(obj)


def uid_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("uid", "")








def format_time(dt: datetime) -> str:
    """RFC 3339 with second precision and a Z, as the API server writes metav1.Time."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))




def controller_uid(obj: Obj) -> str | None:
    """The uid of the object's controlling owner (the API allows one), or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
    return None


def owner_reference(owner: Obj, *, controller: bool = True, block_owner_deletion: bool | None = True) -> Obj:
    """An ownerReference pointing at ``owner`` (``block_owner_deletion`` None: the field left out)."""
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": controller,
    }
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    return ref


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: null deletes, objects merge, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def get_condition(obj: Obj, cond_type: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == cond_type:
            return c
    return None
