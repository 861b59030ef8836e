"""resource.k8s.io claims, claim templates and device classes, from
pkg/apis/resource/validation/validation.go (v1.36.3); ResourceSlices are in ``slices``."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.resource import DeviceRequest, DeviceSubRequest
from drasched.api.validation.gojson import go_ordered
from drasched.api.validation.metadata import check_template_metadata
from drasched.api.validation.names import (
    as_list,
    bad,
    check_c_identifier,
    check_driver_name,
    check_label,
    check_label_value,
    check_qualified_name,
    check_subdomain,
    dict_items,
    duplicate,
    not_supported,
    qualified_name_errors,
    required,
    too_long,
    too_many,
)
from drasched.api.validation.node_selectors import check_node_selector
from drasched.cel.validate import selector_errors

Obj = dict[str, Any]

# Limits from pkg/apis/resource/types.go.
DEVICE_REQUESTS_MAX = 32
DEVICE_SELECTORS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
FIRST_AVAILABLE_MAX = 8
RESERVED_FOR_MAX = 256
ALLOCATION_RESULTS_MAX = 32
POOL_NAME_MAX = 253
DEVICE_MAX_ID_LENGTH = 32

TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]
TOLERATION_OPERATORS = ["Equal", "Exists"]
REQUEST_REF_MSG = ("must be the name of a request in the claim or the name of a request and a subrequest "
                   "separated by '/'")


def check_pool_name(field: str, name: Any) -> list[Cause]:
    if not isinstance(name, str) or not name:
        return [required(field)]
    causes = [too_long(field, POOL_NAME_MAX)] if len(name) > POOL_NAME_MAX else []
    for part in name.split("/"):
        causes += check_subdomain(field, part) if part else [required(field)]
    return causes


def check_resource_qualified_name(field: str, name: str) -> list[Cause]:
    """An attribute or capacity name: a C identifier, optionally prefixed by a domain and '/'."""
    parts = name.split("/")
    if len(parts) == 1:
        return check_c_identifier(field, parts[0], DEVICE_MAX_ID_LENGTH)
    if len(parts) > 2:
        return [bad(field, name, "must not contain more than one slash")]
    domain, ident = parts
    causes = [bad(field, "", "the domain must not be empty")] if not domain else check_driver_name(field, domain)
    causes += [bad(field, "", "the name must not be empty")] if not ident else check_c_identifier(
        field, ident, DEVICE_MAX_ID_LENGTH)
    return causes


def _check_fully_qualified_name(field: str, name: Any) -> list[Cause]:
    if not isinstance(name, str):
        return [required(field)]
    causes = check_resource_qualified_name(field, name)
    if "/" not in name:
        causes.append(bad(field, name, "a fully qualified name must be a domain and a name separated by a slash"))
    return causes


def check_device_toleration(path: str, tol: Obj) -> list[Cause]:
    causes: list[Cause] = []
    # the operator defaults to Equal before the API server validates
    key, value, op = tol.get("key") or "", tol.get("value") or "", tol.get("operator") or "Equal"
    if key:
        causes += check_qualified_name(f"{path}.key", key)
    if op == "Exists":
        if value:
            causes.append(bad(f"{path}.value", value, "must be empty for operator `Exists`"))
    elif op == "Equal":
        causes += check_label_value(f"{path}.value", value)
    else:
        causes.append(not_supported(f"{path}.operator", op, TOLERATION_OPERATORS))
    effect = tol.get("effect") or ""
    if effect and effect not in TAINT_EFFECTS:
        causes.append(not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return causes


def _check_selectors(path: str, selectors: Any) -> list[Cause]:
    selectors = as_list(selectors)
    if len(selectors) > DEVICE_SELECTORS_MAX:
        return [too_many(path, len(selectors), DEVICE_SELECTORS_MAX)]
    causes: list[Cause] = []
    for k, sel in dict_items(selectors):
        cel = sel.get("cel")
        if not isinstance(cel, dict):
            causes.append(required(f"{path}[{k}].cel"))
            continue
        expr = cel.get("expression")
        if not isinstance(expr, str) or not expr:
            causes.append(required(f"{path}[{k}].cel.expression"))
            continue
        # compiled with the DRA environment, as the API server does (length, syntax, types, cost)
        causes += [Cause(f"{path}[{k}].cel.expression", e.message, e.reason) for e in selector_errors(expr)]
    return causes


def _check_request_body(path: str, body: Obj) -> list[Cause]:
    """What ``exactly`` and a ``firstAvailable`` entry share: class, selectors, mode, tolerations."""
    causes = check_subdomain(f"{path}.deviceClassName", body.get("deviceClassName"))
    causes += _check_selectors(f"{path}.selectors", body.get("selectors"))
    mode = body.get("allocationMode") or "ExactCount"  # empty is unset on the wire: defaulted
    count = body.get("count")
    if mode == "All":
        if count:
            causes.append(bad(f"{path}.count", count, "must not be specified when allocationMode is 'All'"))
    elif mode == "ExactCount":
        # an absent count (or 0, the same on the wire) defaults to 1 before the API server validates
        if count is not None and (not isinstance(count, int) or count < 0):
            causes.append(bad(f"{path}.count", count, "must be greater than zero"))
    else:
        causes.append(not_supported(f"{path}.allocationMode", mode, ["All", "ExactCount"]))
    # no limit on their number: v1.36's handwritten validation has none (the +k8s:maxItems=16 tag
    # of the v1 type is declarative only, not enforced)
    for t, tol in dict_items(body.get("tolerations")):
        causes += check_device_toleration(f"{path}.tolerations[{t}]", tol)
    return causes


def _validate_device_request(path: str, req: Obj) -> list[Cause]:
    causes = check_label(f"{path}.name", req.get("name"))
    exactly, first = req.get("exactly"), req.get("firstAvailable")
    if exactly is not None and first:
        return [*causes, bad(path, None, "exactly one of `exactly` or `firstAvailable` is required, "
                                         "but multiple fields are set")]
    if first:
        first = as_list(first)
        if len(first) > FIRST_AVAILABLE_MAX:
            return [*causes, too_many(f"{path}.firstAvailable", len(first), FIRST_AVAILABLE_MAX)]
        seen: set[Any] = set()
        for j, sub in dict_items(first):
            spath = f"{path}.firstAvailable[{j}]"
            causes += check_label(f"{spath}.name", sub.get("name"))
            causes += _check_request_body(spath, sub)
            if sub.get("name") in seen:  # 1.37: +k8s:unique=map, the whole subrequest
                causes.append(duplicate(spath, go_ordered(sub, DeviceSubRequest)))
            seen.add(sub.get("name"))
        return causes
    if not isinstance(exactly, dict):
        return [*causes, Cause(path, "Required value: exactly one of `exactly` or `firstAvailable` "
                                     "is required", "FieldValueRequired")]
    return causes + _check_request_body(f"{path}.exactly", exactly)


def _request_names(requests: list[Any]) -> dict[str, set[Any]]:
    names: dict[str, set[Any]] = {}
    for _, req in dict_items(requests):
        if isinstance(req.get("name"), str):
            names[req["name"]] = {s.get("name") for _, s in dict_items(req.get("firstAvailable"))}
    return names


def _check_request_ref(field: str, ref: Any, names: dict[str, set[Any]]) -> list[Cause]:
    if not isinstance(ref, str):
        return [bad(field, ref, REQUEST_REF_MSG)]
    segments = ref.split("/")
    if len(segments) > 2:
        return [bad(field, ref, REQUEST_REF_MSG)]
    causes: list[Cause] = []
    for seg in segments:
        causes += check_label(field, seg)
    known = segments[0] in names and (len(segments) == 1 or segments[1] in names[segments[0]])
    if not known:
        causes.append(bad(field, ref, REQUEST_REF_MSG))
    return causes


def _check_request_refs(path: str, refs: Any, names: dict[str, set[Any]]) -> list[Cause]:
    refs = as_list(refs)
    if len(refs) > DEVICE_REQUESTS_MAX:
        return [too_many(path, len(refs), DEVICE_REQUESTS_MAX)]
    causes: list[Cause] = []
    seen: set[Any] = set()
    for j, ref in enumerate(refs):
        causes += _check_request_ref(f"{path}[{j}]", ref, names)
        if isinstance(ref, str) and ref in seen:
            causes.append(duplicate(f"{path}[{j}]", ref))
        seen.add(ref if isinstance(ref, str) else None)
    return causes


def _check_opaque_config(path: str, config: Obj) -> list[Cause]:
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        return [required(f"{path}.opaque")]
    causes = check_driver_name(f"{path}.opaque.driver", opaque.get("driver"), covered=True)
    params = opaque.get("parameters")
    if params is None:
        causes.append(required(f"{path}.opaque.parameters"))
    elif not isinstance(params, dict):
        causes.append(bad(f"{path}.opaque.parameters", "<value omitted>", "must be a valid JSON object"))
    return causes


def _validate_claim_spec(spec: Any, path: str) -> list[Cause]:
    if not isinstance(spec, dict):
        return [required(path)]
    devices = spec.get("devices") or {}
    if not isinstance(devices, dict):
        return [required(f"{path}.devices")]
    causes: list[Cause] = []
    requests = as_list(devices.get("requests"))
    if len(requests) > DEVICE_REQUESTS_MAX:
        causes.append(too_many(f"{path}.devices.requests", len(requests), DEVICE_REQUESTS_MAX))
    else:
        seen: set[Any] = set()
        for i, req in dict_items(requests):
            rpath = f"{path}.devices.requests[{i}]"
            causes += _validate_device_request(rpath, req)
            if req.get("name") in seen:  # 1.37: +k8s:unique=map, the whole request
                causes.append(duplicate(rpath, go_ordered(req, DeviceRequest)))
            seen.add(req.get("name"))
    names = _request_names(requests)
    constraints = as_list(devices.get("constraints"))
    if len(constraints) > DEVICE_CONSTRAINTS_MAX:
        causes.append(too_many(f"{path}.devices.constraints", len(constraints), DEVICE_CONSTRAINTS_MAX))
    else:
        for i, con in dict_items(constraints):
            cpath = f"{path}.devices.constraints[{i}]"
            causes += _check_request_refs(f"{cpath}.requests", con.get("requests"), names)
            if con.get("matchAttribute") is not None:
                causes += _check_fully_qualified_name(f"{cpath}.matchAttribute", con["matchAttribute"])
            elif con.get("distinctAttribute") is not None:
                causes += _check_fully_qualified_name(f"{cpath}.distinctAttribute", con["distinctAttribute"])
            else:
                causes.append(Cause(cpath, "Required value: exactly one of \"matchAttribute\" or "
                                           "\"distinctAttribute\" is required, but multiple fields are set",
                                    "FieldValueRequired"))
    configs = as_list(devices.get("config"))
    if len(configs) > DEVICE_CONFIG_MAX:
        causes.append(too_many(f"{path}.devices.config", len(configs), DEVICE_CONFIG_MAX))
    else:
        for i, config in dict_items(configs):
            cfg_path = f"{path}.devices.config[{i}]"
            causes += _check_request_refs(f"{cfg_path}.requests", config.get("requests"), names)
            causes += _check_opaque_config(cfg_path, config)
    return causes


def validate_claim(obj: Obj) -> list[Cause]:
    # an absent spec is Go's zero spec: no requests, which upstream accepts
    return _validate_claim_spec(obj.get("spec") or {}, "spec")


def validate_claim_status(obj: Obj) -> list[Cause]:
    """The status subresource's rules: reservedFor entries and their limit."""
    status = obj.get("status")
    if not isinstance(status, dict):
        return []
    reserved = as_list(status.get("reservedFor"))
    if len(reserved) > RESERVED_FOR_MAX:
        return [too_many("status.reservedFor", len(reserved), RESERVED_FOR_MAX)]
    causes: list[Cause] = []
    seen: set[Any] = set()
    for i, ref in dict_items(reserved):
        for key in ("resource", "name", "uid"):
            if not ref.get(key):
                causes.append(required(f"status.reservedFor[{i}].{key}"))
        if ref.get("uid") and ref["uid"] in seen:
            causes.append(duplicate(f"status.reservedFor[{i}]", ref["uid"]))
        seen.add(ref.get("uid"))
    if reserved and not status.get("allocation"):
        causes.append(Cause("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set",
                            "FieldValueForbidden"))
    spec: Any = obj.get("spec")
    devices: Any = spec.get("devices") if isinstance(spec, dict) else None
    requests = as_list(devices.get("requests")) if isinstance(devices, dict) else []
    return causes + _check_allocation(status.get("allocation"), _request_names(requests))


def validate_claim_status_update(old: Obj, new: Obj) -> list[Cause]:
    """``status.allocation`` is ``+k8s:update=NoModify`` (1.37, k8s.io/api resource/v1): once set
    it may be written back unchanged or cleared, never changed (apimachinery
    ``validate.UpdatePointer``, which reports the field with a null value)."""
    before = (old.get("status") or {}).get("allocation")
    after = (new.get("status") or {}).get("allocation") if isinstance(new.get("status"), dict) else None
    if before and after and before != after:
        return [Cause("status.allocation", "Invalid value: null: field cannot be modified once set")]
    return []


def _check_allocation(allocation: Any, names: dict[str, set[Any]]) -> list[Cause]:
    """``validateAllocationResult``: each result names a request of the claim and a well-formed device."""
    if not isinstance(allocation, dict) or not isinstance(allocation.get("devices"), dict):
        return []
    path = "status.allocation.devices"
    results = as_list(allocation["devices"].get("results"))
    if len(results) > ALLOCATION_RESULTS_MAX:
        return [too_many(f"{path}.results", len(results), ALLOCATION_RESULTS_MAX)]
    causes: list[Cause] = []
    for i, result in dict_items(results):
        rpath = f"{path}.results[{i}]"
        causes += _check_request_ref(f"{rpath}.request", result.get("request"), names)
        causes += check_driver_name(f"{rpath}.driver", result.get("driver"), covered=True)
        causes += check_pool_name(f"{rpath}.pool", result.get("pool"))
        causes += check_label(f"{rpath}.device", result.get("device"))
    causes += check_node_selector(allocation.get("nodeSelector"), "status.allocation.nodeSelector")
    for i, config in dict_items(allocation["devices"].get("config")):
        source = config.get("source")
        if not source:
            causes.append(required(f"{path}.config[{i}].source"))
        elif source not in ("FromClass", "FromClaim"):
            causes.append(not_supported(f"{path}.config[{i}].source", source, ["FromClaim", "FromClass"]))
    return causes


def validate_claim_template(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes = check_template_metadata(spec.get("metadata"), "spec.metadata")
    return causes + _validate_claim_spec(spec.get("spec") or {}, "spec.spec")


def validate_device_class(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes = _check_selectors("spec.selectors", spec.get("selectors"))
    configs = as_list(spec.get("config"))
    if len(configs) > DEVICE_CONFIG_MAX:
        causes.append(too_many("spec.config", len(configs), DEVICE_CONFIG_MAX))
    else:
        for i, config in dict_items(configs):
            causes += _check_opaque_config(f"spec.config[{i}]", config)
    name = spec.get("extendedResourceName")
    if isinstance(name, str):
        causes += [bad("spec.extendedResourceName", name, m) for m in extended_resource_name_errors(name)]
    return causes


def extended_resource_name_errors(name: str) -> list[str]:
    """The declarative ``k8s-extended-resource-name`` format (apimachinery ``validate.ExtendedResourceName``,
    1.37), in its order and words."""
    errors = []
    if "/" not in name:
        errors.append("a name must be a domain-prefixed path, such as 'example.com/my-prop'")
    elif "kubernetes.io/" in name:
        errors.append('must not have "kubernetes.io/" domain')
    if name.startswith("requests."):
        errors.append('must not have "requests." prefix')
    return errors + qualified_name_errors(f"requests.{name}")


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: outside kubernetes.io, qualified once ``requests.`` is prepended."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and not qualified_name_errors(f"requests.{name}")
