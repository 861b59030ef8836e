"""Builders mirroring upstream's allocator test table (``allocatortesting/allocator_testing.go``).

The names follow the Go helpers (``sliceWithOneDevice``, ``localNodeSelector``, ...) so a case
here can be compared with its upstream original line by line. Everything is wire form.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2, REQ3 = "req-0", "req-1", "req-2", "req-3"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
DEVICE0, DEVICE1, DEVICE2, DEVICE3, DEVICE4 = "device-0", "device-1", "device-2", "device-3", "device-4"
COUNTER_SET1, COUNTER_SET2 = "counter-set-1", "counter-set-2"
CAPACITY0, CAPACITY1 = "capacity-0", "capacity-1"
ALL = "nodeSelectionAll"
PER_DEVICE = "nodeSelectionPerDevice"
MAX = 32

TAINT_NONE = {"key": "taint-key", "value": "taint-value", "effect": "None"}
TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOL_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOL_NO_EXECUTE = {"operator": "Equal", "key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOL_NO_SCHEDULE_KEY1 = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}

INT_ATTR = f"{DRIVER_A}/numa"
VERSION_ATTR = f"{DRIVER_A}/driverVersion"
STRING_ATTR = f"{DRIVER_A}/stringAttribute"
BOOL_ATTR = f"{DRIVER_A}/boolAttribute"


def node(name: str = NODE1, region: str = REGION1) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"region": region, "planet": "earth"}},
    }


def cls(name: str, driver: str, *, multi: bool | None = None, config_attr: str | None = None) -> Obj:
    expr = f'device.driver == "{driver}"'
    if multi is not None:
        expr += f" && device.allowMultipleAllocations == {str(multi).lower()}"
    spec: Obj = {"selectors": [{"cel": {"expression": expr}}]}
    if config_attr:
        spec["config"] = [device_config(driver, config_attr)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def device_config(driver: str, attribute: str) -> Obj:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def cel(expr: str) -> Obj:
    return {"cel": {"expression": expr}}


def mem_at_least(q: str, driver: str = DRIVER_A) -> Obj:
    return cel(f'device.capacity["{driver}"].memory.compareTo(quantity("{q}")) >= 0')


def request(name: str, klass: str, count: int = 1, *selectors: Obj, mode: str = "ExactCount", **extra: Any) -> Obj:
    body: Obj = {"deviceClassName": klass, "allocationMode": mode}
    if mode == "ExactCount":
        body["count"] = count
    if selectors:
        body["selectors"] = list(selectors)
    body.update(extra)
    return {"name": name, "exactly": body}


def all_request(name: str, klass: str, *selectors: Obj, **extra: Any) -> Obj:
    return request(name, klass, 0, *selectors, mode="All", **extra)


def sub_request(name: str, klass: str, count: int = 1, *selectors: Obj, mode: str = "ExactCount", **extra: Any) -> Obj:
    s: Obj = {"name": name, "deviceClassName": klass, "allocationMode": mode}
    if mode == "ExactCount":
        s["count"] = count
    if selectors:
        s["selectors"] = list(selectors)
    s.update(extra)
    return s


def prioritized(name: str, *subs: Obj) -> Obj:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str, *requests: Obj, constraints: list[Obj] | None = None, config: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": devices},
    }


def claim_with_request(name: str, req: str, klass: str, *constraints: Obj) -> Obj:
    return claim(name, request(req, klass, 1), constraints=list(constraints) or None)


def with_tolerations(c: Obj, *tolerations: Obj) -> Obj:
    for r in c["spec"]["devices"]["requests"]:
        r["exactly"]["tolerations"] = list(tolerations)
    return c


def attrs(**values: Any) -> Obj:
    out: Obj = {}
    for k, v in values.items():
        if isinstance(v, bool):
            out[k] = {"bool": v}
        elif isinstance(v, int):
            out[k] = {"int": v}
        elif isinstance(v, tuple):  # ("version", "1.0.0")
            out[k] = {v[0]: v[1]}
        else:
            out[k] = {"string": v}
    return out


def version(v: str) -> tuple[str, str]:
    return ("version", v)


def device(name: str, capacity: dict[str, Any] | None = None, attributes: Obj | None = None, **extra: Any) -> Obj:
    d: Obj = {"name": name}
    if attributes is not None:
        d["attributes"] = attributes
    if capacity:
        d["capacity"] = {k: (v if isinstance(v, dict) else {"value": v}) for k, v in capacity.items()}
    d.update(extra)
    return d


def consumes(counter_set: str, **counters: str) -> Obj:
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}


def partition(name: str, *consumptions: Obj, from_counters: bool = True, **extra: Any) -> Obj:
    """``device(name, fromCounters, nil).withDeviceCounterConsumption(...)``: capacity mirrors the counters."""
    d = device(name, **extra)
    d["consumesCounters"] = list(consumptions)
    if from_counters:
        cap: Obj = {}
        for c in consumptions:
            for k, v in c["counters"].items():
                cap[k] = {"value": v["value"]}
        d["capacity"] = cap
    return d


def range_policy(value: Any, default: Any = "2", lo: Any = "2", step: Any = "2", hi: Any = "4") -> Obj:
    """``withCapacityRequestPolicyRange``: default 2, range (min 2, step 2, max 4)."""
    return {"value": value, "requestPolicy": {"default": default, "validRange": {"min": lo, "step": step, "max": hi}}}


def values_policy(value: Any, default: Any, *more: Any) -> Obj:
    """``withCapacityRequestPolicyValidValues``: the default is the smallest valid value."""
    return {"value": value, "requestPolicy": {"default": default, "validValues": [default, *more]}}


def counter_set(name: str, **counters: str) -> Obj:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def resource_pool(name: str, count: int, generation: int = 1) -> Obj:
    return {"name": name, "resourceSliceCount": count, "generation": generation}


def slice_(
    name: str, node_selection: Any, pool: Any, driver: str, *devices: Obj, counter_sets: list[Obj] | None = None
) -> Obj:
    rp = pool if isinstance(pool, dict) else resource_pool(pool, 1)
    spec: Obj = {"driver": driver, "pool": dict(rp)}
    if isinstance(node_selection, dict):
        spec["nodeSelector"] = node_selection
    elif node_selection == ALL:
        spec["allNodes"] = True
    elif node_selection == PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node_selection
    if devices:
        spec["devices"] = list(devices)
    if counter_sets:
        spec["sharedCounters"] = counter_sets
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def slice_one(name: str, node_selection: Any, pool: Any, driver: str) -> Obj:
    return slice_(name, node_selection, pool, driver, device(DEVICE1))


def slice_many(name: str, node_selection: Any, pool: Any, driver: str, count: int) -> Obj:
    return slice_(name, node_selection, pool, driver, *[device(f"device-{i}") for i in range(count)])


def counters_slice(name: str, node_selection: Any, pool: Any, driver: str, *sets: Obj) -> Obj:
    return slice_(name, node_selection, pool, driver, counter_sets=list(sets))


def label_selector(key: str, *values: str) -> Obj:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}


def local_selector(node_name: str = NODE1) -> Obj:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}


def result(
    req: str,
    driver: str,
    pool: str,
    dev: str,
    admin: bool = False,
    *tolerations: Obj,
    binding: tuple[list[str], list[str]] | None = None,
    share: bool = False,
    consumed: dict[str, str] | None = None,
) -> Obj:
    r: Obj = {"request": req, "driver": driver, "pool": pool, "device": dev}
    if admin:
        r["adminAccess"] = True
    if tolerations:
        r["tolerations"] = list(tolerations)
    if binding is not None:
        if binding[0]:
            r["bindingConditions"] = binding[0]
        if binding[1]:
            r["bindingFailureConditions"] = binding[1]
    if share:
        r["shareID"] = "SHARE"
    if consumed:
        r["consumedCapacity"] = consumed
    return r


def allocation(selector: Obj | None, *results: Obj, config: list[Obj] | None = None) -> Obj:
    a: Obj = {"devices": {"results": list(results)}}
    if config:
        a["devices"]["config"] = config
    if selector is not None:
        a["nodeSelector"] = selector
    return a


def in_use(*devices: tuple[str, str, str]) -> list[Obj]:
    """``allocatedDevices``: claims that hold these devices exclusively."""
    return [{"devices": {"results": [{"request": "r", "driver": d, "pool": p, "device": n}]}} for d, p, n in devices]


def capacity_in_use(dev: tuple[str, str, str], **consumed: str) -> list[Obj]:
    """``allocatedCapacityDevices``: a share of a multi-allocation device that consumed capacity."""
    d, p, n = dev
    return [
        {
            "devices": {
                "results": [
                    {
                        "request": "r",
                        "driver": d,
                        "pool": p,
                        "device": n,
                        "shareID": "taken",
                        "consumedCapacity": dict(consumed),
                    }
                ]
            }
        }
    ]
