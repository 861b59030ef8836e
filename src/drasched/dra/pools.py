"""Resource pools gathered from ResourceSlices, once per scheduling cycle.

Upstream (``structured/internal/experimental/pools_experimental.go``): a pool is
``(driver, pool name)``. What a node sees is gathered per node: the slices relevant to it
(its own, matching selectors, and every slice with ``sharedCounters``), their highest
generation, complete when that generation has ``resourceSliceCount`` slices (counting the
slices elsewhere too), ignored when another node already sees a newer generation. A pool is
invalid when device names repeat among the slices a node sees, counter set names repeat,
or a device consumes a counter set or counter that does not exist (drasched adds: slices of
one generation that disagree on ``resourceSliceCount``). Counter sets are pool-wide (since
1.35 a slice carries either devices or ``sharedCounters``). Pools are ordered by driver and
pool name, slices by name, devices by index, with pools that have binding conditions last,
so first-fit results repeat.

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

from drasched.api.resource import (
    CapacityRequestPolicy,
    Device,
    NodeSelector,
    ResourceSlice,
    decode,
)
from drasched.dra.nodes import node_matches
from drasched.dra.taintrules import RuleTaint, taints_for
from drasched.quantity import Format, Quantity, QuantityError

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
    slice_pos: int = 0  # index of its slice in the pool's slices (names may repeat in tests)
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
    """One generation of one pool: all its slices, parsed once per cycle.

    ``incomplete_reason``/``invalid_reason`` describe the pool as a whole; what one node
    sees can differ (see :meth:`PoolIndex.for_node`).
    """

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
    duplicate_names: set[str] = field(default_factory=set)
    structural_reason: str | None = None
    by_name: dict[str, DeviceEntry] = field(default_factory=dict)

    @property
    def id(self) -> PoolID:
        return (self.driver, self.name)

    @property
    def usable(self) -> bool:
        return self.incomplete_reason is None and self.invalid_reason is None

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"


@dataclass(frozen=True, eq=False)
class PoolProblem:
    """A pool one node can see but not allocate from, and why."""

    pool: Pool
    reason: str

    def __str__(self) -> str:
        return str(self.pool)


@dataclass(eq=False)
class NodePools:
    """What one node can reach: usable devices in first-fit order, and unusable pools."""

    pools: list[Pool]
    devices: list[DeviceEntry]
    incomplete: list[PoolProblem]
    invalid: list[PoolProblem]


def _slice_relevant(spec: Any, node: Obj) -> bool:
    """Upstream ``GatherPools``: slices with shared counters concern every node (a pool
    cannot be used without them); others by nodeName, allNodes, nodeSelector, or any of
    their devices' node selection."""
    if spec.shared_counters:
        return True
    if spec.node_name or spec.all_nodes or spec.node_selector is not None:
        return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)
    if spec.per_device_node_selection:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in spec.devices)
    return False  # no node selection at all: some future extension we cannot interpret


class PoolIndex:
    """All pools of a cycle; built once from every ResourceSlice (wire dicts).

    ``pools`` holds each pool's highest generation. A node's view follows upstream's
    ``GatherPools``: among the slices *relevant to that node* the highest generation wins;
    the pool is complete when those slices number ``resourceSliceCount``, or else when all
    slices of that generation do; it is ignored when some slice elsewhere already has a
    newer generation (the driver is replacing it). Device names must be unique among the
    slices the node sees.
    """

    def __init__(self, slices: list[Obj], taint_rules: list[RuleTaint] | None = None) -> None:
        self.pools: dict[PoolID, Pool] = {}
        self.bad_slices: list[str] = []
        self.devices_by_id: dict[DeviceID, DeviceEntry] = {}
        self._node_cache: dict[str, NodePools] = {}
        self._gens: dict[PoolID, dict[int, Pool]] = {}
        grouped: dict[PoolID, dict[int, list[tuple[ResourceSlice, Obj]]]] = defaultdict(lambda: defaultdict(list))
        for raw in slices:
            try:
                view = decode(raw, ResourceSlice)
            except msgspec.ValidationError as exc:
                self.bad_slices.append(f"{(raw.get('metadata') or {}).get('name')}: {exc}")
                continue
            grouped[(view.spec.driver, view.spec.pool.name)][view.spec.pool.generation].append((view, raw))
        for pid in sorted(grouped):
            gens = {g: self._build_pool(pid, g, entries) for g, entries in grouped[pid].items()}
            self._gens[pid] = gens
            self.pools[pid] = gens[max(gens)]
        if taint_rules:
            self._apply_taint_rules(taint_rules)
        self._ordered = sorted(self.pools.values(), key=lambda p: (p.has_binding_conditions, p.driver, p.name))
        # Most pools are node-local (every slice names its node, none carries counters):
        # index those by node name so a node only looks at its own pools plus the few that
        # use selectors or shared counters.
        self._by_node: dict[str, list[PoolID]] = defaultdict(list)
        self._generic: list[PoolID] = []
        for pid, gens in self._gens.items():
            views = [v for p in gens.values() for v, _ in p.slices]
            if any(not v.spec.node_name or v.spec.shared_counters for v in views):
                self._generic.append(pid)
            else:
                for n in sorted({str(v.spec.node_name) for v in views}):
                    self._by_node[n].append(pid)
        order = 0
        for pid in sorted(self._gens):
            for g in sorted(self._gens[pid]):
                for d in self._gens[pid][g].devices:
                    d.order = order
                    order += 1
        for pool in self._ordered:
            if pool.usable:
                for d in pool.devices:
                    self.devices_by_id[d.id] = d

    def _apply_taint_rules(self, rules: list[RuleTaint]) -> None:
        """Add each DeviceTaintRule's taint to the devices it selects, after the slice's own
        taints, as upstream's slice tracker patches them in before allocation."""
        for gens in self._gens.values():
            for pool in gens.values():
                for d in pool.devices:
                    extra = taints_for(rules, d.driver, d.pool_name, d.name)
                    if extra:
                        d.view = msgspec.structs.replace(d.view, taints=[*d.view.taints, *extra])

    def forget_nodes(self) -> None:
        """Drop the per-node views (a node's labels changed: what it sees may have too)."""
        self._node_cache.clear()

    def ordered_pools(self) -> list[Pool]:
        """Every pool (highest generation) in first-fit order."""
        return list(self._ordered)

    @staticmethod
    def _build_pool(pid: PoolID, generation: int, entries: list[tuple[ResourceSlice, Obj]]) -> Pool:
        current = sorted(entries, key=lambda e: e[0].metadata.name)
        counts = {v.spec.pool.resource_slice_count for v, _ in current}
        want = current[0][0].spec.pool.resource_slice_count
        pool = Pool(pid[0], pid[1], generation, want, slices=current)
        structural: str | None = None
        if len(counts) > 1:
            structural = (f"slices of generation {generation} disagree on resourceSliceCount "
                          f"({', '.join(str(c) for c in sorted(counts))})")
        if len(current) != want:
            pool.incomplete_reason = f"has {len(current)} of {want} slices of generation {generation}"
        names: set[str] = set()
        for pos, (view, raw) in enumerate(current):
            spec = view.spec
            for cs in spec.shared_counters:
                if cs.name in pool.counter_sets:
                    structural = structural or f"duplicate counter set name {cs.name}"
                    continue
                try:
                    pool.counter_sets[cs.name] = {k: qvalue(c.value) for k, c in cs.counters.items()}
                except QuantityError as exc:
                    structural = structural or f"counter set {cs.name}: {exc}"
            per_device = bool(spec.per_device_node_selection)
            for i, dev in enumerate(spec.devices):
                if dev.name in names:
                    pool.duplicate_names.add(dev.name)  # a node that sees only one of them may use it
                names.add(dev.name)
                try:
                    entry = _device_entry(pool, view, (raw.get("spec") or {}).get("devices", [])[i], dev,
                                          per_device)
                except QuantityError as exc:
                    structural = structural or f"device {dev.name}: {exc}"
                    continue
                entry.slice_pos = pos
                pool.devices.append(entry)
                pool.by_name.setdefault(dev.name, entry)
                if dev.binding_conditions:
                    pool.has_binding_conditions = True
        structural = structural or _counter_problem(pool, pool.devices)
        pool.structural_reason = structural
        if structural:
            pool.invalid_reason = structural
        elif pool.duplicate_names:
            pool.invalid_reason = f"duplicate device name {min(pool.duplicate_names)}"
        return pool

    def for_node(self, node: Obj) -> NodePools:
        """The pools and devices ``node`` can reach (cached per node name for the cycle)."""
        name = (node.get("metadata") or {}).get("name", "")
        cached = self._node_cache.get(name)
        if cached is not None:
            return cached
        plain: list[tuple[Pool, list[DeviceEntry]]] = []
        binding: list[tuple[Pool, list[DeviceEntry]]] = []
        incomplete: list[PoolProblem] = []
        invalid: list[PoolProblem] = []
        for pid in sorted({*self._by_node.get(name, ()), *self._generic}):
            seen = self._node_view(pid, node)
            if seen is None:
                continue
            pool, relevant, problem = seen
            if problem is not None:
                (incomplete if problem[0] == "incomplete" else invalid).append(PoolProblem(pool, problem[1]))
                continue
            devices = [d for d in pool.devices if d.slice_pos in relevant and (
                not d.per_device_node_selection
                or node_matches(node, d.view.node_name, d.view.all_nodes, d.view.node_selector))]
            has_bc = pool.has_binding_conditions and any(
                d.view.binding_conditions for d in pool.devices if d.slice_pos in relevant)
            (binding if has_bc else plain).append((pool, devices))
        result = NodePools([p for p, _ in plain + binding], [d for _, ds in plain + binding for d in ds],
                           incomplete, invalid)
        self._node_cache[name] = result
        return result

    def _node_view(self, pid: PoolID, node: Obj) -> tuple[Pool, set[int], tuple[str, str] | None] | None:
        """The generation of ``pid`` that ``node`` sees, the slices of it relevant there, and
        ``("incomplete"|"invalid", reason)`` if unusable; ``None`` if the node sees nothing."""
        gens = self._gens[pid]
        seen_gen = -1
        relevant: set[int] = set()
        for g in sorted(gens, reverse=True):
            relevant = {i for i, (v, _) in enumerate(gens[g].slices) if _slice_relevant(v.spec, node)}
            if relevant:
                seen_gen = g
                break
        if seen_gen < 0:
            return None
        pool = gens[seen_gen]
        complete_here = len(relevant) == pool.slice_count
        if not complete_here and seen_gen < max(gens):
            return None  # obsolete: the driver is publishing a newer generation elsewhere
        if pool.structural_reason is not None and pool.structural_reason.startswith("slices of generation"):
            return pool, relevant, ("invalid", pool.structural_reason)
        if not complete_here and pool.incomplete_reason is not None:
            return pool, relevant, ("incomplete", pool.incomplete_reason)
        if pool.structural_reason is not None:
            return pool, relevant, ("invalid", pool.structural_reason)
        if pool.duplicate_names:
            names: set[str] = set()
            for i, (v, _) in enumerate(pool.slices):
                if i not in relevant:
                    continue
                for d in v.spec.devices:
                    if d.name in names:
                        return pool, relevant, ("invalid", f"duplicate device name {d.name}")
                    names.add(d.name)
        return pool, relevant, None


def _counter_problem(pool: Pool, devices: list[DeviceEntry]) -> str | None:
    """Upstream ``validateDeviceCounterConsumption``: every consumed counter set and counter exists."""
    for d in devices:
        for set_name, counters in d.consumes:
            known = pool.counter_sets.get(set_name)
            if known is None:
                return f"device {d.name}: counter set {set_name} not found"
            missing = sorted(set(counters) - set(known))
            if missing:
                return f"device {d.name}: counter {missing[0]} not found in counter set {set_name}"
    return None


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
