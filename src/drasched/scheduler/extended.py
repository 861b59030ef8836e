"""Extended resources served by DRA (KEP-5004) in the scheduler: routes, fit and the special claim.

A pod asks ``nvidia.com/gpu: 2``, or ``example.com/fpga: 1``, or a class's implicit name
``deviceclass.resource.kubernetes.io/<class>: 1``; nothing in its spec says DRA. Per node,
as upstream's ``noderesources`` and ``DynamicResources`` plugins decide it:

* a resource the node's ``status.allocatable`` carries (> 0) is the device plugin's: the
  vector fit checks it on its own row (device plugin wins);
* a resource some DeviceClass serves (:class:`~drasched.dra.extended.DeviceClassByResource`,
  explicit or implicit name) and the node lacks goes to DRA: it becomes a request of the
  node-specific special claim (``container-<i>-request-<j>``), which the allocator must
  satisfy next to the pod's real claims; the vector fit checks it only as a necessary
  condition on the class's device-count row (GPU classes: on the GPU row);
* any other resource the node lacks makes the pod not fit there (``Insufficient <name>``).

Requests of 0 are ignored, as upstream. A resource whose accounting dimension is the GPU
(``nvidia.com/gpu``, any name of a GPU class) is checked on the one GPU row whatever its
route, so quota, fair share, topology and node order see DRA and device-plugin GPUs alike
(:mod:`drasched.scheduler.gpus`). A bound pod's DRA-routed requests of other classes are
never added to a row with zero allocatable (no negative idle): its devices count through
its claim in the class's row instead.

Fractional GPUs (``drasched.io/gpu-fraction``, :mod:`drasched.scheduler.fraction`) are
served by DRA only, as one share of a GPU that allows multiple allocations: the special
claim's request asks that fraction of every capacity of the node's shareable GPU (and a
whole-GPU request asks all of it, so it never shares). Nodes without such a GPU refuse the
pod with a reason. GPUs of one class on one node are taken to be alike: the share is sized
from the node's first shareable GPU.

A claim annotated ``resource.kubernetes.io/extended-resource-claim: "true"`` and owned by a
pod that is not bound nor being bound is left over from a failed bind: the pod is
unschedulable this cycle (upstream's PreFilter/PostFilter) and the claim is deleted.
"""

from __future__ import annotations

import copy
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from drasched.api import kinds
from drasched.dra.explain import Reason
from drasched.dra.extended import pod_dra_resources, special_claim_requests
from drasched.dra.pools import format_quantity, quantity
from drasched.scheduler.cache import SchedulerCache
from drasched.scheduler.claims import ClaimInfo
from drasched.scheduler.constants import GPU
from drasched.scheduler.devices import DeviceAccounting
from drasched.scheduler.fraction import GPU_FRACTION_ANNOTATION
from drasched.scheduler.gpus import GpuInventory
from drasched.scheduler.plugins.fit import EPSILON, RowNeed, device_reasons, insufficient
from drasched.scheduler.podinfo import NodeInfo, PodInfo
from drasched.scheduler.resources import ResourceIndex

Obj = dict[str, Any]

SPECIAL_CLAIM_NAME = "<extended-resources>"
"""Upstream's in-memory name: not a valid object name, so it never clashes with a real claim."""
_UID_NS = uuid.UUID("0b6a18ed-4c7d-4232-9a1e-5004c0de5004")
MSG_FRACTION_DEVICE_PLUGIN = (f"node(s) serve {GPU} through the device plugin, which cannot share a GPU "
                              f"({GPU_FRACTION_ANNOTATION})")
MSG_FRACTION_NOT_SHAREABLE = (f"node(s) have no DRA GPU that allows multiple allocations "
                              f"({GPU_FRACTION_ANNOTATION} needs one)")


def request_row(resource: str, node: NodeInfo, accounting: DeviceAccounting) -> str | None:
    """The row a bound pod's request counts in on its node; ``None``: its claim's devices count instead."""
    if accounting.dim_of(resource) == GPU:
        return GPU
    if accounting.by_resource.class_for(resource) is not None and node.allocatable.get(resource, 0.0) <= 0:
        return None
    return resource


def allocatable_row(resource: str, accounting: DeviceAccounting) -> str:
    """The row a node's allocatable resource fills (device-plugin GPUs of any name fill the GPU row)."""
    return GPU if accounting.dim_of(resource) == GPU else resource


@dataclass(frozen=True)
class PodExtended:
    """What a pod's container requests need beyond the plain vector fit."""

    mapped: Mapping[str, int]
    """Resources a DeviceClass serves -> the pod's effective count (requests of 0 left out)."""
    gpu_names: tuple[str, ...]
    """Requested names in the GPU dimension that no DeviceClass serves (device plugin only)."""
    others: tuple[tuple[str, str, float], ...]
    """(resource, class, count) of served resources outside the GPU dimension."""
    fraction: Fraction | None


@dataclass(frozen=True)
class SpecialClaim:
    """The node-specific special claim of one pod, as the allocator sees it."""

    claim: Obj
    requests: list[Obj]
    mappings: list[Obj]

    def bind_entry(self, allocation: Obj) -> Obj:
        """``BindRequest.spec.extendedResourceClaimAllocation``."""
        return {"allocation": allocation, "deviceRequests": copy.deepcopy(self.requests),
                "containerMappings": copy.deepcopy(self.mappings)}


def _with_requests_defaulted(spec: Obj) -> Obj:
    """Containers as the API server stores them: a missing request defaults to the limit."""
    def fix(c: Obj) -> Obj:
        res = c.get("resources") or {}
        requests = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return {**c, "resources": {**res, "requests": requests}}
    return {**spec, "containers": [fix(c) for c in spec.get("containers") or []],
            "initContainers": [fix(c) for c in spec.get("initContainers") or []]}


@dataclass
class ExtendedIndex:
    """Per snapshot: which resources DRA serves, where, and the special claims (memoised)."""

    nodes: list[NodeInfo]
    index: ResourceIndex
    accounting: DeviceAccounting
    class_rows: Mapping[str, int]
    multi_classes: frozenset[str]
    gpu: GpuInventory
    stale: dict[str, Obj] = field(default_factory=dict)
    """Pod key -> an extended-resource claim left by a failed bind (deleted this cycle)."""
    _dp: dict[str, np.ndarray] = field(default_factory=dict)
    _pods: dict[str, tuple[PodExtended | None, Obj, Obj]] = field(default_factory=dict)
    """Pod key -> (its needs, the pod object they were computed from, its spec with requests defaulted)."""
    _claims: dict[tuple[str, Any], SpecialClaim] = field(default_factory=dict)

    # ------------------------------------------------------------------ per pod

    def dp(self, resource: str) -> np.ndarray:
        """Nodes whose ``status.allocatable`` carries ``resource`` (the device plugin serves it there)."""
        hit = self._dp.get(resource)
        if hit is None:
            hit = np.array([n.allocatable.get(resource, 0.0) > 0 for n in self.nodes], dtype=bool)
            self._dp[resource] = hit
        return hit

    def pod(self, p: PodInfo) -> PodExtended | None:
        """The pod's DRA-related needs; ``None`` when it has none (nothing to add to the vector fit)."""
        return self._entry(p)[0]

    def _entry(self, p: PodInfo) -> tuple[PodExtended | None, Obj, Obj]:
        hit = self._pods.get(p.key)
        if hit is None or hit[1] is not p.obj:
            spec = _with_requests_defaulted(p.obj.get("spec") or {})
            hit = (self._analyze(p, spec), p.obj, spec)
            self._pods[p.key] = hit
        return hit

    def _analyze(self, p: PodInfo, spec: Obj) -> PodExtended | None:
        acc = self.accounting
        gpu_names = tuple(sorted(r for r in p.requests if acc.dim_of(r) == GPU))
        mapped = pod_dra_resources({"spec": spec}, acc.by_resource)
        if not mapped and not gpu_names and p.gpu_fraction is None:
            return None
        others: list[tuple[str, str, float]] = []
        for r, n in sorted(mapped.items()):
            cls = acc.by_resource.class_for(r)
            if cls is not None and acc.dim_of(r) != GPU:
                others.append((r, cls, float(n)))
        return PodExtended(mapped=mapped, gpu_names=tuple(r for r in gpu_names if r not in mapped),
                           others=tuple(others), fraction=p.gpu_fraction)

    def dp_needs(self, px: PodExtended | None, node: int) -> list[RowNeed]:
        """Rows the device plugin serves on ``node`` for the pod's served non-GPU resources."""
        if px is None:
            return []
        pos = self.index.pos
        return [RowNeed(pos[r], r, v) for r, _, v in px.others if r in pos and self.dp(r)[node]]

    # ------------------------------------------------------------------ fit

    def _fraction_class(self) -> str | None:
        return self.accounting.by_resource.class_for(GPU)

    def _fraction_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """(device-plugin GPU nodes, DRA nodes with a shareable GPU of the class serving nvidia.com/gpu)."""
        dp = self.dp(GPU)
        cls = self._fraction_class()
        share = np.zeros(len(self.nodes), dtype=bool)
        if cls is not None:
            for c, j in self.gpu.shareable:
                if c == cls:
                    share[j] = True
        return dp, share & ~dp

    def _route_ok(self, idle: np.ndarray, r: str, cls: str, v: float) -> np.ndarray:
        row = self.index.pos.get(r)
        ok_dp = idle[row] >= v - EPSILON if row is not None else np.zeros(len(self.nodes), dtype=bool)
        crow = self.class_rows.get(cls)
        if crow is None or cls in self.multi_classes:
            ok_dra = np.ones(len(self.nodes), dtype=bool)
        else:
            ok_dra = idle[crow] >= v - EPSILON
        return np.where(self.dp(r), ok_dp, ok_dra)

    def fit(self, idle: np.ndarray, px: PodExtended, base: np.ndarray) -> np.ndarray:
        """Nodes of ``base`` where every route of the pod's extended resources can work."""
        mask = base.copy()
        for r in px.gpu_names:
            mask &= self.dp(r)
        for r, cls, v in px.others:
            mask &= self._route_ok(idle, r, cls, v)
        if px.fraction is not None:
            mask &= self._fraction_nodes()[1]
        return mask

    def reasons(self, idle: np.ndarray, used: np.ndarray, px: PodExtended, among: np.ndarray,
                counts: Counter[str]) -> tuple[np.ndarray, int, list[Reason]]:
        """Why nodes of ``among`` fail :meth:`fit`: counted messages, and DRA reasons (nodes, reasons)."""
        failing = np.zeros_like(among)
        dra_nodes = np.zeros_like(among)
        dra: list[Reason] = []
        for r in px.gpu_names:
            bad = among & ~self.dp(r) & ~failing
            if bad.any():
                counts[insufficient(r)] += int(bad.sum())
                failing |= bad
        for r, cls, v in px.others:
            bad = among & ~self._route_ok(idle, r, cls, v) & ~failing
            dp = self.dp(r)
            if (bad & dp).any():
                counts[insufficient(r)] += int((bad & dp).sum())
            short = bad & ~dp
            if short.any():
                crow = self.class_rows[cls]
                dra += device_reasons(cls, int(v), used[crow][short], idle[crow][short])
                dra_nodes |= short
            failing |= bad
        if px.fraction is not None:
            dp, share = self._fraction_nodes()
            for mask, text in ((dp, MSG_FRACTION_DEVICE_PLUGIN), (~dp & ~share, MSG_FRACTION_NOT_SHAREABLE)):
                bad = among & mask & ~failing
                if bad.any():
                    counts[text] += int(bad.sum())
                    failing |= bad
        return failing, int(dra_nodes.sum()), dra

    # ------------------------------------------------------------------ the special claim

    def special_claim(self, p: PodInfo, px: PodExtended | None, node: int) -> SpecialClaim | None:
        """The pod's special claim for ``node`` (``None`` when the device plugin serves everything there)."""
        if px is None or not px.mapped:
            return None
        dra = frozenset(r for r in px.mapped if not self.dp(r)[node])
        if not dra:
            return None
        acc = self.accounting
        classes = {acc.by_resource.class_for(r) for r in dra}
        shapes = tuple(sorted((c, self.gpu.shareable[(c, node)].id) for c in classes
                              if c is not None and (c, node) in self.gpu.shareable))
        key = (p.key, (dra, shapes))
        hit = self._claims.get(key)
        if hit is not None:
            return hit
        out = special_claim_requests({"spec": self._entry(p)[2]}, dra, acc.by_resource)
        requests = [self._sized(copy.deepcopy(r), node, px.fraction) for r in out.device_requests]
        claim = {
            "apiVersion": kinds.RESOURCE_CLAIM.api_version, "kind": kinds.RESOURCE_CLAIM.kind,
            "metadata": {"name": SPECIAL_CLAIM_NAME, "namespace": p.namespace,
                         "uid": str(uuid.uuid5(_UID_NS, f"{p.uid}/{sorted(dra)}"))},
            "spec": {"devices": {"requests": requests}},
        }
        hit = SpecialClaim(claim, requests, out.mappings)
        self._claims[key] = hit
        return hit

    def _sized(self, request: Obj, node: int, fraction: Fraction | None) -> Obj:
        """A GPU request on shareable GPUs asks its share of every capacity (all of it when whole)."""
        exactly = request["exactly"]
        cls = exactly["deviceClassName"]
        if cls not in self.accounting.gpu_classes:
            return request
        part = fraction if fraction is not None and cls == self._fraction_class() else None
        if part is not None:
            exactly["selectors"] = [{"cel": {"expression": "device.allowMultipleAllocations"}}]
        dev = self.gpu.shareable.get((cls, node))
        if dev is None:
            return request
        share = part if part is not None else Fraction(1)
        exactly["capacity"] = {"requests": {
            cap.name: format_quantity(cap.value * share, quantity(cap.raw_value).format)
            for cap in dev.capacity.values()}}
        return request


# ---------------------------------------------------------------------- snapshot inputs


def extended_claims_by_owner(claims: Mapping[str, ClaimInfo]) -> dict[tuple[str, str], list[ClaimInfo]]:
    """Extended-resource claims by (namespace, uid of the controlling pod)."""
    out: dict[tuple[str, str], list[ClaimInfo]] = {}
    for info in claims.values():
        if not info.extended:
            continue
        md = info.obj.get("metadata") or {}
        for ref in md.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "Pod" and ref.get("uid"):
                out.setdefault((str(md.get("namespace", "")), str(ref["uid"])), []).append(info)
    return out


def bind_requests_of(cache: SchedulerCache, pod_keys: Iterable[str]) -> Iterator[tuple[str, Obj]]:
    """(pod key, BindRequest) for each of ``pod_keys`` with one: the scheduler names a pod's
    request after the pod, so it is found by key, not by a scan of every request kept."""
    for key in pod_keys:
        br = cache.get(kinds.BIND_REQUEST, key)
        if br is not None and f"{(br.get('metadata') or {}).get('namespace', '')}/" \
                f"{(br.get('spec') or {}).get('podName', '')}" == key:
            yield key, br


def bind_request_allocations(cache: SchedulerCache, pods: Mapping[str, PodInfo], assumed: Mapping[str, str],
                             owned: Mapping[tuple[str, str], list[ClaimInfo]]) -> list[Obj]:
    """Extended-resource allocations of pending BindRequests whose claim does not hold them yet.

    The binder writes them into a claim it creates; until then they take their devices here.
    """
    out: list[Obj] = []
    for _, br in bind_requests_of(cache, sorted(assumed)):
        spec = br.get("spec") or {}
        entry = spec.get("extendedResourceClaimAllocation") or {}
        if not entry.get("allocation"):
            continue
        ns = (br.get("metadata") or {}).get("namespace", "")
        pod = pods.get(f"{ns}/{spec.get('podName', '')}")
        if pod is None or pod.key not in assumed:
            continue
        if any(c.allocation for c in owned.get((pod.namespace, pod.uid), ())):
            continue
        out.append(entry["allocation"])
    return out


def stale_claims(pods: Mapping[str, PodInfo], assumed: Mapping[str, str],
                 owned: Mapping[tuple[str, str], list[ClaimInfo]], ours: Callable[[str], bool]) -> dict[str, Obj]:
    """Pod key -> its extended-resource claim when the pod (one ``ours`` schedules, waiting to be
    scheduled) is neither bound nor being bound. Another scheduler's pods are left alone."""
    out: dict[str, Obj] = {}
    for p in pods.values():
        if p.node_name or p.terminal or p.deleting or p.gated or p.key in assumed or not ours(p.scheduler_name):
            continue
        found = owned.get((p.namespace, p.uid))
        if found:
            out[p.key] = sorted(found, key=lambda c: c.key)[0].obj
    return out


def stale_message(claim: Obj) -> str:
    md = claim.get("metadata") or {}
    return (f"ResourceClaim {md.get('namespace', '')}/{md.get('name', '')} for extended resources is left "
            "from an earlier failed bind; it is being deleted and the pod is retried once it is gone")
