"""Small builders for wire-form DRA objects used by the allocator tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

DRIVER = "gpu.example.com"


def node(name: str, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    n: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}
    if spec:
        n["spec"] = spec
    return n


def device(name: str, attrs: dict[str, Any] | None = None, capacity: dict[str, Any] | None = None,
           **extra: Any) -> Obj:
    d: Obj = {"name": name}
    if attrs:
        d["attributes"] = {k: _attr(v) for k, v in attrs.items()}
    if capacity:
        d["capacity"] = {k: (v if isinstance(v, dict) else {"value": v}) for k, v in capacity.items()}
    d.update(extra)
    return d


def _attr(v: Any) -> Obj:
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    if isinstance(v, str) and v.startswith("v") and v[1:2].isdigit():
        return {"version": v[1:]}
    return {"string": v}


def rslice(name: str, devices: list[Obj], *, node_name: str | None = None, pool: str | None = None,
           driver: str = DRIVER, generation: int = 1, count: int = 1, **spec: Any) -> Obj:
    s: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "pool": {"name": pool or node_name or name, "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    }
    if node_name:
        s["spec"]["nodeName"] = node_name
    s["spec"].update(spec)
    if not devices:
        del s["spec"]["devices"]
    return s


def device_class(name: str = DRIVER, *exprs: str, config: list[Obj] | None = None) -> Obj:
    c: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
              "spec": {}}
    if exprs:
        c["spec"]["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    if config:
        c["spec"]["config"] = config
    return c


def exact(name: str, cls: str = DRIVER, count: int | None = None, *, mode: str | None = None,
          selectors: list[str] | None = None, **extra: Any) -> Obj:
    body: Obj = {"deviceClassName": cls}
    if mode:
        body["allocationMode"] = mode
    if count is not None:
        body["count"] = count
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    body.update(extra)
    return {"name": name, "exactly": body}


def first_available(name: str, *subs: Obj) -> Obj:
    return {"name": name, "firstAvailable": list(subs)}


def sub(name: str, cls: str = DRIVER, count: int | None = None, **extra: Any) -> Obj:
    s: Obj = {"name": name, "deviceClassName": cls}
    if count is not None:
        s["count"] = count
    s.update(extra)
    return s


def claim(name: str, *requests: Obj, namespace: str = "default", constraints: list[Obj] | None = None,
          config: list[Obj] | None = None, allocation: Obj | None = None, uid: str = "") -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    c: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"},
              "spec": {"devices": devices}}
    if allocation is not None:
        c["status"] = {"allocation": allocation}
    return c


def gpus(node_name: str, n: int, *, prefix: str = "gpu", attrs: Any = None, **kw: Any) -> Obj:
    """A node-local slice with ``n`` devices; ``attrs(i)`` gives each device's attributes."""
    devs = [device(f"{prefix}-{i}", attrs(i) if attrs else {"index": i}) for i in range(n)]
    return rslice(f"{node_name}-{prefix}", devs, node_name=node_name, **kw)


def names(alloc: Obj) -> list[str]:
    return [r["device"] for r in alloc["devices"]["results"]]
