"""The mock GPU driver under NVIDIA's name: what ``gpu.nvidia.com`` publishes and accepts.

A node annotated ``drasched.io/sim-gpus: "driver=gpu.nvidia.com,..."`` (see
:mod:`drasched.node.sim_drivers`) runs :class:`NvidiaGpuDriver`, which stands in for the GPU
kubelet plugin of NVIDIA's DRA driver (github.com/NVIDIA/k8s-dra-driver-gpu, now
kubernetes-sigs/dra-driver-nvidia-gpu), so NVIDIA's published examples
(``demo/specs/quickstart/v1/gpu-test*.yaml``) run unchanged. What it models, and from where:

**Devices** (``cmd/gpu-kubelet-plugin/deviceinfo.go``, ``mig.go``, ``partitions.go``).
A GPU is ``gpu-<minor>`` with attributes ``type`` (``gpu``), ``uuid``, ``productName``,
``brand``, ``architecture`` (strings), ``cudaComputeCapability``, ``driverVersion``,
``cudaDriverVersion`` (versions), the standard ``resource.kubernetes.io/pciBusID``, and
capacity ``memory``. ``index`` and ``minor`` (ints) are published too: the current driver
dropped them, but its own ``gpu-test6.yaml`` and older releases select on ``index``, and an
extra attribute changes no other selector. Left out: ``resource.kubernetes.io/pcieRoot``
and ``numaNode`` (the mock has no PCIe topology to report) and ``addressingMode`` (only on
ATS/HMM platforms).

* ``architecture`` comes from the model, as NVML names it (go-nvlib
  ``GetArchitectureAsString``): A100/A30/A10/RTX 30xx -> Ampere, H100/H200/GH200 -> Hopper,
  B200/GB200/B300 and RTX PRO Blackwell -> Blackwell, L4/L40 -> Ada Lovelace, T4 ->
  Turing, V100 -> Volta, P100/P40 -> Pascal (:data:`MODELS`). A model the table does not
  know takes it from ``computeCapability`` (NVML's architecture and compute capability
  always agree); the simulation's annotation derives ``computeCapability``, ``memory`` and
  ``migCapable`` from the model the same way when they are not given.
* ``brand`` is NVML's brand string (go-nvlib ``GetBrandAsString``): ``Nvidia`` for data
  center parts, ``Tesla`` for ``Tesla ...`` names, ``GeForce``/``GeForceRTX``/``NvidiaRTX``...
* ``cudaDriverVersion`` is the CUDA version the driver branch ships (550 -> 12.4.0,
  570 -> 12.8.0: :data:`CUDA_BY_DRIVER_BRANCH`).

**MIG** (``partitions`` on a MIG-capable model): the driver's partitionable ("DynamicMIG")
announcement. Beside each GPU, every placement of every MIG profile is a device
``gpu-<minor>-mig-<profile without dots>-<GI profile id>-<placement start>`` (``1g.5gb+me``
-> ``1g5gb-me``) with attributes ``type`` (``mig``), ``parentUUID``, ``profile``
(``1g.10gb``) and the parent's ``productName``, ``brand``, ``architecture``, versions and
``resource.kubernetes.io/pciBusID``; capacity ``multiprocessors``, ``copyEngines``,
``decoders``, ``encoders``, ``jpegEngines``, ``ofaEngines``, ``memory``. One counter set per
GPU, ``gpu-<minor>-counter-set``, holds one counter per capacity (DNS names:
``copy-engines``...) at the largest profile's value plus ``memory-slice-0..7`` (1 each);
the GPU consumes all of it, a MIG device its capacities plus the memory slices of its
placement, so the allocator hands out exactly the combinations MIG allows (two ``3g``
devices, or ``4g`` beside ``3g``, never a placement overlapping another, never the GPU
beside any of them). Profiles and placements are those of ``nvidia-smi mig -lgipp``
(A100/H100/H200/GH200/B200/GB200: 7 compute and 8 memory slices, profile ids 19, 20, 15,
14, 9, 5, 0; A30: 4 and 4, ids 14, 21, 5, 6, 0); profile memory is the model's memory in
eighths (quarters on A30), named as nvidia-smi rounds it (``1g.18gb`` on H200); SM counts
per slice follow the architecture (:data:`SMS_BY_ARCH`) and engine counts A100's; both are
approximations that only bound how many devices fit. Static MIG (a GPU already split by
mig-parted, only its MIG devices published) is not modeled. ``shared`` gives whole GPUs
``allowMultipleAllocations`` with consumable ``memory`` as the driver's
``--consumable-shares=memory`` does (default the whole memory, steps of 1Mi).

**Opaque configuration** (``api/nvidia.com/resource/v1beta1``: ``gpuconfig.go``,
``migconfig.go``, ``sharing.go``, ``validate.go``; ``device_state.go`` ``prepareDevices``).
``apiVersion: resource.nvidia.com/v1beta1`` with ``kind: GpuConfig`` (``sharing``:
``strategy``, ``timeSlicingConfig.interval``, ``mpsConfig``) or ``kind: MigDeviceConfig``
(``sharing``: ``strategy``, ``mpsConfig``), decoded strictly: an unknown field anywhere is
refused (``StrictDecoder``), as are wrong value types. Strategies ``TimeSlicing`` and
``MPS`` (the driver's ``TimeSlicingSettings`` and ``MPSSupport`` feature gates are taken as
enabled, as its examples need them); ``Fabric`` is refused as not enabled, anything else as
unknown. Intervals ``Default``, ``Short``, ``Medium``, ``Long`` (``Default`` when
``timeSlicingConfig`` is left out); ``mpsConfig`` with the TimeSlicing strategy or
``timeSlicingConfig`` with MPS is refused; ``defaultActiveThreadPercentage`` is 0..100;
``defaultPinnedDeviceMemoryLimit`` and ``defaultPerDevicePinnedMemoryLimit`` values are
quantities of at least 1Mi (normalized to ``<N>M`` as the driver hands them to MPS), the
per-device keys a device UUID or index. Which config a device gets follows ``prepareDevices``:
the highest in precedence (claim configs over class configs, later over earlier, the driver's
defaults lowest) that names the device's request or names none. A ``GpuConfig`` on a MIG device
or a ``MigDeviceConfig`` on a GPU that names the request fails the claim (``cannot apply
GpuConfig to device ...``); one that names no request is skipped for that device
(:meth:`NvidiaGpuDriver.config_applies`) and the next one down applies. A config names no request
when the claim's config lists none, or, for a DeviceClass's config (``FromClass``), when the
allocator dropped the list because the class serves every request of the claim: a class that
selects both GPUs and MIG devices may carry a ``GpuConfig`` for its GPUs without failing the
claims that get a MIG device from it. The mock's own ``gpu.drasched.io/v1alpha1`` ``GpuConfig``
is accepted as well (a drasched extension). A bad config fails the claim at prepare time with a
message naming the field.

**DeviceClasses** (``deployments/helm/.../templates/deviceclass-gpu.yaml``,
``deviceclass-mig.yaml``): :func:`nvidia_device_classes` are the chart's ``gpu.nvidia.com``
(``type == 'gpu'``, ``extendedResourceName: nvidia.com/gpu`` as the chart renders it for
``resource.k8s.io/v1``) and ``mig.nvidia.com`` (``type == 'mig'``). The compute-domain
classes belong to the ``compute-domain.nvidia.com`` driver, which is not simulated.

Device health (KEP-4680): NVIDIA's driver serves DRAResourceHealth only with its
``NVMLDeviceHealthCheck`` feature gate (alpha, off by default; ``docs`` "GPU health checking"), so
this stand-in serves none and the kubelet shows its devices ``Unknown``
(:mod:`drasched.node.resource_health`).
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass
from typing import Any

from drasched.node.cdi import ContainerEdits
from drasched.node.driver import AllocatedDevice, ClaimRef, ConfigError, PoolSpec
from drasched.node.gpu_driver import (
    CONFIG_API_VERSION as MOCK_CONFIG_API_VERSION,
)
from drasched.node.gpu_driver import (
    GI,
    MI,
    GpuDriver,
    GpuInfo,
    format_bytes,
    parse_gpu_config,
    semver,
)
from drasched.quantity import Quantity, QuantityError

Obj = dict[str, Any]

NVIDIA_DRIVER_NAME = "gpu.nvidia.com"
NVIDIA_CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"
GPU_CONFIG_KIND = "GpuConfig"
MIG_CONFIG_KIND = "MigDeviceConfig"
STANDARD_ATTRIBUTE_PREFIX = "resource.kubernetes.io/"
PCI_BUS_ID_ATTRIBUTE = STANDARD_ATTRIBUTE_PREFIX + "pciBusID"
TIME_SLICE_INTERVALS = ("Default", "Short", "Medium", "Long")
SHARING_STRATEGIES = ("TimeSlicing", "MPS")


# ---------------------------------------------------------------------------- MIG geometry


@dataclass(frozen=True)
class MigProfile:
    """One GPU instance profile (``nvidia-smi mig -lgip``) and its placements (``-lgipp``)."""

    profile_id: int
    compute_slices: int
    memory_slices: int
    starts: tuple[int, ...]
    decoders: int = 0
    jpeg_engines: int = 0
    ofa_engines: int = 0
    media_extensions: bool = False
    """``+me``: the profile that also gets the JPEG and OFA engines."""


@dataclass(frozen=True)
class MigGeometry:
    memory_slice_count: int
    profiles: tuple[MigProfile, ...]


# A100, H100, H200, GH200, B200, GB200: 7 compute slices, 8 memory slices. Engine counts are
# A100's (NVIDIA's MIG user guide, "Supported MIG Profiles").
MIG_7X8 = MigGeometry(8, (
    MigProfile(19, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
    MigProfile(20, 1, 1, (0, 1, 2, 3, 4, 5, 6), decoders=1, jpeg_engines=1, ofa_engines=1, media_extensions=True),
    MigProfile(15, 1, 2, (0, 2, 4, 6), decoders=1),
    MigProfile(14, 2, 2, (0, 2, 4), decoders=1),
    MigProfile(9, 3, 4, (0, 4), decoders=2),
    MigProfile(5, 4, 4, (0,), decoders=2),
    MigProfile(0, 7, 8, (0,), decoders=5, jpeg_engines=1, ofa_engines=1),
))
# A30: 4 compute slices, 4 memory slices.
MIG_A30 = MigGeometry(4, (
    MigProfile(14, 1, 1, (0, 1, 2, 3)),
    MigProfile(21, 1, 1, (0, 1, 2, 3), decoders=1, jpeg_engines=1, ofa_engines=1, media_extensions=True),
    MigProfile(5, 2, 2, (0, 2), decoders=1),
    MigProfile(6, 2, 2, (0, 2), decoders=1, jpeg_engines=1, ofa_engines=1, media_extensions=True),
    MigProfile(0, 4, 4, (0,), decoders=4, jpeg_engines=1, ofa_engines=1),
))

SMS_BY_ARCH: dict[str, dict[int, int]] = {
    "Ampere": {1: 14, 2: 28, 3: 42, 4: 56, 7: 98},
    "Hopper": {1: 16, 2: 32, 3: 60, 4: 64, 7: 132},
    "Blackwell": {1: 18, 2: 36, 3: 54, 4: 72, 7: 148},
}
"""Multiprocessors of a MIG device by compute slices (``nvidia-smi mig -lgip``; Blackwell approximate)."""


# ---------------------------------------------------------------------------- models


@dataclass(frozen=True)
class GpuModel:
    """What NVML reports for a product: architecture, compute capability, memory, MIG."""

    architecture: str
    compute_capability: str
    memory_gi: int
    mig: MigGeometry | None = None
    memory_in_name: bool = False
    """The product name carries the memory size (``NVIDIA A100-SXM4-40GB``)."""


MODELS: tuple[tuple[re.Pattern[str], GpuModel], ...] = tuple((re.compile(p, re.IGNORECASE), m) for p, m in (
    (r"\bGB300\b|\bB300\b", GpuModel("Blackwell", "10.3", 288)),
    (r"\bGB200\b", GpuModel("Blackwell", "10.0", 186, MIG_7X8)),
    (r"\bB200\b", GpuModel("Blackwell", "10.0", 180, MIG_7X8)),
    (r"\bRTX PRO \d+ Blackwell\b|\bRTX 50\d0\b", GpuModel("Blackwell", "12.0", 96, memory_in_name=True)),
    (r"\bGH200\b.*\b144G", GpuModel("Hopper", "9.0", 144, MIG_7X8)),
    (r"\bGH200\b", GpuModel("Hopper", "9.0", 96, MIG_7X8)),
    (r"\bH200\b", GpuModel("Hopper", "9.0", 141, MIG_7X8)),
    (r"\bH[18]00 NVL\b", GpuModel("Hopper", "9.0", 94, MIG_7X8)),
    (r"\bH[18]00\b", GpuModel("Hopper", "9.0", 80, MIG_7X8, memory_in_name=True)),
    (r"\bH20\b", GpuModel("Hopper", "9.0", 96, MIG_7X8)),
    (r"\bA[18]00\b", GpuModel("Ampere", "8.0", 40, MIG_7X8, memory_in_name=True)),
    (r"\bA30\b", GpuModel("Ampere", "8.0", 24, MIG_A30)),
    (r"\bA40\b|\bA6000\b", GpuModel("Ampere", "8.6", 48)),
    (r"\bA10G?\b|\bA5000\b", GpuModel("Ampere", "8.6", 24)),
    (r"\bA16\b|\bA2\b|\bA4000\b", GpuModel("Ampere", "8.6", 16)),
    (r"\bRTX 30\d0", GpuModel("Ampere", "8.6", 24, memory_in_name=True)),
    (r"\bL40S?\b|\bL20\b|\bRTX \d+ Ada\b", GpuModel("Ada Lovelace", "8.9", 48)),
    (r"\bL4\b", GpuModel("Ada Lovelace", "8.9", 24)),
    (r"\bRTX 40\d0", GpuModel("Ada Lovelace", "8.9", 24, memory_in_name=True)),
    (r"\bT4\b", GpuModel("Turing", "7.5", 15)),
    (r"\bRTX 20\d0|\bTITAN RTX\b|\bQuadro RTX\b", GpuModel("Turing", "7.5", 24, memory_in_name=True)),
    (r"\bV100\b", GpuModel("Volta", "7.0", 16, memory_in_name=True)),
    (r"\bP100\b", GpuModel("Pascal", "6.0", 16, memory_in_name=True)),
    (r"\bP40\b", GpuModel("Pascal", "6.1", 24)),
    (r"\bP4\b", GpuModel("Pascal", "6.1", 8)),
))
"""Product name -> model, first match wins (go-nvml's mock devices and NVIDIA's data sheets)."""

_MEMORY_IN_NAME = re.compile(r"(\d+)\s*GB\b", re.IGNORECASE)


def gpu_model(product_name: str) -> GpuModel | None:
    """The model a product name names, or None when the table does not know it."""
    for pattern, model in MODELS:
        if pattern.search(product_name):
            return model
    return None


def model_memory(product_name: str) -> str | None:
    """The memory NVML reports for a known model (``NVIDIA A100-SXM4-80GB`` -> ``80Gi``)."""
    model = gpu_model(product_name)
    if model is None:
        return None
    if model.memory_in_name:
        m = _MEMORY_IN_NAME.search(product_name)
        if m:
            return f"{int(m.group(1))}Gi"
    return f"{model.memory_gi}Gi"


def architecture(product_name: str, compute_capability: str) -> str:
    """NVML's architecture name: from the model when known, else from the compute capability."""
    model = gpu_model(product_name)
    if model is not None:
        return model.architecture
    return GpuInfo(0, "", product_name, 0, compute_capability, False).architecture


def brand(product_name: str) -> str:
    """NVML's brand string (go-nvlib ``GetBrandAsString``) for a product name."""
    name = product_name.upper()
    for needle, value in (("GEFORCE RTX", "GeForceRTX"), ("GEFORCE", "GeForce"), ("QUADRO RTX", "QuadroRTX"),
                          ("QUADRO", "Quadro"), ("TITAN RTX", "TitanRTX"), ("TITAN", "Titan")):
        if needle in name:
            return value
    if name.startswith("TESLA"):
        return "Tesla"
    if re.search(r"\bRTX\b", name):
        return "NvidiaRTX"
    return "Nvidia"


CUDA_BY_DRIVER_BRANCH: tuple[tuple[int, str], ...] = (
    (450, "11.0"), (455, "11.1"), (460, "11.2"), (465, "11.3"), (470, "11.4"), (495, "11.5"), (510, "11.6"),
    (515, "11.7"), (520, "11.8"), (525, "12.0"), (530, "12.1"), (535, "12.2"), (545, "12.3"), (550, "12.4"),
    (555, "12.5"), (560, "12.6"), (565, "12.7"), (570, "12.8"), (575, "12.9"), (580, "13.0"),
)
"""Driver branch -> the CUDA driver API version it ships (NVIDIA's CUDA release notes, table 3)."""


def cuda_driver_version(driver_version: str) -> str:
    """``cudaDriverVersion`` for a driver version: the newest branch at or below its major."""
    major = int(semver(driver_version).split(".", 1)[0])
    cuda = CUDA_BY_DRIVER_BRANCH[0][1]
    for branch, version in CUDA_BY_DRIVER_BRANCH:
        if branch <= major:
            cuda = version
    return semver(cuda)


def pci_bus_id(index: int) -> str:
    """A deterministic PCI bus ID as go-nvlib formats it (``0000:07:00.0``), one bus per GPU."""
    return f"{index // 16:04x}:{(index % 16) * 16 + 7:02x}:00.0"


# ---------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class NvidiaSharing:
    """A decoded, normalized and validated ``GpuConfig`` or ``MigDeviceConfig``."""

    kind: str
    strategy: str = ""
    """``TimeSlicing``, ``MPS``, or empty: no sharing (the device is the claim's alone)."""
    interval: str = ""
    active_thread_percentage: int | None = None
    pinned_memory_limit: str = ""
    """``defaultPinnedDeviceMemoryLimit`` as the driver hands it to MPS (``10240M``)."""
    per_device_pinned_limits: tuple[tuple[str, str], ...] = ()


def _unknown(obj: dict[str, Any], allowed: tuple[str, ...], path: str) -> None:
    extra = sorted(set(obj) - set(allowed))
    if extra:
        where = f"{path}." if path else ""
        raise ConfigError(f'strict decoding error: unknown field "{where}{extra[0]}" '
                          f"({path or 'the config'} has {', '.join(allowed)})")


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path} must be an object, not {type(value).__name__}")
    return value


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path} must be a string, not {value!r}")
    return value


def _megabytes(value: Any, path: str, what: str) -> str:
    """A quantity of at least 1Mi as ``<N>M`` (sharing.go ``limit.Megabyte``)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"{path} must be a quantity, not {value!r}")
    try:
        q = Quantity.parse(str(value))
    except QuantityError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    mb = int(q.value) // MI
    if mb <= 0:
        raise ConfigError(f"{path}: invalid limit: {what} set too low: {value}")
    return f"{mb}M"


def _mps(raw: Any, path: str) -> dict[str, Any]:
    mps = _object(raw, path)
    _unknown(mps, ("defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
                   "defaultPerDevicePinnedMemoryLimit"), path)
    out: dict[str, Any] = {}
    pct = mps.get("defaultActiveThreadPercentage")
    if pct is not None:
        if isinstance(pct, bool) or not isinstance(pct, int):
            raise ConfigError(f"{path}.defaultActiveThreadPercentage must be an integer, not {pct!r}")
        if pct < 0:
            raise ConfigError(f"{path}.defaultActiveThreadPercentage: active thread percentage must not be negative")
        if pct > 100:
            raise ConfigError(f"{path}.defaultActiveThreadPercentage: active thread percentage must not be "
                              "greater than 100")
        out["active_thread_percentage"] = pct
    if mps.get("defaultPinnedDeviceMemoryLimit") is not None:
        out["pinned_memory_limit"] = _megabytes(mps["defaultPinnedDeviceMemoryLimit"],
                                                f"{path}.defaultPinnedDeviceMemoryLimit", "default value")
    per_device = mps.get("defaultPerDevicePinnedMemoryLimit")
    if per_device is not None:
        limits = []
        for key, value in sorted(_object(per_device, f"{path}.defaultPerDevicePinnedMemoryLimit").items(),
                                 key=lambda kv: str(kv[0])):
            where = f"{path}.defaultPerDevicePinnedMemoryLimit[{key}]"
            key = str(key)
            if not (key.isdigit() or key.startswith(("GPU-", "MIG-"))):
                raise ConfigError(f"{where}: invalid device: unable to parse key as an integer: {key} "
                                  "(a key is a device UUID or index)")
            limits.append((key, _megabytes(value, where, f"value set too low: {key}:")))
        out["per_device_pinned_limits"] = tuple(limits)
    return out


def parse_nvidia_config(parameters: Any) -> NvidiaSharing:
    """Decode ``resource.nvidia.com/v1beta1`` parameters strictly, normalize and validate them.

    ``ConfigError`` names the field at fault, in the driver's words where it has some.
    """
    if not isinstance(parameters, dict):
        raise ConfigError(f"parameters must be an object with apiVersion {NVIDIA_CONFIG_API_VERSION} and kind "
                          f"{GPU_CONFIG_KIND} or {MIG_CONFIG_KIND}, not {type(parameters).__name__}")
    api_version, kind = parameters.get("apiVersion"), parameters.get("kind")
    if api_version != NVIDIA_CONFIG_API_VERSION:
        raise ConfigError(f"apiVersion must be {NVIDIA_CONFIG_API_VERSION!r} (or the mock's "
                          f"{MOCK_CONFIG_API_VERSION!r}), not {api_version!r}")
    if kind == "VfioDeviceConfig":
        raise ConfigError("kind VfioDeviceConfig needs the driver's PassthroughSupport feature gate "
                          "(VFIO passthrough), which the simulation does not model")
    if kind in ("ComputeDomainChannelConfig", "ComputeDomainDaemonConfig"):
        raise ConfigError(f"kind {kind} is configuration of driver compute-domain.nvidia.com, not "
                          f"{NVIDIA_DRIVER_NAME}")
    if kind not in (GPU_CONFIG_KIND, MIG_CONFIG_KIND):
        raise ConfigError(f"kind must be {GPU_CONFIG_KIND} or {MIG_CONFIG_KIND}, not {kind!r}")
    _unknown(parameters, ("apiVersion", "kind", "sharing"), "")
    raw = parameters.get("sharing")
    if raw is None:  # gpuconfig.go Normalize: no sharing, nothing to apply
        return NvidiaSharing(kind)
    sharing = _object(raw, "sharing")
    mig = kind == MIG_CONFIG_KIND
    _unknown(sharing, ("strategy", "mpsConfig") if mig else ("strategy", "timeSlicingConfig", "mpsConfig"),
             "sharing")
    strategy = _string(sharing.get("strategy", ""), "sharing.strategy")
    if strategy == "Fabric":
        raise ConfigError("sharing.strategy: fabric GPU sharing strategy is not enabled")
    if strategy not in SHARING_STRATEGIES:
        raise ConfigError(f"sharing.strategy: unknown GPU sharing strategy: {strategy!r} "
                          f"(one of {', '.join(SHARING_STRATEGIES)})")
    if strategy == "TimeSlicing":
        if sharing.get("mpsConfig") is not None:
            raise ConfigError("sharing.mpsConfig: cannot use MpsConfig with the 'TimeSlicing' strategy")
        if mig:  # MigDeviceSharing has no time-slice interval
            return NvidiaSharing(kind, strategy)
        ts = sharing.get("timeSlicingConfig")
        interval = "Default"
        if ts is not None:
            ts = _object(ts, "sharing.timeSlicingConfig")
            _unknown(ts, ("interval",), "sharing.timeSlicingConfig")
            if ts.get("interval") is not None:
                interval = _string(ts["interval"], "sharing.timeSlicingConfig.interval")
        if interval not in TIME_SLICE_INTERVALS:
            raise ConfigError(f"sharing.timeSlicingConfig.interval: unknown time-slice interval: {interval} "
                              f"(one of {', '.join(TIME_SLICE_INTERVALS)})")
        return NvidiaSharing(kind, strategy, interval=interval)
    if sharing.get("timeSlicingConfig") is not None:
        raise ConfigError("sharing.timeSlicingConfig: cannot use TimeSlicingConfig with the 'MPS' strategy")
    mps = sharing.get("mpsConfig")
    return NvidiaSharing(kind, strategy, **(_mps(mps, "sharing.mpsConfig") if mps is not None else {}))


# ---------------------------------------------------------------------------- the driver


@dataclass(frozen=True)
class _MigDevice:
    name: str
    profile: str
    spec: MigProfile
    start: int
    capacity: dict[str, int]


def _profile_name(spec: MigProfile, memory_bytes: int, slice_count: int) -> str:
    total_gb = -(-memory_bytes // GI)
    gb = math.floor(total_gb * spec.memory_slices / slice_count + 0.5)
    return f"{spec.compute_slices}g.{gb}gb" + ("+me" if spec.media_extensions else "")


def _dns_name(camel: str) -> str:
    """partitions.go ``camelToDNSName``: ``copyEngines`` -> ``copy-engines``."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", camel).lower()


class NvidiaGpuDriver(GpuDriver):
    """The mock GPUs published and prepared as NVIDIA's ``gpu.nvidia.com`` driver does;
    see the module docstring."""

    def __init__(self, gpus: list[GpuInfo], driver_version: str, *, name: str = NVIDIA_DRIVER_NAME,
                 **kwargs: Any) -> None:
        super().__init__(gpus, driver_version, name=name, **kwargs)
        self.cuda_driver_version = cuda_driver_version(driver_version)

    # ---- devices ---------------------------------------------------------------------------
    def mig_devices(self, gpu: GpuInfo) -> list[_MigDevice]:
        """Every placement of every MIG profile of ``gpu`` (none unless MIG-capable and modeled)."""
        model = gpu_model(gpu.product_name)
        if not gpu.mig_capable or model is None or model.mig is None:
            return []
        geometry = model.mig
        sms = SMS_BY_ARCH.get(model.architecture, SMS_BY_ARCH["Ampere"])
        out: list[_MigDevice] = []
        for spec in geometry.profiles:
            profile = _profile_name(spec, gpu.memory_bytes, geometry.memory_slice_count)
            memory = gpu.memory_bytes * spec.memory_slices // geometry.memory_slice_count // MI * MI
            capacity = {"multiprocessors": sms.get(spec.compute_slices, 14 * spec.compute_slices),
                        "copyEngines": spec.compute_slices, "decoders": spec.decoders, "encoders": 0,
                        "jpegEngines": spec.jpeg_engines, "ofaEngines": spec.ofa_engines, "memory": memory}
            label = re.sub(r"[^a-z0-9-]", "-", profile.replace(".", "").lower()).strip("-")
            out.extend(_MigDevice(f"gpu-{gpu.index}-mig-{label}-{spec.profile_id}-{start}", profile, spec, start,
                                  capacity) for start in spec.starts)
        return out

    def _common_attributes(self, gpu: GpuInfo) -> Obj:
        return {
            "productName": {"string": gpu.product_name},
            "brand": {"string": brand(gpu.product_name)},
            "architecture": {"string": architecture(gpu.product_name, gpu.compute_capability)},
            "cudaComputeCapability": {"version": semver(gpu.compute_capability)},
            "driverVersion": {"version": self.driver_version},
            "cudaDriverVersion": {"version": self.cuda_driver_version},
            PCI_BUS_ID_ATTRIBUTE: {"string": pci_bus_id(gpu.index)},
        }

    @staticmethod
    def _quantity(name: str, value: int) -> str:
        return format_bytes(value) if name == "memory" else str(value)

    def _counters(self, capacity: dict[str, int], slices: range) -> Obj:
        counters: Obj = {_dns_name(k): {"value": self._quantity(k, v)} for k, v in capacity.items()}
        counters.update({f"memory-slice-{i}": {"value": "1"} for i in slices})
        return counters

    def pools(self, node_name: str) -> dict[str, PoolSpec]:
        pool = PoolSpec()
        for gpu in self.gpus:
            migs = self.mig_devices(gpu) if self.partitions else []
            gpu_dev: Obj = {
                "name": f"gpu-{gpu.index}",
                "attributes": {"type": {"string": "gpu"}, "uuid": {"string": gpu.uuid},
                               "index": {"int": gpu.index}, "minor": {"int": gpu.index},
                               **self._common_attributes(gpu)},
                "capacity": {"memory": {"value": format_bytes(gpu.memory_bytes)}},
            }
            if self.shared:  # --consumable-shares=memory
                gpu_dev["allowMultipleAllocations"] = True
                gpu_dev["capacity"]["memory"]["requestPolicy"] = {
                    "default": format_bytes(gpu.memory_bytes // MI * MI), "validRange": {"min": "1Mi", "step": "1Mi"}}
            pool.devices.append(gpu_dev)
            if not migs:
                continue
            counter_set = f"gpu-{gpu.index}-counter-set"
            largest = {k: max(m.capacity[k] for m in migs) for k in migs[0].capacity}
            slice_count = max(m.spec.memory_slices for m in migs)
            gpu_dev["capacity"] = {k: {"value": self._quantity(k, v)} for k, v in largest.items()}
            if self.shared:
                gpu_dev["capacity"]["memory"]["requestPolicy"] = {
                    "default": format_bytes(largest["memory"]), "validRange": {"min": "1Mi", "step": "1Mi"}}
            gpu_dev["consumesCounters"] = [{"counterSet": counter_set,
                                            "counters": self._counters(largest, range(slice_count))}]
            pool.shared_counters.append({"name": counter_set, "counters": self._counters(largest, range(slice_count))})
            for mig in migs:
                pool.devices.append({
                    "name": mig.name,
                    "attributes": {"type": {"string": "mig"}, "parentUUID": {"string": gpu.uuid},
                                   "profile": {"string": mig.profile}, **self._common_attributes(gpu)},
                    "capacity": {k: {"value": self._quantity(k, v)} for k, v in mig.capacity.items()},
                    "consumesCounters": [{"counterSet": counter_set, "counters": self._counters(
                        mig.capacity, range(mig.start, mig.start + mig.spec.memory_slices))}],
                })
        return {node_name: pool}

    # ---- prepare ---------------------------------------------------------------------------
    def validate_config(self, parameters: Any) -> Any:
        if isinstance(parameters, dict) and parameters.get("apiVersion") == MOCK_CONFIG_API_VERSION:
            return parse_gpu_config(parameters)
        return parse_nvidia_config(parameters)

    def _gpu_of(self, device: AllocatedDevice) -> GpuInfo:
        attrs = device.published.get("attributes") or {}
        want = (attrs.get("parentUUID") or attrs.get("uuid") or {}).get("string")
        for gpu in self.gpus:
            if gpu.uuid == want:
                return gpu
        raise ValueError(f"device {device.device} names no GPU of this node")

    @staticmethod
    def _device_type(published: Obj) -> str:
        return str(((published.get("attributes") or {}).get("type") or {}).get("string", ""))

    @staticmethod
    def _fits(cfg: Any, device_type: str) -> bool:
        """A ``GpuConfig`` is for full GPUs, a ``MigDeviceConfig`` for MIG devices (the mock's own
        config for any)."""
        return not isinstance(cfg, NvidiaSharing) or (cfg.kind == GPU_CONFIG_KIND) == (device_type == "gpu")

    def config_applies(self, config: Any, published: Obj) -> bool:
        # device_state.go prepareDevices: a config with len(Requests) == 0 of the other kind is
        # passed over for the device (continue), one that names the request fails it.
        return self._fits(config, self._device_type(published))

    def prepare(self, claim: ClaimRef, device: AllocatedDevice) -> ContainerEdits:
        kind = self._device_type(device.published)
        cfg = device.config
        if not self._fits(cfg, kind):
            # device_state.go prepareDevices: a config naming the request must fit the device
            raise ConfigError(f"cannot apply {cfg.kind} to device {device.device!r} of type {kind!r} "
                              f"(request: {device.request})")
        edits = super().prepare(claim, device)
        key = self._env_key(device.device)
        if kind == "mig":
            self._mig_env(device, key, edits)
        if isinstance(cfg, NvidiaSharing) and cfg.strategy:
            edits.env[f"{key}_SHARING_STRATEGY"] = cfg.strategy
            if cfg.interval:
                edits.env[f"{key}_TIMESLICE_INTERVAL"] = cfg.interval
            if cfg.active_thread_percentage is not None:
                edits.env[f"{key}_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(cfg.active_thread_percentage)
            limit = dict(cfg.per_device_pinned_limits).get(edits.env[key], cfg.pinned_memory_limit)
            if limit:
                edits.env[f"{key}_MPS_PINNED_DEVICE_MEMORY_LIMIT"] = limit
        return edits

    @staticmethod
    def _env_key(device_name: str) -> str:
        return "GPU_DEVICE_" + re.sub(r"[^A-Z0-9]", "_", device_name.upper().removeprefix("GPU-"))

    @staticmethod
    def _mig_env(device: AllocatedDevice, key: str, edits: ContainerEdits) -> None:
        """A MIG device gets its own UUID (the real driver creates it at prepare) and its profile."""
        parent = edits.env[key]
        edits.env[key] = "MIG-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"{parent}/{device.device}"))
        edits.env[f"{key}_PARENT_UUID"] = parent
        edits.env.pop(f"{key}_PARTITION", None)
        profile = ((device.published.get("attributes") or {}).get("profile") or {}).get("string")
        if profile:
            edits.env[f"{key}_MIG_PROFILE"] = profile


def nvidia_device_classes() -> list[Obj]:
    """The DeviceClasses NVIDIA's helm chart installs with the GPU kubelet plugin."""

    def cls(name: str, kind: str) -> Obj:
        expr = f"device.driver == '{NVIDIA_DRIVER_NAME}' && device.attributes['{NVIDIA_DRIVER_NAME}'].type == '{kind}'"
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expr}}]}}

    gpu = cls(NVIDIA_DRIVER_NAME, "gpu")
    gpu["spec"]["extendedResourceName"] = "nvidia.com/gpu"
    return [gpu, cls("mig.nvidia.com", "mig")]
