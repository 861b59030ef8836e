"""What the snapshot builder keeps between cycles, and the pure per-pod pieces it is made of.

The builder (:mod:`~drasched.scheduler.snapshot`) derives everything a cycle reads from the
cache once, then, cycle by cycle, changes only what the cache's changes touch: a pod's node
column, its group, its queue usage. Each piece here is computed the same way for the first
build and for every change after it, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from drasched.dra.allocated_state import AllocatedState
from drasched.scheduler.claims import ClaimInfo, PodClaim
from drasched.scheduler.devices import ClassCounts, DeviceAccounting
from drasched.scheduler.extended import request_row
from drasched.scheduler.gpus import GpuInventory
from drasched.scheduler.groups import GroupInfo
from drasched.scheduler.podinfo import NodeInfo, PodInfo
from drasched.scheduler.podtable import PodTable
from drasched.scheduler.queues import QueueTree
from drasched.scheduler.resources import ResourceIndex
from drasched.scheduler.usage import ALLOCATED, REQUESTED, PodUsage, UsageLedger, exact_sums
from drasched.store.multiindex import MultiIndex

Obj = dict[str, Any]
_BOTH = (REQUESTED, ALLOCATED)
_REQUESTED_ONLY = (REQUESTED,)


@dataclass(eq=False)
class World:
    """Everything derived from the cache, kept current by the builder (never read by a cycle
    directly: a snapshot carries copies of what a cycle may change)."""

    generation: int
    """The cache generation this world reflects."""
    prio: dict[str, int]
    ns_labels: dict[str, dict[str, str]]
    node_objs: list[Obj]
    nodes: list[NodeInfo]
    node_pos: dict[str, int]
    accounting: DeviceAccounting
    index: ResourceIndex
    class_rows: dict[str, int]
    alloc: np.ndarray
    device_used: np.ndarray
    """Rows taken by claims' devices: the class rows, and the GPU row's DRA GPUs."""
    pod_used: np.ndarray
    """Rows taken by pods' container requests, per node column."""
    pod_releasing: np.ndarray
    counts: ClassCounts
    gpus: GpuInventory
    capacity: dict[str, Any]
    tree: QueueTree
    claims: dict[str, ClaimInfo]
    owned: dict[tuple[str, str], list[ClaimInfo]]
    assumed_alloc: Obj
    """Claim key -> the allocation a pending BindRequest gives it (the claim's status has none yet)."""
    assumed_res: dict[str, list[Obj]]
    """Claim key -> reservations pending BindRequests add."""
    br_allocations: list[Obj]
    """Extended-resource allocations of pending BindRequests whose claim does not exist yet."""
    state: AllocatedState
    """Devices taken by allocated claims and ``br_allocations``: each cycle works on a fork."""
    assumed: dict[str, str]
    stale: dict[str, Obj]
    pods: dict[str, PodInfo] = field(default_factory=dict)
    on_node: dict[int, set[str]] = field(default_factory=dict)
    """Node column -> pods counted there (bound, or placed by a pending BindRequest)."""
    counted: dict[str, int] = field(default_factory=dict)
    """Pod key -> the node column its requests are counted in."""
    members: dict[str, set[str]] = field(default_factory=dict)
    groups: dict[str, GroupInfo] = field(default_factory=dict)
    group_of: dict[str, str] = field(default_factory=dict)
    pod_claims: dict[str, list[PodClaim]] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)
    unbound: set[str] = field(default_factory=set)
    """Keys of pods with no node yet: the only ones a BindRequest may still place."""
    """Keys of groups with pods waiting to be placed."""
    mismatched: set[str] = field(default_factory=set)
    """Keys of groups with a pod whose queue label the PodGroup overrides."""
    deleting: dict[str, PodInfo] = field(default_factory=dict)
    """Pods being deleted, not finished yet (those bound hold their node until they are gone)."""
    ledger: UsageLedger | None = None
    claim_users: MultiIndex[str, str] = field(default_factory=MultiIndex)
    """Pod key -> the claims its resolution looked up (a pod is resolved again when one changes)."""
    request_rows: dict[tuple[str, int], str | None] = field(default_factory=dict)
    """(resource, node column) -> :func:`~drasched.scheduler.extended.request_row` there: it reads
    only the node's allocatable and the classes, both fixed for the life of a world."""
    pod_table: PodTable = field(init=False)
    """The counted pods by namespace and label, for the inter-pod plugins (built on first use)."""

    def __post_init__(self) -> None:
        self.pod_table = PodTable(self.pods, self.on_node)


def counted_node(pod: PodInfo, assumed: Mapping[str, str], node_pos: Mapping[str, int]) -> int | None:
    """The node column a pod's requests take, if any: bound or assumed, and not finished."""
    node = pod.node_name or assumed.get(pod.key)
    if not node or pod.terminal:
        return None
    return node_pos.get(node)


def add_pod_rows(w: World, pod: PodInfo, j: int, used: list[float], releasing: list[float],
                 times: int = 1, deleting: int | None = None) -> None:
    """Add the pod's container requests to node column ``j``'s rows ``used`` (and ``releasing``
    if it is being deleted); rows DRA serves there are left to its claims' devices: KEP-5004.
    With ``times``: that many pods with these requests, ``deleting`` of them being deleted."""
    pos = w.index.pos
    rows = w.request_rows
    gone = (times if pod.deleting else 0) if deleting is None else deleting
    for r, v in pod.requests.items():
        try:
            name = rows[(r, j)]
        except KeyError:
            name = rows[(r, j)] = request_row(r, w.nodes[j], w.accounting)
        if name is None:
            continue
        used[pos[name]] += v * times
        if gone:
            releasing[pos[name]] += v * gone


def recount_node(w: World, j: int) -> None:
    """Node column ``j`` of the pod rows, summed again from its pods (no drift from adding and
    subtracting the same floats over many cycles); summed in plain floats, then set at once.

    Pods that share their requests (one template) are added once, times their number, when
    every request is a whole number (the sum is then exact, so the same as pod by pod);
    otherwise pod by pod in key order, so that every build sums the same floats the same way."""
    used = [0.0] * len(w.index)
    releasing = [0.0] * len(w.index)
    keys = w.on_node.get(j, ())
    pods = w.pods
    same: dict[int, list[Any]] = {}
    """id() of a requests dict -> [a pod with it, pods with it, of them being deleted]."""
    for key in keys:
        p = pods[key]
        hit = same.get(id(p.requests))
        if hit is None:
            same[id(p.requests)] = [p, 1, 1 if p.deleting else 0]
        else:
            hit[1] += 1
            hit[2] += 1 if p.deleting else 0
    if exact_sums((hit[0].requests, hit[1]) for hit in same.values()):
        for p, n, gone in same.values():
            add_pod_rows(w, p, j, used, releasing, n, gone)
    else:
        for key in sorted(keys):
            add_pod_rows(w, pods[key], j, used, releasing)
    w.pod_used[:, j] = used
    w.pod_releasing[:, j] = releasing


def pod_usage(pod: PodInfo, group: GroupInfo, assumed: Mapping[str, str], claim_keys: list[str],
              demand: Callable[[PodInfo], dict[str, float]]) -> PodUsage | None:
    """What the pod adds to its group's queue (``None``: a finished pod adds nothing)."""
    if pod.terminal:
        return None
    kinds = _BOTH if pod.node_name or pod.key in assumed else _REQUESTED_ONLY
    return PodUsage(group.queue, kinds, demand(pod), tuple(claim_keys))


def queue_shape(tree: QueueTree) -> dict[str, tuple[str | None, bool]]:
    """Queue names, effective parents and whether each is KAI's: as long as these stay, queue usage
    stays valid, and so do the gangs (a KAI queue's gangs follow KAI's rules: a parent queue takes
    none, a default PriorityClass by workload kind)."""
    return {name: (q.parent, q.kai) for name, q in tree.queues.items()}
