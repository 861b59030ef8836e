"""Simulated nodes that run the example GPU driver: the ``drasched.io/sim-gpus`` Node annotation.

A node in ``drasched simulate`` declares mock GPUs with one annotation instead of
hand-written ResourceSlices::

    metadata:
      annotations:
        drasched.io/sim-gpus: "count=4,model=NVIDIA A100-SXM4-80GB,memory=80Gi"

Keys (all optional; defaults are those of ``drasched driver gpu --mock``): ``count``,
``model``, ``memory`` (a quantity), ``driverVersion``, ``computeCapability``,
``migCapable``, ``partitions`` (MIG-like partitions with shared counters), ``shared``
(``allowMultipleAllocations`` with consumable memory), ``driver`` (the DRA driver name,
default ``gpu.drasched.io``) and, for the DRA example driver only, ``extendedResourceName``.
Booleans are ``true``/``false``; a bare ``partitions`` or ``shared`` means true. Values
cannot contain commas. ``count`` is at most 128 (what one ResourceSlice holds),
``computeCapability`` is ``MAJOR.MINOR`` and ``driverVersion`` dotted numbers; anything else
is refused with the event below, never half-built. For a GPU model NVIDIA's table in
:mod:`drasched.node.nvidia_gpu` knows, ``memory``, ``computeCapability`` and ``migCapable``
default to the model's (``model=NVIDIA A100-SXM4-40GB``: 40Gi, 8.0, so architecture Ampere),
as NVML reports them, with the default driver as with NVIDIA's.

**``driver=gpu.nvidia.com``: NVIDIA's DRA driver.** The node then runs
:class:`~drasched.node.nvidia_gpu.NvidiaGpuDriver`, which publishes and prepares devices as
NVIDIA's GPU kubelet plugin does (attributes and MIG devices of its ``deviceinfo.go``, its
``resource.nvidia.com/v1beta1`` ``GpuConfig``/``MigDeviceConfig``; see that module), so
NVIDIA's published examples run unchanged; ``partitions`` publishes the MIG devices of the
driver's partitionable announcement. The annotation stands for "the driver is installed":
when such a driver first starts, the DeviceClasses NVIDIA's helm chart installs
(``gpu.nvidia.com``, ``mig.nvidia.com``) are created, each only if no DeviceClass of that
name exists (a user-written one wins and is never changed), once per run (one the user
deletes later stays deleted, as after a chart install); the decision record says which were
created (``create-device-class``) and which were kept (``keep-device-class``). Their
``creationTimestamp`` is a second before every other DeviceClass's, as the chart came first:
a user's class that shares their ``extendedResourceName`` (NVIDIA's MIG-profile examples give
``nvidia.com/gpu`` to a class of their own) is the later one, which upstream picks. The default
driver installs no class: its DeviceClass is the user's to write.

**``driver=gpu.example.com`` or ``driver=gpu.dra-example-driver.sigs.k8s.io``: the DRA example
driver** (kubernetes-sigs/dra-example-driver, its ``gpu`` profile). The node then runs
:class:`~drasched.node.example_gpu.ExampleGpuDriver`: devices ``gpu-<i>`` with ``index``,
``uuid``, ``model`` (``LATEST-GPU-MODEL``), ``driverVersion`` (``1.0.0``) and ``memory: 80Gi``
(the ``model``, ``memory`` and ``driverVersion`` keys default to those), its
``gpu.resource.example.com/v1alpha1`` ``GpuConfig`` (TimeSlicing, SpacePartitioning), so the
driver's demo examples run unchanged. ``partitions=N`` (a number, for this driver only: the
chart's ``kubeletPlugin.gpuPartitions``; a bare ``partitions`` is 4, ``partitions=0`` none)
publishes ``gpu-<i>-partition-<j>`` and ``gpu-<i>-full`` devices over one counter set per
GPU; ``shared`` is the chart's ``gpuAllowMultipleAllocations`` (consumable ``memory`` and
``compute``). Its chart's DeviceClass (named after the driver, ``device.driver == '<driver>'``,
with ``extendedResourceName`` when the key gives one) is installed as NVIDIA's are; see that
module.

**Why an annotation and not a ``SimulatedDriver`` object.** Every option of the mock
driver is a scalar, so one ``key=value`` list expresses all of them; the inventory then
lives on the Node it describes (no second object to keep in step with the node's name, no
CRD to register for a kind that only the simulator reads), and deleting or editing the
Node is all it takes to remove or change the GPUs. The annotation is what a user would
write first, and it survives a round trip through ``kubectl get -o yaml``.

What the simulated kubelet does with it (:class:`SimNodeDrivers`): when it first sees an
annotated node it starts the mock ``GpuDriver`` there, once: the kit's publisher writes the
node's ResourceSlices through the store and the in-process plugin is registered in the
kubelet's :class:`~drasched.node.inprocess.DriverRegistry`. When the annotation changes it
republishes (the pool's generation bumps, prepared claims stay prepared); when the
annotation goes, turns invalid, or the node is deleted, it stops the driver: the plugin
is deregistered and its slices are deleted. An invalid annotation is a Warning event
(``InvalidSimGpus``) on the node; nothing else stops.

CDI specs stay in memory (``cdi_dir=None``): the simulation runs the same CDI code and
returns the same IDs without writing a file anywhere. With ``sockets=True`` each plugin is
also served over real unix sockets (``PluginServer``) and registered through the kubelet's
handshake, so the kubelet calls it over gRPC; the sockets live in a temporary directory
owned by the run, removed by :meth:`SimNodeDrivers.close` (or when the object is collected).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shutil
import tempfile
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, NotFound
from drasched.api.meta import format_time, parse_time
from drasched.api.validation.resource import extended_resource_name_errors
from drasched.control import ControllerContext
from drasched.node.client import KubeletPluginClient, register
from drasched.node.example_gpu import (
    DEFAULT_PARTITIONS,
    EXAMPLE_DRIVER_NAMES,
    MAX_PARTITIONS,
    ExampleGpuDriver,
    example_config,
    example_device_classes,
    is_example_driver,
)
from drasched.node.gpu_driver import DRIVER_NAME, GpuDriver, MockGpuConfig
from drasched.node.inprocess import DriverRegistry, start_driver, stop_driver
from drasched.node.nvidia_gpu import NVIDIA_DRIVER_NAME, NvidiaGpuDriver, gpu_model, model_memory, nvidia_device_classes
from drasched.node.plugin import KubeletPlugin
from drasched.node.publisher import MAX_DEVICES, PublishError, SlicePublisher
from drasched.node.server import PluginServer

Obj = dict[str, Any]

SIM_GPUS_ANNOTATION = "drasched.io/sim-gpus"
COMPONENT = "sim-kubelet"

_BOOL_KEYS = ("migCapable", "partitions", "shared", "bindingConditions")
_BOOL_ATTRS = {"migCapable": "mig_capable", "bindingConditions": "binding_conditions"}
_KEYS = ("count", "model", "memory", "driverVersion", "computeCapability", "driver", *_BOOL_KEYS,
         "extendedResourceName")
_TRUE = {"true": True, "false": False}
_COMPUTE_CAPABILITY = re.compile(r"\d{1,3}\.\d{1,3}")
_DRIVER_VERSION = re.compile(r"\d{1,6}(\.\d{1,6}){0,2}")
MAX_SIM_GPUS = MAX_DEVICES
"""Mock GPUs one node may have: as many devices as one ResourceSlice holds (upstream
``ResourceSliceMaxDevices``); real nodes have a handful, and a typo such as ``count=1000000``
must not build a million devices."""


@dataclass(frozen=True)
class SimGpus:
    """The parsed annotation: which driver, and what mock GPUs it reports."""

    driver_name: str = DRIVER_NAME
    count: int = MockGpuConfig.count
    model: str = MockGpuConfig.model
    memory: str = MockGpuConfig.memory
    driver_version: str = MockGpuConfig.driver_version
    compute_capability: str = MockGpuConfig.compute_capability
    mig_capable: bool = MockGpuConfig.mig_capable
    partitions: bool = False
    shared: bool = False
    partition_count: int = 0
    """``partitions=N``: partitions per GPU (the DRA example driver only); 0 when not a number."""
    extended_resource_name: str = ""
    """The example driver's chart DeviceClass's ``extendedResourceName`` (none when empty)."""
    binding_conditions: bool = False
    """The example driver's ``kubeletPlugin.bindingConditions=true`` with its controller's
    ``BindingConditions`` plugin (:mod:`drasched.node.example_binding`)."""

    def driver(self, node_name: str) -> GpuDriver:
        """The mock driver for ``node_name`` (raises ValueError on a bad memory or version);
        NVIDIA's stand-in (:class:`~drasched.node.nvidia_gpu.NvidiaGpuDriver`) under ``gpu.nvidia.com``,
        the DRA example driver's (:class:`~drasched.node.example_gpu.ExampleGpuDriver`) under its names."""
        cfg = MockGpuConfig(count=self.count, model=self.model, memory=self.memory,
                            driver_version=self.driver_version, compute_capability=self.compute_capability,
                            mig_capable=self.mig_capable)
        if is_example_driver(self.driver_name):
            return ExampleGpuDriver.mock(node_name, cfg, name=self.driver_name,
                                         partitions=self.partition_count or self.partitions, shared=self.shared,
                                         binding_conditions=self.binding_conditions)
        cls = NvidiaGpuDriver if self.driver_name == NVIDIA_DRIVER_NAME else GpuDriver
        return cls.mock(node_name, cfg, name=self.driver_name, partitions=self.partitions, shared=self.shared)

    def device_classes(self) -> list[Obj]:
        """The DeviceClasses the driver's helm chart installs (none for the default driver)."""
        if self.driver_name == NVIDIA_DRIVER_NAME:
            return nvidia_device_classes()
        if is_example_driver(self.driver_name):
            return example_device_classes(self.driver_name, extended_resource_name=self.extended_resource_name)
        return []

    def describe(self) -> str:
        """What the driver publishes, for the decision record."""
        text = f"{self.count} mock GPU(s) ({self.model}, {self.memory})"
        if is_example_driver(self.driver_name):
            if self.partitions:
                n = self.partition_count or DEFAULT_PARTITIONS
                text += f", each as {n} partitions and a full device over counter set gpu-<i>-counters"
            if self.shared:
                text += (", partitions" if self.partitions else ", GPUs") + " allowing multiple allocations"
            if self.binding_conditions:
                text += (", every device with binding condition BindingConditions (set True by the driver's "
                         "controller once a claim is allocated)")
            return text
        if self.driver_name == NVIDIA_DRIVER_NAME and self.partitions:
            model = gpu_model(self.model)
            text += (", no MIG devices (migCapable=false)" if not self.mig_capable
                     else " with their MIG devices (partitionable)" if model and model.mig
                     else ", no MIG devices (no MIG profiles modeled for this model)")
        return text


def parse_sim_gpus(text: str) -> SimGpus:
    """Parse ``count=4,model=...,memory=80Gi[,partitions[=N]][,shared=true]``; ValueError names the key."""
    values: dict[str, str] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if key not in _KEYS:
            raise ValueError(f"unknown key {key!r} (known: {', '.join(_KEYS)})")
        if key in values:
            raise ValueError(f"key {key!r} given twice")
        if not eq:
            if key not in _BOOL_KEYS:
                raise ValueError(f"key {key!r} needs a value ({key}=...)")
            value = "true"
        values[key] = value
    kwargs: dict[str, Any] = {}
    if "count" in values:
        try:
            kwargs["count"] = int(values["count"])
        except ValueError:
            raise ValueError(f"count must be an integer, not {values['count']!r}") from None
        if kwargs["count"] < 0:
            raise ValueError(f"count must not be negative, not {values['count']}")
        if kwargs["count"] > MAX_SIM_GPUS:
            raise ValueError(f"count must be at most {MAX_SIM_GPUS} (the devices one ResourceSlice may hold), "
                             f"not {values['count']}")
    if values.get("partitions", "").isdigit():  # partitions=N: the example driver's partitions per GPU
        kwargs["partition_count"] = int(values["partitions"])
        kwargs["partitions"] = kwargs["partition_count"] > 0
        del values["partitions"]
    for key in _BOOL_KEYS:
        if key in values:
            if values[key].lower() not in _TRUE:
                what = ("true, false or a number of partitions per GPU"
                        if key == "partitions" and is_example_driver(values.get("driver", "")) else "true or false")
                raise ValueError(f"{key} must be {what}, not {values[key]!r}")
            kwargs[_BOOL_ATTRS.get(key, key)] = _TRUE[values[key].lower()]
    for key, attr in (("model", "model"), ("memory", "memory"), ("driverVersion", "driver_version"),
                      ("computeCapability", "compute_capability"), ("driver", "driver_name")):
        if key in values:
            if not values[key]:
                raise ValueError(f"{key} must not be empty")
            kwargs[attr] = values[key]
    if "computeCapability" in values and not _COMPUTE_CAPABILITY.fullmatch(values["computeCapability"]):
        raise ValueError(f"computeCapability must be MAJOR.MINOR (such as 9.0), not {values['computeCapability']!r}")
    if "driverVersion" in values and not _DRIVER_VERSION.fullmatch(values["driverVersion"]):
        raise ValueError(f"driverVersion must be dotted numbers (such as 550.54.15), not {values['driverVersion']!r}")
    example = is_example_driver(kwargs.get("driver_name", DRIVER_NAME))
    if "partition_count" in kwargs and not example:
        raise ValueError(f"partitions={kwargs['partition_count']}: a number of partitions is for the DRA example "
                         f"driver ({', '.join(EXAMPLE_DRIVER_NAMES)}); this driver takes partitions=true or false")
    if kwargs.get("partition_count", 0) > MAX_PARTITIONS:
        raise ValueError(f"partitions must be at most {MAX_PARTITIONS} per GPU (its compute units), "
                         f"not {kwargs['partition_count']}")
    if kwargs.get("binding_conditions") and not example:
        raise ValueError(f"bindingConditions is the DRA example driver's chart value "
                         f"({', '.join(EXAMPLE_DRIVER_NAMES)}); other drivers publish no binding conditions")
    if "extendedResourceName" in values:
        name = values["extendedResourceName"]
        if not name:
            raise ValueError("extendedResourceName must not be empty")
        if not example:
            raise ValueError(f"extendedResourceName is the DRA example driver's chart value "
                             f"({', '.join(EXAMPLE_DRIVER_NAMES)}); other drivers' classes set their own")
        problems = extended_resource_name_errors(name)
        if problems:
            raise ValueError(f"extendedResourceName {name!r}: {'; '.join(problems)}")
        kwargs["extended_resource_name"] = name
    if example:  # the example driver's fixed model, memory and version, unless given
        cfg = example_config()
        kwargs.setdefault("model", cfg.model)
        kwargs.setdefault("memory", cfg.memory)
        kwargs.setdefault("driver_version", cfg.driver_version)
    if not example:
        # NVML reports what the model has: unless given, memory, compute capability and MIG come
        # from it (NVIDIA's driver and the default mock, which stands for an NVIDIA GPU too)
        model_name = kwargs.get("model", MockGpuConfig.model)
        model = gpu_model(model_name)
        if model is not None:
            kwargs.setdefault("memory", model_memory(model_name))
            kwargs.setdefault("compute_capability", model.compute_capability)
            kwargs.setdefault("mig_capable", model.mig is not None)
    return SimGpus(**kwargs)


@dataclass
class _Running:
    uid: str
    spec: SimGpus
    plugin: KubeletPlugin


@dataclass
class _Sockets:
    """The run's socket directory and the servers in it (no reference back to its owner, so a
    finalizer can clean up after it)."""

    root: Path | None = None
    served: dict[str, tuple[PluginServer, KubeletPluginClient, Path]] = field(default_factory=dict)

    def directory(self) -> Path:
        if self.root is None:  # short paths: a unix socket path holds at most 107 bytes
            self.root = Path(tempfile.mkdtemp(prefix="drasched-sim-", dir="/tmp" if Path("/tmp").is_dir() else None))
        return self.root

    def stop(self, node_name: str) -> None:
        entry = self.served.pop(node_name, None)
        if entry is not None:
            server, client, base = entry
            client.close()
            server.stop(grace=None)
            shutil.rmtree(base, ignore_errors=True)

    def close(self) -> None:
        for node_name in sorted(self.served):
            self.stop(node_name)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


def _installed_before(ctx: ControllerContext) -> str:
    """A chart-installed class's creationTimestamp: a second before every DeviceClass the
    store holds (and before now), since the chart was installed before the user's objects.
    Upstream picks the class created later among those sharing an ``extendedResourceName``
    (DeviceClassSpec.extendedResourceName), so a user's class with NVIDIA's
    ``nvidia.com/gpu`` (the chart's MIG-profile examples) wins over the chart's, as in a
    cluster where the chart came first."""
    times = [ctx.now()]
    for existing in ctx.store.list(kinds.DEVICE_CLASS).items:
        stamp = (existing.get("metadata") or {}).get("creationTimestamp")
        if isinstance(stamp, str) and stamp:
            with contextlib.suppress(ValueError):
                times.append(parse_time(stamp))
    return format_time(min(times) - timedelta(seconds=1))


class SimNodeDrivers:
    """Keeps each annotated node's mock driver in step with its annotation (start once,
    republish on change, stop when gone); the plugins go into ``registry``, in process or,
    with ``sockets``, as clients of real gRPC servers."""

    def __init__(self, registry: DriverRegistry, *, sockets: bool = False) -> None:
        self.registry = registry
        self.sockets = sockets
        self._running: dict[str, _Running] = {}
        self._warned: dict[tuple[str, str], str] = {}
        self._socks = _Sockets()
        self._seq = itertools.count(1)
        self._classes_done: set[str] = set()
        self._finalizer = weakref.finalize(self, _Sockets.close, self._socks)

    def close(self) -> None:
        """Stop serving sockets and remove the run's socket directory; the store is left alone."""
        self._finalizer()

    def socket_dir(self) -> Path | None:
        """The run's socket directory, once a plugin is served there."""
        return self._socks.root

    def binding_condition_drivers(self) -> frozenset[str]:
        """The example drivers running with binding conditions on some node: their controller's
        ``BindingConditions`` plugin satisfies the conditions of those drivers' devices."""
        return frozenset(r.spec.driver_name for r in self._running.values() if r.spec.binding_conditions)

    def running(self) -> dict[str, str]:
        """Node name -> driver name, for every node whose mock driver runs."""
        return {node: r.spec.driver_name for node, r in sorted(self._running.items())}

    def sync(self, ctx: ControllerContext, nodes: Iterable[Obj]) -> bool:
        """Bring every node's driver in step; True when slices or plugins changed."""
        changed = False
        seen: set[str] = set()
        for node in nodes:
            md = node.get("metadata") or {}
            name, uid = md.get("name", ""), md.get("uid", "")
            seen.add(name)
            text = (md.get("annotations") or {}).get(SIM_GPUS_ANNOTATION)
            current = self._running.get(name)
            if text is None:
                if current is not None:
                    changed |= self._stop(ctx, name, f"annotation {SIM_GPUS_ANNOTATION} removed")
                continue
            try:
                spec = parse_sim_gpus(text)
                driver = spec.driver(name)
            except ValueError as exc:
                self._warn(ctx, node, "InvalidSimGpus", f"annotation {SIM_GPUS_ANNOTATION}={text!r}: {exc}"
                           + ("; its mock driver stopped" if current is not None else "; no mock driver started"))
                if current is not None:
                    changed |= self._stop(ctx, name, f"annotation {SIM_GPUS_ANNOTATION} is invalid")
                continue
            if current is not None and current.uid == uid and current.spec == spec:
                continue
            if current is not None and (current.uid != uid or current.spec.driver_name != spec.driver_name):
                changed |= self._stop(ctx, name, "node replaced" if current.uid != uid else "driver renamed")
                current = None
            try:
                if current is None:
                    plugin = start_driver(ctx.store, self.registry, name, driver)
                    self._running[name] = _Running(uid, spec, plugin)
                    if self.sockets:
                        self._serve(name, plugin)
                    ctx.decide(COMPONENT, "start-driver", node,
                               f"driver {spec.driver_name} publishes {spec.describe()}")
                    self._install_classes(ctx, name, spec)
                else:
                    self._republish(ctx, current, driver)
                    current.spec = spec
                    ctx.decide(COMPONENT, "republish-driver", node,
                               f"driver {spec.driver_name} now publishes {spec.describe()}")
            except (PublishError, ApiError) as exc:
                self._warn(ctx, node, "FailedPublishResourceSlices",
                           f"driver {spec.driver_name}: cannot publish ResourceSlices: {exc}")
                continue
            changed = True
        for name in sorted(set(self._running) - seen):
            changed |= self._stop(ctx, name, "node deleted")
        return changed

    def _install_classes(self, ctx: ControllerContext, node_name: str, spec: SimGpus) -> None:
        """Create the DeviceClasses the driver's chart installs (NVIDIA's, the DRA example
        driver's), once per run and only where absent: a class of the same name the user wrote
        (or deleted after we made it) is left alone."""
        driver = spec.driver_name
        for cls in spec.device_classes():
            name = cls["metadata"]["name"]
            if name in self._classes_done:
                continue
            self._classes_done.add(name)
            try:
                ctx.store.get(kinds.DEVICE_CLASS, name)
            except NotFound:
                pass
            else:
                ctx.decide(COMPONENT, "keep-device-class", f"DeviceClass/{name}",
                           f"DeviceClass {name} already exists: kept as written, not replaced by the one "
                           f"driver {driver}'s helm chart installs")
                continue
            cls["metadata"]["creationTimestamp"] = _installed_before(ctx)
            try:
                created = ctx.store.create(cls)
            except AlreadyExists:
                continue
            except ApiError as exc:  # the driver runs all the same; the claims of that class wait
                ctx.decide(COMPONENT, "FailedCreateDeviceClass", f"DeviceClass/{name}",
                           f"driver {driver}: cannot create DeviceClass {name}: {exc}")
                continue
            expr = cls["spec"]["selectors"][0]["cel"]["expression"]
            extended = cls["spec"].get("extendedResourceName")
            ctx.decide(COMPONENT, "create-device-class", created,
                       f"driver {driver} started on node {node_name}: DeviceClass {name} created as "
                       f"its helm chart installs it (selector {expr}"
                       + (f", extendedResourceName {extended})" if extended else ")"))

    def stop_all(self, ctx: ControllerContext) -> None:
        """Stop every driver (deregister, delete its slices)."""
        for name in sorted(self._running):
            self._stop(ctx, name, "shutdown")

    def _serve(self, node_name: str, plugin: KubeletPlugin) -> None:
        """Serve the plugin on unix sockets and register it as the kubelet does (GetInfo, notify)."""
        base = self._socks.directory() / f"n{next(self._seq)}"
        server = PluginServer(plugin, registry_dir=base / "registry", plugin_dir=base / "plugin")
        server.start()
        try:
            client = register(server.registration_socket)
        except BaseException:
            server.stop(grace=None)
            raise
        self._socks.served[node_name] = (server, client, base)
        self.registry.register(node_name, client)

    def _republish(self, ctx: ControllerContext, current: _Running, driver: GpuDriver) -> None:
        """Swap the plugin's driver, keeping what it has prepared, and publish the new pools."""
        plugin = current.plugin
        old = plugin.driver
        if isinstance(old, GpuDriver):
            driver.prepared = old.prepared
        plugin.driver = driver
        plugin.refresh_inventory()
        SlicePublisher(ctx.store, driver.name, plugin.node_name).publish(plugin.pools())

    def _stop(self, ctx: ControllerContext, node_name: str, why: str) -> bool:
        running = self._running.pop(node_name)
        self._socks.stop(node_name)
        try:
            stop_driver(ctx.store, self.registry, node_name, running.spec.driver_name)
        except ApiError as exc:  # the plugin is gone either way; leftover slices are reported
            ctx.decide(COMPONENT, "FailedUnpublishResourceSlices", f"Node/{node_name}",
                       f"driver {running.spec.driver_name}: {exc}")
        ctx.decide(COMPONENT, "stop-driver", f"Node/{node_name}", f"driver {running.spec.driver_name} stopped "
                   f"({why}); its ResourceSlices are deleted")
        return True

    def _warn(self, ctx: ControllerContext, node: Obj, reason: str, message: str) -> None:
        key = ((node.get("metadata") or {}).get("uid", ""), reason)
        if self._warned.get(key) == message:
            return
        self._warned[key] = message
        ctx.event(node, "Warning", reason, message, component=COMPONENT)
        ctx.decide(COMPONENT, reason, node, message)
