"""A minimal DRA scheduling pass for embedded runs, until the real scheduler lands.

For each pending pod with ``schedulerName: drasched`` whose claims all exist, it tries
nodes in name order (node selector labels, ``spec.unschedulable``, NoSchedule/NoExecute
taints), runs the allocator, and on the first fit writes each claim the way upstream's
DynamicResources PreBind does (finalizer, ``status.allocation``, ``status.reservedFor``)
and binds the pod. Otherwise the pod gets ``PodScheduled=False``, reason ``Unschedulable``,
with ``0/N nodes are available: ...``. No queues, gangs, preemption or scoring.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import TYPE_CHECKING, Any

from drasched.api import kinds
from drasched.api.meta import format_time
from drasched.api.resource import FINALIZER, RESERVED_FOR_MAX_SIZE
from drasched.dra.allocated_state import AllocatedState
from drasched.dra.allocator import AllocationOutcome, Allocator
from drasched.dra.explain import Reason, summarize

if TYPE_CHECKING:  # dra sits below sim: only the type is needed here
    from drasched.sim.context import SimContext

Obj = dict[str, Any]

SCHEDULER_NAME = "drasched"

__all__ = ["SCHEDULER_NAME", "MinimalDraScheduler", "nodes_unavailable_message"]


def _md(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _tolerated(taint: Obj, tolerations: list[Obj]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t.get("key") != taint.get("key"):
            continue
        if op == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def node_filter(pod: Obj, node: Obj) -> str | None:
    """Why a node is out before DRA is asked (upstream's phrasing), or None."""
    spec = pod.get("spec") or {}
    labels = _md(node).get("labels") or {}
    if (node.get("spec") or {}).get("unschedulable"):
        return "node(s) were unschedulable"
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return "node(s) didn't match Pod's node affinity/selector"
    tolerations = spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not _tolerated(taint, tolerations):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
    return None


def nodes_unavailable_message(total: int, other: Counter[str], dra_nodes: int, dra_reasons: list[Reason]) -> str:
    """``0/N nodes are available: ...`` with node counts per reason, DRA reasons merged."""
    parts = [f"{n} {msg}" for msg, n in sorted(other.items())]
    if dra_nodes:
        parts.append(f"{dra_nodes} node(s) cannot allocate all claims: {summarize(dra_reasons)}")
    if not parts:
        parts.append("no nodes")
    return f"0/{total} nodes are available: {'; '.join(parts)}."


class MinimalDraScheduler:
    """Sim controller: one pass over pending drasched pods per reconcile."""

    name = "dra-minimal-scheduler"

    def reconcile(self, ctx: SimContext) -> bool:
        store = ctx.store
        pods = [p for p in store.list(kinds.POD).items if self._pending(p)]
        if not pods:
            return False
        pods.sort(key=lambda p: (-int((p.get("spec") or {}).get("priority") or 0),
                                 _md(p).get("creationTimestamp") or "", _md(p).get("namespace", ""),
                                 _md(p).get("name", "")))
        nodes = sorted(store.list(kinds.NODE).items, key=lambda n: _md(n).get("name", ""))
        claims = {(_md(c).get("namespace"), _md(c).get("name")): c for c in store.list(kinds.RESOURCE_CLAIM).items}
        namespaces = {_md(n).get("name"): _md(n).get("labels") or {} for n in store.list(kinds.NAMESPACE).items}
        state = AllocatedState.from_claims(claims.values())
        alloc = Allocator(store.list(kinds.DEVICE_CLASS).items, store.list(kinds.RESOURCE_SLICE).items, state)
        changed = False
        for pod in pods:
            changed |= self._schedule(ctx, pod, nodes, claims, namespaces, alloc, state)
        return changed

    @staticmethod
    def _pending(pod: Obj) -> bool:
        spec = pod.get("spec") or {}
        return (spec.get("schedulerName") == SCHEDULER_NAME and not spec.get("nodeName")
                and not _md(pod).get("deletionTimestamp")
                and (pod.get("status") or {}).get("phase", "Pending") == "Pending")

    def _pod_claims(self, pod: Obj, claims: dict[tuple[Any, Any], Obj]) -> tuple[list[Obj], str | None]:
        """The pod's claims, or a message naming what it still waits for."""
        ns = _md(pod).get("namespace")
        statuses = {s.get("name"): s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        out: list[Obj] = []
        seen: set[str] = set()
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = entry.get("resourceClaimName")
            if not name:
                tmpl = entry.get("resourceClaimTemplateName")
                st = statuses.get(entry.get("name"))
                if st is None:
                    return [], (f'waiting for a ResourceClaim from template "{tmpl}" for pod claim '
                                f'"{entry.get("name")}"')
                name = st.get("resourceClaimName")
                if not name:
                    continue  # upstream: no claim needed for this entry
            claim = claims.get((ns, name))
            if claim is None:
                return [], f'waiting for ResourceClaim "{ns}/{name}" to be created'
            if _md(claim).get("deletionTimestamp"):
                return [], f'ResourceClaim "{ns}/{name}" is being deleted'
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if len(reserved) >= RESERVED_FOR_MAX_SIZE and not any(
                    r.get("uid") == _md(pod).get("uid") for r in reserved):
                return [], f'ResourceClaim "{ns}/{name}" is in use by {len(reserved)} consumers, the maximum'
            if name not in seen:
                seen.add(name)
                out.append(claim)
        return out, None

    def _schedule(self, ctx: SimContext, pod: Obj, nodes: list[Obj], claims: dict[tuple[Any, Any], Obj],
                  namespaces: dict[Any, dict[str, str]], alloc: Allocator, state: AllocatedState) -> bool:
        pod_claims, waiting = self._pod_claims(pod, claims)
        if waiting:
            return self._unschedulable(ctx, pod, waiting)
        labels = namespaces.get(_md(pod).get("namespace")) or {}
        other: Counter[str] = Counter()
        dra_reasons: list[Reason] = []
        dra_nodes = 0
        for node in nodes:
            why = node_filter(pod, node)
            if why:
                other[why] += 1
                continue
            if not pod_claims:
                return self._bind(ctx, pod, node, [], None, claims, state)
            outcome = alloc.allocate(node, pod_claims, labels)
            if outcome.pod_error:
                return self._unschedulable(ctx, pod, outcome.pod_error)
            if outcome.ok:
                return self._bind(ctx, pod, node, pod_claims, outcome, claims, state)
            dra_nodes += 1
            dra_reasons.extend(outcome.reasons)
        msg = nodes_unavailable_message(len(nodes), other, dra_nodes, dra_reasons)
        return self._unschedulable(ctx, pod, msg)

    def _bind(self, ctx: SimContext, pod: Obj, node: Obj, pod_claims: list[Obj],
              outcome: AllocationOutcome | None, claims: dict[tuple[Any, Any], Obj],
              state: AllocatedState) -> bool:
        store = ctx.store
        node_name = _md(node).get("name", "")
        pmd = _md(pod)
        for i, claim in enumerate(pod_claims):
            assert outcome is not None
            cmd = _md(claim)
            if outcome.newly_allocated[i]:
                if FINALIZER not in (cmd.get("finalizers") or []):
                    claim = copy.deepcopy(claim)
                    claim["metadata"]["finalizers"] = [*(cmd.get("finalizers") or []), FINALIZER]
                    claim = store.update(claim)
                allocation = copy.deepcopy(outcome.allocations[i])
                allocation["allocationTimestamp"] = format_time(ctx.now())
                claim.setdefault("status", {})["allocation"] = allocation
                state.add(allocation)
            status = claim.setdefault("status", {})
            reserved = status.setdefault("reservedFor", [])
            if not any(r.get("uid") == pmd.get("uid") for r in reserved):
                reserved.append({"resource": "pods", "name": pmd.get("name"), "uid": pmd.get("uid")})
            claim = store.update_status(claim)
            claims[(_md(claim).get("namespace"), _md(claim).get("name"))] = claim
        store.bind(pmd.get("namespace", "default"), pmd.get("name", ""), node_name, pmd.get("uid"))
        ctx.decide(self.name, "bind", pod, f"bound to {node_name}")
        return True

    def _unschedulable(self, ctx: SimContext, pod: Obj, message: str) -> bool:
        status = pod.setdefault("status", {})
        conds = status.get("conditions") or []
        for c in conds:
            if (c.get("type") == "PodScheduled" and c.get("status") == "False"
                    and c.get("reason") == "Unschedulable" and c.get("message") == message):
                return False
        status["conditions"] = [c for c in conds if c.get("type") != "PodScheduled"] + [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
            "lastProbeTime": None, "lastTransitionTime": format_time(ctx.now())}]
        ctx.store.update_status(pod)
        ctx.decide(self.name, "unschedulable", pod, message)
        return True
