"""The example driver: GPUs, mock by default or real NVIDIA GPUs through NVML.

Mock GPUs let every part of drasched (simulation, tests, ``--print-slices``) run without
hardware; NVML (``nvidia-ml-py``, imported lazily so the package never requires it)
describes the real ones. Both produce the same device shape, so a scenario written against
mock GPUs reads like one against real ones:

* attributes ``type`` (``gpu`` or ``partition``), ``index``, ``uuid``, ``productName``,
  ``architecture``, ``cudaComputeCapability`` and ``driverVersion`` (semver),
  ``migCapable``; capacity ``memory``;
* ``partitions=True``: each GPU also offers MIG-like partitions (1g, 2g, 3g profiles) as
  partitionable devices; the whole GPU and its partitions consume one shared counter set
  (``memory``, ``slices``), so the allocator never hands out more than the GPU has;
* ``shared=True``: whole GPUs set ``allowMultipleAllocations`` with consumable ``memory``
  (requests of 1Gi steps, 1Gi by default), so several claims share one GPU.

Opaque configuration (``apiVersion: gpu.drasched.io/v1alpha1``, ``kind: GpuConfig``)
selects a sharing strategy; it is checked at prepare time and a bad one fails that claim
with a message naming the field.

Under NVIDIA's driver name the same mock GPUs are published, configured and prepared as
NVIDIA's DRA driver does: :mod:`drasched.node.nvidia_gpu`. This driver's shape stays the
mock's own (``architecture`` follows ``compute_capability``, whatever the model).
"""

from __future__ import annotations

import contextlib
import importlib
import re
import uuid
from dataclasses import dataclass
from typing import Any

from drasched.node.cdi import ContainerEdits
from drasched.node.driver import AllocatedDevice, ClaimRef, ConfigError, Driver, PoolSpec
from drasched.quantity import Quantity, QuantityError

Obj = dict[str, Any]

DRIVER_NAME = "gpu.drasched.io"
CONFIG_API_VERSION = f"{DRIVER_NAME}/v1alpha1"
CONFIG_KIND = "GpuConfig"
TIME_SLICE_INTERVALS = ("Default", "Short", "Medium", "Long")
MAX_PARTITION_COUNT = 16
GI = 1024**3
MI = 1024**2

# MIG-like profiles: (name, compute slices, memory fraction denominator, how many fit).
PARTITION_PROFILES: tuple[tuple[str, int, int, int], ...] = (
    ("1g", 1, 8, 7),
    ("2g", 2, 4, 3),
    ("3g", 3, 2, 2),
)
GPU_SLICES = 7

_ARCH_BY_CC_MAJOR = {5: "Maxwell", 6: "Pascal", 7: "Volta", 8: "Ampere", 9: "Hopper", 10: "Blackwell",
                     12: "Blackwell"}


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU, as NVML or the mock describes it."""

    index: int
    uuid: str
    product_name: str
    memory_bytes: int
    compute_capability: str
    mig_capable: bool
    minor: int | None = None
    """``/dev/nvidia<minor>``; None for mock GPUs (no device node to hand out)."""

    @property
    def architecture(self) -> str:
        major = int(self.compute_capability.split(".", 1)[0] or 0)
        if self.compute_capability == "8.9":
            return "Ada Lovelace"
        if self.compute_capability == "7.5":
            return "Turing"
        return _ARCH_BY_CC_MAJOR.get(major, "Unknown")


@dataclass
class MockGpuConfig:
    """What a mock node has: ``count`` identical GPUs."""

    count: int = 8
    model: str = "NVIDIA H100 80GB HBM3"
    memory: str = "80Gi"
    driver_version: str = "550.54.15"
    compute_capability: str = "9.0"
    mig_capable: bool = True


def semver(version: str) -> str:
    """A semver for a ``version`` attribute: NVIDIA's ``535.104.05`` -> ``535.104.5``, ``9.0`` -> ``9.0.0``."""
    nums = re.findall(r"\d+", version)[:3]
    if not nums:
        raise ValueError(f"no version number in {version!r}")
    nums += ["0"] * (3 - len(nums))
    return ".".join(str(int(n)) for n in nums)


def mock_gpus(node_name: str, cfg: MockGpuConfig) -> list[GpuInfo]:
    """Deterministic mock GPUs: the same node name always gets the same UUIDs."""
    if cfg.count < 0:
        raise ValueError("GPU count must not be negative")
    try:
        mem = int(Quantity.parse(cfg.memory).value)
    except QuantityError as exc:
        raise ValueError(f"bad GPU memory {cfg.memory!r}: {exc}") from None
    if mem <= 0:
        raise ValueError(f"GPU memory must be positive, not {cfg.memory!r}")
    return [
        GpuInfo(index=i, uuid="GPU-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"drasched-mock-gpu/{node_name}/{i}")),
                product_name=cfg.model, memory_bytes=mem, compute_capability=cfg.compute_capability,
                mig_capable=cfg.mig_capable)
        for i in range(cfg.count)
    ]


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def load_nvml() -> Any:
    """The ``pynvml`` module of nvidia-ml-py; ImportError with a hint when it is missing."""
    try:
        return importlib.import_module("pynvml")
    except ImportError as exc:
        raise ImportError("NVML support needs nvidia-ml-py: pip install 'drasched[nvidia]'") from exc


def discover_nvml(nvml: Any | None = None) -> tuple[list[GpuInfo], str]:
    """The GPUs NVML sees and the driver version (raises the NVML error when NVML cannot start)."""
    nvml = nvml if nvml is not None else load_nvml()
    nvml.nvmlInit()
    try:
        driver_version = _text(nvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(int(nvml.nvmlDeviceGetCount())):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            major, minor_cc = nvml.nvmlDeviceGetCudaComputeCapability(h)
            try:
                current, _pending = nvml.nvmlDeviceGetMigMode(h)
                mig_capable = True
                del current
            except nvml.NVMLError:  # NVML_ERROR_NOT_SUPPORTED on GPUs without MIG
                mig_capable = False
            gpus.append(GpuInfo(
                index=i,
                uuid=_text(nvml.nvmlDeviceGetUUID(h)),
                product_name=_text(nvml.nvmlDeviceGetName(h)),
                memory_bytes=int(nvml.nvmlDeviceGetMemoryInfo(h).total),
                compute_capability=f"{int(major)}.{int(minor_cc)}",
                mig_capable=mig_capable,
                minor=int(nvml.nvmlDeviceGetMinorNumber(h)),
            ))
        return gpus, driver_version
    finally:
        nvml.nvmlShutdown()


def nvml_gpus_present() -> bool:
    """Whether NVML is installed and sees at least one GPU (any failure means no)."""
    try:
        nvml = load_nvml()
        nvml.nvmlInit()
    except Exception:
        return False
    try:
        return int(nvml.nvmlDeviceGetCount()) > 0
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):  # shutting down after a probe: nothing to report
            nvml.nvmlShutdown()


def format_bytes(n: int) -> str:
    """A quantity string: Gi or Mi when exact, plain bytes otherwise."""
    if n % GI == 0:
        return f"{n // GI}Gi"
    if n % MI == 0:
        return f"{n // MI}Mi"
    return str(n)


# ---------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class SharingConfig:
    """Parsed ``GpuConfig.sharing``."""

    strategy: str
    interval: str = ""
    partition_count: int = 0


def parse_gpu_config(parameters: Any) -> SharingConfig | None:
    """Validate opaque ``GpuConfig`` parameters; ``ConfigError`` names the field at fault."""
    if not isinstance(parameters, dict):
        raise ConfigError(f"parameters must be an object with apiVersion {CONFIG_API_VERSION} and kind "
                          f"{CONFIG_KIND}, not {type(parameters).__name__}")
    if parameters.get("apiVersion") != CONFIG_API_VERSION:
        raise ConfigError(f"apiVersion must be {CONFIG_API_VERSION!r}, not {parameters.get('apiVersion')!r}")
    if parameters.get("kind") != CONFIG_KIND:
        raise ConfigError(f"kind must be {CONFIG_KIND!r}, not {parameters.get('kind')!r}")
    unknown = sorted(set(parameters) - {"apiVersion", "kind", "sharing"})
    if unknown:
        raise ConfigError(f"unknown field(s) {', '.join(unknown)} (allowed: sharing)")
    sharing = parameters.get("sharing")
    if sharing is None:
        return None
    if not isinstance(sharing, dict):
        raise ConfigError("sharing must be an object")
    unknown = sorted(set(sharing) - {"strategy", "timeSlicing", "spacePartitioning"})
    if unknown:
        raise ConfigError(f"sharing: unknown field(s) {', '.join(unknown)}")
    strategy = sharing.get("strategy")
    if strategy == "TimeSlicing":
        if "spacePartitioning" in sharing:
            raise ConfigError("sharing.spacePartitioning is not allowed with strategy TimeSlicing")
        ts = sharing.get("timeSlicing") or {}
        if not isinstance(ts, dict) or set(ts) - {"interval"}:
            raise ConfigError("sharing.timeSlicing may only set interval")
        interval = ts.get("interval", "Default")
        if interval not in TIME_SLICE_INTERVALS:
            raise ConfigError(f"sharing.timeSlicing.interval must be one of {', '.join(TIME_SLICE_INTERVALS)}, "
                              f"not {interval!r}")
        return SharingConfig("TimeSlicing", interval=interval)
    if strategy == "SpacePartitioning":
        if "timeSlicing" in sharing:
            raise ConfigError("sharing.timeSlicing is not allowed with strategy SpacePartitioning")
        sp = sharing.get("spacePartitioning")
        if not isinstance(sp, dict) or set(sp) - {"partitionCount"}:
            raise ConfigError("sharing.spacePartitioning must be an object with partitionCount")
        count = sp.get("partitionCount")
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_PARTITION_COUNT:
            raise ConfigError(f"sharing.spacePartitioning.partitionCount must be an integer from 1 to "
                              f"{MAX_PARTITION_COUNT}, not {count!r}")
        return SharingConfig("SpacePartitioning", partition_count=count)
    raise ConfigError(f"sharing.strategy must be TimeSlicing or SpacePartitioning, not {strategy!r}")


# ---------------------------------------------------------------------------- the driver


class GpuDriver(Driver):
    """GPUs as DRA devices; see the module docstring for the shapes."""

    def __init__(
        self,
        gpus: list[GpuInfo],
        driver_version: str,
        *,
        name: str = DRIVER_NAME,
        partitions: bool = False,
        shared: bool = False,
        device_nodes: bool = False,
    ) -> None:
        self.name = name
        self.gpus = list(gpus)
        self.driver_version = semver(driver_version)
        self.partitions = partitions
        self.shared = shared
        self.device_nodes = device_nodes
        self.prepared: dict[str, list[str]] = {}
        """Claim UID -> device names prepared for it (what a real driver would have set up)."""

    @classmethod
    def mock(cls, node_name: str, cfg: MockGpuConfig | None = None, **kwargs: Any) -> GpuDriver:
        cfg = cfg or MockGpuConfig()
        return cls(mock_gpus(node_name, cfg), cfg.driver_version, **kwargs)

    @classmethod
    def from_nvml(cls, nvml: Any | None = None, **kwargs: Any) -> GpuDriver:
        if kwargs.get("partitions"):
            raise ValueError("partitions are only modeled for mock GPUs; real MIG devices are not managed")
        gpus, version = discover_nvml(nvml)
        return cls(gpus, version, device_nodes=True, **kwargs)

    # ---- devices ---------------------------------------------------------------------------
    def _attributes(self, gpu: GpuInfo, kind: str) -> Obj:
        return {
            "type": {"string": kind},
            "index": {"int": gpu.index},
            "uuid": {"string": gpu.uuid},
            "productName": {"string": gpu.product_name},
            "architecture": {"string": gpu.architecture},
            "cudaComputeCapability": {"version": semver(gpu.compute_capability)},
            "driverVersion": {"version": self.driver_version},
            "migCapable": {"bool": gpu.mig_capable},
        }

    def _gpu_device(self, gpu: GpuInfo) -> Obj:
        dev: Obj = {
            "name": f"gpu-{gpu.index}",
            "attributes": self._attributes(gpu, "gpu"),
            "capacity": {"memory": {"value": format_bytes(gpu.memory_bytes)}},
        }
        if self.shared:
            dev["allowMultipleAllocations"] = True
            dev["capacity"]["memory"]["requestPolicy"] = {
                "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
        if self.partitions:
            dev["consumesCounters"] = [{"counterSet": f"gpu-{gpu.index}", "counters": {
                "memory": {"value": format_bytes(gpu.memory_bytes)}, "slices": {"value": str(GPU_SLICES)}}}]
        return dev

    def _partition_devices(self, gpu: GpuInfo) -> list[Obj]:
        out = []
        for profile, slices, denom, count in PARTITION_PROFILES:
            mem = gpu.memory_bytes // denom // MI * MI
            label = f"{profile}.{mem // GI}gb" if mem >= GI else f"{profile}.{mem // MI}mb"
            for k in range(count):
                attrs = self._attributes(gpu, "partition")
                attrs["profile"] = {"string": label}
                attrs["parentUUID"] = attrs.pop("uuid")
                out.append({
                    "name": f"gpu-{gpu.index}-{profile}-{k}",
                    "attributes": attrs,
                    "capacity": {"memory": {"value": format_bytes(mem)}},
                    "consumesCounters": [{"counterSet": f"gpu-{gpu.index}", "counters": {
                        "memory": {"value": format_bytes(mem)}, "slices": {"value": str(slices)}}}],
                })
        return out

    def pools(self, node_name: str) -> dict[str, PoolSpec]:
        pool = PoolSpec()
        for gpu in self.gpus:
            pool.devices.append(self._gpu_device(gpu))
            if self.partitions:
                pool.devices.extend(self._partition_devices(gpu))
                pool.shared_counters.append({"name": f"gpu-{gpu.index}", "counters": {
                    "memory": {"value": format_bytes(gpu.memory_bytes)}, "slices": {"value": str(GPU_SLICES)}}})
        return {node_name: pool}

    # ---- prepare ---------------------------------------------------------------------------
    def validate_config(self, parameters: Any) -> Any:
        return parse_gpu_config(parameters)

    def _gpu_of(self, device: AllocatedDevice) -> GpuInfo:
        index = ((device.published.get("attributes") or {}).get("index") or {}).get("int")
        for gpu in self.gpus:
            if gpu.index == index:
                return gpu
        raise ValueError(f"device {device.device} names no GPU of this node")

    def prepare(self, claim: ClaimRef, device: AllocatedDevice) -> ContainerEdits:
        gpu = self._gpu_of(device)
        key = "GPU_DEVICE_" + re.sub(r"[^A-Z0-9]", "_", device.device.upper().removeprefix("GPU-"))
        edits = ContainerEdits(env={key: gpu.uuid})
        if device.device != f"gpu-{gpu.index}":
            edits.env[f"{key}_PARTITION"] = device.device
        if device.share_id:
            edits.env[f"{key}_SHARE_ID"] = device.share_id
        if "memory" in device.consumed_capacity:
            edits.env[f"{key}_MEMORY_LIMIT"] = device.consumed_capacity["memory"]
        cfg = device.config
        if isinstance(cfg, SharingConfig):
            edits.env[f"{key}_SHARING_STRATEGY"] = cfg.strategy
            if cfg.interval:
                edits.env[f"{key}_TIMESLICE_INTERVAL"] = cfg.interval
            if cfg.partition_count:
                edits.env[f"{key}_PARTITION_COUNT"] = str(cfg.partition_count)
        if self.device_nodes and gpu.minor is not None:
            edits.device_nodes = [{"path": f"/dev/nvidia{gpu.minor}"}, {"path": "/dev/nvidiactl"},
                                  {"path": "/dev/nvidia-uvm"}]
        self.prepared.setdefault(claim.uid, [])
        if device.device not in self.prepared[claim.uid]:
            self.prepared[claim.uid].append(device.device)
        return edits

    def unprepare(self, claim: ClaimRef, devices: list[AllocatedDevice]) -> None:
        self.prepared.pop(claim.uid, None)


def device_classes(driver_name: str = DRIVER_NAME, *, extended_resource_name: str | None = None,
                   partitions: bool = False) -> list[Obj]:
    """The DeviceClass for whole GPUs (optionally with ``extendedResourceName``) and, with
    partitions, one for partitions, so a pod asking for "a GPU" never lands on a slice of one."""

    def cls(name: str, kind: str) -> Obj:
        expr = f'device.driver == "{driver_name}" && device.attributes["{driver_name}"].type == "{kind}"'
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expr}}]}}

    whole = cls(driver_name, "gpu")
    if extended_resource_name:
        whole["spec"]["extendedResourceName"] = extended_resource_name
    out = [whole]
    if partitions:
        out.append(cls(f"partition.{driver_name}", "partition"))
    return out
