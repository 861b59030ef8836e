"""Simulated nodes with mock GPUs (``drasched.io/sim-gpus``) and the kubelet's prepare/unprepare wiring.

Pods are bound by hand and their claims allocated by hand, so these tests need no scheduler.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest

from drasched.api import kinds
from drasched.controllers.resourceclaim import ResourceClaimController
from drasched.node.gpu_driver import DRIVER_NAME, MockGpuConfig
from drasched.node.sim_drivers import SIM_GPUS_ANNOTATION, SimGpus, parse_sim_gpus
from drasched.node.sim_kubelet import RESYNC_INTERVAL, PrepareFailure, SimulatedKubelet
from drasched.sim.clock import DEFAULT_START
from drasched.sim.context import Controller, SimContext
from tests.unit.controllers.helpers import (
    NS,
    by_name,
    claim,
    events,
    get_claim,
    get_pod,
    new_ctx,
    pod,
    pod_ref,
    settle,
)

Obj = dict[str, Any]
NODE = "gpu-node"
DURATION = {"drasched.io/sim-duration": "10m"}


# ---- builders ----------------------------------------------------------------------------------
def node(ctx: SimContext, spec: str | None = "count=2", name: str = NODE) -> Obj:
    md: Obj = {"name": name}
    if spec is not None:
        md["annotations"] = {SIM_GPUS_ANNOTATION: spec}
    return ctx.store.restore({"apiVersion": "v1", "kind": "Node", "metadata": md})


def annotate(ctx: SimContext, spec: str | None, name: str = NODE) -> None:
    ctx.store.patch(kinds.NODE, name, None, {"metadata": {"annotations": {SIM_GPUS_ANNOTATION: spec}}})


def gpu_claim(ctx: SimContext, name: str, devices: Sequence[str] = ("gpu-0",), *, reserved: Sequence[Obj] = (),
              config: list[Obj] | None = None, driver: str = DRIVER_NAME, node_name: str = NODE) -> Obj:
    """A claim allocated by hand to ``devices`` of the node's pool, reserved for ``reserved``."""
    obj = claim(name, reserved=reserved)
    obj["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = driver
    obj["status"]["allocation"]["devices"] = {
        "results": [{"request": "gpu", "driver": driver, "pool": node_name, "device": d} for d in devices],
        **({"config": config} if config else {}),
    }
    return ctx.store.restore(obj)


def bound_pod(ctx: SimContext, name: str, claim_names: Sequence[str], *, annotations: dict[str, str] | None = None,
              node_name: str = NODE) -> Obj:
    return ctx.store.restore(pod(name, [by_name(f"c{i}", c) for i, c in enumerate(claim_names)], node=node_name,
                                annotations=annotations))


def run_pod(ctx: SimContext, name: str, devices: Sequence[str] = ("gpu-0",), **kwargs: Any) -> Obj:
    """A bound pod with its own claim ``<name>-gpu`` allocated to ``devices`` and reserved for it."""
    p = bound_pod(ctx, name, [f"{name}-gpu"], annotations=kwargs.pop("annotations", None))
    gpu_claim(ctx, f"{name}-gpu", devices, reserved=[pod_ref(p)], **kwargs)
    return p


def run_now(ctx: SimContext, controllers: Sequence[Controller]) -> None:
    """Run the controllers until they rest, without advancing virtual time (pods stay running)."""
    for _ in range(50):
        if not any([c.reconcile(ctx) for c in controllers]):
            return
    raise AssertionError("controllers still busy after 50 rounds")


def slices(ctx: SimContext) -> list[Obj]:
    return ctx.store.list(kinds.RESOURCE_SLICE).items


def decisions(ctx: SimContext, action: str) -> list[tuple[str, str]]:
    return [(d.object, d.message) for d in ctx.decisions if d.controller == "sim-kubelet" and d.action == action]


def phase(ctx: SimContext, name: str) -> str:
    return str(get_pod(ctx, name)["status"]["phase"])


# ---- the annotation ----------------------------------------------------------------------------
def test_parse_defaults_are_the_mock_drivers() -> None:
    spec = parse_sim_gpus("")
    cfg = MockGpuConfig()
    assert spec == SimGpus(driver_name=DRIVER_NAME, count=cfg.count, model=cfg.model, memory=cfg.memory)
    assert not spec.partitions and not spec.shared


def test_parse_every_key() -> None:
    spec = parse_sim_gpus(" count=4, model=NVIDIA A100-SXM4-80GB ,memory=40Gi,driverVersion=535.104.05,"
                          "computeCapability=8.0,migCapable=false,partitions,shared=TRUE,driver=gpu.example.com")
    assert spec == SimGpus(driver_name="gpu.example.com", count=4, model="NVIDIA A100-SXM4-80GB", memory="40Gi",
                           driver_version="535.104.05", compute_capability="8.0", mig_capable=False,
                           partitions=True, shared=True)
    driver = spec.driver("n1")
    assert driver.name == "gpu.example.com" and len(driver.gpus) == 4 and driver.partitions and driver.shared
    assert driver.gpus[0].memory_bytes == 40 * 1024**3 and driver.driver_version == "535.104.5"


@pytest.mark.parametrize(("text", "message"), [
    ("count=four", "count must be an integer, not 'four'"),
    ("count=-1", "count must not be negative"),
    ("gpus=4", "unknown key 'gpus'"),
    ("count=1,count=2", "key 'count' given twice"),
    ("shared=yes", "shared must be true or false, not 'yes'"),
    ("model", "key 'model' needs a value"),
    ("model=", "model must not be empty"),
])
def test_parse_errors_name_the_key(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_sim_gpus(text)


# ---- the node's driver follows the annotation --------------------------------------------------
def test_annotated_node_publishes_its_gpus_once() -> None:
    ctx = new_ctx()
    n = node(ctx, "count=3,model=NVIDIA A100-SXM4-80GB,memory=80Gi")
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    (s,) = slices(ctx)
    assert s["spec"]["driver"] == DRIVER_NAME and s["spec"]["nodeName"] == NODE
    assert s["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in s["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]
    assert s["spec"]["devices"][0]["attributes"]["productName"] == {"string": "NVIDIA A100-SXM4-80GB"}
    assert s["metadata"]["ownerReferences"][0]["uid"] == n["metadata"]["uid"]
    assert kubelet.registry.drivers(NODE) == [DRIVER_NAME]
    rv = s["metadata"]["resourceVersion"]
    # Unrelated changes (another node, a pod) publish nothing again.
    node(ctx, None, name="plain-node")
    ctx.store.restore(pod("p", node="plain-node"))
    settle(ctx, [kubelet])
    assert [x["metadata"]["resourceVersion"] for x in slices(ctx)] == [rv]
    assert len(decisions(ctx, "start-driver")) == 1


def test_annotation_change_republishes_and_keeps_prepared_claims() -> None:
    ctx = new_ctx()
    node(ctx, "count=2")
    kubelet = SimulatedKubelet()
    run_pod(ctx, "p", ["gpu-1"])
    settle(ctx, [kubelet])
    plugin = kubelet.registry.plugin(NODE, DRIVER_NAME)
    assert plugin is not None and len(plugin.prepared_claims()) == 1  # type: ignore[attr-defined]
    annotate(ctx, "count=4,memory=40Gi")
    settle(ctx, [kubelet])
    (s,) = slices(ctx)
    assert s["spec"]["pool"]["generation"] == 2
    assert [d["name"] for d in s["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert s["spec"]["devices"][0]["capacity"]["memory"] == {"value": "40Gi"}
    assert kubelet.registry.plugin(NODE, DRIVER_NAME) is plugin
    assert len(plugin.prepared_claims()) == 1  # type: ignore[attr-defined]
    assert [m for _, m in decisions(ctx, "republish-driver")] == [
        "driver gpu.drasched.io now publishes 4 mock GPU(s) (NVIDIA H100 80GB HBM3, 40Gi)"]


@pytest.mark.parametrize("how", ["annotation removed", "node deleted", "annotation invalid"])
def test_driver_stops_with_its_annotation_or_node(how: str) -> None:
    ctx = new_ctx()
    node(ctx)
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    assert len(slices(ctx)) == 1
    if how == "annotation removed":
        annotate(ctx, None)
    elif how == "node deleted":
        ctx.store.delete(kinds.NODE, NODE)
    else:
        annotate(ctx, "count=2,memory=lots")
    settle(ctx, [kubelet])
    assert slices(ctx) == [] and kubelet.registry.drivers(NODE) == []
    assert len(decisions(ctx, "stop-driver")) == 1
    warnings = events(ctx, "InvalidSimGpus")
    if how == "annotation invalid":
        (w,) = warnings
        assert w["involvedObject"]["kind"] == "Node" and w["type"] == "Warning"
        assert "bad GPU memory 'lots'" in w["message"] and "its mock driver stopped" in w["message"]
    else:
        assert warnings == []


def test_invalid_annotation_starts_nothing_and_warns_once() -> None:
    ctx = new_ctx()
    node(ctx, "count=2,colour=green")
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    annotate(ctx, "count=2,colour=green")  # rewritten unchanged: no second event
    ctx.store.patch(kinds.NODE, NODE, None, {"metadata": {"labels": {"touched": "yes"}}})
    settle(ctx, [kubelet])
    assert slices(ctx) == [] and kubelet.registry.drivers(NODE) == []
    (w,) = events(ctx, "InvalidSimGpus")
    assert "unknown key 'colour'" in w["message"] and "no mock driver started" in w["message"]
    annotate(ctx, "count=2")
    settle(ctx, [kubelet])
    assert len(slices(ctx)) == 1


def test_recreated_node_gets_a_fresh_driver() -> None:
    ctx = new_ctx()
    node(ctx)
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    ctx.store.delete(kinds.NODE, NODE)
    fresh = node(ctx, "count=1")
    settle(ctx, [kubelet])
    (s,) = slices(ctx)
    assert s["metadata"]["ownerReferences"][0]["uid"] == fresh["metadata"]["uid"]
    assert [d["name"] for d in s["spec"]["devices"]] == ["gpu-0"]


# ---- prepare and unprepare -------------------------------------------------------------------------
def test_pod_lifecycle_prepares_then_unprepares_before_release() -> None:
    ctx = new_ctx()
    node(ctx)
    kubelet = SimulatedKubelet()
    run_pod(ctx, "p", ["gpu-1"], annotations=DURATION)
    controllers: list[Controller] = [ResourceClaimController(), kubelet]
    run_now(ctx, controllers)
    assert phase(ctx, "p") == "Running"
    plugin = kubelet.registry.plugin(NODE, DRIVER_NAME)
    assert plugin is not None
    c = get_claim(ctx, "p-gpu")
    assert c is not None
    (prepared,) = plugin.prepared_claims().values()  # type: ignore[attr-defined]
    assert [(d.pool_name, d.device_name) for d in prepared.devices] == [(NODE, "gpu-1")]
    cdi_id = prepared.devices[0].cdi_device_ids[0]
    assert cdi_id.startswith(f"k8s.{DRIVER_NAME}/claim=")
    assert plugin.cdi.cdi_dir is None and c["metadata"]["uid"] in plugin.cdi.specs  # type: ignore[attr-defined]
    assert decisions(ctx, "prepare") == [("Pod/default/p", f"node {NODE}: claim default/p-gpu "
                                                            f"[{DRIVER_NAME}/{NODE}/gpu-1]")]
    settle(ctx, controllers)
    assert phase(ctx, "p") == "Succeeded"
    assert plugin.prepared_claims() == {} and plugin.cdi.specs == {}  # type: ignore[attr-defined]
    assert decisions(ctx, "unprepare") == [("Pod/default/p", f"node {NODE}: claim default/p-gpu "
                                                              f"[{DRIVER_NAME}/{NODE}/gpu-1]")]
    after = get_claim(ctx, "p-gpu")
    assert after is not None and not after["status"].get("allocation") and not after["status"].get("reservedFor")
    order = [(d.controller, d.action) for d in ctx.decisions]
    assert order.index(("sim-kubelet", "unprepare")) < order.index(("resourceclaim-controller", "release"))


def test_hand_written_slices_need_no_driver() -> None:
    """The common scenario case: the claim's driver runs nowhere; the pod runs as before."""
    ctx = new_ctx()
    node(ctx, None)
    p = bound_pod(ctx, "p", ["c"], annotations=DURATION)
    ctx.store.restore(claim("c", reserved=[pod_ref(p)]))  # driver gpu.example.com, pool node-a
    kubelet = SimulatedKubelet()
    settle(ctx, [ResourceClaimController(), kubelet])
    assert phase(ctx, "p") == "Succeeded"
    assert decisions(ctx, "prepare") == [] and events(ctx, "FailedPrepareDynamicResources") == []


def test_claims_of_unregistered_drivers_are_skipped_on_a_driver_node() -> None:
    ctx = new_ctx()
    node(ctx)
    p = bound_pod(ctx, "p", ["gpu", "nic"], annotations=DURATION)
    gpu_claim(ctx, "gpu", ["gpu-0"], reserved=[pod_ref(p)])
    nic = gpu_claim(ctx, "nic", ["nic-0"], reserved=[pod_ref(p)], driver="net.example.com")
    kubelet = SimulatedKubelet()
    run_now(ctx, [kubelet])
    assert phase(ctx, "p") == "Running"
    assert decisions(ctx, "prepare") == [("Pod/default/p", f"node {NODE}: claim default/gpu "
                                                            f"[{DRIVER_NAME}/{NODE}/gpu-0]")]
    assert kubelet.registry.prepared(NODE, nic["metadata"]["uid"]) == {}  # tracked, nothing to call
    settle(ctx, [kubelet])
    assert phase(ctx, "p") == "Succeeded" and events(ctx, "FailedUnprepareDynamicResources") == []
    assert kubelet.registry.prepared(NODE, nic["metadata"]["uid"]) is None  # and forgotten after


BAD_CONFIG = [{"source": "FromClaim", "opaque": {"driver": DRIVER_NAME, "parameters": {
    "apiVersion": f"{DRIVER_NAME}/v1alpha1", "kind": "GpuConfig", "sharing": {"strategy": "Magic"}}}}]


@pytest.mark.parametrize(("devices", "config", "message", "fix"), [
    (["gpu-7"], None, f"device {NODE}/gpu-7 is not published by driver {DRIVER_NAME}",
     lambda ctx: annotate(ctx, "count=8")),
    (["gpu-0"], BAD_CONFIG, "sharing.strategy must be TimeSlicing or SpacePartitioning, not 'Magic'", None),
], ids=["device-not-published", "opaque-config-refused"])
def test_prepare_error_keeps_the_pod_pending_until_a_change_clears_it(
        devices: list[str], config: list[Obj] | None, message: str, fix: Any) -> None:
    """Upstream's kubelet never fails a pod for a prepare error: kuberuntime ``SyncPod`` records a
    ``FailedPrepareDynamicResources`` Warning and returns before it creates the sandbox, so the pod
    stays Pending with its containers in ``ContainerCreating``; dra/manager.go ``prepareResources``
    unprepares nothing on an error; the claims stay allocated and reserved; the pod worker tries
    again later, for ever. Once the driver publishes the device, the pod starts; an allocation's
    configuration cannot change, so a refused one waits until the pod is deleted."""
    ctx = new_ctx()
    node(ctx)
    p = bound_pod(ctx, "p", ["ok", "bad"], annotations=DURATION)
    gpu_claim(ctx, "ok", ["gpu-1"], reserved=[pod_ref(p)])
    gpu_claim(ctx, "bad", devices, reserved=[pod_ref(p)], config=config)
    kubelet = SimulatedKubelet()
    controllers: list[Controller] = [ResourceClaimController(), kubelet]
    settle(ctx, controllers)
    settle(ctx, controllers)  # the run ended, and ends again: the retry does not wake it
    assert ctx.clock.now() == DEFAULT_START
    status = get_pod(ctx, "p")["status"]
    assert status["phase"] == "Pending" and "reason" not in status and "message" not in status
    assert status["containerStatuses"] == [{"name": "c0", "image": "busybox", "imageID": "", "ready": False,
                                            "started": False, "restartCount": 0,
                                            "state": {"waiting": {"reason": "ContainerCreating"}}}]
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["PodReadyToStartContainers"]["status"] == "False" and conds["Initialized"]["status"] == "True"
    for cond_type in ("ContainersReady", "Ready"):
        assert conds[cond_type]["status"] == "False" and conds[cond_type]["reason"] == "ContainersNotReady"
        assert conds[cond_type]["message"] == "containers with unready status: [c0]"
    (warning,) = events(ctx, "FailedPrepareDynamicResources", "p")  # tried many times, said once
    assert warning["type"] == "Warning" and message in warning["message"]
    assert warning["message"].startswith("Failed to prepare dynamic resources: ")  # upstream's Eventf format
    ((obj, said),) = decisions(ctx, "prepare-failed")
    assert obj == "Pod/default/p" and message in said and "stays Pending" in said
    assert decisions(ctx, "fail") == [] and decisions(ctx, "unprepare") == []
    ok_held = f"node {NODE}: claim default/ok [{DRIVER_NAME}/{NODE}/gpu-1]"
    assert decisions(ctx, "prepare") == [("Pod/default/p", ok_held)]  # it stays prepared while the pod waits
    plugin = kubelet.registry.plugin(NODE, DRIVER_NAME)
    assert plugin is not None
    ok = get_claim(ctx, "ok")
    assert ok is not None and ok["metadata"]["uid"] in plugin.prepared_claims()  # type: ignore[attr-defined]
    for name in ("ok", "bad"):  # the claim controller keeps them: the pod is not terminal
        c = get_claim(ctx, name)
        assert c is not None and c["status"].get("allocation")
        assert [r["uid"] for r in c["status"]["reservedFor"]] == [p["metadata"]["uid"]]
    if fix is None:
        return
    fix(ctx)
    run_now(ctx, controllers)
    status = get_pod(ctx, "p")["status"]
    assert status["phase"] == "Running"
    assert status["containerStatuses"][0]["state"] == {"running": {"startedAt": status["startTime"]}}
    assert all(c["status"] == "True" and "reason" not in c and "message" not in c for c in status["conditions"])
    assert len(events(ctx, "FailedPrepareDynamicResources", "p")) == 1
    assert [m for _, m in decisions(ctx, "prepare")][1:] == [  # the rest, once retried; the replay sees no double
        f"node {NODE}: claim default/bad [{DRIVER_NAME}/{NODE}/{devices[0]}]"]
    settle(ctx, controllers)
    assert phase(ctx, "p") == "Succeeded" and plugin.prepared_claims() == {}  # type: ignore[attr-defined]


def test_failed_prepare_is_tried_again_every_resync_interval_without_waking_the_run() -> None:
    """Upstream's pod worker requeues a pod whose sync returned no error (a failed prepare is
    not one) after ``syncFrequency`` (1m): here the retry comes when virtual time gets there
    for other work; alone, it would keep a run that can never succeed going for ever."""
    tries: list[datetime] = []

    class Counting(SimulatedKubelet):
        def _prepare(self, pod: Obj, claims: list[Obj]) -> PrepareFailure | None:
            tries.append(self.ctx.now())
            return super()._prepare(pod, claims)

    ctx = new_ctx()
    node(ctx)
    run_pod(ctx, "p", ["gpu-7"])
    kubelet = Counting()
    settle(ctx, [kubelet])
    assert ctx.next_wakeup() is None and ctx.clock.now() == DEFAULT_START
    before = len(tries)
    ctx.clock.advance(RESYNC_INTERVAL.total_seconds() - 1)
    assert not kubelet.reconcile(ctx) and len(tries) == before  # nothing changed, nothing due
    ctx.clock.advance(1)
    assert not kubelet.reconcile(ctx)  # tried, failed the same way: nothing new to say
    assert tries[before:] == [DEFAULT_START + RESYNC_INTERVAL]
    assert phase(ctx, "p") == "Pending" and len(events(ctx, "FailedPrepareDynamicResources", "p")) == 1
    assert ctx.next_wakeup() is None


def test_device_held_by_another_claim_waits_until_it_is_unprepared() -> None:
    """A double allocation (by hand here): the second pod waits and starts once the first ends."""
    ctx = new_ctx()
    node(ctx)
    kubelet = SimulatedKubelet()
    run_pod(ctx, "first", ["gpu-0"], annotations=DURATION)
    run_now(ctx, [kubelet])
    run_pod(ctx, "second", ["gpu-0"])
    kubelet.reconcile(ctx)
    assert phase(ctx, "second") == "Pending"
    assert get_pod(ctx, "second")["status"]["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "ContainerCreating"}}
    (warning,) = events(ctx, "FailedPrepareDynamicResources", "second")
    assert f"device {NODE}/gpu-0 is already prepared for ResourceClaim default/first-gpu" in warning["message"]
    settle(ctx, [kubelet])  # first runs out its 10m and unprepares
    assert phase(ctx, "first") == "Succeeded" and phase(ctx, "second") == "Running"
    assert [o for o, _ in decisions(ctx, "prepare")] == ["Pod/default/first", "Pod/default/second"]


def test_two_claims_of_one_pod_on_one_device_wait_and_the_run_ends() -> None:
    """The pod itself holds the device the other claim wants: it waits, as upstream, for a change
    that never comes; the simulation still ends, its virtual time unmoved."""
    ctx = new_ctx()
    node(ctx)
    p = bound_pod(ctx, "p", ["a", "b"])
    gpu_claim(ctx, "a", ["gpu-0"], reserved=[pod_ref(p)])
    gpu_claim(ctx, "b", ["gpu-0"], reserved=[pod_ref(p)])
    settle(ctx, [ResourceClaimController(), SimulatedKubelet()])
    assert phase(ctx, "p") == "Pending" and ctx.clock.now() == DEFAULT_START
    (warning,) = events(ctx, "FailedPrepareDynamicResources", "p")
    assert f"device {NODE}/gpu-0 is already prepared for ResourceClaim default/a" in warning["message"]


def test_deleting_a_pod_that_waits_unprepares_what_did_prepare() -> None:
    """The way out of a prepare error that nothing clears: delete the pod (or its controller).
    Upstream unprepares the claims a terminated pod still references; so does the simulation."""
    ctx = new_ctx()
    node(ctx)
    p = bound_pod(ctx, "p", ["ok", "bad"])
    gpu_claim(ctx, "ok", ["gpu-1"], reserved=[pod_ref(p)])
    gpu_claim(ctx, "bad", ["gpu-7"], reserved=[pod_ref(p)])
    kubelet = SimulatedKubelet()
    controllers: list[Controller] = [ResourceClaimController(), kubelet]
    settle(ctx, controllers)
    plugin = kubelet.registry.plugin(NODE, DRIVER_NAME)
    assert plugin is not None and len(plugin.prepared_claims()) == 1  # type: ignore[attr-defined]
    ctx.store.delete(kinds.POD, "p", NS)
    settle(ctx, controllers)
    assert ctx.store.peek(kinds.POD, "p", NS) is None
    assert plugin.prepared_claims() == {}  # type: ignore[attr-defined]
    held = f"node {NODE}: claim default/ok [{DRIVER_NAME}/{NODE}/gpu-1]"
    assert decisions(ctx, "prepare") == decisions(ctx, "unprepare") == [("Pod/default/p", held)]


def test_deleted_pod_is_unprepared_before_it_goes() -> None:
    ctx = new_ctx()
    node(ctx)
    kubelet = SimulatedKubelet()
    run_pod(ctx, "p", ["gpu-0"])
    settle(ctx, [kubelet])
    plugin = kubelet.registry.plugin(NODE, DRIVER_NAME)
    assert plugin is not None and len(plugin.prepared_claims()) == 1  # type: ignore[attr-defined]
    ctx.store.delete(kinds.POD, "p", NS)
    settle(ctx, [kubelet])
    assert ctx.store.peek(kinds.POD, "p", NS) is None
    assert plugin.prepared_claims() == {}  # type: ignore[attr-defined]
    assert [o for o, _ in decisions(ctx, "unprepare")] == ["Pod/default/p"]


def test_pod_already_running_in_the_input_has_its_claims_prepared() -> None:
    """A restored cluster: the kubelet prepares a Running pod's claims, so its device counts as held."""
    ctx = new_ctx()
    node(ctx)
    p = run_pod(ctx, "old", ["gpu-0"])
    ctx.store.patch(kinds.POD, "old", NS, {"status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}},
                    subresource="status")
    run_pod(ctx, "new", ["gpu-0"])
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    assert phase(ctx, "old") == "Running" and phase(ctx, "new") == "Pending"
    assert [o for o, _ in decisions(ctx, "prepare")] == [f"Pod/default/{p['metadata']['name']}"]


def test_stopped_driver_forgets_its_claims() -> None:
    """A node whose driver stops while a pod runs: the pod still finishes, with no unprepare error."""
    ctx = new_ctx()
    node(ctx)
    kubelet = SimulatedKubelet()
    run_pod(ctx, "p", ["gpu-0"], annotations=DURATION)
    kubelet.reconcile(ctx)
    assert phase(ctx, "p") == "Running"
    annotate(ctx, None)
    settle(ctx, [kubelet])
    assert phase(ctx, "p") == "Succeeded"
    assert events(ctx, "FailedUnprepareDynamicResources") == []
    assert [o for o, _ in decisions(ctx, "unprepare")] == ["Pod/default/p"]
