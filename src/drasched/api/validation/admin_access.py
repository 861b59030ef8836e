"""Admin access to devices needs a labelled namespace (pkg/registry/resource/utils.go): checked
by the claim and claim-template strategies against the namespace, so the store calls it."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import Cause
from drasched.api.kinds import ResourceType
from drasched.api.validation.names import forbidden

Obj = dict[str, Any]

ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
_DETAIL = f"admin access to devices requires the `{ADMIN_NAMESPACE_LABEL}: true` label on the containing namespace"


def _requests(obj: Obj, rt: ResourceType) -> list[Any]:
    spec: Any = obj.get("spec")
    if rt is kinds.RESOURCE_CLAIM_TEMPLATE and isinstance(spec, dict):
        spec = spec.get("spec")
    devices: Any = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    return requests if isinstance(requests, list) else []


def _granted(namespace: Obj | None) -> bool:
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(ADMIN_NAMESPACE_LABEL) == "true"


def admin_access_causes(obj: Obj, rt: ResourceType, namespace: Obj | None) -> list[Cause]:
    """``AuthorizedForAdmin`` on create: the first request asking ``exactly.adminAccess``
    (the path is upstream's, ``spec.devices.requests[i].adminAccess``, for templates too)."""
    if rt not in (kinds.RESOURCE_CLAIM, kinds.RESOURCE_CLAIM_TEMPLATE):
        return []
    for i, req in enumerate(_requests(obj, rt)):
        exactly = req.get("exactly") if isinstance(req, dict) else None
        if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            return [] if _granted(namespace) else [forbidden(f"spec.devices.requests[{i}].adminAccess", _DETAIL)]
    return []


def admin_access_status_causes(new: Obj, old: Obj, namespace: Obj | None) -> list[Cause]:
    """``AuthorizedForAdminStatus``: a new allocation granting admin access needs the label too."""
    def first_admin(claim: Obj) -> int | None:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or []
        return next((i for i, r in enumerate(results) if isinstance(r, dict) and r.get("adminAccess") is True), None)

    if first_admin(old) is not None:
        return []
    index = first_admin(new)
    if index is None or _granted(namespace):
        return []
    return [forbidden(f"status.allocation.devices.results[{index}].adminAccess", _DETAIL)]
