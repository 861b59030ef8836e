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
The builder keeps what it derived (:mod:`~drasched.scheduler.world`) and applies the cache's
changes to it, so a cycle costs what changed plus its pending pods, not the cluster.
"""

from __future__ import annotations

import dataclasses
import gc
import os
from collections import ChainMap
from collections.abc import Iterable, Iterator, Mapping
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
from drasched.scheduler.claims import ClaimInfo, PodClaim, build_claim_info, named_claims, resolve_pod_claims
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.constants import GPU, PODS
from drasched.scheduler.devices import ClassMatchMemo, DeviceAccounting, count_class_devices
from drasched.scheduler.extended import (
    ExtendedIndex,
    allocatable_row,
    bind_request_allocations,
    bind_requests_of,
    extended_claims_by_owner,
    stale_claims,
)
from drasched.scheduler.framework.profile import Profile, default_profile
from drasched.scheduler.gpus import GpuInventory, build_gpu_inventory
from drasched.scheduler.groups import GroupInfo, build_group, group_key, lone_pod_group, member_order
from drasched.scheduler.plugins.podindex import has_required_anti_affinity, scores_others
from drasched.scheduler.podinfo import REQUESTS_MEMO_SIZE, NodeInfo, PodInfo, parse_node, parse_pod
from drasched.scheduler.podtable import PodTable
from drasched.scheduler.queues import QueueTree, build_queue_tree
from drasched.scheduler.resources import ResourceIndex
from drasched.scheduler.usage import PodUsage, QueueUsage, UsageLedger
from drasched.scheduler.world import World, counted_node, pod_usage, queue_shape, recount_node
from drasched.scheduler.worldcheck import check_same_world

__all__ = ["GroupInfo", "Snapshot", "SnapshotBuilder", "collector_paused"]

Obj = dict[str, Any]


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
    usage: QueueUsage | None = None
    """Queue usage of every pod (the builder's ledger: a session works on a copy)."""
    pending_groups: tuple[GroupInfo, ...] = ()
    """The groups with pods waiting to be placed (by key): what the actions look at."""
    deleting: Mapping[str, PodInfo] = field(default_factory=dict)
    """Pods being deleted, not finished yet (those bound still hold their node)."""
    mismatched: tuple[GroupInfo, ...] = ()
    """Groups with a pod whose queue label their PodGroup overrides."""
    freed: int = 0
    """The builder's :attr:`SnapshotBuilder.freed` at this build."""
    on_node: Mapping[int, set[str]] = field(default_factory=dict)
    """Node index -> keys of the pods counted there (bound, or placed by a pending BindRequest)."""
    anti_affinity: Mapping[str, PodInfo] = field(default_factory=dict)
    """Pods with required podAntiAffinity terms, by key (placed or not): the InterPodAffinity
    plugin's symmetry check reads them (kept by the builder, so a cycle never scans every pod)."""
    affinity_scoring: Mapping[str, PodInfo] = field(default_factory=dict)
    """Pods whose pod affinity terms score nodes for other pods (preferred terms, required
    affinity), by key: the InterPodAffinity scorer reads them (kept like :attr:`anti_affinity`)."""
    pod_table: PodTable | None = None
    touched_groups: frozenset[str] | None = None
    pod_changes: int = 0
    """The builder's :attr:`SnapshotBuilder.pod_changes` at this build."""
    """Keys of the groups whose pods or PodGroup changed since the previous build (``None``: any
    may have, a full build): the PodGroup statuses to look at again."""
    """The counted pods by namespace and label (the builder's; ``None``: built from
    :attr:`pods` and :attr:`on_node` by whoever reads it)."""

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    def pod_demand(self, pod: PodInfo) -> dict[str, float]:
        """A pod's container requests in accounting dimensions (claims are counted separately)."""
        return memo_demand(self.demands, pod, self.accounting)


def memo_demand(memo: dict[str, tuple[PodInfo, dict[str, float]]], pod: PodInfo,
                accounting: DeviceAccounting, copy: bool = True) -> dict[str, float]:
    """A pod's container requests in accounting dimensions, memoised per pod version: a copy,
    or with ``copy`` False the memo's own (for a reader that never changes it)."""
    hit = memo.get(pod.key)
    if hit is not None and hit[0] is pod:
        return dict(hit[1]) if copy else hit[1]
    out = pod_dims(pod, accounting)
    memo[pod.key] = (pod, out)
    return dict(out) if copy else out


def pod_dims(pod: PodInfo, accounting: DeviceAccounting) -> dict[str, float]:
    """A pod's container requests in accounting dimensions, worked out (see :func:`memo_demand`)."""
    dim_of = accounting.dim_of
    out: dict[str, float] = {}
    for r, v in pod.requests.items():
        d = dim_of(r)
        out[d] = out.get(d, 0.0) + v
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


_PATCHED_KINDS = frozenset({kinds.POD, kinds.BIND_REQUEST, kinds.POD_GROUP, kinds.QUEUE, kinds.RESOURCE_CLAIM,
                            kinds.NODE, kinds.POD_DISRUPTION_BUDGET, kinds.CONFIG_MAP})
"""Kinds whose changes the builder applies in place (a node only while what the scheduler reads
of it stays: its kubelet's heartbeats); a change of any other kind (slices, classes, templates,
...) builds the world again from the cache."""

CHECK_ENV = "DRASCHED_CHECK_SNAPSHOTS"
"""Set (the test suite does): every snapshot built in place is compared with one built from scratch."""


class SnapshotBuilder:
    """Builds snapshots from a cache: from scratch the first time (or when a kind it does not
    follow in place changed), then by applying the cache's changes to what it kept.

    A snapshot is valid until the next :meth:`build`: its pods, groups and gangs are the
    builder's own, changed in place by the next build (as upstream's scheduler cache updates
    its snapshot); what a cycle changes (rows, usage, allocated devices) it changes in copies.
    """

    def __init__(self, config: SchedulerConfig, *, allocation_wall_time: float | None = None) -> None:
        self.config = config
        self.allocation_wall_time = allocation_wall_time
        """Seconds one allocation search may take on top of its step budget (serve; None: steps only)."""
        self.profile = Profile.from_config(config)
        self._pods: dict[str, PodInfo] = {}
        """Pod key -> the pod parsed from the cache's object (the store never changes an object
        in place: a new version is a new object)."""
        self._prio: dict[str, int] | None = None
        """The PriorityClass values the memoised pods were parsed with."""
        self._dims: dict[int, tuple[dict[str, float], dict[str, float]]] = {}
        self._dims_of: DeviceAccounting | None = None
        """id() of a requests dict -> (that dict, its demand) for :attr:`_dims_of`'s accounting:
        pods of one template share their requests (:func:`~drasched.scheduler.podinfo.shared_requests`)."""
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
        self._world: World | None = None
        self._world_of = 0
        """id() of the cache the world was built from."""
        self.full_builds = 0
        """How many builds read the whole cache (the rest applied changes): for tests and benchmarks."""
        self.freed = 0
        """Counts changes that may let a waiting gang fit where it did not: a pod or claim giving
        back what it held, a queue's settings, a world built again. A gang that failed is not
        tried again before this moves (or the gang itself changes): upstream's queueing hints."""
        self._check = bool(os.environ.get(CHECK_ENV))
        self._anti: dict[str, PodInfo] = {}
        """Pod key -> the pod, for pods with required podAntiAffinity (:attr:`Snapshot.anti_affinity`)."""
        self.pod_changes = 0
        """Changes of a pod on a node that other pods' rules read (it came, went, moved, was
        relabelled or started terminating; a full build counts one): a gang parked for other pods
        (inter-pod affinity, topology spread) is retried once this moves."""
        self._touched: set[str] | None = None
        """Groups the last build changed (``None``: a full build, any may have)."""
        self._scoring: dict[str, PodInfo] = {}
        """Pod key -> the pod, for pods whose terms score other pods (:attr:`Snapshot.affinity_scoring`)."""

    # ------------------------------------------------------------------ memoised parsing

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

    def _parse(self, key: str, obj: Obj, prio: dict[str, int],
               into: dict[str, PodInfo] | None = None) -> PodInfo:
        """Pod ``key`` parsed (memoised per object); ``into``: the memo a full build makes anew."""
        p = self._pods.get(key)
        if p is None or p.obj is not obj:
            p = parse_pod(key, obj, prio, self.profile.pod_keys)
            if into is None:
                self._pods[key] = p
        if into is not None:
            into[key] = p
        return p

    def _pod_demand(self, pod: PodInfo) -> dict[str, float]:
        """What the pod adds to its queue's usage, memoised per requests dict (shared by the pods
        of a template; the ledger keeps it with the pod and never changes it)."""
        assert self._world is not None
        accounting = self._world.accounting
        if self._dims_of is not accounting:
            self._dims, self._dims_of = {}, accounting
        requests = pod.requests
        hit = self._dims.get(id(requests))
        if hit is not None and hit[0] is requests:
            return hit[1]
        out = pod_dims(pod, accounting)
        if len(self._dims) >= REQUESTS_MEMO_SIZE:
            self._dims.clear()
        self._dims[id(requests)] = (requests, out)  # the dict is held, so its id is not reused
        return out

    # ------------------------------------------------------------------ building

    def build(self, cache: SchedulerCache, backoff: BindBackoff | None = None,
              now: datetime | None = None) -> Snapshot:
        """The cluster in ``cache`` as a snapshot; with ``backoff`` and ``now``, failed binds are
        counted and gangs whose pods are backing off are left out of the cycle.

        The collector is paused meanwhile: a build allocates a few objects per pod, and in a
        large cluster the full collections they set off cost more than the build itself.
        """
        with collector_paused():
            w = self._world
            changed = self._changes(cache) if w is not None and self._world_of == id(cache) else None
            self._touched = None
            patched = w is not None and changed is not None and self._patch(w, cache, changed)
            if w is None or not patched:
                self._touched = None
                self.pod_changes += 1
                w = self._full(cache)
            elif self._check:
                check_same_world(w, SnapshotBuilder(self.config)._full(cache))
            w.generation = cache.generation
            return self._snapshot(w, cache, backoff, now)

    def _changes(self, cache: SchedulerCache) -> dict[str, set[str]] | None:
        """Keys changed per kind since the world was built; ``None``: read the whole cache."""
        assert self._world is not None
        since = self._world.generation
        out: dict[str, set[str]] = {}
        for rt in cache.watched:
            if cache.kind_generation(rt) <= since:
                continue
            if rt not in _PATCHED_KINDS:
                return None
            keys = cache.changed_since(rt, since)
            if keys is None:
                return None
            out[rt.kind] = keys
        return out

    def has_pending(self) -> bool:
        """Whether the last build saw a pod of ours waiting to be placed."""
        return self._world is not None and bool(self._world.pending)

    def _full(self, cache: SchedulerCache) -> World:
        """Everything derived from the whole cache."""
        self.full_builds += 1
        self.freed += 1
        cfg = self.config
        ns_labels = {k: dict((o.get("metadata") or {}).get("labels") or {})
                     for k, o in cache.objects(kinds.NAMESPACE).items()}
        prio = {k: int(o.get("value") or 0) for k, o in cache.objects(kinds.PRIORITY_CLASS).items()}
        if prio != self._prio:  # a pod's priority may come from a class by name (KAI's priorityClassName label)
            self._pods, self._prio = {}, prio
        node_objs, nodes, node_pos = self._node_rows(cache)
        classes = list(cache.objects(kinds.DEVICE_CLASS).values())
        accounting = DeviceAccounting(classes, cfg.gpu_device_classes)
        fresh: dict[str, PodInfo] = {}
        pods: dict[str, PodInfo] = {}
        for key, obj in cache.objects(kinds.POD).items():
            pods[key] = self._parse(key, obj, prio, fresh)
        self._pods = fresh  # forget pods that are gone
        self._anti = {k: p for k, p in pods.items() if has_required_anti_affinity(p)}
        self._scoring = {k: p for k, p in pods.items() if scores_others(p)}
        if self._demands_of != cache.kind_generation(kinds.DEVICE_CLASS) or len(self._demands) > 2 * len(pods):
            self._demands = {}  # new classes map requests to other dimensions; or many pods are gone
            self._demands_of = cache.kind_generation(kinds.DEVICE_CLASS)

        assumed, stale, assumed_alloc, assumed_res = _bind_requests(
            cache, pods, [k for k, p in pods.items() if not p.node_name])
        accounting.devices = self._pool_index(cache).devices_by_id  # a claim's demand depends on its devices
        claims: dict[str, ClaimInfo] = {}
        for key, obj in cache.objects(kinds.RESOURCE_CLAIM).items():
            claims[key] = build_claim_info(key, obj, assumed_alloc.get(key), assumed_res.get(key, []), accounting)
        owned = extended_claims_by_owner(claims)
        br_allocations = bind_request_allocations(cache, pods, assumed, owned)
        state = _base_state(claims, br_allocations)
        allocator = self._allocator(cache, classes, state)
        slices = cache.objects(kinds.RESOURCE_SLICE)
        self._class_memo.begin(cache.kind_generation(kinds.DEVICE_CLASS))
        counts = count_class_devices(allocator, node_objs, accounting, self._class_memo,
                                     {k: str(o["metadata"].get("resourceVersion", "")) for k, o in slices.items()})
        self._class_memo.end()

        names: set[str] = {implicit_name(c) for c in accounting.class_names}
        for n in nodes:
            names.update(n.allocatable)
        for requests in {id(p.requests): p.requests for p in pods.values()}.values():  # shared by templates
            names.update(requests)
        index = ResourceIndex.build(names)
        r_count, n_count = len(index), len(nodes)
        alloc = np.zeros((r_count, n_count))
        device_used = np.zeros((r_count, n_count))
        for n in nodes:
            for r, v in n.allocatable.items():
                alloc[index.pos[allocatable_row(r, accounting)], n.index] += v
        class_rows = {c: index.pos[implicit_name(c)] for c in accounting.class_names}
        for c, row in class_rows.items():
            alloc[row] = counts.total[c]
            device_used[row] = counts.in_use[c]
        gpu_row = index.pos[GPU]
        gpus = build_gpu_inventory(allocator, nodes, accounting, alloc[gpu_row] > 0,
                                   [c.allocation for c in claims.values() if c.allocation and not c.extended])
        alloc[gpu_row] += gpus.total
        device_used[gpu_row] += gpus.used
        tree = build_queue_tree(cache.objects(kinds.QUEUE).values(), accounting.dim_of)
        w = World(
            generation=cache.generation, prio=prio, ns_labels=ns_labels, node_objs=node_objs, nodes=nodes,
            node_pos=node_pos, accounting=accounting, index=index, class_rows=class_rows, alloc=alloc,
            device_used=device_used, pod_used=np.zeros((r_count, n_count)),
            pod_releasing=np.zeros((r_count, n_count)), counts=counts, gpus=gpus,
            capacity=_capacity(nodes, alloc, index, accounting, class_rows), tree=tree, claims=claims,
            owned=owned, assumed_alloc=assumed_alloc, assumed_res=_kept(assumed_res), br_allocations=br_allocations,
            state=state, assumed=assumed, stale=stale, ledger=UsageLedger(tree))
        self._world, self._world_of = w, id(cache)
        self._add_pods(w, pods)
        for j in w.on_node:
            recount_node(w, j)
        pgs = cache.objects(kinds.POD_GROUP)
        templates = cache.objects(kinds.RESOURCE_CLAIM_TEMPLATE)
        usages: list[tuple[str, PodUsage]] = []
        for gkey, keys in w.members.items():
            if len(keys) != 1 or not self._lone_group(w, gkey, keys, usages):
                self._rebuild_group(w, gkey, pgs, templates, usages)
        assert w.ledger is not None
        w.ledger.fill(usages, _ClaimDemand(w.claims))
        return w

    def _allocator(self, cache: SchedulerCache, classes: list[Obj], state: AllocatedState) -> Allocator:
        """A fresh allocator on ``state`` (its failure and counter memos hold for one cycle)."""
        return Allocator(classes, (), state, index=self._pool_index(cache), selector_cache=self._selectors,
                         wall_time_limit=self.allocation_wall_time)

    def _put_pod(self, w: World, key: str, p: PodInfo | None) -> tuple[set[int], set[str]]:
        """Record pod ``key`` as ``p`` (``None``: gone): the node columns and groups it touched."""
        nodes: set[int] = set()
        groups: set[str] = set()
        self._anti.pop(key, None)
        self._scoring.pop(key, None)
        if p is not None and has_required_anti_affinity(p):
            self._anti[key] = p
        if p is not None and scores_others(p):
            self._scoring[key] = p
        old_j = w.counted.pop(key, None)
        if old_j is not None:
            w.on_node[old_j].discard(key)
            w.pod_table.remove(key)
            nodes.add(old_j)
        if key in w.pods and (p is None or p.terminal or (p.deleting and not w.pods[key].deleting)):
            self.freed += 1  # gone, finished, or leaving: its node and its queue's share free up
        old_g = w.group_of.pop(key, None)
        if old_g is not None:
            w.members[old_g].discard(key)
            groups.add(old_g)
        w.deleting.pop(key, None)
        new_j = None if p is None else counted_node(p, w.assumed, w.node_pos)
        if old_j is not None and new_j != old_j:
            self.freed += 1
        if old_j != new_j or (new_j is not None and _seen_by_other_pods(w.pods.get(key)) != _seen_by_other_pods(p)):
            self.pod_changes += 1  # what inter-pod rules read of it moved (not the scheduler's own condition)
        w.unbound.discard(key)  # :meth:`_add_pod` adds it back while the pod has no node
        if p is None:
            w.pods.pop(key, None)
            w.pod_claims.pop(key, None)
            w.claim_users.put(key, ())
            assert w.ledger is not None
            w.ledger.set_pod(key, None, {})
            return nodes, groups
        self._add_pod(w, key, p, nodes, groups)
        return nodes, groups

    def _add_pods(self, w: World, pods: dict[str, PodInfo]) -> None:
        """:meth:`_add_pod` of every pod of a full build into a fresh world, in one loop (its
        per-pod calls were a tenth of a large cluster's build)."""
        unbound, counted, on_node, deleting = w.unbound, w.counted, w.on_node, w.deleting
        group_of, members, assumed, node_pos = w.group_of, w.members, w.assumed, w.node_pos
        ours: dict[str, bool] = {}
        w.pods.update(pods)
        for key, p in pods.items():
            node: str | None = p.node_name
            if not node:
                unbound.add(key)
                node = assumed.get(key)
            if node and not p.terminal:  # counted_node, inlined
                j = node_pos.get(node)
                if j is not None:
                    counted[key] = j
                    on = on_node.get(j)
                    if on is None:
                        on = on_node[j] = set()
                    on.add(key)
            if p.deleting and not p.terminal:
                deleting[key] = p
            mine = ours.get(p.scheduler_name)
            if mine is None:
                mine = ours[p.scheduler_name] = self.config.schedules(p.scheduler_name)
            if mine:
                gkey = f"{p.namespace}/{p.group_label}" if p.group_label else f"pod:{key}"  # group_key, inlined
                group_of[key] = gkey
                same = members.get(gkey)
                if same is None:
                    members[gkey] = {key}
                else:
                    same.add(key)

    def _add_pod(self, w: World, key: str, p: PodInfo, nodes: set[int] | None, groups: set[str] | None) -> None:
        """Record pod ``key``, not in the world: its node column and group go into ``nodes`` and
        ``groups`` (:meth:`_add_pods` does the same for a full build)."""
        if not p.node_name:
            w.unbound.add(key)
        w.pods[key] = p
        j = counted_node(p, w.assumed, w.node_pos)
        if j is not None:
            w.counted[key] = j
            on = w.on_node.get(j)
            if on is None:
                on = w.on_node[j] = set()
            on.add(key)
            w.pod_table.add(key, p, j)
            if nodes is not None:
                nodes.add(j)
        if p.deleting and not p.terminal:
            w.deleting[key] = p
        if self.config.schedules(p.scheduler_name):
            gkey = group_key(p)
            w.group_of[key] = gkey
            members = w.members.get(gkey)
            if members is None:
                members = w.members[gkey] = set()
            members.add(key)
            if groups is not None:
                groups.add(gkey)

    def _lone_group(self, w: World, gkey: str, keys: set[str], usages: list[tuple[str, PodUsage]]) -> bool:
        """What :meth:`_rebuild_group` does in a full build for the implicit group of one pod
        without claims (most pods of a large cluster: one per bound pod without a PodGroup),
        without its general bookkeeping; False for any other group."""
        (key,) = keys
        p = w.pods[key]
        if p.group_label is not None or p.claim_entries:
            return False
        g = lone_pod_group(gkey, p, w.assumed, w.tree.queues, w.prio)
        w.groups[gkey] = g
        if g.pending:
            w.pending.add(gkey)
        if g.queue in w.tree.queues:
            usage = pod_usage(p, g, w.assumed, [], self._pod_demand)
            if usage is not None:
                usages.append((key, usage))
        return True

    def _rebuild_group(self, w: World, gkey: str, pgs: Mapping[str, Obj], templates: Mapping[str, Obj],
                       usages: list[tuple[str, PodUsage]] | None = None) -> None:
        """Build group ``gkey`` again from its members: its pods' claims and queue usage with it
        (a full build passes ``usages``: the pods' usage goes there, for one ledger fill)."""
        assert w.ledger is not None
        old = None
        if usages is None:  # in place: the group as it was goes (a full build starts with none)
            old = w.groups.pop(gkey, None)
            w.pending.discard(gkey)
            w.mismatched.discard(gkey)
        keys = w.members.get(gkey)
        if not keys:
            w.members.pop(gkey, None)
            for p in old.pods if old is not None else ():
                if w.group_of.get(p.key) is None:
                    w.ledger.set_pod(p.key, None, {})
                    w.pod_claims.pop(p.key, None)
                    w.claim_users.put(p.key, ())
            return
        members = [w.pods[k] for k in keys]
        if len(members) > 1:
            members.sort(key=member_order)
        if len(members) == 1 and members[0].group_label is None:
            g = lone_pod_group(gkey, members[0], w.assumed, w.tree.queues, w.prio)
        else:
            g = build_group(gkey, members, pgs.get(gkey) if members[0].group_label else None, w.assumed, w.prio,
                            w.tree.queues, self.profile.topology)
        w.groups[gkey] = g
        if g.pending:
            w.pending.add(gkey)
        if g.label_mismatch:
            w.mismatched.add(gkey)
        claim_demand = _ClaimDemand(w.claims) if usages is None else {}  # a full build fills the ledger after
        queued = g.queue in w.tree.queues
        for p in members:
            if p.claim_entries and not p.terminal:
                w.pod_claims[p.key] = resolve_pod_claims(p.namespace, p.obj, p.uid, p.claim_entries, g.obj,
                                                         g.claim_entries, w.claims, templates)
                w.claim_users.put(p.key, named_claims(p.namespace, p.obj, p.claim_entries, g.obj))
            elif usages is None:  # (a full build has no claims of it to forget)
                w.pod_claims.pop(p.key, None)
                if p.key in w.claim_users.of:
                    w.claim_users.put(p.key, ())
            usage = None
            if queued:
                resolved = w.pod_claims.get(p.key)
                keys_of = [c.key for c in resolved if c.key] if resolved else []
                usage = pod_usage(p, g, w.assumed, keys_of, self._pod_demand)
            if usages is None:
                w.ledger.set_pod(p.key, usage, claim_demand)
            elif usage is not None:
                usages.append((p.key, usage))
        for p in old.pods if old is not None else ():
            if w.group_of.get(p.key) is None:  # left every group (gone, or no longer ours)
                w.ledger.set_pod(p.key, None, {})
                w.pod_claims.pop(p.key, None)
                w.claim_users.put(p.key, ())

    def _patch_claims(self, w: World, cache: SchedulerCache, keys: set[str]) -> set[str]:
        """Build the changed claims again, move their devices in or out; the pods that name them."""
        assert w.ledger is not None
        touched_extended = False
        pods: set[str] = set()
        for key in keys:
            old = w.claims.get(key)
            obj = cache.get(kinds.RESOURCE_CLAIM, key)
            new = None if obj is None else build_claim_info(
                key, obj, w.assumed_alloc.get(key), w.assumed_res.get(key, []), w.accounting)
            if old is not None and old.allocation:
                self._hold(w, old.allocation, -1, gpu_units=not old.extended)
            if old is not None and _gives_back(old, new):
                self.freed += 1
            if new is not None and new.allocation:
                self._hold(w, new.allocation, 1, gpu_units=not new.extended)
            if new is None:
                w.claims.pop(key, None)
            else:
                w.claims[key] = new
            touched_extended |= bool(old is not None and old.extended) or bool(new is not None and new.extended)
            w.ledger.set_claim(key, new.demand if new is not None else {})
            pods |= w.claim_users.keys_for(key)
        if touched_extended:
            w.owned = extended_claims_by_owner(w.claims)
        return pods

    def _hold(self, w: World, allocation: Obj, sign: int, gpu_units: bool) -> None:
        """Take (``sign`` 1) or give back (-1) an allocation's devices in the world's state, and
        move the class rows (and the GPU row's units) of the nodes that reach them."""
        devices = _exclusive_devices(allocation)
        before = [w.state.in_use(d) for d in devices]
        if sign > 0:
            w.state.add(allocation)
        else:
            w.state.remove(allocation)
        gpu_classes = w.accounting.gpu_classes
        for d, was in zip(devices, before):
            now_used = w.state.in_use(d)
            if now_used == was:
                continue
            delta = 1.0 if now_used else -1.0
            classes = w.counts.device_classes.get(d, ())
            for j in w.counts.device_nodes.get(d, ()):
                for cls in classes:
                    w.counts.in_use[cls][j] += delta
                    w.device_used[w.class_rows[cls], j] += delta
                if any(c in gpu_classes for c in classes):
                    w.counts.gpu_in_use[j] += delta
        if gpu_units:
            row = w.index.pos[GPU]
            for j in w.gpus.hold(allocation, sign):
                w.device_used[row, j] = w.gpus.used[j]

    def _patch_nodes(self, w: World, cache: SchedulerCache, keys: set[str]) -> bool:
        """Take nodes whose status changed but not what a cycle reads of them (a kubelet's
        heartbeat, conditions, images); False when a node came, went or changed what counts."""
        fresh: list[NodeInfo] = []
        for name in keys:
            j = w.node_pos.get(name)
            obj = cache.get(kinds.NODE, name)
            if j is None or obj is None:
                return False
            new, old = parse_node(obj, j), w.nodes[j]
            if (new.labels, new.taints, new.unschedulable, new.allocatable) != \
                    (old.labels, old.taints, old.unschedulable, old.allocatable):
                return False
            fresh.append(new)
        for new in fresh:
            w.nodes[new.index] = new
            w.node_objs[new.index] = new.obj
        # The parsed nodes and the pools' per-node views stay valid: note them as current.
        self._nodes_of = (id(cache), cache.kind_generation(kinds.NODE))
        self._pools_of = (self._pools_of[0], self._pools_of[1], cache.kind_generation(kinds.NODE),
                          self._pools_of[3])
        return True

    def _patch_bind_requests(self, w: World, cache: SchedulerCache, parsed: dict[str, PodInfo | None],
                             dirty_pods: set[str], claim_keys: set[str]) -> None:
        """Read what pending BindRequests assume again (it depends on the pods, the requests and
        the claims: a reservation a claim's status already holds is not assumed twice); the
        pods and claims whose assumed state changed join ``dirty_pods`` and ``claim_keys``."""
        pods = w.pods
        view: Mapping[str, PodInfo | None] = ChainMap(parsed, pods)  # type: ignore[arg-type]
        unbound = [k for k in w.unbound if k not in parsed]
        unbound += [k for k, p in parsed.items() if p is not None and not p.node_name]
        assumed, stale, assumed_alloc, assumed_res = _bind_requests(cache, view, unbound)
        assumed_res = _kept(assumed_res)
        claim_keys |= {k for k in assumed_alloc.keys() | w.assumed_alloc.keys()
                       if assumed_alloc.get(k) != w.assumed_alloc.get(k)}
        claim_keys |= {k for k in assumed_res.keys() | w.assumed_res.keys()
                       if assumed_res.get(k) != w.assumed_res.get(k)}
        w.assumed_alloc, w.assumed_res = assumed_alloc, assumed_res
        for key in set(assumed) ^ set(w.assumed) | {k for k in assumed if w.assumed.get(k) != assumed[k]}:
            if (current := view.get(key)) is not None:
                dirty_pods.add(key)
                parsed.setdefault(key, current)
        w.assumed, w.stale = assumed, stale
        if claim_keys:
            for key in self._patch_claims(w, cache, claim_keys):
                if key not in parsed and key in pods:
                    dirty_pods.add(key)
                    parsed[key] = pods[key]
        br_allocations = bind_request_allocations(cache, view, w.assumed, w.owned)  # type: ignore[arg-type]
        if br_allocations != w.br_allocations:
            if any(a not in br_allocations for a in w.br_allocations):
                self.freed += 1
            for a in w.br_allocations:
                self._hold(w, a, -1, gpu_units=False)
            for a in br_allocations:
                self._hold(w, a, 1, gpu_units=False)
            w.br_allocations = br_allocations

    def _patch(self, w: World, cache: SchedulerCache, changed: dict[str, set[str]]) -> bool:
        """Apply the cache's changes to the world; False: a change it does not follow in place."""
        assert w.ledger is not None
        if kinds.NODE.kind in changed and not self._patch_nodes(w, cache, changed[kinds.NODE.kind]):
            return False
        if kinds.QUEUE.kind in changed:
            tree = build_queue_tree(cache.objects(kinds.QUEUE).values(), w.accounting.dim_of)
            if queue_shape(tree) != queue_shape(w.tree):
                return False  # queues came, went or moved: usage sums run along other paths
            if _queue_specs(tree) != _queue_specs(w.tree):
                self.freed += 1  # quota, limit, weight or priority changed
            w.tree = tree
            w.ledger.retree(tree)
        dirty_pods = set(changed.get(kinds.POD.kind, ()))
        claim_keys = set(changed.get(kinds.RESOURCE_CLAIM.kind, ()))
        parsed: dict[str, PodInfo | None] = {}
        for key in dirty_pods:
            obj = cache.get(kinds.POD, key)
            if obj is None:
                parsed[key] = None
                self._pods.pop(key, None)  # the memos forget a pod that is gone (they hold its object)
                self._demands.pop(key, None)
                continue
            p = self._parse(key, obj, w.prio)
            if any(r not in w.index.pos for r in p.requests):
                return False  # a resource no row stands for yet
            parsed[key] = p
        pods = w.pods
        if dirty_pods or claim_keys or kinds.BIND_REQUEST.kind in changed:
            self._patch_bind_requests(w, cache, parsed, dirty_pods, claim_keys)
        nodes: set[int] = set()
        groups: set[str] = set(k for k in changed.get(kinds.POD_GROUP.kind, ()) if k in w.members)
        for key in dirty_pods:
            touched_nodes, touched_groups = self._put_pod(w, key, parsed.get(key, pods.get(key)))
            nodes |= touched_nodes
            groups |= touched_groups
        for j in nodes:
            recount_node(w, j)
        pgs = cache.objects(kinds.POD_GROUP)
        templates = cache.objects(kinds.RESOURCE_CLAIM_TEMPLATE)
        for gkey in groups:
            self._rebuild_group(w, gkey, pgs, templates)
        self._touched = groups
        return True

    def _snapshot(self, w: World, cache: SchedulerCache, backoff: BindBackoff | None,
                  now: datetime | None) -> Snapshot:
        """The snapshot of the world: copies of what a cycle changes, the rest shared."""
        classes = list(cache.objects(kinds.DEVICE_CLASS).values())
        allocator = self._allocator(cache, classes, w.state.fork())
        held = {} if backoff is None or now is None else _backing_off(backoff, w.pods, w.stale, now)
        groups: dict[str, GroupInfo] = w.groups
        pending = [w.groups[k] for k in w.pending]
        if held:
            waiting = {k for k in w.pending if any(p.key in held for p in w.groups[k].pending)}
            if waiting:  # the gang waits for its backoff to end, then is placed as a whole
                groups = dict(w.groups)
                for k in waiting:
                    groups[k] = dataclasses.replace(w.groups[k], pending=[])
                pending = [g for g in pending if g.key not in waiting]
        stale_extended = stale_claims(w.pods, w.assumed, w.owned, self.config.schedules) if w.owned else {}
        extended = ExtendedIndex(w.nodes, w.index, w.accounting, w.class_rows, w.counts.multi, w.gpus,
                                 stale_extended)
        assert w.ledger is not None
        used = w.device_used + w.pod_used
        return Snapshot(
            index=w.index, nodes=w.nodes, node_pos=w.node_pos,
            allocatable=_frozen(w.alloc.copy()), used=_frozen(used), releasing=_frozen(w.pod_releasing.copy()),
            idle=_frozen(w.alloc - used), class_rows=w.class_rows, multi_classes=w.counts.multi,
            device_classes=w.counts.device_classes, device_nodes=w.counts.device_nodes,
            pods=w.pods, groups=groups, group_of=w.group_of, claims=w.claims, pod_claims=w.pod_claims,
            assumed=w.assumed, stale_bind_requests=w.stale, queues=w.tree, accounting=w.accounting,
            capacity=w.capacity, allocator=allocator, namespace_labels=w.ns_labels,
            templates=cache.objects(kinds.RESOURCE_CLAIM_TEMPLATE),
            gpus=w.gpus, extended=extended, priority_classes=cache.objects(kinds.PRIORITY_CLASS),
            disruption_budgets=cache.objects(kinds.POD_DISRUPTION_BUDGET), profile=self.profile,
            demands=self._demands, backing_off=held, usage=w.ledger.usage,
            pending_groups=tuple(sorted(pending, key=lambda g: g.key)), deleting=w.deleting,
            mismatched=tuple(w.groups[k] for k in sorted(w.mismatched)), freed=self.freed, on_node=w.on_node,
            anti_affinity=self._anti, affinity_scoring=self._scoring, pod_table=w.pod_table,
            touched_groups=None if self._touched is None else frozenset(self._touched),
            pod_changes=self.pod_changes,
        )


def _seen_by_other_pods(p: PodInfo | None) -> tuple[Any, ...] | None:
    """What inter-pod affinity and topology spread read of a pod counted on a node."""
    if p is None:
        return None
    md = p.obj.get("metadata") or {}
    return p.namespace, md.get("labels"), p.deleting


class _ClaimDemand(Mapping[str, Mapping[str, float]]):
    """Claim key -> its device demand, read from the claims on demand (no copy per group)."""

    def __init__(self, claims: Mapping[str, ClaimInfo]) -> None:
        self._claims = claims

    def __getitem__(self, key: str) -> Mapping[str, float]:
        return self._claims[key].demand

    def __iter__(self) -> Iterator[str]:
        return iter(self._claims)

    def __len__(self) -> int:
        return len(self._claims)


def _gives_back(old: ClaimInfo, new: ClaimInfo | None) -> bool:
    """Whether a claim's change frees devices or a reservation: gone, being deleted, deallocated,
    or a consumer fewer."""
    if new is None or (new.deleting and not old.deleting) or (old.allocation and not new.allocation):
        return True
    kept = {r.get("uid") for r in new.reserved_for}
    return any(r.get("uid") not in kept for r in old.reserved_for)


def _queue_specs(tree: QueueTree) -> dict[str, Any]:
    """What a cycle reads of each queue's settings, as parsed: the default queue the scheduler
    stands in for and the one it then creates (an empty spec) read the same, so creating it
    wakes no gang that failed; a quota, limit, weight, priority or minRuntime change does."""
    return {name: (q.parent, q.priority, q.resources, q.min_runtime) for name, q in tree.queues.items()}


def _kept(assumed_res: dict[str, list[Obj]]) -> dict[str, list[Obj]]:
    """Assumed reservations, without claims left with none (so that equal states compare equal)."""
    return {k: v for k, v in assumed_res.items() if v}


def _base_state(claims: Mapping[str, ClaimInfo], br_allocations: list[Obj]) -> AllocatedState:
    """Devices taken by every allocated claim and by pending BindRequests' extended allocations."""
    state = AllocatedState()
    for info in claims.values():
        if info.allocation:
            state.add(info.allocation)
    for a in br_allocations:
        state.add(a)
    return state


def _exclusive_devices(allocation: Obj) -> list[DeviceID]:
    """Devices an allocation takes whole (admin access and shares take none)."""
    return [(str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
            for r in ((allocation or {}).get("devices") or {}).get("results") or []
            if not r.get("adminAccess") and not r.get("shareID")]


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


def _bind_requests(cache: SchedulerCache, pods: Mapping[str, PodInfo | None], unbound: Iterable[str]) -> tuple[
        dict[str, str], dict[str, Obj], dict[str, Obj], dict[str, list[Obj]]]:
    """Pods placed by a pending BindRequest, failed BindRequests to replace, and assumed claim state.

    Only the requests of ``unbound`` pods are read (a bound pod's request has nothing left to
    assume): the requests of bound pods stay until the pods go, so reading them all would make
    every cycle cost the cluster's size.
    """
    assumed: dict[str, str] = {}
    stale: dict[str, Obj] = {}
    alloc: dict[str, Obj] = {}
    reservations: dict[str, list[Obj]] = {}
    for pod_key, br in bind_requests_of(cache, sorted(unbound)):
        spec = br.get("spec") or {}
        ns = (br.get("metadata") or {}).get("namespace", "")
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
