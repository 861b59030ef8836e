"""Resource pools gathered from ResourceSlices, once per scheduling cycle.

Upstream (``structured/internal/experimental/pools_experimental.go``): a pool is
``(driver, pool name)``; only slices with the pool's highest generation count; the pool is
complete when it has ``resourceSliceCount`` slices of that generation; it is invalid when
device names repeat, counter set names repeat, or a device consumes a counter set or counter
that does not exist. Counter sets are pool-wide (since 1.35 a slice carries either devices or
``sharedCounters``). Pools are ordered by driver and pool name, slices by name, devices by
index, with pools that have binding conditions last, so first-fit results repeat.

The index is built once per cycle from all slices; :meth:`PoolIndex.for_node` then caches
the devices a node can reach, so the allocator can be asked about every node cheaply.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

import msgspec

from drasched.api.quantity import Format, Quantity, QuantityError
from drasched.api.resource import (
    CapacityRequestPolicy,
    Device,
    NodeSelector,
    ResourceSlice,
    decode,
)
from drasched.dra.nodes import node_matches

Obj = dict[str, Any]
DeviceID = tuple[str, str, str]
"""``(driver, pool, device)``: the unique name of a device."""
PoolID = tuple[str, str]


@lru_cache(maxsize=65536)
def _parse(v: str | int | float) -> Quantity:
    return Quantity.parse(v)


def quantity(v: str | int | float) -> Quantity:
    """Parse a wire quantity (cached)."""
    return _parse(v)


def qvalue(v: str | int | float) -> Fraction:
    """The exact value of a wire quantity."""
    return _parse(v).value


def format_quantity(value: Fraction, fmt: Format = Format.DECIMAL_SI) -> str:
    """Canonical string for an exact value (quantities are multiples of 1n)."""
    if value.denominator == 1:
        return str(Quantity.from_int(int(value), fmt))
    milli = value * 1000
    if milli.denominator == 1:
        return str(Quantity.from_milli(int(milli), fmt))
    nanos = -(-value.numerator * 10**9 // value.denominator)
    return str(Quantity.parse(f"{nanos}n"))


def qualify(name: str, driver: str) -> str:
    """A capacity or attribute name with its domain: unqualified names belong to the driver."""
    return name if "/" in name else f"{driver}/{name}"


@dataclass(eq=False)
class CapacityEntry:
    """One capacity of a device, parsed."""

    name: str  # as published (may be unqualified)
    value: Fraction
    raw_value: str | int | float
    policy: CapacityRequestPolicy | None


@dataclass(eq=False)
class DeviceEntry:
    """A device as the allocator sees it: parsed once per cycle, shared by every node."""

    driver: str
    pool_name: str
    name: str
    slice_name: str
    raw: Obj
    view: Device
    pool: Pool
    per_device_node_selection: bool
    slice_node_name: str | None
    slice_node_selector: NodeSelector | None
    capacity: dict[str, CapacityEntry]  # fully qualified name -> entry
    consumes: list[tuple[str, dict[str, Fraction]]]
    multi: bool
    order: int = 0
    _cel_view: Any = None
    id: DeviceID = ("", "", "")

    def __post_init__(self) -> None:
        self.id = (self.driver, self.pool_name, self.name)

    @property
    def node_name(self) -> str | None:
        """Where the device is local to one node (slice- or device-level)."""
        return self.view.node_name if self.per_device_node_selection else self.slice_node_name

    @property
    def node_selector(self) -> NodeSelector | None:
        return self.view.node_selector if self.per_device_node_selection else self.slice_node_selector

    def attribute(self, fq_name: str) -> tuple[str, Any] | None:
        """Upstream ``lookupAttribute``: exact key, else the identifier when the domain is the driver's."""
        attrs = self.view.attributes
        a = attrs.get(fq_name)
        if a is None:
            domain, sep, ident = fq_name.partition("/")
            if not sep or domain != self.driver:
                return None
            a = attrs.get(ident)
            if a is None:
                return None
        return a.typed()

    def cel_view(self) -> Any:
        """The CEL ``device`` input, built lazily once per cycle."""
        if self._cel_view is None:
            from drasched.cel import device_view_from_slice_device

            self._cel_view = device_view_from_slice_device(self.driver, self.raw)
        return self._cel_view

    def __repr__(self) -> str:
        return f"DeviceEntry({self.driver}/{self.pool_name}/{self.name})"


@dataclass(eq=False)
class Pool:
    """The usable generation of one pool, with why it cannot be used if so."""

    driver: str
    name: str
    generation: int
    slice_count: int
    slices: list[tuple[ResourceSlice, Obj]] = field(default_factory=list)
    incomplete_reason: str | None = None
    invalid_reason: str | None = None
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    devices: list[DeviceEntry] = field(default_factory=list)
    has_binding_conditions: bool = False

    @property
    def id(self) -> PoolID:
        return (self.driver, self.name)

    @property
    def usable(self) -> bool:
        return self.incomplete_reason is None and self.invalid_reason is None

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"


@dataclass(eq=False)
class NodePools:
    """What one node can reach: usable devices in first-fit order, and unusable pools."""

    pools: list[Pool]
    devices: list[DeviceEntry]
    incomplete: list[Pool]
    invalid: list[Pool]


def _slice_relevant(spec: Any, raw_devices: list[Device], node: Obj) -> bool:
    if spec.node_name or spec.all_nodes or spec.node_selector is not None:
        return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)
    if spec.per_device_node_selection:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in raw_devices)
    return False  # no node selection at all: some future extension we cannot interpret


class PoolIndex:
    """All pools of a cycle; built once from every ResourceSlice (wire dicts)."""

    def __init__(self, slices: list[Obj]) -> None:
        self.pools: dict[PoolID, Pool] = {}
        self.bad_slices: list[str] = []
        self.devices_by_id: dict[DeviceID, DeviceEntry] = {}
        self._node_cache: dict[str, NodePools] = {}
        grouped: dict[PoolID, list[tuple[ResourceSlice, Obj]]] = defaultdict(list)
        for raw in slices:
            try:
                view = decode(raw, ResourceSlice)
            except msgspec.ValidationError as exc:
                self.bad_slices.append(f"{(raw.get('metadata') or {}).get('name')}: {exc}")
                continue
            grouped[(view.spec.driver, view.spec.pool.name)].append((view, raw))
        for pid in sorted(grouped):
            pool = self._build_pool(pid, grouped[pid])
            self.pools[pid] = pool
        self._ordered = sorted(self.pools.values(), key=lambda p: (p.has_binding_conditions, p.driver, p.name))
        # Most pools are node-local (every slice names its node): index those by node name so
        # a node only looks at its own pools plus the few that use selectors.
        self._by_node: dict[str, list[int]] = defaultdict(list)
        self._generic: list[int] = []
        for i, pool in enumerate(self._ordered):
            node_names = {v.spec.node_name for v, _ in pool.slices}
            if None in node_names or "" in node_names:
                self._generic.append(i)
            else:
                for n in node_names:
                    self._by_node[str(n)].append(i)
        order = 0
        for pool in self._ordered:
            for d in pool.devices:
                d.order = order
                order += 1
                if pool.usable:
                    self.devices_by_id[d.id] = d

    def ordered_pools(self) -> list[Pool]:
        """Every pool in first-fit order."""
        return list(self._ordered)

    @staticmethod
    def _build_pool(pid: PoolID, entries: list[tuple[ResourceSlice, Obj]]) -> Pool:
        top = max(v.spec.pool.generation for v, _ in entries)
        current = sorted(((v, r) for v, r in entries if v.spec.pool.generation == top),
                         key=lambda e: e[0].metadata.name)
        counts = {v.spec.pool.resource_slice_count for v, _ in current}
        want = current[0][0].spec.pool.resource_slice_count
        pool = Pool(pid[0], pid[1], top, want, slices=current)
        if len(counts) > 1:
            pool.invalid_reason = (f"slices of generation {top} disagree on resourceSliceCount "
                                   f"({', '.join(str(c) for c in sorted(counts))})")
        elif len(current) > want:
            pool.invalid_reason = f"has {len(current)} slices of generation {top} but resourceSliceCount is {want}"
        elif len(current) < want:
            pool.incomplete_reason = f"has {len(current)} of {want} slices of generation {top}"
        names: set[str] = set()
        for view, raw in current:
            spec = view.spec
            for cs in spec.shared_counters:
                if cs.name in pool.counter_sets:
                    pool.invalid_reason = pool.invalid_reason or f"duplicate counter set name {cs.name}"
                    continue
                try:
                    pool.counter_sets[cs.name] = {k: qvalue(c.value) for k, c in cs.counters.items()}
                except QuantityError as exc:
                    pool.invalid_reason = pool.invalid_reason or f"counter set {cs.name}: {exc}"
            per_device = bool(spec.per_device_node_selection)
            for i, dev in enumerate(spec.devices):
                if dev.name in names:
                    pool.invalid_reason = pool.invalid_reason or f"duplicate device name {dev.name}"
                    continue
                names.add(dev.name)
                try:
                    entry = _device_entry(pool, view, (raw.get("spec") or {}).get("devices", [])[i], dev,
                                          per_device)
                except QuantityError as exc:
                    pool.invalid_reason = pool.invalid_reason or f"device {dev.name}: {exc}"
                    continue
                pool.devices.append(entry)
                if dev.binding_conditions:
                    pool.has_binding_conditions = True
        if pool.invalid_reason is None:
            for d in pool.devices:
                for set_name, counters in d.consumes:
                    known = pool.counter_sets.get(set_name)
                    if known is None:
                        pool.invalid_reason = f"device {d.name}: counter set {set_name} not found"
                        break
                    missing = sorted(set(counters) - set(known))
                    if missing:
                        pool.invalid_reason = (f"device {d.name}: counter {missing[0]} not found in "
                                               f"counter set {set_name}")
                        break
                if pool.invalid_reason:
                    break
        return pool

    def for_node(self, node: Obj) -> NodePools:
        """The pools and devices ``node`` can reach (cached per node name for the cycle)."""
        name = (node.get("metadata") or {}).get("name", "")
        cached = self._node_cache.get(name)
        if cached is not None:
            return cached
        pools: list[Pool] = []
        devices: list[DeviceEntry] = []
        incomplete: list[Pool] = []
        invalid: list[Pool] = []
        for i in sorted({*self._by_node.get(name, ()), *self._generic}):
            pool = self._ordered[i]
            relevant_slices = {v.metadata.name for v, _ in pool.slices
                               if _slice_relevant(v.spec, v.spec.devices, node)}
            if not relevant_slices:
                continue
            if pool.incomplete_reason is not None:
                incomplete.append(pool)
                continue
            if pool.invalid_reason is not None:
                invalid.append(pool)
                continue
            pools.append(pool)
            for d in pool.devices:
                if d.slice_name not in relevant_slices:
                    continue
                if d.per_device_node_selection and not node_matches(
                        node, d.view.node_name, d.view.all_nodes, d.view.node_selector):
                    continue
                devices.append(d)
        result = NodePools(pools, devices, incomplete, invalid)
        self._node_cache[name] = result
        return result


def _device_entry(pool: Pool, view: ResourceSlice, raw: Obj, dev: Device, per_device: bool) -> DeviceEntry:
    spec = view.spec
    capacity: dict[str, CapacityEntry] = {}
    # A name qualified with the driver's own domain wins over the same unqualified name.
    for cname, cap in sorted(dev.capacity.items(), key=lambda kv: "/" in kv[0]):
        capacity[qualify(cname, spec.driver)] = CapacityEntry(cname, qvalue(cap.value), cap.value,
                                                              cap.request_policy)
    consumes = [(c.counter_set, {k: qvalue(v.value) for k, v in c.counters.items()})
                for c in dev.consumes_counters]
    return DeviceEntry(
        driver=spec.driver,
        pool_name=spec.pool.name,
        name=dev.name,
        slice_name=view.metadata.name,
        raw=raw,
        view=dev,
        pool=pool,
        per_device_node_selection=per_device,
        slice_node_name=spec.node_name,
        slice_node_selector=spec.node_selector,
        capacity=capacity,
        consumes=consumes,
        multi=bool(dev.allow_multiple_allocations),
    )
