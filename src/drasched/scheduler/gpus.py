"""DRA GPUs in the node's GPU row, in GPU units.

The GPU row of the snapshot (``nvidia.com/gpu``) is what quota, fair share, preemption,
topology and node order read. On a node whose ``status.allocatable`` carries GPUs (the
device plugin) it holds those; on any other node it holds the GPUs DRA publishes there,
so a DRA GPU and a device-plugin GPU weigh the same everywhere. Device plugin wins: a node
with both (the same GPUs seen twice mid-migration) counts its device-plugin GPUs only.

**GPU units.** The GPU dimension counts whole GPUs; a device of a GPU DeviceClass (one the
accounting marks as GPU: explicit name ``nvidia.com/gpu`` or listed in the scheduler
config) counts as:

* capacity of a node: one unit per GPU the node can reach. A device that consumes shared
  counters (partitionable devices, KEP-4815) is part of a physical GPU; devices linked
  through the counter sets they consume form ONE GPU (a whole GPU and its partitions count
  1, not 1 + partitions). A device that allows multiple allocations (consumable capacity,
  KEP-5075) counts once, however many claims share it.
* what one allocation result takes: ``0`` with admin access; for a share of a device with
  consumable capacity, the largest ``consumedCapacity / capacity`` over its capacities
  (``40Gi`` of ``80Gi`` memory is 0.5; a share that reports none counts 1); for a device
  that consumes counters, the largest ``consumed / counter-set total`` over its counters
  (a MIG-like 3g partition of a 7-slice, 80Gi GPU consumes 3/7 slices and 40Gi: 0.5);
  otherwise 1. The dominant share is used because the scarcest part of a GPU is what
  nobody else can have.

Claims created for extended resources (KEP-5004) are not counted here: their pod's
container request (or its ``drasched.io/gpu-fraction``) counts instead, exactly once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from drasched.dra.allocator import Allocator
from drasched.dra.pools import DeviceEntry, DeviceID
from drasched.scheduler.devices import DeviceAccounting, class_matches, device_units
from drasched.scheduler.podinfo import NodeInfo

Obj = dict[str, Any]
def _count_gpus(devices: Sequence[DeviceEntry]) -> int:
    """Physical GPUs among ``devices``: counter-linked devices are one GPU (union-find on counter sets)."""
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    plain = 0
    for d in devices:
        if not d.consumes:
            plain += 1
            continue
        sets = [(d.pool.id, name) for name, _ in d.consumes]
        for s in sets[1:]:
            parent[find(s)] = find(sets[0])
        find(sets[0])
    return plain + len({find(x) for x in list(parent)})


@dataclass
class GpuInventory:
    """Per node: DRA GPU units, the part held by (non-extended-resource) claims, and shareable GPUs."""

    dra_nodes: np.ndarray
    """Nodes whose GPU row comes from DRA (no device-plugin GPUs in ``status.allocatable``)."""
    total: np.ndarray
    """GPU units DRA publishes on each node (0 where the device plugin serves GPUs)."""
    used: np.ndarray
    """GPU units held on each DRA node by ResourceClaims (extended-resource claims excluded)."""
    devices: dict[DeviceID, DeviceEntry] = field(default_factory=dict)
    """Devices of GPU classes, by id."""
    device_nodes: dict[DeviceID, list[int]] = field(default_factory=dict)
    """GPU devices -> the DRA nodes that reach them."""
    shareable: dict[tuple[str, int], DeviceEntry] = field(default_factory=dict)
    """(GPU class, node) -> the first device of that class on the node that allows multiple allocations."""
    used_exact: dict[int, Fraction] = field(default_factory=dict)
    """``used`` as exact fractions (partitions are sevenths, eighths...): summed exactly, so taking
    a claim out and putting another in leaves no rounding behind."""

    def hold(self, allocation: Obj, sign: int) -> list[int]:
        """Add (``sign`` 1) or take out (-1) a claim's GPU units; the nodes whose ``used`` changed."""
        touched: list[int] = []
        for dev_id, units in self.allocation_units(allocation):
            for j in self.device_nodes.get(dev_id, ()):
                self.used_exact[j] = self.used_exact.get(j, Fraction(0)) + sign * units
                self.used[j] = float(self.used_exact[j])
                touched.append(j)
        return touched

    def result_units(self, result: Obj) -> Fraction:
        """GPU units of an allocation result (0 for devices that are no GPU)."""
        dev = self.devices.get((str(result.get("driver", "")), str(result.get("pool", "")),
                                str(result.get("device", ""))))
        return Fraction(0) if dev is None else device_units(dev, result)

    def allocation_units(self, allocation: Obj | None) -> list[tuple[DeviceID, Fraction]]:
        """(device, units) of every GPU result of an allocation."""
        out: list[tuple[DeviceID, Fraction]] = []
        for r in ((allocation or {}).get("devices") or {}).get("results") or []:
            dev_id = (str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
            dev = self.devices.get(dev_id)
            if dev is not None:
                out.append((dev_id, device_units(dev, r)))
        return out


def build_gpu_inventory(alloc: Allocator, nodes: Sequence[NodeInfo], accounting: DeviceAccounting,
                        dp_gpus: np.ndarray, claim_allocations: Iterable[Obj]) -> GpuInventory:
    """Count DRA GPUs per node; ``claim_allocations`` are the allocations of non-extended claims."""
    n = len(nodes)
    inv = GpuInventory(dra_nodes=~dp_gpus, total=np.zeros(n), used=np.zeros(n))
    gpu_classes = sorted(accounting.gpu_classes)
    if not gpu_classes:
        return inv
    matched: dict[DeviceID, tuple[str, ...]] = {}
    for node in nodes:
        j = node.index
        on_node: list[DeviceEntry] = []
        for dev in alloc.index.for_node(node.obj).devices:
            classes = matched.get(dev.id)
            if classes is None:
                classes = tuple(c for c in gpu_classes if class_matches(alloc, c, dev))
                matched[dev.id] = classes
            if not classes:
                continue
            inv.devices[dev.id] = dev
            if dp_gpus[j]:
                continue  # device plugin wins on this node
            on_node.append(dev)
            inv.device_nodes.setdefault(dev.id, []).append(j)
            if dev.multi:
                for c in classes:
                    inv.shareable.setdefault((c, j), dev)
        inv.total[j] = _count_gpus(on_node)
    for allocation in claim_allocations:
        inv.hold(allocation, 1)
    return inv
