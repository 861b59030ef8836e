"""ResourceSlice rules, from pkg/apis/resource/validation/validation.go (v1.36.3): the driver,
pool and node selection of a slice, and each device's name, attributes, capacities and taints."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.devices import (
    check_binding_conditions,
    check_capacity_policy,
    check_counter_consumption,
    check_shared_counters,
)
from drasched.api.validation.names import (
    as_list,
    bad,
    check_driver_name,
    check_label,
    check_label_value,
    check_qualified_name,
    check_subdomain,
    dict_items,
    duplicate,
    not_supported,
    required,
    too_long,
    too_many,
)
from drasched.api.validation.node_selectors import check_node_selector
from drasched.api.validation.resource import TAINT_EFFECTS, check_pool_name, check_resource_qualified_name

Obj = dict[str, Any]

DEVICE_TAINTS_MAX = 16
ATTRIBUTES_AND_CAPACITIES_MAX = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
SLICE_MAX_DEVICES = 128
SLICE_MAX_DEVICES_ADVANCED = 64


def check_device_taint(path: str, taint: Obj) -> list[Cause]:
    causes = check_qualified_name(f"{path}.key", taint.get("key") or "")
    if taint.get("value"):
        causes += check_label_value(f"{path}.value", taint["value"])
    effect = taint.get("effect") or ""
    if not effect:
        causes.append(required(f"{path}.effect"))
    elif effect not in TAINT_EFFECTS:
        causes.append(not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return causes


def _check_attribute(path: str, attr: Any) -> list[Cause]:
    if not isinstance(attr, dict):
        return []
    set_fields = [f for f in ("bool", "int", "string", "version") if attr.get(f) is not None]
    causes: list[Cause] = []
    string = attr.get("string")
    if isinstance(string, str) and len(string) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        causes.append(too_long(f"{path}.string", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if len(set_fields) != 1:
        causes.append(bad(path, "" if not set_fields else attr, "exactly one value must be specified"))
    return causes


def _validate_device(path: str, dev: Obj, per_device_nodes: bool) -> list[Cause]:
    causes = check_label(f"{path}.name", dev.get("name"))
    attributes: Obj = dev["attributes"] if isinstance(dev.get("attributes"), dict) else {}
    capacity: Obj = dev["capacity"] if isinstance(dev.get("capacity"), dict) else {}
    total = len(attributes) + len(capacity)
    if total > ATTRIBUTES_AND_CAPACITIES_MAX:
        causes.append(bad(path, total, "the total number of attributes and capacities must not exceed "
                                       f"{ATTRIBUTES_AND_CAPACITIES_MAX}"))
    for name in sorted(attributes):
        causes += check_resource_qualified_name(f"{path}.attributes", name)
        causes += _check_attribute(f"{path}.attributes[{name}]", attributes[name])
    for name in sorted(capacity):
        causes += check_resource_qualified_name(f"{path}.capacity", name)
        causes += check_capacity_policy(f"{path}.capacity[{name}]", capacity[name],
                                        dev.get("allowMultipleAllocations") is True)
    causes += check_binding_conditions(path, dev)
    causes += check_counter_consumption(path, dev)
    taints = as_list(dev.get("taints"))
    if len(taints) > DEVICE_TAINTS_MAX:
        causes.append(too_many(f"{path}.taints", len(taints), DEVICE_TAINTS_MAX))
    else:
        for t, taint in dict_items(taints):
            causes += check_device_taint(f"{path}.taints[{t}]", taint)
    if per_device_nodes:
        return causes + _check_device_node_selection(path, dev)
    if any(dev.get(f) is not None for f in ("nodeName", "nodeSelector", "allNodes")):
        causes.append(bad(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                      "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
    return causes


def _check_device_node_selection(path: str, dev: Obj) -> list[Cause]:
    """``validateDevice`` under ``perDeviceNodeSelection: true``: exactly one of the device's
    ``nodeName`` (non-empty), ``nodeSelector`` or ``allNodes`` (true)."""
    causes: list[Cause] = []
    chosen: list[str] = []
    node_name = dev.get("nodeName")
    if node_name is not None:
        if node_name:
            chosen.append("`nodeName`")
            causes += check_subdomain(f"{path}.nodeName", node_name)
        else:
            causes.append(bad(f"{path}.nodeName", node_name, "must not be empty"))
    if dev.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
        causes += check_node_selector(dev["nodeSelector"], f"{path}.nodeSelector")
    if dev.get("allNodes") is not None:
        if dev["allNodes"] is True:
            chosen.append("`allNodes`")
        else:
            causes.append(bad(f"{path}.allNodes", dev["allNodes"], "must be either unset or set to true"))
    which = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
             "is set to true in the ResourceSlice spec")
    if not chosen:
        causes.append(Cause(path, f"Required value: {which}", "FieldValueRequired"))
    elif len(chosen) > 1:
        causes.append(bad(path, "{" + ", ".join(chosen) + "}", which))
    return causes


def _check_node_selection(spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    chosen: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name:
            chosen.append("`nodeName`")
            causes += check_subdomain("spec.nodeName", node_name)
        else:
            causes.append(bad("spec.nodeName", node_name, "must be either unset or set to a non-empty string"))
    if spec.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
        causes += check_node_selector(spec["nodeSelector"], "spec.nodeSelector")
        terms = as_list((spec["nodeSelector"] or {}).get("nodeSelectorTerms")
                      if isinstance(spec["nodeSelector"], dict) else None)
        if len(terms) != 1:
            causes.append(Cause("spec.nodeSelector.nodeSelectorTerms",
                                "Invalid value: must have exactly one node selector term"))
    for flag in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(flag) is not None:
            if spec[flag] is True:
                chosen.append(f"`{flag}`")
            else:
                causes.append(bad(f"spec.{flag}", spec[flag], "must be either unset or set to true"))
    which = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not chosen:
        causes.append(Cause("spec", f"Required value: {which}", "FieldValueRequired"))
    elif len(chosen) > 1:
        causes.append(bad("spec", "{" + ", ".join(chosen) + "}", f"{which}, but multiple fields are set"))
    return causes


def validate_slice(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes = check_driver_name("spec.driver", spec.get("driver"))
    pool = spec.get("pool")
    if not isinstance(pool, dict):
        causes.append(required("spec.pool"))
    else:
        causes += check_pool_name("spec.pool.name", pool.get("name"))
        count = pool.get("resourceSliceCount")
        if not isinstance(count, int) or count <= 0:
            causes.append(bad("spec.pool.resourceSliceCount", count if count is not None else 0,
                              "must be greater than zero"))
        generation = pool.get("generation")
        if isinstance(generation, int) and generation < 0:
            causes.append(bad("spec.pool.generation", generation, "must be greater than or equal to zero"))
    causes += _check_node_selection(spec)
    causes += check_shared_counters(spec)
    devices = as_list(spec.get("devices"))
    if spec.get("devices") is not None and spec.get("sharedCounters") is not None:
        causes.append(bad("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    advanced = any(isinstance(d, dict) and (d.get("taints") or d.get("consumesCounters")) for d in devices)
    limit = SLICE_MAX_DEVICES_ADVANCED if advanced else SLICE_MAX_DEVICES
    if len(devices) > limit:
        causes.append(too_many("spec.devices", len(devices), limit))
        return causes
    seen: set[Any] = set()
    for i, dev in dict_items(devices):
        causes += _validate_device(f"spec.devices[{i}]", dev, spec.get("perDeviceNodeSelection") is True)
        if dev.get("name") in seen:
            causes.append(duplicate(f"spec.devices[{i}]", dev.get("name")))
        seen.add(dev.get("name"))
    return causes
