"""allocatedResourcesStatus as upstream's kubelet writes it (KEP-4680, pkg/kubelet/cm/dra/manager.go)."""

from __future__ import annotations

from drasched.node.example_gpu import ExampleGpuDriver
from drasched.node.gpu_driver import GpuDriver
from drasched.node.nvidia_gpu import NvidiaGpuDriver
from drasched.node.plugin import PreparedDevice
from drasched.node.resource_health import UNHEALTHY, DeviceHealth, allocated_resources_status


def _dev(device: str, request: str = "gpu", cdi: tuple[str, ...] = ()) -> PreparedDevice:
    return PreparedDevice((request,), "node-a", device, cdi)


def _no_health(driver: str, pool: str, device: str) -> DeviceHealth | None:
    return None


def test_no_health_service_reports_unknown_without_message() -> None:
    container = {"name": "c", "resources": {"claims": [{"name": "gpu"}]}}
    prepared = {"gpu": {"gpu.nvidia.com": (_dev("gpu-0", cdi=("k8s.gpu.nvidia.com/claim=u-gpu-0",)),)}}
    assert allocated_resources_status(container, prepared, _no_health) == [
        {"name": "claim:gpu", "resources": [{"resourceID": "k8s.gpu.nvidia.com/claim=u-gpu-0", "health": "Unknown"}]}
    ]


def test_request_entry_name_filter_fallback_id_dedup_and_order() -> None:
    container = {"name": "c", "resources": {"claims": [
        {"name": "b", "request": "r2/sub"}, {"name": "a"}, {"name": "missing"}]}}
    prepared = {
        "a": {"z.example": (_dev("d9"),), "a.example": (_dev("d1"), _dev("d1"))},
        "b": {"x.example": (_dev("d2", "r1"), _dev("d3", "r2/sub"))},
    }

    def health(driver: str, pool: str, device: str) -> DeviceHealth | None:
        return DeviceHealth(UNHEALTHY, "ECC") if device == "d3" else None

    assert allocated_resources_status(container, prepared, health) == [
        {"name": "claim:b/r2/sub", "resources": [
            {"resourceID": "x.example/node-a/d3", "health": "Unhealthy", "message": "ECC"}]},
        {"name": "claim:a", "resources": [
            {"resourceID": "a.example/node-a/d1", "health": "Unknown"},
            {"resourceID": "z.example/node-a/d9", "health": "Unknown"}]},
    ]


def test_container_without_claims_or_devices_gets_nothing() -> None:
    assert allocated_resources_status({"name": "c"}, {"gpu": {}}, _no_health) == []
    container = {"name": "c", "resources": {"claims": [{"name": "gpu", "request": "other"}]}}
    assert allocated_resources_status(container, {"gpu": {"d": (_dev("d0"),)}}, _no_health) == []


def test_stand_in_drivers_report_as_their_upstream() -> None:
    example = ExampleGpuDriver.mock("n1")
    assert example.device_health("n1", "gpu-0") == DeviceHealth(
        "Healthy", "Device gpu-0 operating normally, temperature: 45°C")
    # NVIDIA's NVMLDeviceHealthCheck is alpha and off by default; drasched's own driver has no health service.
    assert NvidiaGpuDriver.mock("n1").device_health("n1", "gpu-0") is None
    assert GpuDriver.mock("n1").device_health("n1", "gpu-0") is None


def test_simulated_kubelet_writes_the_field_and_keeps_it_in_the_final_status() -> None:
    from drasched.controllers.resourceclaim import ResourceClaimController
    from drasched.node.gpu_driver import DRIVER_NAME
    from drasched.node.sim_kubelet import SimulatedKubelet
    from drasched.sim.context import Controller
    from tests.unit.controllers.helpers import get_pod, new_ctx, settle
    from tests.unit.node.test_sim_driver import DURATION, NODE, node, run_now, run_pod

    ctx = new_ctx()
    node(ctx)
    kubelet = SimulatedKubelet()
    run_pod(ctx, "p", ["gpu-1"], annotations=DURATION)
    controllers: list[Controller] = [ResourceClaimController(), kubelet]
    run_now(ctx, controllers)
    plugin = kubelet.registry.plugin(NODE, DRIVER_NAME)
    assert plugin is not None
    (prepared,) = plugin.prepared_claims().values()  # type: ignore[attr-defined]
    want = [{"name": "claim:c0", "resources": [
        {"resourceID": prepared.devices[0].cdi_device_ids[0], "health": "Unknown"}]}]
    (cs,) = get_pod(ctx, "p")["status"]["containerStatuses"]
    assert cs["allocatedResourcesStatus"] == want
    settle(ctx, controllers)
    final = get_pod(ctx, "p")["status"]
    assert final["phase"] == "Succeeded"
    assert final["containerStatuses"][0]["allocatedResourcesStatus"] == want
