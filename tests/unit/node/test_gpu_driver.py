"""The example GPU driver: mock devices, NVML through a fake module, config, classes, CLI."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from drasched.api import kinds, validation
from drasched.cli import main
from drasched.node.driver import AllocatedDevice, ClaimRef, ConfigError
from drasched.node.gpu_driver import (
    CONFIG_API_VERSION,
    DRIVER_NAME,
    GpuDriver,
    MockGpuConfig,
    SharingConfig,
    device_classes,
    parse_gpu_config,
    semver,
)


class _NVMLError(Exception):
    pass


def _fake_nvml(gpus: list[dict[str, Any]], driver_version: Any = "535.104.05", init_error: bool = False) -> Any:
    """A stand-in for nvidia-ml-py's ``pynvml`` with the calls the driver makes."""
    m = types.ModuleType("pynvml")
    calls: list[str] = []
    m.calls = calls  # type: ignore[attr-defined]
    m.NVMLError = _NVMLError  # type: ignore[attr-defined]

    def init() -> None:
        calls.append("init")
        if init_error:
            raise _NVMLError("NVML Shared Library Not Found")

    def mig_mode(h: int) -> tuple[int, int]:
        if not gpus[h]["mig"]:
            raise _NVMLError("Not Supported")
        return (0, 0)

    m.nvmlInit = init  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: calls.append("shutdown")  # type: ignore[attr-defined]
    m.nvmlSystemGetDriverVersion = lambda: driver_version  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: len(gpus)  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    m.nvmlDeviceGetUUID = lambda h: gpus[h]["uuid"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetName = lambda h: gpus[h]["name"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=gpus[h]["mem"])  # type: ignore[attr-defined]
    m.nvmlDeviceGetCudaComputeCapability = lambda h: gpus[h]["cc"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetMigMode = mig_mode  # type: ignore[attr-defined]
    m.nvmlDeviceGetMinorNumber = lambda h: h + 4  # type: ignore[attr-defined]
    return m


GPUS = [
    {"uuid": b"GPU-aaaa", "name": b"NVIDIA A100-SXM4-40GB", "mem": 40 * 1024**3, "cc": (8, 0), "mig": True},
    {"uuid": "GPU-bbbb", "name": "NVIDIA L4", "mem": 23034 * 1024**2, "cc": (8, 9), "mig": False},
]


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    m = _fake_nvml(GPUS)
    monkeypatch.setitem(sys.modules, "pynvml", m)
    yield m


def test_nvml_discovery_describes_each_gpu(fake_nvml: Any) -> None:
    driver = GpuDriver.from_nvml()
    assert fake_nvml.calls == ["init", "shutdown"]
    devices = driver.pools("n1")["n1"].devices
    assert [d["name"] for d in devices] == ["gpu-0", "gpu-1"]
    a100, l4 = devices
    assert a100["attributes"] == {
        "type": {"string": "gpu"}, "index": {"int": 0}, "uuid": {"string": "GPU-aaaa"},
        "productName": {"string": "NVIDIA A100-SXM4-40GB"}, "architecture": {"string": "Ampere"},
        "cudaComputeCapability": {"version": "8.0.0"}, "driverVersion": {"version": "535.104.5"},
        "migCapable": {"bool": True},
    }
    assert a100["capacity"] == {"memory": {"value": "40Gi"}}
    assert l4["attributes"]["migCapable"] == {"bool": False}
    assert l4["attributes"]["architecture"] == {"string": "Ada Lovelace"}
    assert l4["capacity"] == {"memory": {"value": "23034Mi"}}
    edits = driver.prepare(ClaimRef("ns", "u", "c"), AllocatedDevice("gpu", "n1", "gpu-1", published=l4))
    assert edits.env == {"GPU_DEVICE_1": "GPU-bbbb"}
    assert edits.device_nodes == [{"path": "/dev/nvidia5"}, {"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}]


def test_nvml_refuses_modeled_partitions(fake_nvml: Any) -> None:
    with pytest.raises(ValueError, match="only modeled for mock GPUs"):
        GpuDriver.from_nvml(partitions=True)


def test_nvml_errors_propagate_and_shut_down(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _fake_nvml(GPUS)
    m.nvmlDeviceGetCount = lambda: (_ for _ in ()).throw(_NVMLError("GPU is lost"))
    monkeypatch.setitem(sys.modules, "pynvml", m)
    with pytest.raises(_NVMLError, match="GPU is lost"):
        GpuDriver.from_nvml()
    assert m.calls == ["init", "shutdown"]


def test_print_slices_with_nvml_and_auto(fake_nvml: Any, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["driver", "gpu", "--node", "gpu-node", "--print-slices", "--nvml"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    (slice_,) = [d for d in docs if d["kind"] == "ResourceSlice"]
    assert [d["attributes"]["uuid"]["string"] for d in slice_["spec"]["devices"]] == ["GPU-aaaa", "GPU-bbbb"]
    # --auto: NVML when it sees a GPU, mock GPUs when NVML cannot start.
    assert main(["driver", "gpu", "--node", "gpu-node", "--print-slices", "--auto"]) == 0
    assert "GPU-aaaa" in capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(GPUS, init_error=True))
    assert main(["driver", "gpu", "--node", "gpu-node", "--print-slices", "--auto", "--count", "3"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    (slice_,) = [d for d in docs if d["kind"] == "ResourceSlice"]
    assert slice_["spec"]["devices"][2]["attributes"]["productName"] == {"string": MockGpuConfig.model}
    assert main(["driver", "gpu", "--node", "gpu-node", "--print-slices", "--nvml"]) == 1
    assert "NVML Shared Library Not Found" in capsys.readouterr().err


def test_missing_nvidia_ml_py_says_how_to_install(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails as if not installed
    assert main(["driver", "gpu", "--node", "n", "--print-slices", "--nvml"]) == 2
    assert "pip install 'drasched[nvidia]'" in capsys.readouterr().err


def test_print_slices_mock_is_valid_and_complete(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["driver", "gpu", "--node", "n1", "--print-slices", "--count", "10", "--partitions",
                 "--extended-resource-name", "nvidia.com/gpu"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    classes = [d for d in docs if d["kind"] == "DeviceClass"]
    slices = [d for d in docs if d["kind"] == "ResourceSlice"]
    assert [c["metadata"]["name"] for c in classes] == [DRIVER_NAME, f"partition.{DRIVER_NAME}"]
    assert classes[0]["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    assert "extendedResourceName" not in classes[1]["spec"]
    for d in docs:
        validation.validate(d, kinds.for_object(d))
    assert sum(len(s["spec"].get("devices", [])) for s in slices) == 10 * 13
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {len(slices)} == {5}
    assert all(len(s["spec"].get("devices", [])) <= 64 for s in slices)


def test_cli_errors_are_clear(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert main(["driver", "gpu", "--print-slices"]) == 2
    assert "--node is required" in capsys.readouterr().err
    assert main(["driver", "gpu", "--node", "n", "--print-slices", "--memory", "lots"]) == 2
    assert "bad GPU memory 'lots'" in capsys.readouterr().err


def test_mock_gpus_are_deterministic_per_node() -> None:
    a = GpuDriver.mock("n1").pools("n1")["n1"].devices
    b = GpuDriver.mock("n1").pools("n1")["n1"].devices
    c = GpuDriver.mock("n2").pools("n2")["n2"].devices
    assert a == b and len(a) == 8
    assert a[0]["attributes"]["uuid"] != c[0]["attributes"]["uuid"]


def test_partitions_and_shared_shapes() -> None:
    pool = GpuDriver.mock("n", MockGpuConfig(count=1), partitions=True).pools("n")["n"]
    assert pool.shared_counters == [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"},
                                                                   "slices": {"value": "7"}}}]
    by_name = {d["name"]: d for d in pool.devices}
    assert sorted(by_name) == sorted(["gpu-0", *(f"gpu-0-1g-{k}" for k in range(7)),
                                      *(f"gpu-0-2g-{k}" for k in range(3)), "gpu-0-3g-0", "gpu-0-3g-1"])
    part = by_name["gpu-0-2g-1"]
    assert part["attributes"]["profile"] == {"string": "2g.20gb"}
    assert part["consumesCounters"] == [{"counterSet": "gpu-0", "counters": {
        "memory": {"value": "20Gi"}, "slices": {"value": "2"}}}]
    shared = GpuDriver.mock("n", MockGpuConfig(count=1), shared=True).pools("n")["n"].devices[0]
    assert shared["allowMultipleAllocations"] is True
    assert shared["capacity"]["memory"]["requestPolicy"] == {"default": "1Gi",
                                                             "validRange": {"min": "1Gi", "step": "1Gi"}}


def _params(**sharing: Any) -> dict[str, Any]:
    return {"apiVersion": CONFIG_API_VERSION, "kind": "GpuConfig", "sharing": sharing}


@pytest.mark.parametrize(("params", "parsed"), [
    (_params(strategy="TimeSlicing"), SharingConfig("TimeSlicing", interval="Default")),
    (_params(strategy="TimeSlicing", timeSlicing={"interval": "Short"}), SharingConfig("TimeSlicing", "Short")),
    (_params(strategy="SpacePartitioning", spacePartitioning={"partitionCount": 4}),
     SharingConfig("SpacePartitioning", partition_count=4)),
    ({"apiVersion": CONFIG_API_VERSION, "kind": "GpuConfig"}, None),
])
def test_config_accepts(params: dict[str, Any], parsed: SharingConfig | None) -> None:
    assert parse_gpu_config(params) == parsed


@pytest.mark.parametrize(("params", "message"), [
    ("x", "parameters must be an object"),
    ({"apiVersion": "v1", "kind": "GpuConfig"}, "apiVersion must be 'gpu.drasched.io/v1alpha1', not 'v1'"),
    ({"apiVersion": CONFIG_API_VERSION, "kind": "Nope"}, "kind must be 'GpuConfig'"),
    ({"apiVersion": CONFIG_API_VERSION, "kind": "GpuConfig", "shraing": {}}, "unknown field(s) shraing"),
    (_params(strategy="Magic"), "sharing.strategy must be TimeSlicing or SpacePartitioning, not 'Magic'"),
    (_params(strategy="TimeSlicing", timeSlicing={"interval": "Forever"}),
     "sharing.timeSlicing.interval must be one of Default, Short, Medium, Long, not 'Forever'"),
    (_params(strategy="TimeSlicing", spacePartitioning={"partitionCount": 2}),
     "sharing.spacePartitioning is not allowed with strategy TimeSlicing"),
    (_params(strategy="SpacePartitioning", spacePartitioning={"partitionCount": 0}),
     "partitionCount must be an integer from 1 to 16, not 0"),
    (_params(strategy="SpacePartitioning", spacePartitioning={"partitionCount": True}), "not True"),
    (_params(strategy="SpacePartitioning"), "sharing.spacePartitioning must be an object with partitionCount"),
])
def test_config_refuses_with_a_clear_message(params: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_gpu_config(params)
    assert message in str(info.value)


def test_semver_and_classes() -> None:
    assert semver("535.104.05") == "535.104.5"
    assert semver("560.35") == "560.35.0"
    assert semver("9.0") == "9.0.0"
    with pytest.raises(ValueError):
        semver("unknown")
    (only,) = device_classes()
    assert only["spec"]["selectors"][0]["cel"]["expression"] == (
        'device.driver == "gpu.drasched.io" && device.attributes["gpu.drasched.io"].type == "gpu"')


def test_device_classes_select_whole_gpus_or_partitions() -> None:
    from drasched.cel import compile_selector, device_view_from_slice_device

    whole, part = device_classes(partitions=True)
    devices = GpuDriver.mock("n", MockGpuConfig(count=1), partitions=True).pools("n")["n"].devices

    def chosen(cls: dict[str, Any]) -> list[str]:
        sel = compile_selector(cls["spec"]["selectors"][0]["cel"]["expression"])
        return [d["name"] for d in devices if sel.evaluate(device_view_from_slice_device(DRIVER_NAME, d))]

    assert chosen(whole) == ["gpu-0"]
    assert len(chosen(part)) == 12 and "gpu-0" not in chosen(part)


def test_print_slices_under_nvidias_name_publishes_as_nvidias_driver(capsys: pytest.CaptureFixture[str]) -> None:
    """``--driver-name gpu.nvidia.com`` runs the mock as NVIDIA's driver (nvidia_gpu.py): the
    model's architecture, compute capability and memory, not the plain mock's defaults."""
    assert main(["driver", "gpu", "--node", "n", "--print-slices", "--count", "1", "--driver-name", "gpu.nvidia.com",
                 "--model", "NVIDIA A100-SXM4-40GB"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    (slice_,) = [d for d in docs if d["kind"] == "ResourceSlice"]
    device = slice_["spec"]["devices"][0]
    assert device["attributes"]["architecture"] == {"string": "Ampere"}
    assert device["attributes"]["cudaComputeCapability"] == {"version": "8.0.0"}
    assert device["capacity"]["memory"] == {"value": "40Gi"}
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass"] == ["gpu.nvidia.com", "mig.nvidia.com"]
    # with MIG devices the classes are still the chart's (mig.nvidia.com selects type mig)
    assert main(["driver", "gpu", "--node", "n", "--print-slices", "--count", "1", "--driver-name", "gpu.nvidia.com",
                 "--model", "NVIDIA A100-SXM4-40GB", "--partitions"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DeviceClass"}
    assert sorted(classes) == ["gpu.nvidia.com", "mig.nvidia.com"]
    mig_devices = [d for s in docs if s["kind"] == "ResourceSlice" for d in s["spec"].get("devices") or []
                   if d["attributes"].get("type") == {"string": "mig"}]
    assert mig_devices and "type == 'mig'" in classes["mig.nvidia.com"]["spec"]["selectors"][0]["cel"]["expression"]
    # the plain mock keeps its defaults
    assert main(["driver", "gpu", "--node", "n", "--print-slices", "--count", "1"]) == 0
    (slice_,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d["kind"] == "ResourceSlice"]
    assert slice_["spec"]["devices"][0]["capacity"]["memory"] == {"value": MockGpuConfig.memory}
