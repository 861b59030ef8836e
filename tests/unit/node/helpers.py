"""Builders shared by the node tests: a store with allocated claims, a mock GPU plugin."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.node.driver import ClaimRef
from drasched.node.gpu_driver import DRIVER_NAME, GpuDriver, MockGpuConfig
from drasched.node.plugin import KubeletPlugin
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]
NODE = "node-1"


def store_with_node(node: str = NODE) -> MemoryStore:
    store = MemoryStore(auto_namespaces=True)
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    return store


def result(device: str, request: str = "gpu", pool: str = NODE, driver: str = DRIVER_NAME, **extra: Any) -> Obj:
    return {"request": request, "driver": driver, "pool": pool, "device": device, **extra}


def add_claim(store: MemoryStore, name: str, results: list[Obj] | None, *, namespace: str = "default",
              config: list[Obj] | None = None) -> ClaimRef:
    """Create a claim whose requests match ``results``; allocate it unless ``results`` is None."""
    requests = sorted({r["request"].split("/", 1)[0] for r in results or [{"request": "gpu"}]})
    claim = store.create({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [
            {"name": r, "exactly": {"deviceClassName": DRIVER_NAME}} for r in requests]}},
    })
    if results is not None:
        claim["status"] = {"allocation": {"devices": {"results": results, **({"config": config} if config else {})}}}
        claim = store.update_status(claim)
    md = claim["metadata"]
    return ClaimRef(namespace=md["namespace"], uid=md["uid"], name=md["name"])


def gpu_plugin(store: MemoryStore, node: str = NODE, count: int = 2, **kwargs: Any) -> KubeletPlugin:
    plugin_kwargs = {k: kwargs.pop(k) for k in ("cdi_dir", "state_dir") if k in kwargs}
    driver = GpuDriver.mock(node, MockGpuConfig(count=count), **kwargs)
    return KubeletPlugin(store, driver, node, **plugin_kwargs)


def delete_claim(store: MemoryStore, ref: ClaimRef) -> None:
    store.delete(kinds.RESOURCE_CLAIM, ref.name, ref.namespace)
