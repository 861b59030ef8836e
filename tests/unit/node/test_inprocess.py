"""The in-process kubelet DRA manager the simulated kubelet calls."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from drasched.api import kinds
from drasched.node.client import register
from drasched.node.gpu_driver import DRIVER_NAME, GpuDriver, MockGpuConfig
from drasched.node.inprocess import (
    DriverRegistry,
    prepare_in_process,
    start_driver,
    stop_driver,
    unprepare_in_process,
)
from drasched.node.server import PluginServer
from drasched.store.memory import MemoryStore

from .helpers import NODE, add_claim, gpu_plugin, result, store_with_node


def _pod(store: MemoryStore, name: str, claim_names: list[str], node: str = NODE) -> dict[str, Any]:
    store.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x"}],
                 "resourceClaims": [{"name": f"r{i}", "resourceClaimName": n} for i, n in enumerate(claim_names)]},
    })
    store.bind("default", name, node)
    return store.get(kinds.POD, name, "default")


def test_pods_sharing_a_claim_unprepare_it_with_the_last_one() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store)
    registry = DriverRegistry()
    registry.register(NODE, plugin)
    shared = add_claim(store, "shared", [result("gpu-0")])
    p1 = _pod(store, "p1", ["shared"])
    p2 = _pod(store, "p2", ["shared"])
    assert prepare_in_process(store, registry, p1) is None
    assert prepare_in_process(store, registry, p2) is None
    prepared = registry.prepared(NODE, shared.uid)
    assert prepared is not None and prepared[DRIVER_NAME].devices[0].device_name == "gpu-0"
    assert registry.pods_using(NODE, shared.uid) == {p1["metadata"]["uid"], p2["metadata"]["uid"]}
    assert unprepare_in_process(store, registry, p1) is None
    assert shared.uid in plugin.prepared_claims()  # p2 still runs with it
    assert unprepare_in_process(store, registry, p2) is None
    assert plugin.prepared_claims() == {}
    assert registry.prepared(NODE, shared.uid) is None


def test_errors_name_the_claim_and_the_driver() -> None:
    store = store_with_node()
    registry = DriverRegistry()
    plugin = gpu_plugin(store)
    registry.register(NODE, plugin)
    add_claim(store, "taken", [result("gpu-0")])
    add_claim(store, "clash", [result("gpu-0")])
    add_claim(store, "pending", None)
    add_claim(store, "nic", [result("nic-0", driver="net.example.com")])
    holder = _pod(store, "holder", ["taken"])
    assert prepare_in_process(store, registry, holder) is None
    loser = _pod(store, "loser", ["clash", "pending", "nic", "gone"])
    err = prepare_in_process(store, registry, loser)
    assert err is not None
    assert "ResourceClaim default/gone not found" in err
    assert "ResourceClaim default/pending is not allocated" in err
    assert "ResourceClaim default/nic: DRA driver net.example.com is not registered on node node-1" in err
    assert "ResourceClaim default/clash: driver gpu.drasched.io: ResourceClaim default/clash: device " \
           "node-1/gpu-0 is already prepared for ResourceClaim default/taken" in err
    # Hand-written slices of drivers nobody runs: the simulation may choose to skip them.
    nic_only = _pod(store, "nic-only", ["nic"])
    assert prepare_in_process(store, registry, nic_only, ignore_unregistered_drivers=True) is None
    # Unpreparing the failed pod leaves the holder's claim alone.
    assert unprepare_in_process(store, registry, loser) is None
    taken = registry.prepared(NODE, _claim_uid(store, "taken"))
    assert taken is not None and taken[DRIVER_NAME].devices[0].device_name == "gpu-0"
    assert _claim_uid(store, "taken") in plugin.prepared_claims()


def _claim_uid(store: MemoryStore, name: str) -> str:
    return str(store.get(kinds.RESOURCE_CLAIM, name, "default")["metadata"]["uid"])


def test_claims_can_be_passed_explicitly_and_deleted_claims_still_unprepare() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store)
    registry = DriverRegistry()
    registry.register(NODE, plugin)
    ref = add_claim(store, "c", [result("gpu-1")])
    claim = store.get(kinds.RESOURCE_CLAIM, "c", "default")
    pod = _pod(store, "p", [])
    assert prepare_in_process(store, registry, pod, [claim]) is None
    store.delete(kinds.RESOURCE_CLAIM, "c", "default")
    assert unprepare_in_process(store, registry, pod) is None  # found by the pod, not by the store
    assert ref.uid not in plugin.prepared_claims()


def test_unbound_pod_is_refused() -> None:
    store = store_with_node()
    assert prepare_in_process(store, DriverRegistry(), {"metadata": {"name": "p"}, "spec": {}}) == \
        "pod is not bound to a node"


def test_the_same_calls_over_a_real_socket() -> None:
    short = Path(tempfile.mkdtemp(prefix="drs-", dir="/tmp"))
    try:
        store = store_with_node()
        plugin = gpu_plugin(store)
        ref = add_claim(store, "c", [result("gpu-0")])
        pod = _pod(store, "p", ["c"])
        with PluginServer(plugin, registry_dir=short / "r", plugin_dir=short / "p") as server, \
                register(server.registration_socket) as client:
            registry = DriverRegistry()
            registry.register(NODE, client)
            assert prepare_in_process(store, registry, pod) is None
            assert ref.uid in plugin.prepared_claims()
            assert unprepare_in_process(store, registry, pod) is None
            assert plugin.prepared_claims() == {}
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_start_and_stop_a_driver_on_a_simulated_node() -> None:
    store = store_with_node()
    registry = DriverRegistry()
    plugin = start_driver(store, registry, NODE, GpuDriver.mock(NODE, MockGpuConfig(count=3)))
    assert registry.plugin(NODE, DRIVER_NAME) is plugin and registry.drivers(NODE) == [DRIVER_NAME]
    (s,) = store.list(kinds.RESOURCE_SLICE).items
    assert [d["name"] for d in s["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]
    add_claim(store, "c", [result("gpu-2")])
    assert prepare_in_process(store, registry, _pod(store, "p", ["c"])) is None
    stop_driver(store, registry, NODE, DRIVER_NAME)
    assert store.list(kinds.RESOURCE_SLICE).items == [] and registry.plugin(NODE, DRIVER_NAME) is None
