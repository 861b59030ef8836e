"""A session: one cycle's mutable view of a snapshot, changed only through Statements.

Every change (a pod placed, a claim allocated, queue usage added) is a typed operation
with its reverse (:mod:`drasched.scheduler.journal`), applied through :meth:`Session.apply`
only, so a Statement can roll back to any checkpoint: a gang that does not fit as a
whole leaves no trace, the allocator's state (devices in use, shared counters, consumed
capacity) included. Evictions (reclaim, preemption, consolidation) are journaled the same
way (``drasched.scheduler.release``): an evicted pod's claims leave ``reservations`` and,
when it was their last consumer, their allocation leaves the allocator state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from drasched.dra.allocated_state import AllocatedState
from drasched.dra.explain import Reason
from drasched.dra.extended import implicit_name
from drasched.scheduler.accounting import ALLOCATED, QueueUsage, demand_with_claims
from drasched.scheduler.claims import PodClaim
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.constants import GPU
from drasched.scheduler.eviction import EvictionState
from drasched.scheduler.framework.profile import Profile
from drasched.scheduler.journal import Journal, Operation
from drasched.scheduler.plugins.fit import RowNeed
from drasched.scheduler.plugins.predicates import StaticResult, node_selector_mask, static_filter
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.snapshot import GroupInfo, Snapshot

Obj = dict[str, Any]


@dataclass(slots=True)
class Placement:
    """A pod placed in this session, with the BindRequest entries for its claims."""

    pod: PodInfo
    node: int
    claims: list[Obj]
    group: str
    extended: Obj | None = None
    """``extendedResourceClaimAllocation`` for the pod's special claim (KEP-5004), if any."""
    demand: dict[str, float] = field(default_factory=dict)
    """What it added to its queue's allocated usage (accounting dimensions)."""


@dataclass
class Session:
    snap: Snapshot
    config: SchedulerConfig
    idle: np.ndarray = field(init=False)
    used: np.ndarray = field(init=False)
    state: AllocatedState = field(init=False)
    usage: QueueUsage = field(init=False)
    claim_alloc: dict[str, Obj] = field(default_factory=dict)
    claim_reserved: dict[str, list[Obj]] = field(default_factory=dict)
    node_version: np.ndarray = field(init=False)
    dra_epoch: int = 0
    placements: dict[str, Placement] = field(default_factory=dict)
    _journal: Journal = field(default_factory=Journal)
    unschedulable: dict[str, str] = field(default_factory=dict)
    """Pod key -> the PodScheduled=False message of this cycle."""
    unavailable_claims: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """Pod key -> (the filters' message, keys of its allocated claims whose node selector rejected
    a node every earlier filter accepted), from the first attempt over all nodes that found no node."""
    dra_pods: set[str] = field(default_factory=set)
    """Pods found to fit nowhere that had claims for the DRA plugin (their own, or extended
    resources it serves): its PostFilter says "still not schedulable" for them, "no new claims
    to deallocate" for the others (see ``dra_postfilter_status``)."""
    group_messages: dict[str, str] = field(default_factory=dict)
    beyond_limit: set[str] = field(default_factory=set)
    """Gangs whose minMember pods alone need more than a queue's limit: never placed, never preempt."""
    _static: dict[str, StaticResult] = field(default_factory=dict)
    dra_failures: dict[tuple[str, int], tuple[tuple[int, int], list[Reason], list[str]]] = field(default_factory=dict)
    """Allocator failures per (pod shape, node): node version, reasons, and the claims they name."""
    _claim_views: dict[str, Obj] = field(default_factory=dict)
    needs_cache: dict[str, list[RowNeed]] = field(default_factory=dict)
    _pins: dict[str, tuple[Obj, np.ndarray]] = field(default_factory=dict)
    weights: dict[str, float] = field(init=False)
    class_row_set: frozenset[int] = field(init=False)
    now: str = ""
    """The cycle's time (RFC 3339): minRuntime is measured against it."""
    released: dict[str, set[str]] = field(default_factory=dict)
    """Claim key -> consumer uids whose reservation an eviction ended in this session."""
    deallocated: set[str] = field(default_factory=set)
    """Claims whose last consumer was evicted in this session: their devices are free here."""
    disruption: EvictionState = field(init=False)

    def __post_init__(self) -> None:
        snap = self.snap
        self.weights = dict(self.config.resource_weights)
        gpu_weight = self.weights.get(GPU, 1.0)
        for cls in snap.accounting.gpu_classes:
            self.weights.setdefault(implicit_name(cls), gpu_weight)
        self.class_row_set = frozenset(snap.class_rows.values())
        self.idle = self.snap.idle.copy()
        self.used = self.snap.used.copy()
        self.state = self.snap.allocator.state
        assert snap.usage is not None, "a snapshot from SnapshotBuilder carries its queue usage"
        self.usage = snap.usage.copy()
        self.node_version = np.zeros(self.snap.n_nodes, dtype=np.int64)
        self.disruption = EvictionState(QueueUsage(snap.queues), self.config.preemption_budget)

    # ------------------------------------------------------------------ reads

    @property
    def profile(self) -> Profile:
        return self.snap.profile

    def static(self, pod: PodInfo) -> StaticResult:
        """Static filters, evaluated once per distinct ``static_key`` (their signatures)."""
        key = pod.static_key
        hit = self._static.get(key)
        if hit is None:
            snap = self.snap
            profile = snap.profile

            def build() -> tuple[Any, StaticResult]:  # the profile kept with it: its id stays unique
                result = static_filter(snap.nodes, pod, profile.static_filters)
                result.ok.setflags(write=False)  # shared by the cycles of this world
                return profile, result

            table = snap.pod_table  # the world's: its nodes' labels, taints and allocatable are fixed
            hit = (table.recent_node_memo(f"static:{id(profile)}:{key}", build) if table is not None
                   else build())[1]
            self._static[key] = hit
        return hit

    def claim_allocation(self, key: str) -> Obj | None:
        hit = self.claim_alloc.get(key)
        if hit is not None:
            return hit
        return None if key in self.deallocated else self.snap.claims[key].allocation

    def claim_for_allocator(self, key: str) -> Obj:
        """The claim as the allocator must see it: with the allocation this session or a BindRequest gave it."""
        info = self.snap.claims[key]
        alloc = self.claim_allocation(key)
        stored = (info.obj.get("status") or {}).get("allocation")
        if alloc is None or alloc is stored:
            return info.obj
        hit = self._claim_views.get(key)
        if hit is not None and hit["status"]["allocation"] is alloc:
            return hit
        view = {**info.obj, "status": {**(info.obj.get("status") or {}), "allocation": alloc}}
        self._claim_views[key] = view
        return view

    def allocation_nodes(self, key: str) -> np.ndarray | None:
        """Nodes an allocated claim can be used on (``None``: not allocated, or usable anywhere)."""
        alloc = self.claim_allocation(key)
        selector = (alloc or {}).get("nodeSelector")
        if selector is None:
            return None
        hit = self._pins.get(key)
        if hit is not None and hit[0] is selector:
            return hit[1]
        mask = node_selector_mask(self.snap.nodes, selector)
        self._pins[key] = (selector, mask)
        return mask

    def reservations(self, key: str) -> list[Obj]:
        out = self.snap.claims[key].reserved_for + self.claim_reserved.get(key, [])
        gone = self.released.get(key)
        return [r for r in out if r.get("uid") not in gone] if gone else out

    def dra_version(self, node: int) -> tuple[int, int]:
        return (int(self.node_version[node]), self.dra_epoch)

    # ------------------------------------------------------------------ changes

    def statement(self) -> Statement:
        return Statement(self)

    def apply(self, op: Operation) -> None:
        """Apply a change and journal it, so a Statement can revert it: the one way to change a session."""
        self._journal.record(op)

    def close(self) -> None:
        """The cycle is over: nothing is rolled back any more (see :meth:`Journal.forget`)."""
        self._journal.forget()

    def journal_length(self) -> int:
        return len(self._journal)

    def operations(self) -> tuple[Operation, ...]:
        """The journal's operations, oldest first (read-only; for tests and diagnostics)."""
        return self._journal.operations()

    def take_devices(self, alloc: Obj, sign: float, gpu_row: bool = True) -> None:
        """Keep the DeviceClass rows in step with the allocator's state (``sign`` -1 takes, +1 frees).

        With ``gpu_row`` the GPU units of the allocation's GPUs follow in the GPU row of DRA
        GPU nodes; an extended-resource claim passes False (its pod's request counts there).
        """
        snap = self.snap
        if gpu_row:
            row = snap.index.pos[GPU]
            for dev, units in snap.gpus.allocation_units(alloc):
                for j in snap.gpus.device_nodes.get(dev, ()):
                    self.idle[row, j] += sign * float(units)
                    self.used[row, j] -= sign * float(units)
                    self.node_version[j] += 1
        for r in (alloc.get("devices") or {}).get("results") or []:
            if r.get("adminAccess") or r.get("shareID"):
                continue
            dev = (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
            classes = snap.device_classes.get(dev, ())
            for j in snap.device_nodes.get(dev, ()):
                for cls in classes:
                    row = snap.class_rows[cls]
                    self.idle[row, j] += sign
                    self.used[row, j] -= sign
                self.node_version[j] += 1


class Statement:
    """Checkpoint, tentative changes, then commit or roll back (to the start or a checkpoint)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.start = session.journal_length()

    def checkpoint(self) -> int:
        return self.session.journal_length()

    def rollback(self, mark: int | None = None) -> None:
        self.session._journal.undo_to(self.start if mark is None else mark)

    def commit(self) -> None:
        """Keep every change since the statement began (the journal stays for outer rollbacks)."""

    def assign(self, pod: PodInfo, group: GroupInfo, node: int, needs: list[RowNeed], claims: list[PodClaim],
               allocations: list[Obj], newly: list[bool], extended: Obj | None = None) -> Placement:
        """Place ``pod`` on ``node`` with the claim allocations the allocator found there.

        ``extended`` is the special claim's ``extendedResourceClaimAllocation`` (KEP-5004).
        """
        op = Place(self.session, pod, group, node, needs, claims, allocations, newly, extended)
        self.session.apply(op)
        assert op.placement is not None
        return op.placement


@dataclass(slots=True, eq=False)
class Place:
    """A pod placed on a node: its rows taken, its claims allocated and reserved, its queue charged."""

    session: Session
    pod: PodInfo
    group: GroupInfo
    node: int
    needs: list[RowNeed]
    claims: list[PodClaim]
    allocations: list[Obj]
    newly: list[bool]
    extended: Obj | None
    placement: Placement | None = None
    fresh: list[str] = field(default_factory=list)

    def apply(self) -> None:
        s = self.session
        snap = s.snap
        pod, group, node, extended = self.pod, self.group, self.node, self.extended
        for n in self.needs:
            s.idle[n.row, node] -= n.value
            s.used[n.row, node] += n.value
        s.node_version[node] += 1
        entries: list[Obj] = []
        for c, alloc, new in zip(self.claims, self.allocations, self.newly):
            assert c.key is not None
            info = snap.claims[c.key]
            if new:
                s.state.add(alloc)
                s.claim_alloc[c.key] = alloc
                s.take_devices(alloc, -1.0)
            consumer = group.ref if c.group else {"resource": "pods", "name": pod.name, "uid": pod.uid}
            s.claim_reserved.setdefault(c.key, []).append(consumer)
            entry: Obj = {"name": info.obj["metadata"]["name"], "uid": info.uid}
            stored = (info.obj.get("status") or {}).get("allocation")
            effective = s.claim_allocation(c.key)
            if not stored and effective:
                entry["allocation"] = effective
            entry["reservedFor"] = consumer
            entries.append(entry)
        if extended is not None:
            s.state.add(extended["allocation"])
            s.take_devices(extended["allocation"], -1.0, gpu_row=False)
        keys = [c.key for c in self.claims if c.key]
        self.fresh = s.usage.new_claims(ALLOCATED, group.queue, keys)
        demand = demand_with_claims(snap, pod, self.fresh)
        s.usage.add(ALLOCATED, group.queue, demand)
        s.usage.mark(ALLOCATED, group.queue, self.fresh)
        self.placement = Placement(pod, node, entries, group.key, extended, demand)
        s.placements[pod.key] = self.placement

    def revert(self) -> None:
        s = self.session
        assert self.placement is not None
        queue, extended, node = self.group.queue, self.extended, self.node
        s.placements.pop(self.pod.key, None)
        s.usage.mark(ALLOCATED, queue, self.fresh, counted=False)
        s.usage.add(ALLOCATED, queue, self.placement.demand, -1.0)
        if extended is not None:
            s.state.remove(extended["allocation"])
            s.take_devices(extended["allocation"], +1.0, gpu_row=False)
        for c, alloc, new in zip(self.claims, self.allocations, self.newly):
            assert c.key is not None
            s.claim_reserved[c.key].pop()
            if new:
                s.state.remove(alloc)
                s.claim_alloc.pop(c.key, None)
                s.take_devices(alloc, +1.0)
        for n in self.needs:
            s.idle[n.row, node] += n.value
            s.used[n.row, node] -= n.value
        s.node_version[node] += 1
        s.dra_epoch += 1  # freed devices may make earlier failures fit again
