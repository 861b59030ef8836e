"""Accounting dimensions for devices, and device counts per node for each DeviceClass.

docs/design.md ("Accounting dimensions"): every DeviceClass is one dimension keyed by its implicit name
``deviceclass.resource.kubernetes.io/<class>``; its explicit ``extendedResourceName`` is an
alias of it. GPU classes (explicit name ``nvidia.com/gpu``, or listed in the scheduler
config) all count in the one GPU dimension ``nvidia.com/gpu``, with device-plugin GPUs,
in GPU units (:func:`device_units`; :mod:`drasched.scheduler.gpus` defines them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from drasched.dra.allocator import Allocator
from drasched.dra.extended import DeviceClassByResource, implicit_name
from drasched.dra.pools import DeviceEntry, DeviceID, qualify, qvalue
from drasched.scheduler.constants import GPU, IMPLICIT_CLASS_PREFIX

Obj = dict[str, Any]
GPU_RESOURCE_NAMES = frozenset({GPU})
ONE = Fraction(1)


def device_units(dev: DeviceEntry, result: Obj | None = None) -> Fraction:
    """GPU units one allocation ``result`` of ``dev`` takes (see :mod:`drasched.scheduler.gpus`)."""
    if result is not None and result.get("adminAccess"):
        return Fraction(0)
    consumed = (result or {}).get("consumedCapacity")
    if dev.multi:
        if not consumed:
            return ONE
        share = Fraction(0)
        for name, raw in consumed.items():
            cap = dev.capacity.get(qualify(str(name), dev.driver))
            if cap is not None and cap.value > 0:
                share = max(share, qvalue(raw) / cap.value)
        return min(share, ONE) if share > 0 else ONE
    if dev.consumes:
        share = Fraction(0)
        for set_name, counters in dev.consumes:
            totals = dev.pool.counter_sets.get(set_name) or {}
            for cname, v in counters.items():
                total = totals.get(cname)
                if total:
                    share = max(share, v / total)
        return min(share, ONE) if share > 0 else ONE
    return ONE


class DeviceAccounting:
    """Maps resource names and DeviceClasses to accounting dimensions (built per snapshot)."""

    def __init__(self, classes: Iterable[Obj], gpu_classes: Iterable[str] = ()) -> None:
        classes = list(classes)
        self.by_resource = DeviceClassByResource.build(classes)
        self.class_names: tuple[str, ...] = tuple(sorted(
            (c.get("metadata") or {}).get("name", "") for c in classes if (c.get("metadata") or {}).get("name")))
        gpu = set(gpu_classes)
        for c in classes:
            if (c.get("spec") or {}).get("extendedResourceName") in GPU_RESOURCE_NAMES:
                gpu.add((c.get("metadata") or {}).get("name", ""))
        self.gpu_classes = frozenset(gpu & set(self.class_names))
        self.devices: Mapping[DeviceID, DeviceEntry] = {}
        """The cycle's devices (set by the snapshot), to weigh GPU results in GPU units."""
        self._dims: dict[str, str] = {}
        """Resource name -> dimension, memoised: every pod's every request asks each cycle."""

    def class_dim(self, class_name: str) -> str:
        """The accounting dimension a device of this class counts in."""
        return GPU if class_name in self.gpu_classes else implicit_name(class_name)

    def result_units(self, class_name: str, result: Obj) -> float:
        """What one allocation result of a class counts in its dimension: GPU units for GPU classes, else 1."""
        if class_name not in self.gpu_classes:
            return 1.0
        dev = self.devices.get((str(result.get("driver", "")), str(result.get("pool", "")),
                                str(result.get("device", ""))))
        return 1.0 if dev is None else float(device_units(dev, result))

    def dim_of(self, resource: str) -> str:
        """The accounting dimension of a resource name (explicit and implicit names are aliases)."""
        dim = self._dims.get(resource)
        if dim is None:
            dim = self._dims[resource] = self._dim_of(resource)
        return dim

    def _dim_of(self, resource: str) -> str:
        if resource in GPU_RESOURCE_NAMES:
            return GPU
        cls = self.by_resource.class_for(resource)
        if cls is not None:
            return self.class_dim(cls)
        if resource.startswith(IMPLICIT_CLASS_PREFIX):
            name = resource[len(IMPLICIT_CLASS_PREFIX):]
            return self.class_dim(name)
        return resource


def class_matches(alloc: Allocator, class_name: str, dev: DeviceEntry) -> bool:
    """Whether a device satisfies a class's selectors (CEL errors count as no match)."""
    entry = alloc.classes.get(class_name)
    if entry is None:
        return False
    view = entry[0]
    for i, sel in enumerate(view.spec.selectors):
        if sel.cel is None:
            continue
        if alloc.selectors.evaluate(sel.cel.expression, dev, f"class {class_name}: selector #{i}") is not True:
            return False
    return True


class ClassMatchMemo:
    """Which classes each device matches, kept across cycles while its slice and the classes are unchanged."""

    def __init__(self) -> None:
        self._classes_key: object = None
        self._memo: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self._next: dict[tuple[str, str, str], tuple[str, ...]] = {}

    def begin(self, classes_key: object) -> None:
        if classes_key != self._classes_key:
            self._memo = {}
            self._classes_key = classes_key
        self._next = {}

    def get(self, key: tuple[str, str, str]) -> tuple[str, ...] | None:
        hit = self._memo.get(key)
        if hit is not None:
            self._next[key] = hit
        return hit

    def put(self, key: tuple[str, str, str], classes: tuple[str, ...]) -> None:
        self._next[key] = classes

    def end(self) -> None:
        """Forget devices of slices that are gone or changed."""
        self._memo = self._next
        self._next = {}


@dataclass
class ClassCounts:
    """Per class: devices matching it on each node, and how many of them are in use."""

    total: dict[str, np.ndarray]
    in_use: dict[str, np.ndarray]
    gpu_total: np.ndarray
    """Devices matching any GPU class, each counted once per node."""
    gpu_in_use: np.ndarray
    multi: frozenset[str]
    """Classes with devices that allow multiple allocations (in-use counts are lower bounds)."""
    device_classes: dict[DeviceID, tuple[str, ...]]
    """Classes each (single-allocation) device matches, to update rows as the session allocates."""
    device_nodes: dict[DeviceID, list[int]]
    """Nodes that can reach each device (one for node-local devices)."""


def count_class_devices(alloc: Allocator, nodes: Sequence[Obj], accounting: DeviceAccounting,
                        memo: ClassMatchMemo | None = None, slice_rv: Mapping[str, str] | None = None) -> ClassCounts:
    """Count, on every node, the devices each DeviceClass matches (shared devices count once).

    With ``memo`` and the slices' resourceVersions, class matches carry over between cycles.
    """
    slice_rv = slice_rv or {}
    n = len(nodes)
    names = accounting.class_names
    total = {c: np.zeros(n) for c in names}
    in_use = {c: np.zeros(n) for c in names}
    gpu_total = np.zeros(n)
    gpu_in_use = np.zeros(n)
    multi: set[str] = set()
    device_classes: dict[DeviceID, tuple[str, ...]] = {}
    device_nodes: dict[DeviceID, list[int]] = {}
    state = alloc.state
    for i, node in enumerate(nodes):
        if not names:
            break
        devices = alloc.index.for_node(node).devices
        for dev in devices:
            used = state.in_use(dev.id) and not dev.multi
            any_gpu = False
            matched = device_classes.get(dev.id)
            if matched is None:
                key = (dev.slice_name, slice_rv.get(dev.slice_name, ""), dev.name)
                matched = memo.get(key) if memo is not None else None
                if matched is None:
                    matched = tuple(c for c in names if class_matches(alloc, c, dev))
                    if memo is not None:
                        memo.put(key, matched)
                if not dev.multi:
                    device_classes[dev.id] = matched
            if not dev.multi:
                device_nodes.setdefault(dev.id, []).append(i)
            for c in matched:
                total[c][i] += 1
                if used:
                    in_use[c][i] += 1
                if dev.multi:
                    multi.add(c)
                any_gpu |= c in accounting.gpu_classes
            if any_gpu:
                gpu_total[i] += 1
                if used:
                    gpu_in_use[i] += 1
    return ClassCounts(total, in_use, gpu_total, gpu_in_use, frozenset(multi), device_classes, device_nodes)
