"""Object validation in the API server's words (field path + reason).

Only the rules drasched's own logic depends on, plus the shape checks a user most often
gets wrong; the real API server remains the authority in a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from drasched.api import kinds
from drasched.api.errors import Cause, Invalid, invalid
from drasched.api.kinds import ResourceType

Obj = dict[str, Any]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def _bad(field: str, value: Any, detail: str) -> Cause:
    return Cause(field, f"Invalid value: {_quote(value)}: {detail}")


def _required(field: str) -> Cause:
    return Cause(field, "Required value", "FieldValueRequired")


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def check_label(field: str, value: Any) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return [_required(field)]
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        return [_bad(field, value, LABEL_MSG)]
    return []


def check_subdomain(field: str, value: Any) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return [_required(field)]
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.match(value):
        return [_bad(field, value, SUBDOMAIN_MSG)]
    return []


def qualified_kind(rt: ResourceType) -> str:
    """``ResourceClaim.resource.k8s.io`` as the API server names a kind in errors."""
    return f"{rt.kind}.{rt.group}" if rt.group else rt.kind


def _validate_metadata(obj: Obj, rt: ResourceType) -> list[Cause]:
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return [_required("metadata")]
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


def _validate_pod(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not containers:
        causes.append(_required("spec.containers"))
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(group) or []):
            path = f"spec.{group}[{i}]"
            causes += check_label(f"{path}.name", c.get("name"))
            if c.get("name") in seen:
                causes.append(Cause(f"{path}.name", f'Duplicate value: "{c.get("name")}"', "FieldValueDuplicate"))
            seen.add(c.get("name"))
            if not c.get("image"):
                causes.append(_required(f"{path}.image"))
    for i, rc in enumerate(spec.get("resourceClaims") or []):
        path = f"spec.resourceClaims[{i}]"
        causes += check_label(f"{path}.name", rc.get("name"))
        has_claim, has_tmpl = bool(rc.get("resourceClaimName")), bool(rc.get("resourceClaimTemplateName"))
        if has_claim == has_tmpl:
            causes.append(Cause(path, "Invalid value: must specify one of: `resourceClaimName`, "
                                      "`resourceClaimTemplateName`"))
    return causes


def _validate_device_request(path: str, req: Obj, in_first_available: bool = False) -> list[Cause]:
    causes = check_label(f"{path}.name", req.get("name"))
    body: Obj
    if in_first_available:
        body = req
    else:
        exactly, first = req.get("exactly"), req.get("firstAvailable")
        if (exactly is None) == (first is None):
            return [*causes, Cause(path, "Required value: exactly one of `exactly` or `firstAvailable` "
                                         "is required", "FieldValueRequired")]
        if first is not None:
            if not first:
                causes.append(_required(f"{path}.firstAvailable"))
            for j, sub in enumerate(first):
                causes += _validate_device_request(f"{path}.firstAvailable[{j}]", sub, True)
            return causes
        body = exactly or {}
        path = f"{path}.exactly"
    causes += check_subdomain(f"{path}.deviceClassName", body.get("deviceClassName"))
    mode = body.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        causes.append(Cause(f"{path}.allocationMode", f'Unsupported value: "{mode}": supported values: '
                                                      '"All", "ExactCount"', "FieldValueNotSupported"))
    count = body.get("count")
    if count is not None and (not isinstance(count, int) or count <= 0):
        causes.append(_bad(f"{path}.count", count, "must be greater than zero"))
    if count is not None and mode == "All":
        causes.append(Cause(f"{path}.count", "Invalid value: must not be specified when allocationMode is All"))
    for k, sel in enumerate(body.get("selectors") or []):
        expr = (sel.get("cel") or {}).get("expression")
        if not isinstance(expr, str) or not expr:
            causes.append(_required(f"{path}.selectors[{k}].cel.expression"))
    return causes


def _validate_claim_spec(spec: Any, path: str) -> list[Cause]:
    if not isinstance(spec, dict):
        return [_required(path)]
    devices = spec.get("devices") or {}
    causes: list[Cause] = []
    names: set[str] = set()
    requests = devices.get("requests") or []
    for i, req in enumerate(requests):
        rpath = f"{path}.devices.requests[{i}]"
        causes += _validate_device_request(rpath, req)
        if req.get("name") in names:
            causes.append(Cause(f"{rpath}.name", f'Duplicate value: "{req.get("name")}"', "FieldValueDuplicate"))
        names.add(req.get("name"))
    if len(requests) > 32:
        causes.append(Cause(f"{path}.devices.requests", f"Too many: {len(requests)}: must have at most 32 items",
                            "FieldValueTooMany"))
    for i, con in enumerate(devices.get("constraints") or []):
        cpath = f"{path}.devices.constraints[{i}]"
        for j, r in enumerate(con.get("requests") or []):
            if r.split("/", 1)[0] not in names:
                causes.append(_bad(f"{cpath}.requests[{j}]", r, "must be the name of a request in the claim "
                                                                 "or the name of a request and a subrequest "
                                                                 "separated by '/'"))
        if (con.get("matchAttribute") is None) == (con.get("distinctAttribute") is None):
            causes.append(Cause(cpath, "Required value: exactly one of `matchAttribute` or "
                                       "`distinctAttribute` is required", "FieldValueRequired"))
    return causes


def _validate_claim(obj: Obj) -> list[Cause]:
    return _validate_claim_spec(obj.get("spec"), "spec")


def _validate_claim_template(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    return _validate_claim_spec(spec.get("spec"), "spec.spec")


def _validate_device_class(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    for k, sel in enumerate(spec.get("selectors") or []):
        expr = (sel.get("cel") or {}).get("expression")
        if not isinstance(expr, str) or not expr:
            causes.append(_required(f"spec.selectors[{k}].cel.expression"))
    return causes


def _validate_slice(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    causes = check_subdomain("spec.driver", spec.get("driver"))
    pool = spec.get("pool")
    if not isinstance(pool, dict):
        causes.append(_required("spec.pool"))
    else:
        if not pool.get("name"):
            causes.append(_required("spec.pool.name"))
        if not isinstance(pool.get("resourceSliceCount"), int) or pool["resourceSliceCount"] <= 0:
            causes.append(_bad("spec.pool.resourceSliceCount", pool.get("resourceSliceCount"),
                               "must be greater than zero"))
    chosen = [f for f in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.get(f)]
    if len(chosen) != 1:
        causes.append(Cause("spec", "Invalid value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                                    "`perDeviceNodeSelection` is required"))
    names: set[str] = set()
    for i, dev in enumerate(spec.get("devices") or []):
        causes += check_label(f"spec.devices[{i}].name", dev.get("name"))
        if dev.get("name") in names:
            causes.append(Cause(f"spec.devices[{i}].name", f'Duplicate value: "{dev.get("name")}"',
                                "FieldValueDuplicate"))
        names.add(dev.get("name"))
    devices = spec.get("devices") or []
    if devices and spec.get("sharedCounters"):
        causes.append(Cause("spec", "Invalid value: only one of `devices` and `sharedCounters` may be set "
                                    "in a ResourceSlice"))
    limit = 64 if any(d.get("taints") or d.get("consumesCounters") for d in devices) else 128
    if len(devices) > limit:
        causes.append(Cause("spec.devices", f"Too many: {len(devices)}: must have at most {limit} items"
                            + (" when devices use taints or consume counters" if limit == 64 else ""),
                            "FieldValueTooMany"))
    return causes


_BY_TYPE: dict[ResourceType, Callable[[Obj], list[Cause]]] = {
    kinds.POD: _validate_pod,
    kinds.RESOURCE_CLAIM: _validate_claim,
    kinds.RESOURCE_CLAIM_TEMPLATE: _validate_claim_template,
    kinds.DEVICE_CLASS: _validate_device_class,
    kinds.RESOURCE_SLICE: _validate_slice,
}


def validate(obj: Obj, rt: ResourceType) -> None:
    """Raise ``Invalid`` naming every bad field of ``obj``, as the API server would."""
    causes = _validate_metadata(obj, rt)
    extra = _BY_TYPE.get(rt)
    if extra is not None and isinstance(obj.get("spec"), dict | None):
        causes += extra(obj)
    elif extra is not None:
        causes.append(Cause("spec", "Invalid value: must be an object"))
    if causes:
        md = obj.get("metadata") or {}
        raise invalid(qualified_kind(rt), md.get("name") or md.get("generateName", ""), causes)


def validate_update(old: Obj, new: Obj, rt: ResourceType) -> None:
    """Rules that only apply to updates: immutable fields."""
    if rt is kinds.RESOURCE_CLAIM and old.get("spec") != new.get("spec"):
        raise invalid(qualified_kind(rt), old["metadata"]["name"],
                      [Cause("spec", "Invalid value: field is immutable")])
    if rt is kinds.POD:
        old_node = (old.get("spec") or {}).get("nodeName")
        if old_node and (new.get("spec") or {}).get("nodeName") != old_node:
            raise invalid(qualified_kind(rt), old["metadata"]["name"],
                          [Cause("spec", "Forbidden: pod updates may not change fields other than "
                                         "`spec.containers[*].image`, ...", "FieldValueForbidden")])


__all__ = ["Invalid", "check_label", "check_subdomain", "qualified_kind", "validate", "validate_update"]
