"""resource.k8s.io kinds' rules, from pkg/apis/resource/validation/validation.go."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.names import bad, check_label, check_subdomain, required

Obj = dict[str, Any]


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
                causes.append(required(f"{path}.firstAvailable"))
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
        causes.append(bad(f"{path}.count", count, "must be greater than zero"))
    if count is not None and mode == "All":
        causes.append(Cause(f"{path}.count", "Invalid value: must not be specified when allocationMode is All"))
    for k, sel in enumerate(body.get("selectors") or []):
        expr = (sel.get("cel") or {}).get("expression")
        if not isinstance(expr, str) or not expr:
            causes.append(required(f"{path}.selectors[{k}].cel.expression"))
    return causes


def _validate_claim_spec(spec: Any, path: str) -> list[Cause]:
    if not isinstance(spec, dict):
        return [required(path)]
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
                causes.append(bad(f"{cpath}.requests[{j}]", r, "must be the name of a request in the claim "
                                                                "or the name of a request and a subrequest "
                                                                "separated by '/'"))
        if (con.get("matchAttribute") is None) == (con.get("distinctAttribute") is None):
            causes.append(Cause(cpath, "Required value: exactly one of `matchAttribute` or "
                                       "`distinctAttribute` is required", "FieldValueRequired"))
    return causes


def validate_claim(obj: Obj) -> list[Cause]:
    return _validate_claim_spec(obj.get("spec"), "spec")


def validate_claim_template(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    return _validate_claim_spec(spec.get("spec"), "spec.spec")


def validate_device_class(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    for k, sel in enumerate(spec.get("selectors") or []):
        expr = (sel.get("cel") or {}).get("expression")
        if not isinstance(expr, str) or not expr:
            causes.append(required(f"spec.selectors[{k}].cel.expression"))
    return causes


def validate_slice(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes = check_subdomain("spec.driver", spec.get("driver"))
    pool = spec.get("pool")
    if not isinstance(pool, dict):
        causes.append(required("spec.pool"))
    else:
        if not pool.get("name"):
            causes.append(required("spec.pool.name"))
        if not isinstance(pool.get("resourceSliceCount"), int) or pool["resourceSliceCount"] <= 0:
            causes.append(bad("spec.pool.resourceSliceCount", pool.get("resourceSliceCount"),
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
