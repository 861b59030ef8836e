"""Publishing a driver's ResourceSlices for one node through the ClusterStore.

Why the rules (upstream ``resourceslice`` controller and API validation):

* one pool per node by default, named after the node, so pools never span nodes;
* a slice holds at most 128 devices, 64 when any of its devices has taints or consumes
  counters; shared counter sets travel in slices of their own (since 1.35 a slice carries
  either ``devices`` or ``sharedCounters``), at most 8 sets per slice;
* every slice of a pool carries the pool's ``generation`` and ``resourceSliceCount``; any
  change bumps the generation on all of them, so a reader that sees some slices at the new
  generation knows the pool is incomplete until it sees ``resourceSliceCount`` of them,
  and never mixes old devices with new ones;
* nothing is written when nothing changed (a resync is free and keeps generation stable);
* on shutdown every slice of this driver on this node goes, as the kubelet would do on
  deregistration, so the scheduler stops placing claims on devices nobody serves.

Slice names are deterministic (``<node>-<driver>-<index>``, pool name added when it is not
the node name), so a restarted driver finds and updates its slices instead of piling up
new ones. Slices are owned by their Node when the store has it, so deleting the Node
garbage-collects them.
"""

from __future__ import annotations

import contextlib
import copy
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, Conflict, NotFound
from drasched.node.driver import PoolSpec
from drasched.store.base import ClusterStore

Obj = dict[str, Any]

MAX_DEVICES = 128
MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMPTIONS_PER_DEVICE = 2
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class PublishError(ValueError):
    """A pool the API server would reject; raised before anything is written."""


@dataclass
class PublishResult:
    """What one sync wrote, by slice name."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deleted)


def _uses_taints_or_counters(device: Obj) -> bool:
    return bool(device.get("taints") or device.get("consumesCounters"))


def validate_pool(pool_name: str, pool: PoolSpec) -> None:
    """The checks the API server makes that a driver can get wrong; raises ``PublishError``."""
    problems = []
    names: set[str] = set()
    sets = {cs.get("name") for cs in pool.shared_counters}
    if len(sets) != len(pool.shared_counters):
        problems.append("duplicate counter set names")
    for cs in pool.shared_counters:
        if not _DNS_LABEL.match(str(cs.get("name", ""))):
            problems.append(f"counter set name {cs.get('name')!r} is not a DNS label")
        if len(cs.get("counters") or {}) > MAX_COUNTERS_PER_SET:
            problems.append(f"counter set {cs.get('name')} has more than {MAX_COUNTERS_PER_SET} counters")
    for dev in pool.devices:
        name = str(dev.get("name", ""))
        if not _DNS_LABEL.match(name) or len(name) > 63:
            problems.append(f"device name {name!r} is not a DNS label")
        if name in names:
            problems.append(f"duplicate device name {name}")
        names.add(name)
        consumes = dev.get("consumesCounters") or []
        if len(consumes) > MAX_CONSUMPTIONS_PER_DEVICE:
            problems.append(f"device {name} consumes more than {MAX_CONSUMPTIONS_PER_DEVICE} counter sets")
        for cc in consumes:
            if cc.get("counterSet") not in sets:
                problems.append(f"device {name} consumes counter set {cc.get('counterSet')!r}, which the pool "
                                "does not declare")
    if problems:
        raise PublishError(f"pool {pool_name}: " + "; ".join(problems))


def _chunks(items: list[Obj], size: int) -> list[list[Obj]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _sanitize(name: str) -> str:
    """A DNS subdomain (at most 253 characters) from arbitrary text."""
    s = re.sub(r"[^a-z0-9.-]+", "-", name.lower())
    s = re.sub(r"\.+", ".", s)
    s = re.sub(r"(^|\.)-+|-+($|\.)", lambda m: m.group(1) or m.group(2), s)
    return s[:253].strip(".-") or "slice"


class SlicePublisher:
    """Creates, updates and deletes the ResourceSlices of one driver on one node."""

    def __init__(self, store: ClusterStore | None, driver_name: str, node_name: str) -> None:
        self.store = store
        self.driver_name = driver_name
        self.node_name = node_name
        self._lock = threading.Lock()
        self._written: dict[str, tuple[str, Obj]] = {}
        """Slice name -> (resourceVersion, spec) of our last write: a real API server may
        canonicalize what we sent (quantities), and that must not look like a change."""

    # ---- desired state (pure) --------------------------------------------------------------
    def slice_name(self, pool_name: str, index: int) -> str:
        parts = [self.node_name, self.driver_name]
        if pool_name != self.node_name:
            parts.append(pool_name)
        base = _sanitize("-".join(parts))
        suffix = f"-{index}"
        return base[:253 - len(suffix)].rstrip(".-") + suffix

    def desired_slices(self, pools: Mapping[str, PoolSpec], generation: int = 1,
                       owner: Obj | None = None) -> list[Obj]:
        """Every slice of every pool at ``generation`` (names, counts, limits applied)."""
        out: list[Obj] = []
        for pool_name in sorted(pools):
            out.extend(self._pool_slices(pool_name, pools[pool_name], generation, owner))
        return out

    def _pool_slices(self, pool_name: str, pool: PoolSpec, generation: int, owner: Obj | None) -> list[Obj]:
        validate_pool(pool_name, pool)
        specs: list[Obj] = []
        for sets in _chunks(list(pool.shared_counters), MAX_COUNTER_SETS):
            specs.append({"sharedCounters": copy.deepcopy(sets)})
        limit = MAX_DEVICES_WITH_TAINTS_OR_COUNTERS if any(
            _uses_taints_or_counters(d) for d in pool.devices) else MAX_DEVICES
        for devs in _chunks(list(pool.devices), limit):
            specs.append({"devices": copy.deepcopy(devs)})
        if not specs:
            specs.append({"devices": []})  # an empty pool still says "this node has none"
        slices = []
        for i, extra in enumerate(specs):
            md: Obj = {"name": self.slice_name(pool_name, i)}
            if owner is not None:
                md["ownerReferences"] = [copy.deepcopy(owner)]
            slices.append({
                "apiVersion": kinds.RESOURCE_SLICE.api_version,
                "kind": kinds.RESOURCE_SLICE.kind,
                "metadata": md,
                "spec": {
                    "driver": self.driver_name,
                    "pool": {"name": pool_name, "generation": generation, "resourceSliceCount": len(specs)},
                    "nodeName": self.node_name,
                    **extra,
                },
            })
        return slices

    # ---- sync against the store ------------------------------------------------------------
    def _require_store(self) -> ClusterStore:
        if self.store is None:
            raise RuntimeError("this SlicePublisher has no store (print-only)")
        return self.store

    def existing(self) -> list[Obj]:
        """This driver's slices on this node, as stored."""
        store = self._require_store()
        listed = store.list(kinds.RESOURCE_SLICE,
                            field_selector=f"spec.driver={self.driver_name},spec.nodeName={self.node_name}")
        return [s for s in listed.items
                if (s.get("spec") or {}).get("driver") == self.driver_name
                and (s.get("spec") or {}).get("nodeName") == self.node_name]

    def _owner(self) -> Obj | None:
        store = self._require_store()
        try:
            node = store.get(kinds.NODE, self.node_name)
        except NotFound:
            return None
        return {"apiVersion": "v1", "kind": "Node", "name": self.node_name,
                "uid": node["metadata"]["uid"], "controller": True}

    def publish(self, pools: Mapping[str, PoolSpec], retries: int = 5) -> PublishResult:
        """Make the store hold exactly ``pools``; re-reads and retries on write conflicts."""
        for name, pool in pools.items():
            validate_pool(name, pool)
        with self._lock:
            for attempt in range(retries):
                try:
                    return self._sync(pools)
                except (Conflict, AlreadyExists, NotFound):
                    if attempt == retries - 1:
                        raise
            raise AssertionError("unreachable")

    def _sync(self, pools: Mapping[str, PoolSpec]) -> PublishResult:
        store = self._require_store()
        result = PublishResult()
        existing = self.existing()
        by_pool: dict[str, list[Obj]] = {}
        for s in existing:
            by_pool.setdefault(s["spec"]["pool"]["name"], []).append(s)
        owner = self._owner()
        keep: set[str] = set()
        for pool_name in sorted(pools):
            current = {s["metadata"]["name"]: s for s in by_pool.get(pool_name, [])}
            generation = max((int(s["spec"]["pool"].get("generation", 0)) for s in current.values()), default=0)
            want = self._pool_slices(pool_name, pools[pool_name], generation, owner)
            if generation and self._same(want, current):
                keep.update(current)
                continue
            want = self._pool_slices(pool_name, pools[pool_name], generation + 1, owner)
            for s in want:
                name = s["metadata"]["name"]
                keep.add(name)
                old = current.get(name)
                if old is None:
                    stored = store.create(s)
                    result.created.append(name)
                else:
                    s["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
                    md = old.get("metadata") or {}
                    for k in ("labels", "annotations"):
                        if md.get(k):
                            s["metadata"][k] = md[k]
                    stored = store.update(s)
                    result.updated.append(name)
                self._written[name] = (stored["metadata"]["resourceVersion"], s["spec"])
        # Leftovers: slices beyond the new count, and pools no longer declared.
        for s in existing:
            name = s["metadata"]["name"]
            if name not in keep:
                self._written.pop(name, None)
                self._delete(s)
                result.deleted.append(name)
        return result

    def _same(self, want: list[Obj], current: dict[str, Obj]) -> bool:
        if len(want) != len(current):
            return False
        for s in want:
            name = s["metadata"]["name"]
            old = current.get(name)
            if old is None:
                return False
            if old.get("spec") != s["spec"] and self._written.get(name) != (old["metadata"]["resourceVersion"],
                                                                              s["spec"]):
                return False
            if (old["metadata"].get("ownerReferences") or None) != s["metadata"].get("ownerReferences"):
                return False
        return True

    def _delete(self, s: Obj) -> None:
        with contextlib.suppress(NotFound):  # gone already: what we wanted
            self._require_store().delete(kinds.RESOURCE_SLICE, s["metadata"]["name"], uid=s["metadata"].get("uid"))

    def unpublish(self) -> list[str]:
        """Delete every slice of this driver on this node (shutdown, deregistration)."""
        with self._lock:
            gone = []
            for s in self.existing():
                self._delete(s)
                gone.append(s["metadata"]["name"])
            return gone
