"""The per-cycle snapshot: nodes as resource vectors, pods in groups, queues, DRA state.

Vectors are numpy arrays of shape ``(resources, nodes)``: row ``r`` is ONE contiguous
array of resource ``r`` across all nodes, so checking a pod against every node compares
only the rows it requests (measured ~8-11x faster than a 2-D ``all(axis=1)``).
Rows: cpu, memory, pods, nvidia.com/gpu, then the other scalars and one row per DeviceClass
(``deviceclass.resource.kubernetes.io/<class>``: devices the class matches on the node).
The GPU row holds device-plugin GPUs, or on nodes without them the DRA GPUs in GPU units
(:mod:`~drasched.scheduler.gpus`); requests DRA serves on a node are routed as
:mod:`~drasched.scheduler.extended` says (KEP-5004).
Pods with a pending BindRequest count as placed (assumed), with their claim allocations.

The snapshot is read-only, except ``allocator.state``, which the cycle's one session owns.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

import numpy as np

from drasched.api import kinds
from drasched.dra.allocated_state import AllocatedState
from drasched.dra.allocator import Allocator, SelectorCache
from drasched.dra.extended import implicit_name
from drasched.dra.pools import DeviceID, PoolIndex
from drasched.dra.taintrules import parse_rules
from drasched.scheduler.backoff import BindBackoff
from drasched.scheduler.cache import SchedulerCache
from drasched.scheduler.claims import (
    ClaimEntry,
    ClaimInfo,
    PodClaim,
    build_claim_info,
    claim_entries,
    resolve_pod_claims,
)
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.constants import DEFAULT_QUEUE, GPU, PODS
from drasched.scheduler.devices import ClassMatchMemo, DeviceAccounting, count_class_devices
from drasched.scheduler.extended import (
    ExtendedIndex,
    allocatable_row,
    bind_request_allocations,
    extended_claims_by_owner,
    request_row,
    stale_claims,
)
from drasched.scheduler.framework.profile import Profile, default_profile
from drasched.scheduler.gpus import GpuInventory, build_gpu_inventory
from drasched.scheduler.podinfo import NodeInfo, PodInfo, parse_node, parse_pod
from drasched.scheduler.queues import QueueTree, build_queue_tree
from drasched.scheduler.resources import ResourceIndex

Obj = dict[str, Any]


@dataclass(eq=False)
class GroupInfo:
    """A gang: a PodGroup, or the implicit group of one pod without the label."""

    key: str
    namespace: str
    name: str
    obj: Obj | None
    implicit: bool
    min_member: int
    queue: str
    priority: int
    created: str
    required_key: str | None
    preferred_key: str | None
    claim_entries: tuple[ClaimEntry, ...]
    pods: list[PodInfo] = field(default_factory=list)
    pending: list[PodInfo] = field(default_factory=list)
    placed: int = 0
    blocked: str | None = None
    """Why none of its pods can be scheduled now (missing PodGroup or queue, too few pods)."""
    label_mismatch: list[PodInfo] = field(default_factory=list)

    @property
    def ref(self) -> Obj:
        """The ``reservedFor`` entry for group claims."""
        md = (self.obj or {}).get("metadata") or {}
        return {"apiGroup": "scheduling.drasched.io", "resource": "podgroups", "name": self.name,
                "uid": md.get("uid", "")}


@dataclass(eq=False, frozen=True)
class Snapshot:
    """The cluster as one cycle sees it: read-only (frozen; its arrays are not writeable).

    A session works on its own copies of what it changes (``idle``, ``used``, claims' state).
    """

    index: ResourceIndex
    nodes: list[NodeInfo]
    node_pos: dict[str, int]
    allocatable: np.ndarray
    used: np.ndarray
    releasing: np.ndarray
    idle: np.ndarray
    class_rows: dict[str, int]
    multi_classes: frozenset[str]
    device_classes: dict[DeviceID, tuple[str, ...]]
    device_nodes: dict[DeviceID, list[int]]
    pods: dict[str, PodInfo]
    groups: dict[str, GroupInfo]
    group_of: dict[str, str]
    claims: dict[str, ClaimInfo]
    pod_claims: dict[str, list[PodClaim]]
    assumed: dict[str, str]
    stale_bind_requests: dict[str, Obj]
    queues: QueueTree
    accounting: DeviceAccounting
    capacity: dict[str, Fraction]
    allocator: Allocator
    namespace_labels: dict[str, dict[str, str]]
    templates: Mapping[str, Obj]
    gpus: GpuInventory
    extended: ExtendedIndex
    priority_classes: Mapping[str, Obj] = field(default_factory=dict)
    disruption_budgets: Mapping[str, Obj] = field(default_factory=dict)
    """PodDisruptionBudgets by ``namespace/name`` (victims are chosen within them)."""
    profile: Profile = field(default_factory=default_profile)
    """The enabled plugins, per extension point (built once per configuration)."""
    demands: dict[str, tuple[PodInfo, dict[str, float]]] = field(default_factory=dict)
    """Pod key -> (the PodInfo, its :meth:`pod_demand`): kept by the builder across cycles while
    the pod's version and the DeviceClasses stay the same (the only cache a snapshot writes)."""
    backing_off: Mapping[str, datetime] = field(default_factory=dict)
    """Pod key -> when its bind-failure backoff ends; its gang is not placed before then."""

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    def pod_demand(self, pod: PodInfo) -> dict[str, float]:
        """A pod's container requests in accounting dimensions (claims are counted separately)."""
        hit = self.demands.get(pod.key)
        if hit is not None and hit[0] is pod:
            return dict(hit[1])
        dim_of = self.accounting.dim_of
        out: dict[str, float] = {}
        for r, v in pod.requests.items():
            d = dim_of(r)
            out[d] = out.get(d, 0.0) + v
        self.demands[pod.key] = (pod, dict(out))
        return out


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a snapshot and its cycle allocate a few objects per
    pod, mostly freed by reference counting when the cycle ends; in a large cluster the
    collections they would set off cost more than the work (measured: tests/bench/bench_one_pod_cycle)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class SnapshotBuilder:
    """Builds snapshots from a cache, re-parsing only pods whose resourceVersion changed."""

    def __init__(self, config: SchedulerConfig, *, allocation_wall_time: float | None = None) -> None:
        self.config = config
        self.allocation_wall_time = allocation_wall_time
        """Seconds one allocation search may take on top of its step budget (serve; None: steps only)."""
        self.profile = Profile.from_config(config)
        self._pods: dict[str, tuple[str, PodInfo]] = {}
        self._class_memo = ClassMatchMemo()
        self._selectors = SelectorCache()  # selector results, kept across cycles
        self._pools: PoolIndex | None = None
        self._nodes: tuple[list[Obj], list[NodeInfo], dict[str, int]] | None = None
        self._nodes_of: tuple[int, int] = (0, -1)
        self._demands: dict[str, tuple[PodInfo, dict[str, float]]] = {}
        self._demands_of = -1
        """The DeviceClass generation the memoised pod demands were computed for."""
        self._pools_of: tuple[int, int, int, int] = (0, -1, -1, -1)
        """(cache id, slice generation, node generation, DeviceTaintRule generation) the pool
        index was built for / checked at."""

    def _pool_index(self, cache: SchedulerCache) -> PoolIndex:
        """The pools of every ResourceSlice, rebuilt only when a slice changed.

        Parsing every device of every slice was most of a cycle's cost in a cluster whose
        slices rarely change; the index is read-only for the cycle, apart from its per-node
        views, which are dropped when a node changes (labels decide what a node sees).
        """
        rules = next((rt for rt in cache.watched if rt.kind == kinds.DEVICE_TAINT_RULE.kind), None)
        seen = (id(cache), cache.kind_generation(kinds.RESOURCE_SLICE), cache.kind_generation(kinds.NODE),
                cache.kind_generation(rules) if rules else 0)
        if self._pools is None or self._pools_of[:2] != seen[:2] or self._pools_of[3:] != seen[3:]:
            taint_rules = parse_rules(cache.objects(rules).values()) if rules else None
            self._pools = PoolIndex(list(cache.objects(kinds.RESOURCE_SLICE).values()), taint_rules)
        elif self._pools_of[2] != seen[2]:
            self._pools.forget_nodes()
        self._pools_of = seen
        return self._pools

    def _node_rows(self, cache: SchedulerCache) -> tuple[list[Obj], list[NodeInfo], dict[str, int]]:
        """Nodes by name, parsed; reused as long as no Node changed (cycles read them only)."""
        seen = (id(cache), cache.kind_generation(kinds.NODE))
        if self._nodes is None or self._nodes_of != seen:
            node_objs = sorted(cache.objects(kinds.NODE).values(), key=lambda o: o["metadata"]["name"])
            nodes = [parse_node(o, i) for i, o in enumerate(node_objs)]
            self._nodes = (node_objs, nodes, {n.name: n.index for n in nodes})
            self._nodes_of = seen
        return self._nodes

    def _pod_infos(self, cache: SchedulerCache, prio: dict[str, int]) -> dict[str, PodInfo]:
        out: dict[str, PodInfo] = {}
        memo = self._pods
        fresh: dict[str, tuple[str, PodInfo]] = {}
        for key, obj in cache.objects(kinds.POD).items():
            rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
            hit = memo.get(key)
            if hit is not None and hit[0] == rv and hit[1].obj is obj:
                info = hit[1]
            else:
                info = parse_pod(key, obj, prio, self.profile.pod_keys)
            fresh[key] = (rv, info)
            out[key] = info
        self._pods = fresh
        return out

    def build(self, cache: SchedulerCache, backoff: BindBackoff | None = None,
              now: datetime | None = None) -> Snapshot:
        """The cluster in ``cache`` as a snapshot; with ``backoff`` and ``now``, failed binds are
        counted and gangs whose pods are backing off are left out of the cycle.

        The collector is paused meanwhile: a build allocates a few objects per pod, and in a
        large cluster the full collections they set off cost more than the build itself.
        """
        with collector_paused():
            return self._build(cache, backoff, now)

    def _build(self, cache: SchedulerCache, backoff: BindBackoff | None, now: datetime | None) -> Snapshot:
        cfg = self.config
        ns_labels = {k: dict((o.get("metadata") or {}).get("labels") or {})
                     for k, o in cache.objects(kinds.NAMESPACE).items()}
        prio = {k: int(o.get("value") or 0) for k, o in cache.objects(kinds.PRIORITY_CLASS).items()}
        node_objs, nodes, node_pos = self._node_rows(cache)
        classes = list(cache.objects(kinds.DEVICE_CLASS).values())
        accounting = DeviceAccounting(classes, cfg.gpu_device_classes)
        pods = self._pod_infos(cache, prio)
        if self._demands_of != cache.kind_generation(kinds.DEVICE_CLASS) or len(self._demands) > 2 * len(pods):
            self._demands = {}  # new classes map requests to other dimensions; or many pods are gone
            self._demands_of = cache.kind_generation(kinds.DEVICE_CLASS)

        assumed, stale, assumed_alloc, assumed_res = _bind_requests(cache, pods)
        held = {} if backoff is None or now is None else _backing_off(backoff, pods, stale, now)
        claims: dict[str, ClaimInfo] = {}
        state = AllocatedState()
        slices = cache.objects(kinds.RESOURCE_SLICE)
        allocator = Allocator(classes, (), state, index=self._pool_index(cache), selector_cache=self._selectors,
                              wall_time_limit=self.allocation_wall_time)
        accounting.devices = allocator.index.devices_by_id
        for key, obj in cache.objects(kinds.RESOURCE_CLAIM).items():
            info = build_claim_info(key, obj, assumed_alloc.get(key), assumed_res.get(key, []), accounting)
            claims[key] = info
            if info.allocation:
                state.add(info.allocation)
        owned = extended_claims_by_owner(claims)
        for a in bind_request_allocations(cache, pods, assumed, owned):
            state.add(a)
        self._class_memo.begin(cache.kind_generation(kinds.DEVICE_CLASS))
        counts = count_class_devices(allocator, node_objs, accounting, self._class_memo,
                                     {k: str(o["metadata"].get("resourceVersion", "")) for k, o in slices.items()})
        self._class_memo.end()

        names: set[str] = {implicit_name(c) for c in accounting.class_names}
        for n in nodes:
            names.update(n.allocatable)
        for p in pods.values():
            names.update(p.requests)
        index = ResourceIndex.build(names)
        r_count, n_count = len(index), len(nodes)
        alloc = np.zeros((r_count, n_count))
        used = np.zeros((r_count, n_count))
        releasing = np.zeros((r_count, n_count))
        for n in nodes:
            for r, v in n.allocatable.items():
                alloc[index.pos[allocatable_row(r, accounting)], n.index] += v
        class_rows = {c: index.pos[implicit_name(c)] for c in accounting.class_names}
        for c, row in class_rows.items():
            alloc[row] = counts.total[c]
            used[row] = counts.in_use[c]
        gpu_row = index.pos[GPU]
        gpus = build_gpu_inventory(allocator, nodes, accounting, alloc[gpu_row] > 0,
                                   [c.allocation for c in claims.values() if c.allocation and not c.extended])
        alloc[gpu_row] += gpus.total
        used[gpu_row] += gpus.used
        for p in pods.values():
            node = p.node_name or assumed.get(p.key)
            if not node or p.terminal or node not in node_pos:
                continue
            j = node_pos[node]
            for r, v in p.requests.items():
                name = request_row(r, nodes[j], accounting)
                if name is None:
                    continue  # served by DRA there: its claim's devices count in the class row
                used[index.pos[name], j] += v
                if p.deleting:
                    releasing[index.pos[name], j] += v

        groups, group_of = _groups(cache, pods, assumed, prio, cfg)
        for g in groups.values():
            if any(p.key in held for p in g.pending):
                g.pending = []  # the gang waits for its backoff to end, then is placed as a whole
        if not self.profile.topology:  # the plugin disabled: topology constraints are not enforced
            for g in groups.values():
                g.required_key = g.preferred_key = None
        templates = cache.objects(kinds.RESOURCE_CLAIM_TEMPLATE)
        pod_claims: dict[str, list[PodClaim]] = {}
        for g in groups.values():
            entries = g.claim_entries
            for p in g.pods:
                if p.claim_entries and not p.terminal:
                    pod_claims[p.key] = resolve_pod_claims(p.namespace, p.obj, p.uid, p.claim_entries, g.obj,
                                                           entries, claims, templates)
        tree = build_queue_tree(cache.objects(kinds.QUEUE).values(), accounting.dim_of)
        for g in groups.values():
            if g.queue not in tree and g.blocked is None:
                g.blocked = f'queue "{g.queue}" does not exist'

        capacity = _capacity(nodes, alloc, index, accounting, class_rows)
        extended = ExtendedIndex(nodes, index, accounting, class_rows, counts.multi, gpus,
                                 stale_claims(pods, assumed, owned, cfg.schedules))
        return Snapshot(
            index=index, nodes=nodes, node_pos=node_pos,
            allocatable=_frozen(alloc), used=_frozen(used), releasing=_frozen(releasing),
            idle=_frozen(alloc - used), class_rows=class_rows, multi_classes=counts.multi,
            device_classes=counts.device_classes, device_nodes=counts.device_nodes,
            pods=pods, groups=groups, group_of=group_of, claims=claims, pod_claims=pod_claims,
            assumed=assumed, stale_bind_requests=stale, queues=tree, accounting=accounting,
            capacity=capacity, allocator=allocator, namespace_labels=ns_labels, templates=templates,
            gpus=gpus, extended=extended, priority_classes=cache.objects(kinds.PRIORITY_CLASS),
            disruption_budgets=cache.objects(kinds.POD_DISRUPTION_BUDGET), profile=self.profile,
            demands=self._demands, backing_off=held,
        )


def _backing_off(backoff: BindBackoff, pods: dict[str, PodInfo], stale: dict[str, Obj],
                 now: datetime) -> dict[str, datetime]:
    """Count new failed binds (a BindRequest for the pod's own uid, phase Failed); pod key -> the
    end of its backoff for pods still waiting."""
    failed = [(key, pods[key].uid, br) for key, br in stale.items()
              if (br.get("status") or {}).get("phase") == "Failed"
              and (br.get("spec") or {}).get("podUID") in (None, "", pods[key].uid)]
    backoff.observe(failed, now)

    def unbound(uid: str, key: str) -> bool:
        pod = pods.get(key)
        return pod is not None and pod.uid == uid and not pod.node_name and not pod.terminal

    backoff.forget(unbound)
    return {key: until for key, uid, until in backoff.waiting(now)}


def _bind_requests(cache: SchedulerCache, pods: dict[str, PodInfo]) -> tuple[
        dict[str, str], dict[str, Obj], dict[str, Obj], dict[str, list[Obj]]]:
    """Pods placed by a pending BindRequest, failed BindRequests to replace, and assumed claim state."""
    assumed: dict[str, str] = {}
    stale: dict[str, Obj] = {}
    alloc: dict[str, Obj] = {}
    reservations: dict[str, list[Obj]] = {}
    for br in cache.objects(kinds.BIND_REQUEST).values():
        spec = br.get("spec") or {}
        ns = (br.get("metadata") or {}).get("namespace", "")
        pod_key = f"{ns}/{spec.get('podName', '')}"
        pod = pods.get(pod_key)
        if pod is None or pod.node_name:
            continue
        phase = (br.get("status") or {}).get("phase") or "Pending"
        if (spec.get("podUID") and spec["podUID"] != pod.uid) or phase == "Failed":
            stale[pod_key] = br
            continue
        assumed[pod_key] = str(spec.get("selectedNode", ""))
        for entry in spec.get("resourceClaimAllocations") or []:
            ckey = f"{ns}/{entry.get('name', '')}"
            if entry.get("allocation"):
                alloc.setdefault(ckey, entry["allocation"])
            if entry.get("reservedFor"):
                reservations.setdefault(ckey, []).append(entry["reservedFor"])
    # A reservation already in the claim's status is not assumed twice.
    for ckey, refs in list(reservations.items()):
        claim = cache.get(kinds.RESOURCE_CLAIM, ckey)
        have = {r.get("uid") for r in ((claim or {}).get("status") or {}).get("reservedFor") or []}
        uniq: list[Obj] = []
        for r in refs:
            if r.get("uid") not in have:
                have.add(r.get("uid"))
                uniq.append(r)
        reservations[ckey] = uniq
    return assumed, stale, alloc, reservations


def _groups(cache: SchedulerCache, pods: dict[str, PodInfo], assumed: dict[str, str], prio: dict[str, int],
            cfg: SchedulerConfig) -> tuple[dict[str, GroupInfo], dict[str, str]]:
    pgs = cache.objects(kinds.POD_GROUP)
    groups: dict[str, GroupInfo] = {}
    group_of: dict[str, str] = {}
    for p in sorted(pods.values(), key=lambda p: (p.created, p.key)):
        if not cfg.schedules(p.scheduler_name):
            continue
        if p.group_label:
            gkey = f"{p.namespace}/{p.group_label}"
            g = groups.get(gkey)
            if g is None:
                g = _new_group(gkey, p, pgs.get(gkey), prio)
                groups[gkey] = g
        else:
            gkey = f"pod:{p.key}"
            g = _new_group(gkey, p, None, prio)
            groups[gkey] = g
        group_of[p.key] = gkey
        g.pods.append(p)
        if p.phase != "Failed" and (p.node_name or p.key in assumed):
            g.placed += 1
        elif (not p.node_name and p.key not in assumed and not p.deleting and not p.terminal and not p.gated):
            g.pending.append(p)
    for g in groups.values():
        _finish_group(g)
    return groups, group_of


def _new_group(key: str, first: PodInfo, pg: Obj | None, prio: dict[str, int]) -> GroupInfo:
    if first.group_label is None:
        return GroupInfo(key, first.namespace, first.name, None, True, 1, first.queue_label or DEFAULT_QUEUE,
                         first.priority, first.created, None, None, ())
    spec = (pg or {}).get("spec") or {}
    md = (pg or {}).get("metadata") or {}
    topo = spec.get("topologyConstraint") or {}
    pclass = spec.get("priorityClassName")
    g = GroupInfo(
        key=key, namespace=first.namespace, name=first.group_label, obj=pg, implicit=False,
        min_member=max(1, int(spec.get("minMember") or 1)),
        queue=spec.get("queue") or first.queue_label or DEFAULT_QUEUE,
        priority=prio.get(pclass, first.priority) if pclass else first.priority,
        created=str(md.get("creationTimestamp") or first.created),
        required_key=topo.get("requiredTopologyKey") or None,
        preferred_key=topo.get("preferredTopologyKey") or None,
        claim_entries=claim_entries(spec),
    )
    if pg is None:
        g.blocked = f'PodGroup "{key}" does not exist'
    elif pclass and pclass not in prio:
        g.blocked = f'PriorityClass "{pclass}" of PodGroup {key} does not exist'
    return g


def _finish_group(g: GroupInfo) -> None:
    if g.implicit:
        return
    spec = (g.obj or {}).get("spec") or {}
    if not spec.get("priorityClassName"):
        g.priority = max((p.priority for p in g.pods), default=0)
    g.label_mismatch = [p for p in g.pods if p.queue_label and p.queue_label != g.queue and not p.terminal]
    members = sum(1 for p in g.pods if p.phase != "Failed")
    if g.blocked is None and members < g.min_member:
        g.blocked = f"PodGroup {g.key} has {members} pods, fewer than its minMember {g.min_member}"
    g.pending.sort(key=lambda p: (-p.priority, p.created, p.name))


def _capacity(nodes: list[NodeInfo], alloc: np.ndarray, index: ResourceIndex, accounting: DeviceAccounting,
              class_rows: dict[str, int]) -> dict[str, Fraction]:
    """Cluster capacity per accounting dimension; on each node the device plugin wins over DRA.

    The GPU row already holds DRA GPUs where no device plugin serves GPUs. A class's devices
    count on nodes whose allocatable lacks the class's explicit name (the device plugin wins).
    """
    out: dict[str, Fraction] = {}
    class_row_set = set(class_rows.values())
    for r, name in enumerate(index.names):
        if r in class_row_set or name == PODS:
            continue
        dim = accounting.dim_of(name)
        out[dim] = out.get(dim, Fraction(0)) + Fraction(int(alloc[r].sum()))
    for c, row in class_rows.items():
        if c not in accounting.gpu_classes:
            explicit = accounting.by_resource.explicit_by_class.get(c)
            keep = np.array([not explicit or n.allocatable.get(explicit, 0.0) <= 0 for n in nodes], dtype=bool)
            dim = accounting.class_dim(c)
            out[dim] = out.get(dim, Fraction(0)) + Fraction(int(alloc[row][keep].sum()))
    out[PODS] = Fraction(int(alloc[index.pos[PODS]].sum()))
    return {d: v for d, v in out.items() if v > 0 or d in (GPU,)}
