"""The kit's prepare/unprepare rules, called in process (the gRPC tests cover the wire)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from drasched.node.cdi import ContainerEdits
from drasched.node.driver import AllocatedDevice, ClaimRef, Driver, PoolSpec
from drasched.node.gpu_driver import CONFIG_API_VERSION, DRIVER_NAME
from drasched.node.plugin import KubeletPlugin

from .helpers import NODE, add_claim, delete_claim, gpu_plugin, result, store_with_node


def test_prepare_returns_devices_with_cdi_ids_and_repeats_the_same_answer() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store)
    ref = add_claim(store, "c1", [result("gpu-0"), result("gpu-1", request="more")])
    first = plugin.node_prepare_resources([ref])[ref.uid]
    assert first.error == ""
    assert [(d.request_names, d.pool_name, d.device_name) for d in first.devices] == [
        (("gpu",), NODE, "gpu-0"), (("more",), NODE, "gpu-1")]
    assert first.devices[0].cdi_device_ids == (f"k8s.{DRIVER_NAME}/claim={ref.uid}-gpu-0",)
    again = plugin.node_prepare_resources([ref])[ref.uid]
    assert again == first
    # Idempotent even when the claim is gone from the store by now (the kubelet retries).
    delete_claim(store, ref)
    assert plugin.node_prepare_resources([ref])[ref.uid] == first


def test_unprepare_releases_and_is_idempotent() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store)
    a = add_claim(store, "a", [result("gpu-0")])
    b = add_claim(store, "b", [result("gpu-0")])
    assert plugin.node_prepare_resources([a])[a.uid].error == ""
    assert "already prepared for ResourceClaim default/a" in plugin.node_prepare_resources([b])[b.uid].error
    assert plugin.node_unprepare_resources([a]) == {a.uid: ""}
    assert plugin.node_unprepare_resources([a]) == {a.uid: ""}
    assert plugin.node_prepare_resources([b])[b.uid].error == ""
    assert set(plugin.prepared_claims()) == {b.uid}


def test_claims_the_driver_does_not_own_fail_one_by_one() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store)
    good = add_claim(store, "good", [result("gpu-0")])
    other_driver = add_claim(store, "other", [result("nic-0", driver="net.example.com")])
    unallocated = add_claim(store, "pending", None)
    wrong_pool = add_claim(store, "elsewhere", [result("gpu-1", pool="node-2")])
    unknown_device = add_claim(store, "ghost", [result("gpu-7")])
    missing = ClaimRef("default", "0000-uid", "missing")
    stale = ClaimRef(good.namespace, "not-the-uid", good.name)
    out = plugin.node_prepare_resources([good, other_driver, unallocated, wrong_pool, unknown_device, missing, stale])
    assert out[good.uid].error == ""
    assert out[other_driver.uid].error == ("ResourceClaim default/other has no device allocated by driver "
                                           "gpu.drasched.io (allocated by: net.example.com)")
    assert out[unallocated.uid].error == "ResourceClaim default/pending is not allocated"
    assert "device node-2/gpu-1 is not published by driver gpu.drasched.io on node node-1" in out[wrong_pool.uid].error
    assert "device node-1/gpu-7 is not published" in out[unknown_device.uid].error
    assert out[missing.uid].error == "ResourceClaim default/missing not found"
    assert "has UID" in out[stale.uid].error and "deleted and recreated" in out[stale.uid].error
    assert set(plugin.prepared_claims()) == {good.uid}


def test_admin_access_does_not_hold_a_device() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store)
    user = add_claim(store, "user", [result("gpu-0")])
    # the API server grants admin access only in a namespace labelled for it
    store.create({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "ops", "labels": {"resource.kubernetes.io/admin-access": "true"}}})
    admin = add_claim(store, "admin", [result("gpu-0", adminAccess=True)], namespace="ops")
    out = plugin.node_prepare_resources([user, admin])
    assert out[user.uid].error == "" and out[admin.uid].error == ""


def test_shared_devices_take_one_claim_per_share_and_capacity_must_fit() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store, count=1, shared=True)
    s1 = add_claim(store, "s1", [result("gpu-0", shareID="share-1", consumedCapacity={"memory": "60Gi"})])
    s2 = add_claim(store, "s2", [result("gpu-0", shareID="share-2", consumedCapacity={"memory": "20Gi"})])
    same_share = add_claim(store, "s3", [result("gpu-0", shareID="share-1", consumedCapacity={"memory": "1Gi"})])
    too_much = add_claim(store, "s4", [result("gpu-0", shareID="share-4", consumedCapacity={"memory": "1Gi"})])
    out = plugin.node_prepare_resources([s1, s2, same_share, too_much])
    assert out[s1.uid].error == "" and out[s2.uid].error == ""
    assert out[s1.uid].devices[0].share_id == "share-1"
    assert out[s1.uid].devices[0].cdi_device_ids[0].endswith(f"={s1.uid}-gpu-0-share-1")
    assert "already prepared for ResourceClaim default/s1" in out[same_share.uid].error
    assert out[too_much.uid].error == ("ResourceClaim default/s4: device node-1/gpu-0 would have memory 81Gi "
                                       "consumed by prepared claims, more than its 80Gi")


def test_partitions_are_bounded_by_shared_counters() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store, count=1, partitions=True)
    small = add_claim(store, "small", [result("gpu-0-1g-0")])
    whole = add_claim(store, "whole", [result("gpu-0")])
    other_gpu_half = add_claim(store, "half", [result("gpu-0-3g-0")])
    out = plugin.node_prepare_resources([small, whole, other_gpu_half])
    assert out[small.uid].error == ""
    assert out[whole.uid].error == ("ResourceClaim default/whole: prepared devices would consume 90Gi of counter "
                                    "memory in counter set node-1/gpu-0, which has 80Gi")
    assert out[other_gpu_half.uid].error == ""  # 1 + 3 slices of 7 fit


def test_opaque_config_is_validated_and_applied() -> None:
    store = store_with_node()
    plugin = gpu_plugin(store)
    good_cfg = [{"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": DRIVER_NAME, "parameters": {
        "apiVersion": CONFIG_API_VERSION, "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Long"}}}}}]
    bad_cfg = [{"source": "FromClass", "opaque": {"driver": DRIVER_NAME, "parameters": {
        "apiVersion": CONFIG_API_VERSION, "kind": "GpuConfig",
        "sharing": {"strategy": "SpacePartitioning", "spacePartitioning": {"partitionCount": 99}}}}}]
    foreign_cfg = [{"source": "FromClaim", "opaque": {"driver": "other.example.com", "parameters": {"x": 1}}}]
    good = add_claim(store, "good", [result("gpu-0")], config=good_cfg + foreign_cfg)
    bad = add_claim(store, "bad", [result("gpu-1")], config=bad_cfg)
    out = plugin.node_prepare_resources([good, bad])
    assert out[good.uid].error == ""
    env = plugin.cdi.specs[good.uid]["devices"][0]["containerEdits"]["env"]
    assert "GPU_DEVICE_0_SHARING_STRATEGY=TimeSlicing" in env and "GPU_DEVICE_0_TIMESLICE_INTERVAL=Long" in env
    assert out[bad.uid].error == (
        "ResourceClaim default/bad: invalid configuration for driver gpu.drasched.io (from class): "
        "sharing.spacePartitioning.partitionCount must be an integer from 1 to 16, not 99")
    # A failed claim leaves nothing behind: the device is free for the next claim.
    assert bad.uid not in plugin.prepared_claims() and bad.uid not in plugin.cdi.specs


class _FlakyDriver(Driver):
    """Fails on its second device, to check that a failed claim is undone as a whole."""

    name = "flaky.example.com"

    def __init__(self) -> None:
        self.unprepared: list[str] = []

    def pools(self, node_name: str) -> dict[str, PoolSpec]:
        return {node_name: PoolSpec(devices=[{"name": "d0"}, {"name": "d1"}])}

    def prepare(self, claim: ClaimRef, device: AllocatedDevice) -> ContainerEdits:
        if device.device == "d1":
            raise RuntimeError("device d1 is on fire")
        return ContainerEdits(env={"D": device.device})

    def unprepare(self, claim: ClaimRef, devices: list[AllocatedDevice]) -> None:
        self.unprepared.append(claim.uid)


def test_a_driver_failure_is_a_per_claim_error_and_is_rolled_back(tmp_path: Path) -> None:
    store = store_with_node()
    driver = _FlakyDriver()
    plugin = KubeletPlugin(store, driver, NODE, cdi_dir=tmp_path)
    ok = add_claim(store, "ok", [result("d0", driver=driver.name)])
    bad = add_claim(store, "bad", [result("d0", driver=driver.name, request="a"),
                                   result("d1", driver=driver.name, request="b")])
    out = plugin.node_prepare_resources([bad, ok])
    assert out[bad.uid].error == "prepare default/bad: RuntimeError: device d1 is on fire"
    assert driver.unprepared == [bad.uid]
    assert out[ok.uid].error == ""  # d0 was not left held by the failed claim
    assert [p.name for p in tmp_path.iterdir()] == [f"k8s.flaky.example.com-claim_{ok.uid}.json"]


def test_checkpoint_survives_a_restart(tmp_path: Path) -> None:
    store = store_with_node()
    plugin = gpu_plugin(store, state_dir=tmp_path / "state", cdi_dir=tmp_path / "cdi")
    a = add_claim(store, "a", [result("gpu-0")])
    answer = plugin.node_prepare_resources([a])[a.uid]
    data = json.loads((tmp_path / "state" / "checkpoint.json").read_text())
    assert list(data["claims"]) == [a.uid]
    restarted = gpu_plugin(store, state_dir=tmp_path / "state", cdi_dir=tmp_path / "cdi")
    assert restarted.node_prepare_resources([a])[a.uid] == answer
    b = add_claim(store, "b", [result("gpu-0")])
    assert "already prepared for ResourceClaim default/a" in restarted.node_prepare_resources([b])[b.uid].error
    assert restarted.node_unprepare_resources([a]) == {a.uid: ""}
    assert json.loads((tmp_path / "state" / "checkpoint.json").read_text())["claims"] == {}
    assert not list((tmp_path / "cdi").iterdir())


class _SlowDriver(Driver):
    """Records overlapping prepare calls: the kit must serialize them."""

    name = "slow.example.com"

    def __init__(self) -> None:
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def pools(self, node_name: str) -> dict[str, PoolSpec]:
        return {node_name: PoolSpec(devices=[{"name": f"d{i}"} for i in range(8)])}

    def prepare(self, claim: ClaimRef, device: AllocatedDevice) -> ContainerEdits:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        threading.Event().wait(0.01)
        with self.lock:
            self.active -= 1
        return ContainerEdits()


def test_concurrent_calls_are_serialized() -> None:
    store = store_with_node()
    driver = _SlowDriver()
    plugin = KubeletPlugin(store, driver, NODE)
    refs = [add_claim(store, f"c{i}", [result(f"d{i}", driver=driver.name)]) for i in range(8)]
    answers: dict[str, Any] = {}
    threads = [threading.Thread(target=lambda r=r: answers.update(plugin.node_prepare_resources([r])))
               for r in refs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert driver.max_active == 1
    assert all(answers[r.uid].error == "" for r in refs)
