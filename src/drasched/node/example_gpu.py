"""The mock GPU driver as kubernetes-sigs/dra-example-driver: ``gpu.example.com`` and its newer name.

A node annotated ``drasched.io/sim-gpus: "driver=gpu.example.com,..."`` (or
``driver=gpu.dra-example-driver.sigs.k8s.io``, the name newer releases of the chart default to;
see :mod:`drasched.node.sim_drivers`) runs :class:`ExampleGpuDriver`, which stands in for the
``gpu`` profile of the DRA example driver's kubelet plugin, so the driver's published demo
examples (``demo/examples/*/*.yaml``, ``demo/gpu-test*.yaml``) run unchanged. What it models,
and from where (github.com/kubernetes-sigs/dra-example-driver):

**Devices** (``internal/profiles/gpu/gpu.go`` ``EnumerateDevices``). One pool per node, named
after it, in one ResourceSlice. GPU ``i`` is ``gpu-<i>`` with attributes ``index`` (int),
``uuid`` (string ``gpu-<uuid>``), ``model`` (string ``LATEST-GPU-MODEL``) and ``driverVersion``
(version ``1.0.0``), and capacity ``memory: 80Gi``. Upstream derives the UUIDs from a random
generator seeded with the node name; here they are UUIDv5 of the node name and index, just
as stable. The annotation's ``model``, ``memory`` and ``driverVersion`` keys replace the
fixed values (to stage a cluster with an ``older-gpu``, say); ``computeCapability`` and
``migCapable`` are accepted and publish nothing (the driver has no such attributes).

**Partitions** (chart value ``kubeletPlugin.gpuPartitions=N``; the annotation's
``partitions=N``, a bare ``partitions`` meaning 4 as ``NewPartitionableProfile`` defaults).
The pool's counters travel in a slice of their own, so the pool has two slices
(``resourceSliceCount: 2``): one CounterSet ``gpu-<i>-counters`` per GPU with ``memory: 80Gi``
and ``compute: 100``. Each GPU is published as ``N`` devices ``gpu-<i>-partition-<j>`` (the
GPU's attributes plus ``partition`` (int ``j``) and ``partitionable`` (bool ``true``), capacity
``memory`` 80Gi/N, consuming memory 80Gi/N and compute 100/N, both divided as Go's integer
division does) and one ``gpu-<i>-full`` (``partitionable`` and ``full`` true, capacity memory
80Gi, consuming all of the counter set); no plain ``gpu-<i>``. So the allocator hands out up
to N partitions of a GPU, or the whole of it, never both.

**allowMultipleAllocations** (chart value ``gpuAllowMultipleAllocations=true``; the
annotation's ``shared``; pull request #236). Whole GPUs set ``allowMultipleAllocations`` with
two consumable capacities, ``memory: 80Gi`` (requestPolicy default 80Gi, validRange 8Gi to
80Gi in steps of 8Gi) and ``compute: 100`` (default 100, 10 to 100 in steps of 10), so the
``gpu-allow-multiple-allocations`` example's two claims of ``memory: 16Gi, compute: "20"``
share one GPU, each with its share ID and consumed capacity. With partitions too, the
partition devices are the multi-allocatable ones, with ``memory`` and ``compute`` of the
partition's size and the same policy shape (default and max the whole partition, min and step
a tenth of it, or steps of 1 where a tenth is not whole: compute 25 of four partitions); the
``gpu-<i>-full`` device stays exclusive. The pull request's text shows the whole-GPU policy; its
partition policy is not quoted in full, so the partition policy here is the same rule applied
to the partition's size.

**Binding conditions** (chart values ``kubeletPlugin.bindingConditions=true`` and
``controller.plugins={BindingConditions}``, which the ``binding-conditions`` example's README
installs together; the annotation's ``bindingConditions``). ``internal/profiles/gpu/gpu.go``
``EnumerateDevices`` then gives every device it publishes (whole GPUs, partitions and full
devices alike) ``bindingConditions: [BindingConditions]`` and ``bindingFailureConditions:
[BindingFailureConditions]``, no ``bindsToNode``; the driver's controller
(``cmd/dra-example-controller/plugins/bindingconditions.go``) sets the condition ``True`` in the
claim's ``status.devices`` once the claim is allocated: :mod:`drasched.node.example_binding`.

**Opaque configuration** (``api/example.com/resource/gpu/v1alpha1``: ``api.go``, ``sharing.go``,
``validate.go``; ``gpu.go`` ``ApplyConfig``). ``apiVersion: gpu.resource.example.com/v1alpha1``
or, as newer releases register it, ``gpu.resource.dra-example-driver.sigs.k8s.io/v1alpha1``
(``api/dra-example-driver.sigs.k8s.io/resource/gpu/v1alpha1/register.go``), both accepted under
either driver name; ``kind: GpuConfig``; ``sharing.strategy`` ``TimeSlicing`` (with
``timeSlicingConfig.interval`` ``Default``, ``Short``, ``Medium`` or ``Long``) or
``SpacePartitioning`` (with ``spacePartitioningConfig.partitionCount``, at least 0). Decoded
with the driver's strict JSON serializer: an unknown field or a value of the wrong type is
refused (apimachinery's strict decoding reports unknown fields, although a comment in the
driver's ``state.go`` says they are dropped). Then ``Normalize``: no ``sharing`` means
TimeSlicing; TimeSlicing without ``timeSlicingConfig`` gets interval ``Default``;
SpacePartitioning without ``spacePartitioningConfig`` gets ``partitionCount: 1``. Then
``Validate``: the strategy, then the interval (an empty one is unknown: ``timeSlicingConfig:
{}`` is refused) or the partition count (negative is invalid); then the config of the other
strategy is refused (``cannot use SpacePartitioningConfig with the 'TimeSlicing' strategy``).
A device no config names gets ``DefaultGpuConfig()``: TimeSlicing, interval Default. A refusal
fails the claim at prepare time with a message naming the field, in the driver's words.

**Prepare** (``gpu.go`` ``applyGpuConfig``, ``cmd/dra-example-kubeletplugin/cdi.go``). A device's
CDI edits set ``GPU_DEVICE_<id>=<device>``, where ``<id>`` is the device name without ``gpu-``,
upper-cased with ``-`` as ``_`` (``gpu-0`` -> ``GPU_DEVICE_0``, ``gpu-0-partition-1`` ->
``GPU_DEVICE_0_PARTITION_1``), ``GPU_DEVICE_<id>_SHARING_STRATEGY``, and
``GPU_DEVICE_<id>_TIMESLICE_INTERVAL`` or ``GPU_DEVICE_<id>_PARTITION_COUNT``; the claim edits
add ``GPU_DEVICE_<DEVICE>_RESOURCE_CLAIM=<claim UID>`` and ``DRA_ADMIN_ACCESS`` (``true`` for an
admin-access result), and the driver's common spec ``DRA_RESOURCE_DRIVER_NAME``.

**Device health** (KEP-4680; ``cmd/dra-example-kubeletplugin/health_simulator.go``, on by default,
``--device-health``): the driver streams every device as ``Healthy`` with the message ``Device
<device> operating normally, temperature: <t>°C`` until a demo annotation or
``SIMULATE_HEALTH_CHANGES`` changes it, so the kubelet shows that in ``allocatedResourcesStatus``
(:mod:`drasched.node.resource_health`). Upstream draws ``<t>`` from 45 to 54 at random when the
driver starts; here it is always :data:`HEALTHY_TEMPERATURE_C`, so runs repeat.

**DeviceClass** (``deployments/helm/dra-example-driver/templates/deviceclass.yaml``):
:func:`example_device_classes` is the chart's one class, named after the driver, selecting
``device.driver == '<driver>'``, with ``extendedResourceName`` when the chart's
``deviceClass.extendedResourceName`` is set (the annotation's ``extendedResourceName`` key).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from typing import Any

from drasched.node.cdi import ContainerEdits
from drasched.node.driver import AllocatedDevice, ClaimRef, ConfigError, PoolSpec
from drasched.node.gpu_driver import GpuDriver, GpuInfo, MockGpuConfig, format_bytes, mock_gpus
from drasched.node.resource_health import HEALTHY, DeviceHealth

Obj = dict[str, Any]

EXAMPLE_DRIVER_NAME = "gpu.example.com"
EXAMPLE_DRIVER_NAME_NEW = "gpu.dra-example-driver.sigs.k8s.io"
EXAMPLE_DRIVER_NAMES = (EXAMPLE_DRIVER_NAME, EXAMPLE_DRIVER_NAME_NEW)
"""The chart's ``driverName`` before and after the driver moved to its sigs.k8s.io name."""

EXAMPLE_CONFIG_API_VERSIONS = ("gpu.resource.example.com/v1alpha1",
                               "gpu.resource.dra-example-driver.sigs.k8s.io/v1alpha1")
GPU_CONFIG_KIND = "GpuConfig"
EXAMPLE_MODEL = "LATEST-GPU-MODEL"
EXAMPLE_MEMORY = "80Gi"
EXAMPLE_DRIVER_VERSION = "1.0.0"
COMPUTE_PER_GPU = 100
"""The counter set's ``compute``: abstract units of a whole GPU (``computePerGPU``)."""
DEFAULT_PARTITIONS = 4
"""Partitions per GPU when partitionable devices are on without a number (``NewPartitionableProfile``)."""
MAX_PARTITIONS = COMPUTE_PER_GPU
"""More partitions than compute units would give partitions that consume no compute."""

BINDING_CONDITION = "BindingConditions"
"""``profiles.BindingConditions``: the condition every device waits for with binding conditions on."""
BINDING_FAILURE_CONDITION = "BindingFailureConditions"
"""``profiles.BindingFailureConditions``: the failure condition published beside it (never set)."""

TIME_SLICE_INTERVALS = ("Default", "Short", "Medium", "Long")
SHARING_STRATEGIES = ("TimeSlicing", "SpacePartitioning")
_INT64_MAX = 2**63 - 1


def is_example_driver(name: str) -> bool:
    """Whether ``name`` is one of the example driver's names."""
    return name in EXAMPLE_DRIVER_NAMES


def example_config(count: int = MockGpuConfig.count) -> MockGpuConfig:
    """``count`` GPUs as the example driver reports them: its fixed model, memory and version."""
    return MockGpuConfig(count=count, model=EXAMPLE_MODEL, memory=EXAMPLE_MEMORY,
                         driver_version=EXAMPLE_DRIVER_VERSION)


# ---------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class ExampleGpuConfig:
    """A decoded, normalized and validated ``GpuConfig``."""

    strategy: str
    interval: str = ""
    """TimeSlicing's interval."""
    partition_count: int | None = None
    """SpacePartitioning's ``partitionCount`` (0 when the config left it out)."""


DEFAULT_GPU_CONFIG = ExampleGpuConfig("TimeSlicing", interval="Default")
"""``DefaultGpuConfig()``: what a device no config names is prepared with."""


def _unknown(obj: Obj, allowed: tuple[str, ...], path: str) -> None:
    extra = sorted(set(obj) - set(allowed))
    if extra:
        where = f"{path}." if path else ""
        raise ConfigError(f'strict decoding error: unknown field "{where}{extra[0]}" '
                          f"({path or 'GpuConfig'} has {', '.join(allowed)})")


def _object(value: Any, path: str) -> Obj | None:
    """A pointer field: JSON null is nil, an object is decoded, anything else is refused."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"{path} must be an object, not {type(value).__name__}")
    return value


def _string(value: Any, path: str) -> str:
    if value is None:  # null into a string: left at ""
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{path} must be a string, not {value!r}")
    return value


def _integer(value: Any, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 10.0 decodes into an int
    if isinstance(value, bool) or not isinstance(value, int) or not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        raise ConfigError(f"{path} must be an integer, not {value!r}")
    return value


def parse_example_config(parameters: Any) -> ExampleGpuConfig:
    """Decode a ``GpuConfig`` strictly, normalize it and validate it as the example driver does.

    ``ConfigError`` names the field at fault, in the driver's words where it has some.
    """
    versions = " or ".join(EXAMPLE_CONFIG_API_VERSIONS)
    if not isinstance(parameters, dict):
        raise ConfigError(f"parameters must be an object with apiVersion {versions} and kind {GPU_CONFIG_KIND}, "
                          f"not {type(parameters).__name__}")
    api_version, kind = parameters.get("apiVersion"), parameters.get("kind")
    if api_version not in EXAMPLE_CONFIG_API_VERSIONS:
        raise ConfigError(f"apiVersion must be {versions}, not {api_version!r}")
    if kind != GPU_CONFIG_KIND:
        raise ConfigError(f"kind: no kind {kind!r} is registered for version {api_version!r} "
                          f"(the driver's only kind is {GPU_CONFIG_KIND})")
    _unknown(parameters, ("apiVersion", "kind", "sharing"), "")
    sharing = _object(parameters.get("sharing"), "sharing")
    if sharing is None:  # api.go Normalize: no sharing is TimeSlicing, interval Default
        return DEFAULT_GPU_CONFIG
    _unknown(sharing, ("strategy", "timeSlicingConfig", "spacePartitioningConfig"), "sharing")
    strategy = _string(sharing.get("strategy"), "sharing.strategy")
    time_slicing = _object(sharing.get("timeSlicingConfig"), "sharing.timeSlicingConfig")
    space = _object(sharing.get("spacePartitioningConfig"), "sharing.spacePartitioningConfig")
    interval, count = "Default", 1  # Normalize's defaults when the strategy's config is left out
    if time_slicing is not None:
        _unknown(time_slicing, ("interval",), "sharing.timeSlicingConfig")
        interval = _string(time_slicing.get("interval"), "sharing.timeSlicingConfig.interval")
    if space is not None:
        _unknown(space, ("partitionCount",), "sharing.spacePartitioningConfig")
        count = _integer(space.get("partitionCount"), "sharing.spacePartitioningConfig.partitionCount")
    # validate.go: the strategy, then the settings of that strategy
    if strategy not in SHARING_STRATEGIES:
        raise ConfigError(f"sharing.strategy: unknown GPU sharing strategy: {strategy} "
                          f"(one of {', '.join(SHARING_STRATEGIES)})")
    if strategy == "TimeSlicing":
        if interval not in TIME_SLICE_INTERVALS:
            raise ConfigError(f"sharing.timeSlicingConfig.interval: unknown time-slice interval: {interval} "
                              f"(one of {', '.join(TIME_SLICE_INTERVALS)})")
        if space is not None:  # sharing.go GetTimeSlicingConfig
            raise ConfigError("sharing.spacePartitioningConfig: cannot use SpacePartitioningConfig with the "
                              "'TimeSlicing' strategy")
        return ExampleGpuConfig(strategy, interval=interval)
    if count < 0:
        raise ConfigError(f"sharing.spacePartitioningConfig.partitionCount: invalid partition count: {count}")
    if time_slicing is not None:  # sharing.go GetSpacePartitioningConfig
        raise ConfigError("sharing.timeSlicingConfig: cannot use TimeSlicingConfig with the "
                          "'SpacePartitioning' strategy")
    return ExampleGpuConfig(strategy, partition_count=count)


# ---------------------------------------------------------------------------- the driver


def _env_id(name: str) -> str:
    """gpu.go ``envVarSafeID``: ``0-partition-1`` -> ``0_PARTITION_1``."""
    return name.replace("-", "_").upper()


def _capacity_policy(value: int, quantity: str) -> Obj:
    """A consumable capacity: default and max the whole, min and step a tenth (or 1)."""
    step = value // 10 if value >= 10 and value % 10 == 0 else 1
    fmt = format_bytes if quantity == "memory" else str
    return {"value": fmt(value), "requestPolicy": {"default": fmt(value), "validRange": {
        "min": fmt(step), "max": fmt(value), "step": fmt(step)}}}


HEALTHY_TEMPERATURE_C = 45
"""The temperature in the example driver's healthy message: upstream's baseline draws 45 + rand(10)
when the driver starts; the simulation takes the low end so that its output is repeatable."""


class ExampleGpuDriver(GpuDriver):
    """The mock GPUs published and prepared as the DRA example driver's ``gpu`` profile;
    see the module docstring. ``partitions`` is a number of partitions per GPU, or ``True``
    for the default 4."""

    def __init__(self, gpus: list[GpuInfo], driver_version: str, *, name: str = EXAMPLE_DRIVER_NAME,
                 partitions: bool | int = False, binding_conditions: bool = False, **kwargs: Any) -> None:
        count = DEFAULT_PARTITIONS if partitions is True else int(partitions)
        if not 0 <= count <= MAX_PARTITIONS:
            raise ValueError(f"partitions must be from 0 to {MAX_PARTITIONS} per GPU, not {count}")
        super().__init__(gpus, driver_version, name=name, partitions=count > 0, **kwargs)
        self.partition_count = count
        self.binding_conditions = binding_conditions

    def device_health(self, pool: str, device: str) -> DeviceHealth | None:
        """The example driver serves DRAResourceHealth and reports its devices healthy
        (``health_simulator.go`` ``generateHealthStatusAndMessage``, scenario Healthy)."""
        return DeviceHealth(HEALTHY, f"Device {device} operating normally, temperature: {HEALTHY_TEMPERATURE_C}°C")

    @classmethod
    def mock(cls, node_name: str, cfg: MockGpuConfig | None = None, **kwargs: Any) -> GpuDriver:
        cfg = cfg or example_config()
        gpus = [replace(g, uuid="gpu-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"dra-example-driver/{node_name}/{i}")))
                for i, g in enumerate(mock_gpus(node_name, cfg))]
        return cls(gpus, cfg.driver_version, **kwargs)

    # ---- devices ---------------------------------------------------------------------------
    def _attributes(self, gpu: GpuInfo, kind: str = "") -> Obj:
        del kind
        return {"index": {"int": gpu.index}, "uuid": {"string": gpu.uuid},
                "model": {"string": gpu.product_name}, "driverVersion": {"version": self.driver_version}}

    def pools(self, node_name: str) -> dict[str, PoolSpec]:
        pool = PoolSpec()
        for gpu in self.gpus:
            if not self.partition_count:
                dev: Obj = {"name": f"gpu-{gpu.index}", "attributes": self._attributes(gpu),
                            "capacity": {"memory": {"value": format_bytes(gpu.memory_bytes)}}}
                if self.shared:
                    dev["allowMultipleAllocations"] = True
                    dev["capacity"] = {"memory": _capacity_policy(gpu.memory_bytes, "memory"),
                                       "compute": _capacity_policy(COMPUTE_PER_GPU, "compute")}
                pool.devices.append(dev)
                continue
            counter_set = f"gpu-{gpu.index}-counters"
            whole = {"memory": {"value": format_bytes(gpu.memory_bytes)}, "compute": {"value": str(COMPUTE_PER_GPU)}}
            pool.shared_counters.append({"name": counter_set, "counters": whole})
            memory = gpu.memory_bytes // self.partition_count
            compute = COMPUTE_PER_GPU // self.partition_count
            for j in range(self.partition_count):
                part: Obj = {
                    "name": f"gpu-{gpu.index}-partition-{j}",
                    "attributes": {**self._attributes(gpu), "partition": {"int": j}, "partitionable": {"bool": True}},
                    "capacity": {"memory": {"value": format_bytes(memory)}},
                    "consumesCounters": [{"counterSet": counter_set, "counters": {
                        "memory": {"value": format_bytes(memory)}, "compute": {"value": str(compute)}}}],
                }
                if self.shared:
                    part["allowMultipleAllocations"] = True
                    part["capacity"] = {"memory": _capacity_policy(memory, "memory"),
                                        "compute": _capacity_policy(compute, "compute")}
                pool.devices.append(part)
            pool.devices.append({
                "name": f"gpu-{gpu.index}-full",
                "attributes": {**self._attributes(gpu), "partitionable": {"bool": True}, "full": {"bool": True}},
                "capacity": {"memory": {"value": format_bytes(gpu.memory_bytes)}},
                "consumesCounters": [{"counterSet": counter_set, "counters": whole}],
            })
        if self.binding_conditions:  # gpu.go: every device, after the devices are built
            for dev in pool.devices:
                dev["bindingConditions"] = [BINDING_CONDITION]
                dev["bindingFailureConditions"] = [BINDING_FAILURE_CONDITION]
        return {node_name: pool}

    # ---- prepare ---------------------------------------------------------------------------
    def validate_config(self, parameters: Any) -> Any:
        return parse_example_config(parameters)

    def prepare(self, claim: ClaimRef, device: AllocatedDevice) -> ContainerEdits:
        self._gpu_of(device)  # a device of this node's GPUs, or ValueError
        cfg = device.config if isinstance(device.config, ExampleGpuConfig) else DEFAULT_GPU_CONFIG
        key = "GPU_DEVICE_" + _env_id(device.device.removeprefix("gpu-"))
        env = {key: device.device, f"{key}_SHARING_STRATEGY": cfg.strategy}
        if cfg.strategy == "TimeSlicing":
            env[f"{key}_TIMESLICE_INTERVAL"] = cfg.interval
        else:
            env[f"{key}_PARTITION_COUNT"] = str(cfg.partition_count or 0)
        # cdi.go: the claim's edits and the driver's common spec
        env["GPU_DEVICE_" + re.sub(r"\W", "_", device.device).upper() + "_RESOURCE_CLAIM"] = claim.uid
        env["DRA_ADMIN_ACCESS"] = "true" if device.admin_access else "false"
        env["DRA_RESOURCE_DRIVER_NAME"] = self.name
        held = self.prepared.setdefault(claim.uid, [])
        if device.device not in held:
            held.append(device.device)
        return ContainerEdits(env=env)


def example_device_classes(driver_name: str = EXAMPLE_DRIVER_NAME, *, extended_resource_name: str = "") -> list[Obj]:
    """The DeviceClass the example driver's helm chart installs (``templates/deviceclass.yaml``)."""
    cls: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver_name},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver_name}'"}}]}}
    if extended_resource_name:
        cls["spec"]["extendedResourceName"] = extended_resource_name
    return [cls]
