"""The mock GPU driver under NVIDIA's name (``gpu.nvidia.com``): devices as NVIDIA's driver
publishes them, its opaque configuration, its DeviceClasses, and the sim-gpus node that runs it.

Upstream references (github.com/NVIDIA/k8s-dra-driver-gpu): cmd/gpu-kubelet-plugin/deviceinfo.go,
mig.go and partitions.go (devices), api/nvidia.com/resource/v1beta1 (config), the helm chart's
templates/deviceclass-*.yaml (classes).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from drasched.api import kinds, validation
from drasched.cel import compile_selector, device_view_from_slice_device
from drasched.node.driver import AllocatedDevice, ClaimRef, ConfigError
from drasched.node.gpu_driver import CONFIG_API_VERSION, DRIVER_NAME, MockGpuConfig, SharingConfig
from drasched.node.nvidia_gpu import (
    NVIDIA_CONFIG_API_VERSION,
    NVIDIA_DRIVER_NAME,
    NvidiaGpuDriver,
    NvidiaSharing,
    architecture,
    brand,
    cuda_driver_version,
    gpu_model,
    model_memory,
    nvidia_device_classes,
    parse_nvidia_config,
)
from drasched.node.plugin import KubeletPlugin
from drasched.node.publisher import SlicePublisher
from drasched.node.sim_drivers import SIM_GPUS_ANNOTATION, parse_sim_gpus
from drasched.node.sim_kubelet import SimulatedKubelet
from tests.unit.controllers.helpers import decisions, new_ctx, settle
from tests.unit.node.helpers import add_claim, result, store_with_node

Obj = dict[str, Any]
A100_40 = "NVIDIA A100-SXM4-40GB"


def driver(model: str = A100_40, count: int = 1, **kwargs: Any) -> NvidiaGpuDriver:
    spec = parse_sim_gpus(f"count={count},driver=gpu.nvidia.com,model={model}")
    cfg = MockGpuConfig(count=count, model=model, memory=spec.memory, compute_capability=spec.compute_capability,
                        mig_capable=spec.mig_capable)
    return NvidiaGpuDriver.mock("n", cfg, **kwargs)


def devices(d: NvidiaGpuDriver) -> dict[str, Obj]:
    return {dev["name"]: dev for dev in d.pools("n")["n"].devices}


# ---- models: architecture, brand, versions --------------------------------------------------------
@pytest.mark.parametrize(("model", "arch", "cc", "memory", "mig"), [
    ("NVIDIA A100-SXM4-40GB", "Ampere", "8.0", "40Gi", True),
    ("NVIDIA A100-PCIE-80GB", "Ampere", "8.0", "80Gi", True),
    ("NVIDIA A100 80GB PCIe", "Ampere", "8.0", "80Gi", True),
    ("NVIDIA A30", "Ampere", "8.0", "24Gi", True),
    ("NVIDIA A10G", "Ampere", "8.6", "24Gi", False),
    ("NVIDIA H100 80GB HBM3", "Hopper", "9.0", "80Gi", True),
    ("NVIDIA H100 NVL", "Hopper", "9.0", "94Gi", True),
    ("NVIDIA H200", "Hopper", "9.0", "141Gi", True),
    ("NVIDIA GH200 480GB", "Hopper", "9.0", "96Gi", True),
    ("NVIDIA B200", "Blackwell", "10.0", "180Gi", True),
    ("NVIDIA GB200", "Blackwell", "10.0", "186Gi", True),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "Blackwell", "12.0", "96Gi", False),
    ("NVIDIA L4", "Ada Lovelace", "8.9", "24Gi", False),
    ("NVIDIA L40S", "Ada Lovelace", "8.9", "48Gi", False),
    ("NVIDIA L40", "Ada Lovelace", "8.9", "48Gi", False),
    ("Tesla T4", "Turing", "7.5", "15Gi", False),
    ("Tesla V100-SXM2-32GB", "Volta", "7.0", "32Gi", False),
    ("Tesla P100-PCIE-16GB", "Pascal", "6.0", "16Gi", False),
])
def test_model_table_names_the_architecture_as_nvml(model: str, arch: str, cc: str, memory: str, mig: bool) -> None:
    """go-nvlib GetArchitectureAsString names; an A100 is Ampere whatever computeCapability says."""
    m = gpu_model(model)
    assert m is not None
    assert (m.architecture, m.compute_capability, model_memory(model), m.mig is not None) == (arch, cc, memory, mig)
    assert architecture(model, "9.0") == arch


def test_unknown_model_takes_the_architecture_from_its_compute_capability() -> None:
    assert gpu_model("NVIDIA Quantum Whatever") is None and model_memory("NVIDIA Quantum Whatever") is None
    assert architecture("NVIDIA Quantum Whatever", "8.0") == "Ampere"
    assert architecture("NVIDIA Quantum Whatever", "8.9") == "Ada Lovelace"
    assert architecture("NVIDIA Quantum Whatever", "10.0") == "Blackwell"
    assert architecture("NVIDIA Quantum Whatever", "3.7") == "Unknown"


@pytest.mark.parametrize(("model", "want"), [
    ("NVIDIA H100 80GB HBM3", "Nvidia"), ("Tesla T4", "Tesla"), ("NVIDIA GeForce RTX 4090", "GeForceRTX"),
    ("NVIDIA GeForce GTX 1080", "GeForce"), ("Quadro RTX 8000", "QuadroRTX"), ("NVIDIA RTX A6000", "NvidiaRTX"),
    ("NVIDIA TITAN V", "Titan"),
])
def test_brand_is_nvmls_brand_string(model: str, want: str) -> None:
    assert brand(model) == want


def test_cuda_driver_version_follows_the_driver_branch() -> None:
    assert cuda_driver_version("550.54.15") == "12.4.0"
    assert cuda_driver_version("535.104.05") == "12.2.0"
    assert cuda_driver_version("572.16") == "12.8.0"
    assert cuda_driver_version("580.65.06") == "13.0.0"
    assert cuda_driver_version("440.33") == "11.0.0"


# ---- devices (deviceinfo.go, mig.go, partitions.go) ------------------------------------------------
def test_gpu_device_has_deviceinfo_go_attributes_and_kinds() -> None:
    (gpu,) = devices(driver(count=1)).values()
    assert gpu["name"] == "gpu-0"
    attrs = gpu["attributes"]
    assert {k: next(iter(v)) for k, v in attrs.items()} == {
        "type": "string", "uuid": "string", "productName": "string", "brand": "string", "architecture": "string",
        "cudaComputeCapability": "version", "driverVersion": "version", "cudaDriverVersion": "version",
        "resource.kubernetes.io/pciBusID": "string", "index": "int", "minor": "int"}
    assert attrs["type"] == {"string": "gpu"} and attrs["uuid"]["string"].startswith("GPU-")
    assert attrs["architecture"] == {"string": "Ampere"} and attrs["brand"] == {"string": "Nvidia"}
    assert attrs["cudaComputeCapability"] == {"version": "8.0.0"}
    assert attrs["driverVersion"] == {"version": "550.54.15"} and attrs["cudaDriverVersion"] == {"version": "12.4.0"}
    assert attrs["resource.kubernetes.io/pciBusID"] == {"string": "0000:07:00.0"}
    assert gpu["capacity"] == {"memory": {"value": "40Gi"}} and "consumesCounters" not in gpu


def test_mig_devices_as_the_partitionable_announcement() -> None:
    d = driver(count=2, partitions=True)
    pool = d.pools("n")["n"]
    by_name = {dev["name"]: dev for dev in pool.devices}
    assert len(by_name) == 2 * 26
    assert Counter(dev["attributes"].get("profile", {}).get("string") for dev in pool.devices
                   if dev["name"].startswith("gpu-0-")) == {
        "1g.5gb": 7, "1g.5gb+me": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1}
    mig = by_name["gpu-1-mig-3g20gb-9-4"]
    parent = by_name["gpu-1"]
    assert mig["attributes"]["type"] == {"string": "mig"} and "uuid" not in mig["attributes"]
    assert mig["attributes"]["parentUUID"] == parent["attributes"]["uuid"]
    assert mig["attributes"]["profile"] == {"string": "3g.20gb"}
    assert mig["capacity"] == {k: {"value": v} for k, v in {
        "multiprocessors": "42", "copyEngines": "3", "decoders": "2", "encoders": "0", "jpegEngines": "0",
        "ofaEngines": "0", "memory": "20Gi"}.items()}
    (consumes,) = mig["consumesCounters"]
    assert consumes["counterSet"] == "gpu-1-counter-set"
    assert consumes["counters"]["copy-engines"] == {"value": "3"}
    assert sorted(k for k in consumes["counters"] if k.startswith("memory-slice")) == [
        f"memory-slice-{i}" for i in (4, 5, 6, 7)]
    assert "gpu-0-mig-1g5gb-me-20-3" in by_name
    sets = {cs["name"]: cs["counters"] for cs in pool.shared_counters}
    assert sorted(sets) == ["gpu-0-counter-set", "gpu-1-counter-set"]
    assert parent["consumesCounters"] == [{"counterSet": "gpu-1-counter-set", "counters": sets["gpu-1-counter-set"]}]
    assert sets["gpu-0-counter-set"]["multiprocessors"] == {"value": "98"}
    assert parent["capacity"]["memory"] == {"value": "40Gi"}
    for s in SlicePublisher(None, NVIDIA_DRIVER_NAME, "n").desired_slices(d.pools("n")):
        validation.validate(s, kinds.for_object(s))


@pytest.mark.parametrize(("model", "profiles"), [
    ("NVIDIA H100 80GB HBM3", ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]),
    ("NVIDIA H200", ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"]),
    ("NVIDIA B200", ["1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"]),
    ("NVIDIA A30", ["1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"]),
    ("NVIDIA L4", []),
])
def test_mig_profiles_are_named_as_nvidia_smi_names_them(model: str, profiles: list[str]) -> None:
    devs = devices(driver(model, partitions=True)).values()
    assert sorted({d["attributes"]["profile"]["string"] for d in devs if d["attributes"]["type"]["string"] == "mig"},
                  key=profiles.index if profiles else None) == profiles


def _fits(pool_devices: dict[str, Obj], totals: Obj, names: list[str]) -> bool:
    used: Counter[str] = Counter()
    for name in names:
        for k, v in pool_devices[name]["consumesCounters"][0]["counters"].items():
            used[k] += int(v["value"].removesuffix("Gi"))
    return all(used[k] <= int(v["value"].removesuffix("Gi")) for k, v in totals.items())


def test_counters_allow_exactly_what_mig_allows() -> None:
    d = driver(partitions=True)
    devs = devices(d)
    totals = d.pools("n")["n"].shared_counters[0]["counters"]
    assert _fits(devs, totals, [f"gpu-0-mig-1g5gb-19-{i}" for i in range(7)])
    assert _fits(devs, totals, ["gpu-0-mig-3g20gb-9-0", "gpu-0-mig-3g20gb-9-4"])
    assert _fits(devs, totals, ["gpu-0-mig-4g20gb-5-0", "gpu-0-mig-3g20gb-9-4"])
    assert _fits(devs, totals, ["gpu-0-mig-1g5gb-19-0", "gpu-0-mig-1g5gb-19-1", "gpu-0-mig-2g10gb-14-2",
                                "gpu-0-mig-3g20gb-9-4"])  # gpu-test4's four devices on one GPU
    assert not _fits(devs, totals, ["gpu-0-mig-4g20gb-5-0", "gpu-0-mig-3g20gb-9-0"])  # overlapping placements
    assert not _fits(devs, totals, ["gpu-0-mig-1g5gb-me-20-0", "gpu-0-mig-1g5gb-me-20-1"])  # one set of media engines
    assert not _fits(devs, totals, ["gpu-0", "gpu-0-mig-1g5gb-19-6"])  # the whole GPU or its MIG devices


def test_partitions_on_a_gpu_without_mig_publish_whole_gpus_only() -> None:
    for d in (driver("NVIDIA L4", partitions=True),
              NvidiaGpuDriver.mock("n", MockGpuConfig(count=1, model=A100_40, memory="40Gi", mig_capable=False),
                                   partitions=True)):
        pool = d.pools("n")["n"]
        assert [dev["name"] for dev in pool.devices] == ["gpu-0"] and pool.shared_counters == []


def test_shared_is_consumable_shares_memory() -> None:
    gpu = devices(driver(count=1, shared=True))["gpu-0"]
    assert gpu["allowMultipleAllocations"] is True
    assert gpu["capacity"]["memory"]["requestPolicy"] == {"default": "40Gi",
                                                          "validRange": {"min": "1Mi", "step": "1Mi"}}


# ---- opaque configuration (api/nvidia.com/resource/v1beta1) ------------------------------------------
def _gpu(**sharing: Any) -> Obj:
    return {"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": "GpuConfig", "sharing": sharing}


def _mig(**sharing: Any) -> Obj:
    return {"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": "MigDeviceConfig", "sharing": sharing}


@pytest.mark.parametrize(("params", "parsed"), [
    ({"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": "GpuConfig"}, NvidiaSharing("GpuConfig")),
    (_gpu(strategy="TimeSlicing", timeSlicingConfig={"interval": "Long"}),
     NvidiaSharing("GpuConfig", "TimeSlicing", interval="Long")),
    (_gpu(strategy="TimeSlicing"), NvidiaSharing("GpuConfig", "TimeSlicing", interval="Default")),  # Normalize
    (_gpu(strategy="TimeSlicing", timeSlicingConfig={}), NvidiaSharing("GpuConfig", "TimeSlicing", interval="Default")),
    (_gpu(strategy="MPS"), NvidiaSharing("GpuConfig", "MPS")),
    (_gpu(strategy="MPS", mpsConfig={"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "10Gi",
                                     "defaultPerDevicePinnedMemoryLimit": {"0": "2Gi", "GPU-abc": 512 * 1024**2}}),
     NvidiaSharing("GpuConfig", "MPS", active_thread_percentage=50, pinned_memory_limit="10240M",
                   per_device_pinned_limits=(("0", "2048M"), ("GPU-abc", "512M")))),
    (_mig(strategy="TimeSlicing"), NvidiaSharing("MigDeviceConfig", "TimeSlicing")),
    (_mig(strategy="MPS", mpsConfig={"defaultActiveThreadPercentage": 0}),
     NvidiaSharing("MigDeviceConfig", "MPS", active_thread_percentage=0)),
])
def test_nvidia_config_accepts_and_normalizes(params: Obj, parsed: NvidiaSharing) -> None:
    assert parse_nvidia_config(params) == parsed


@pytest.mark.parametrize(("params", "message"), [
    ("x", "parameters must be an object"),
    ({"apiVersion": "gpu.nvidia.com/v1alpha1", "kind": "GpuConfig"},
     "apiVersion must be 'resource.nvidia.com/v1beta1'"),
    ({"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": "ImexChannelConfig"},
     "kind must be GpuConfig or MigDeviceConfig, not 'ImexChannelConfig'"),
    ({"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": "ComputeDomainChannelConfig"},
     "configuration of driver compute-domain.nvidia.com"),
    ({"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": "VfioDeviceConfig"}, "PassthroughSupport"),
    ({"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": "GpuConfig", "metadata": {}},
     'strict decoding error: unknown field "metadata"'),
    (_gpu(strategy="TimeSlicing", timeslicingConfig={"interval": "Long"}),
     'strict decoding error: unknown field "sharing.timeslicingConfig"'),
    (_gpu(strategy="TimeSlicing", timeSlicingConfig={"interval": "Long", "period": 3}),
     'unknown field "sharing.timeSlicingConfig.period"'),
    (_mig(strategy="TimeSlicing", timeSlicingConfig={"interval": "Long"}),
     'unknown field "sharing.timeSlicingConfig"'),
    (_gpu(strategy="MPS", mpsConfig={"activeThreadPercentage": 5}), 'unknown field "sharing.mpsConfig.activeThread'),
    (_gpu(strategy="Magic"), "sharing.strategy: unknown GPU sharing strategy: 'Magic'"),
    (_gpu(), "sharing.strategy: unknown GPU sharing strategy: ''"),
    (_gpu(strategy="Fabric"), "sharing.strategy: fabric GPU sharing strategy is not enabled"),
    (_gpu(strategy=3), "sharing.strategy must be a string, not 3"),
    ({"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": "GpuConfig", "sharing": "TimeSlicing"},
     "sharing must be an object, not str"),
    (_gpu(strategy="TimeSlicing", timeSlicingConfig={"interval": "Forever"}),
     "sharing.timeSlicingConfig.interval: unknown time-slice interval: Forever (one of Default, Short, Medium, Long)"),
    (_gpu(strategy="TimeSlicing", timeSlicingConfig={"interval": 5}),
     "sharing.timeSlicingConfig.interval must be a string, not 5"),
    (_gpu(strategy="TimeSlicing", mpsConfig={}), "sharing.mpsConfig: cannot use MpsConfig with the 'TimeSlicing'"),
    (_gpu(strategy="MPS", timeSlicingConfig={}), "sharing.timeSlicingConfig: cannot use TimeSlicingConfig with the "
                                                 "'MPS' strategy"),
    (_gpu(strategy="MPS", mpsConfig={"defaultActiveThreadPercentage": 101}),
     "sharing.mpsConfig.defaultActiveThreadPercentage: active thread percentage must not be greater than 100"),
    (_gpu(strategy="MPS", mpsConfig={"defaultActiveThreadPercentage": -1}), "must not be negative"),
    (_gpu(strategy="MPS", mpsConfig={"defaultActiveThreadPercentage": 50.5}),
     "defaultActiveThreadPercentage must be an integer, not 50.5"),
    (_gpu(strategy="MPS", mpsConfig={"defaultActiveThreadPercentage": True}), "must be an integer, not True"),
    (_gpu(strategy="MPS", mpsConfig={"defaultPinnedDeviceMemoryLimit": "100Ki"}),
     "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: invalid limit: default value set too low: 100Ki"),
    (_gpu(strategy="MPS", mpsConfig={"defaultPinnedDeviceMemoryLimit": "lots"}),
     "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: "),
    (_gpu(strategy="MPS", mpsConfig={"defaultPerDevicePinnedMemoryLimit": {"first": "1Gi"}}),
     "defaultPerDevicePinnedMemoryLimit[first]: invalid device: unable to parse key as an integer: first"),
    (_gpu(strategy="MPS", mpsConfig={"defaultPerDevicePinnedMemoryLimit": {"0": "1Ki"}}),
     "defaultPerDevicePinnedMemoryLimit[0]: invalid limit: value set too low: 0:"),
])
def test_nvidia_config_refuses_naming_the_field(params: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_nvidia_config(params)
    assert message in str(info.value)


def test_driver_keeps_the_mocks_own_config() -> None:
    d = driver()
    params = {"apiVersion": CONFIG_API_VERSION, "kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing"}}
    assert d.validate_config(params) == SharingConfig("TimeSlicing", interval="Default")
    assert d.validate_config(_gpu(strategy="MPS")) == NvidiaSharing("GpuConfig", "MPS")


# ---- prepare ---------------------------------------------------------------------------------------
def _allocated(d: NvidiaGpuDriver, name: str, config: Any = None, request: str = "gpu") -> AllocatedDevice:
    return AllocatedDevice(request=request, pool="n", device=name, published=devices(d)[name], config=config)


def test_prepare_gpu_with_time_slicing_and_mps() -> None:
    d = driver(count=2, partitions=True)
    ref = ClaimRef("default", "uid-1", "c")
    uuid0 = devices(d)["gpu-0"]["attributes"]["uuid"]["string"]
    edits = d.prepare(ref, _allocated(d, "gpu-0", parse_nvidia_config(_gpu(strategy="TimeSlicing",
                                                                           timeSlicingConfig={"interval": "Long"}))))
    assert edits.env == {"GPU_DEVICE_0": uuid0, "GPU_DEVICE_0_SHARING_STRATEGY": "TimeSlicing",
                         "GPU_DEVICE_0_TIMESLICE_INTERVAL": "Long"}
    mps = parse_nvidia_config(_gpu(strategy="MPS", mpsConfig={
        "defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "10Gi"}))
    edits = d.prepare(ref, _allocated(d, "gpu-1", mps))
    assert edits.env["GPU_DEVICE_1_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert edits.env["GPU_DEVICE_1_MPS_PINNED_DEVICE_MEMORY_LIMIT"] == "10240M"
    assert d.prepared == {"uid-1": ["gpu-0", "gpu-1"]}


def test_prepare_mig_device_gets_its_own_uuid_and_profile() -> None:
    d = driver(partitions=True)
    ref = ClaimRef("default", "uid-2", "c")
    parent = devices(d)["gpu-0"]["attributes"]["uuid"]["string"]
    edits = d.prepare(ref, _allocated(d, "gpu-0-mig-2g10gb-14-2", parse_nvidia_config(_mig(strategy="MPS"))))
    key = "GPU_DEVICE_0_MIG_2G10GB_14_2"
    assert edits.env[key].startswith("MIG-") and edits.env[f"{key}_PARENT_UUID"] == parent
    assert edits.env[f"{key}_MIG_PROFILE"] == "2g.10gb" and edits.env[f"{key}_SHARING_STRATEGY"] == "MPS"
    assert edits.env == d.prepare(ref, _allocated(d, "gpu-0-mig-2g10gb-14-2",
                                                  parse_nvidia_config(_mig(strategy="MPS")))).env  # idempotent


@pytest.mark.parametrize(("device", "params", "message"), [
    ("gpu-0-mig-1g5gb-19-0", _gpu(strategy="TimeSlicing"),
     "cannot apply GpuConfig to device 'gpu-0-mig-1g5gb-19-0' of type 'mig' (request: gpu)"),
    ("gpu-0", _mig(strategy="MPS"), "cannot apply MigDeviceConfig to device 'gpu-0' of type 'gpu' (request: gpu)"),
])
def test_config_of_the_wrong_kind_fails_prepare(device: str, params: Obj, message: str) -> None:
    d = driver(partitions=True)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        d.prepare(ClaimRef("default", "u", "c"), _allocated(d, device, parse_nvidia_config(params)))


def _prepare_with(results: list[tuple[str, str]], config: list[Obj]) -> tuple[str, dict[str, list[str]]]:
    """Prepare one claim (``(request, device)`` results, ``config`` as the allocator wrote it) through
    the kit on a fresh node; return its error and each device's sharing env."""
    store = store_with_node("n")
    plugin = KubeletPlugin(store, driver(count=2, partitions=True), "n")
    ref = add_claim(store, "c", [result(dev, request=req, pool="n", driver=NVIDIA_DRIVER_NAME)
                                 for req, dev in results], config=config)
    answer = plugin.node_prepare_resources([ref])[ref.uid]
    spec = plugin.cdi.specs.get(ref.uid) or {"devices": []}
    envs = [sorted(e for e in d["containerEdits"].get("env") or [] if "_SHARING_STRATEGY=" in e)
            for d in spec["devices"]]
    return answer.error, dict(zip([dev for _, dev in results], envs, strict=False))


def _cfg(source: str, params: Obj, requests: list[str] | None = None) -> Obj:
    return {"source": source, **({"requests": requests} if requests else {}),
            "opaque": {"driver": NVIDIA_DRIVER_NAME, "parameters": params}}


MIG0 = "gpu-0-mig-1g5gb-19-0"


@pytest.mark.parametrize(("results", "config", "error", "env"), [
    # A class that selects GPUs and MIG devices alike, with a GpuConfig: the allocator drops the
    # requests of a config whose class serves every request, so it names none and a MIG device
    # passes it over (the driver's default MigDeviceConfig: no sharing); a full GPU gets it.
    ([("gpu", MIG0)], [_cfg("FromClass", _gpu(strategy="TimeSlicing"))], "", {MIG0: []}),
    ([("gpu", "gpu-0")], [_cfg("FromClass", _gpu(strategy="TimeSlicing"))], "",
     {"gpu-0": ["GPU_DEVICE_0_SHARING_STRATEGY=TimeSlicing"]}),
    ([("gpu", "gpu-0")], [_cfg("FromClass", _mig(strategy="MPS"))], "", {"gpu-0": []}),
    # Passed over, the config below it applies: the claim's MigDeviceConfig for the MIG device,
    # the class's GpuConfig for the GPU.
    ([("a", "gpu-1"), ("b", MIG0)],
     [_cfg("FromClass", _gpu(strategy="TimeSlicing")), _cfg("FromClaim", _mig(strategy="MPS"))], "",
     {"gpu-1": ["GPU_DEVICE_1_SHARING_STRATEGY=TimeSlicing"],
      MIG0: ["GPU_DEVICE_0_MIG_1G5GB_19_0_SHARING_STRATEGY=MPS"]}),
    # A config that names the request must fit: from the claim, or from a class that serves only
    # some of the claim's requests (the allocator keeps the class config's requests then).
    ([("gpu", MIG0)], [_cfg("FromClaim", _gpu(strategy="TimeSlicing"), ["gpu"])],
     f"cannot apply GpuConfig to device '{MIG0}' of type 'mig' (request: gpu)", {}),
    ([("gpu", MIG0), ("other", "gpu-1")], [_cfg("FromClass", _gpu(strategy="TimeSlicing"), ["gpu"])],
     f"cannot apply GpuConfig to device '{MIG0}' of type 'mig' (request: gpu)", {}),
    ([("gpu", "gpu-0")], [_cfg("FromClass", _mig(strategy="MPS"), ["gpu"])],
     "cannot apply MigDeviceConfig to device 'gpu-0' of type 'gpu' (request: gpu)", {}),
], ids=["class-gpuconfig-skips-mig", "class-gpuconfig-applies-to-gpu", "class-migconfig-skips-gpu",
        "skipped-falls-through", "claim-naming-request-fails", "class-naming-request-fails",
        "class-migconfig-naming-request-fails"])
def test_a_config_of_another_kind_is_skipped_unless_it_names_the_request(
        results: list[tuple[str, str]], config: list[Obj], error: str, env: dict[str, list[str]]) -> None:
    """NVIDIA's prepareDevices (github.com/NVIDIA/k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin/
    device_state.go): configs in precedence order (GetOpaqueDeviceConfigs: class, then claim; the
    default GpuConfig and MigDeviceConfig lowest), walked from the highest; one whose Requests
    contain the device's request applies, and fails the claim with ``cannot apply GpuConfig to
    device ...`` when of the other kind; one with no Requests of the other kind is passed over
    (``continue``). The source does not matter by itself: a DeviceClass's config names no request
    when the allocator dropped its list for covering every request of the claim
    (dynamic-resource-allocation/structured allocator: "empty means all")."""
    got_error, got_env = _prepare_with(results, config)
    assert got_error.endswith(error) if error else got_error == ""
    if not error:
        assert got_env == env


# ---- DeviceClasses (helm chart templates/deviceclass-*.yaml) ----------------------------------------
def test_chart_device_classes_select_gpus_and_mig_devices() -> None:
    gpu_class, mig_class = nvidia_device_classes()
    assert gpu_class["metadata"]["name"] == "gpu.nvidia.com" and mig_class["metadata"]["name"] == "mig.nvidia.com"
    assert gpu_class["spec"]["extendedResourceName"] == "nvidia.com/gpu" and "extendedResourceName" not in mig_class
    devs = list(devices(driver(count=2, partitions=True)).values())
    for cls in (gpu_class, mig_class):
        validation.validate(cls, kinds.DEVICE_CLASS)

    def chosen(cls: Obj) -> list[str]:
        sel = compile_selector(cls["spec"]["selectors"][0]["cel"]["expression"])
        return [dev["name"] for dev in devs if sel.evaluate(device_view_from_slice_device(NVIDIA_DRIVER_NAME, dev))]

    assert chosen(gpu_class) == ["gpu-0", "gpu-1"]
    assert len(chosen(mig_class)) == 50 and not {"gpu-0", "gpu-1"} & set(chosen(mig_class))


# ---- the sim-gpus node -----------------------------------------------------------------------------
def test_annotation_takes_memory_compute_capability_and_mig_from_the_model() -> None:
    spec = parse_sim_gpus("count=4,driver=gpu.nvidia.com,model=NVIDIA A100-SXM4-40GB")
    assert (spec.memory, spec.compute_capability, spec.mig_capable) == ("40Gi", "8.0", True)
    spec = parse_sim_gpus("driver=gpu.nvidia.com,model=Tesla T4,memory=16Gi,computeCapability=7.5,migCapable=true")
    assert (spec.memory, spec.compute_capability, spec.mig_capable) == ("16Gi", "7.5", True)  # given keys win
    assert isinstance(spec.driver("n"), NvidiaGpuDriver)
    # The default driver reads the model alike (an A100 is no Hopper), and stays the plain mock.
    plain = parse_sim_gpus("model=NVIDIA A100-SXM4-40GB")
    assert (plain.driver_name, plain.memory, plain.compute_capability) == (DRIVER_NAME, "40Gi", "8.0")
    assert not isinstance(plain.driver("n"), NvidiaGpuDriver)
    # a model the table does not know keeps the mock's defaults
    other = parse_sim_gpus("model=Acme X1")
    assert (other.memory, other.compute_capability) == ("80Gi", "9.0")


def _node(ctx: Any, name: str, spec: str) -> None:
    ctx.store.restore({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": name, "annotations": {SIM_GPUS_ANNOTATION: spec}}})


def test_node_installs_the_charts_classes_once_and_keeps_the_users() -> None:
    ctx = new_ctx()
    mine = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}
    ctx.store.restore(mine)
    _node(ctx, "a", "count=2,driver=gpu.nvidia.com,model=NVIDIA A100-SXM4-40GB,partitions")
    _node(ctx, "b", "count=1,driver=gpu.nvidia.com,model=NVIDIA H100 80GB HBM3")
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    classes = {c["metadata"]["name"]: c for c in ctx.store.list(kinds.DEVICE_CLASS).items}
    assert sorted(classes) == ["gpu.nvidia.com", "mig.nvidia.com"]
    assert classes["gpu.nvidia.com"]["spec"] == mine["spec"]  # the user's, untouched
    assert [d.object for d in decisions(ctx, "create-device-class")] == ["DeviceClass/mig.nvidia.com"]
    (kept,) = decisions(ctx, "keep-device-class")
    assert kept.object == "DeviceClass/gpu.nvidia.com" and "kept as written" in kept.message
    starts = {d.object: d.message for d in decisions(ctx, "start-driver")}
    assert starts["Node/a"] == ("driver gpu.nvidia.com publishes 2 mock GPU(s) (NVIDIA A100-SXM4-40GB, 40Gi) "
                                "with their MIG devices (partitionable)")
    assert kubelet.registry.drivers("a") == [NVIDIA_DRIVER_NAME]
    # Deleted afterwards: not recreated (as a class a chart installed and a user then deleted).
    ctx.store.delete(kinds.DEVICE_CLASS, "mig.nvidia.com")
    _node(ctx, "c", "count=1,driver=gpu.nvidia.com")
    settle(ctx, [kubelet])
    assert [c["metadata"]["name"] for c in ctx.store.list(kinds.DEVICE_CLASS).items] == ["gpu.nvidia.com"]


def test_default_driver_node_installs_no_classes() -> None:
    ctx = new_ctx()
    _node(ctx, "a", "count=1")
    settle(ctx, [SimulatedKubelet()])
    assert ctx.store.list(kinds.DEVICE_CLASS).items == [] and decisions(ctx, "create-device-class") == []
