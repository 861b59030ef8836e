"""The slices the example driver publishes, written to a real kube-apiserver.

The memory store checks shapes loosely; the real server's validation is the judge of the
limits the publisher applies (64/128 devices, counters in slices of their own, consumable
capacity policies) and of the DeviceClass. ``pytest -m "not e2e"`` deselects this file on
a machine without the kube-apiserver build.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from drasched.api import kinds
from drasched.node.client import register
from drasched.node.driver import ClaimRef, PoolSpec
from drasched.node.gpu_driver import DRIVER_NAME, GpuDriver, MockGpuConfig, device_classes
from drasched.node.publisher import SlicePublisher
from drasched.testing.apiserver import LocalCluster

pytestmark = pytest.mark.e2e


def test_published_slices_pass_the_real_servers_validation(local_cluster: LocalCluster) -> None:
    store = local_cluster.store()
    node = f"gpu-node-{uuid.uuid4().hex[:8]}"
    node_uid = store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})["metadata"]["uid"]
    pub = SlicePublisher(store, DRIVER_NAME, node)

    def generations() -> set[tuple[int, int]]:
        return {(s["spec"]["pool"]["generation"], s["spec"]["pool"]["resourceSliceCount"]) for s in pub.existing()}

    # Partitionable devices: 10 counter sets (2 slices of <= 8), 130 devices (3 slices of <= 64).
    partitioned = GpuDriver.mock(node, MockGpuConfig(count=10), partitions=True).pools(node)
    res = pub.publish(partitioned)
    assert len(res.created) == 5 and generations() == {(1, 5)}
    assert all(s["metadata"]["ownerReferences"][0]["uid"] == node_uid for s in pub.existing())
    # A resync against what the server stored (canonicalized) writes nothing.
    assert not pub.publish(partitioned).changed

    # Consumable capacity with a request policy; fewer slices: the rest are deleted.
    shared = GpuDriver.mock(node, MockGpuConfig(count=4), shared=True).pools(node)
    res = pub.publish(shared)
    assert len(res.updated) == 1 and len(res.deleted) == 4 and generations() == {(2, 1)}
    assert not pub.publish(shared).changed

    # More than 128 plain devices, then tainted ones (64 per slice).
    plain = {node: PoolSpec(devices=[{"name": f"d-{i}"} for i in range(200)])}
    pub.publish(plain)
    assert generations() == {(3, 2)}
    tainted = {node: PoolSpec(devices=[{"name": f"d-{i}", "taints": [{"key": "maintenance", "effect": "NoSchedule"}]}
                                       for i in range(130)])}
    pub.publish(tainted)
    assert generations() == {(4, 3)}

    for cls in device_classes(extended_resource_name=f"example.com/gpu-{node}", partitions=True):
        cls["metadata"]["name"] = f"{node}.{cls['metadata']['name']}"
        store.create(cls)
        store.delete(kinds.DEVICE_CLASS, cls["metadata"]["name"])

    assert len(pub.unpublish()) == 3
    assert pub.existing() == []


def test_driver_run_mode_serves_the_kubelet_and_cleans_up(local_cluster: LocalCluster) -> None:
    """``drasched driver gpu`` as a DaemonSet would run it: publish, register, prepare, SIGTERM."""
    store = local_cluster.store()
    node = f"run-node-{uuid.uuid4().hex[:8]}"
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    root = Path(tempfile.mkdtemp(prefix="drs-", dir="/tmp"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "drasched.cli", "driver", "gpu", "--node", node, "--count", "2",
         "--kubeconfig", local_cluster.kubeconfig_path, "--registry-dir", str(root / "reg"),
         "--plugins-dir", str(root / "plugins"), "--cdi-dir", str(root / "cdi"), "--create-device-class"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        sock = root / "reg" / f"{DRIVER_NAME}-reg.sock"
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the driver did not create its registration socket"
            time.sleep(0.1)
        pub = SlicePublisher(store, DRIVER_NAME, node)
        (slice_,) = pub.existing()  # published before the socket appeared
        assert [d["name"] for d in slice_["spec"]["devices"]] == ["gpu-0", "gpu-1"]
        claim = store.create({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"c-{node}", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER_NAME}}]}}})
        claim["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER_NAME, "pool": node, "device": "gpu-1"}]}}}
        claim = store.update_status(claim)
        ref = ClaimRef("default", claim["metadata"]["uid"], claim["metadata"]["name"])
        with register(sock) as kubelet:
            (dev,) = kubelet.node_prepare_resources([ref])[ref.uid].devices
            assert dev.device_name == "gpu-1" and (root / "cdi").is_dir()
            assert kubelet.node_unprepare_resources([ref]) == {ref.uid: ""}
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=30)[0]
        assert proc.returncode == 0, out
        assert pub.existing() == []
        assert not sock.exists()
        assert store.get(kinds.DEVICE_CLASS, DRIVER_NAME)["spec"]["selectors"]
        store.delete(kinds.DEVICE_CLASS, DRIVER_NAME)  # the cluster is shared by the session
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)
