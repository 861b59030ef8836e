"""One scheduling cycle, pure: a snapshot in, the writes it wants out (no I/O here)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from drasched.scheduler.accounting import ALLOCATED, REQUESTED
from drasched.scheduler.actions import ACTIONS
from drasched.scheduler.actions.nominated import nominated_node, nominations
from drasched.scheduler.actions.preempt import STILL_UNSCHEDULABLE
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.constants import DEFAULT_QUEUE, POD_SCHEDULED
from drasched.scheduler.eviction import Eviction
from drasched.scheduler.fairshare import fair_shares
from drasched.scheduler.podinfo import PodInfo, unschedulable_reason
from drasched.scheduler.queuestatus import queue_status, status_changed
from drasched.scheduler.session import Placement, Session
from drasched.scheduler.snapshot import Snapshot, collector_paused

Obj = dict[str, Any]
BIND_REQUEST_API = "scheduling.drasched.io/v1alpha1"


@dataclass
class CycleResult:
    """Everything a cycle decided; the controller turns it into API writes."""

    bind_requests: list[Obj] = field(default_factory=list)
    replace_bind_requests: list[Obj] = field(default_factory=list)
    """Failed or stale BindRequests to delete before the new ones are created."""
    pod_conditions: list[tuple[PodInfo, Obj]] = field(default_factory=list)
    """Pods whose PodScheduled condition changes, with the new condition."""
    unschedulable: dict[str, str] = field(default_factory=dict)
    """Pod key -> why it was not placed in this cycle, whether its condition changes or not."""
    queue_statuses: list[tuple[Obj, Obj]] = field(default_factory=list)
    """(Queue object, new status) for queues whose status changed."""
    create_default_queue: bool = False
    group_messages: dict[str, str] = field(default_factory=dict)
    """PodGroup key -> why it is not placed (only real PodGroups)."""
    groups_placed: dict[str, int] = field(default_factory=dict)
    """PodGroup key -> pods placed this cycle."""
    placements: list[Placement] = field(default_factory=list)
    delete_claims: list[Obj] = field(default_factory=list)
    """Extended-resource claims left by failed binds (KEP-5004 PostFilter): delete them."""
    deallocate_claims: list[tuple[PodInfo, Obj]] = field(default_factory=list)
    """(pod, claim): an allocated claim that kept the pod off every node it could otherwise use,
    reserved for nobody or for the pod alone (upstream DynamicResources PostFilter): clear its
    ``status.allocation``, ``reservedFor`` and ``devices`` so a later cycle allocates it again."""
    shares: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    evictions: list[Eviction] = field(default_factory=list)
    """Pods to evict (eviction API), each with its preemptor and reason."""
    nominations: list[tuple[PodInfo, str | None]] = field(default_factory=list)
    """Pods whose ``status.nominatedNodeName`` changes (``None`` clears it)."""
    wake_at: datetime | None = None
    """Run a cycle then even if nothing changes (a minRuntime ends)."""
    beyond_limit: frozenset[str] = frozenset()
    """Gangs whose ``minMember`` pods alone exceed a queue's limit (they never fit; their PodGroup
    condition's reason is ``OverLimit``)."""
    failed_gangs: frozenset[str] = frozenset()
    """Gangs tried and not placed, with nothing under way for them (no eviction, no nomination):
    trying them again is useless until something gives resources back (see the controller)."""
    seconds: float = 0.0


def bind_request(p: Placement, node: str) -> Obj:
    pod = p.pod
    spec: Obj = {"podName": pod.name, "podUID": pod.uid, "selectedNode": node}
    if p.claims:
        spec["resourceClaimAllocations"] = p.claims
    if p.extended is not None:
        spec["extendedResourceClaimAllocation"] = p.extended
    return {
        "apiVersion": BIND_REQUEST_API,
        "kind": "BindRequest",
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": spec,
    }


def unschedulable_condition(message: str, now: str) -> Obj:
    return {"type": POD_SCHEDULED, "status": "False", "reason": unschedulable_reason(message), "message": message,
            "lastProbeTime": None, "lastTransitionTime": now}


def _false_since(pod: PodInfo) -> str | None:
    if pod.condition is None or pod.condition[0] != "False":
        return None
    for c in (pod.obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == POD_SCHEDULED:
            return c.get("lastTransitionTime")
    return None


def _queue_demand(session: Session) -> dict[str, dict[str, Fraction]]:
    return {q: {d: Fraction(v) for d, v in dims.items() if v > 0}
            for q, dims in session.usage.own[REQUESTED].items()}


def _allocated(session: Session, queue: str) -> dict[str, float]:
    """What the queue's status reports: evicted pods run until gone, nominated ones are not bound yet."""
    out = dict(session.usage.of(ALLOCATED, queue))
    for d, v in session.disruption.status_delta.of(ALLOCATED, queue).items():
        out[d] = out.get(d, 0.0) + v
    return out


def _failed_gangs(snap: Snapshot, session: Session) -> frozenset[str]:
    placed = {p.group for p in session.placements.values()}
    nominated = session.disruption.nominated
    return frozenset(
        g.key for g in snap.pending_groups
        if g.key not in placed and all(p.key in session.unschedulable and p.key not in nominated
                                       and not nominated_node(p) for p in g.pending))


DEALLOCATED = "deallocation of ResourceClaim completed"
"""Upstream DynamicResources PostFilter's status when it deallocated a claim; the scheduler
appends PostFilter messages to the filters' (``FitError.Error``), before DefaultPreemption's."""


def _deallocations(snap: Snapshot, session: Session) -> list[tuple[PodInfo, Obj]]:
    """Upstream DynamicResources ``PostFilter`` (pkg/scheduler/framework/plugins/dynamicresources):
    for a pod that fits on no node, one of its allocated claims whose node selector rejected a
    node the earlier filters accepted (Filter's ``unavailableClaims``), if ``status.reservedFor``
    is empty or holds this pod alone, is deallocated; the pod is then tried again and the claim
    allocated where the pod can go. At most one claim per pod and cycle (upstream picks one at
    random; here the first in the pod's order).

    Only pods alone in their group (a gang's members bind through a BindRequest, and a claim
    reserved for a PodGroup is the group's), with no nomination or preemption under way, and
    only claims whose allocation the cluster holds (not one a pending BindRequest or this cycle
    gave it), never a PodGroup's claim. The pod's message gets upstream's PostFilter status
    after the filters' (and before preemption's ``preemption: ...``), in ``session.unschedulable``.
    """
    out: list[tuple[PodInfo, Obj]] = []
    nominated = session.disruption.nominated
    for key, (filtered, unavailable) in session.unavailable_claims.items():
        message = session.unschedulable.get(key)
        if not unavailable or message is None or not message.startswith(filtered):
            continue  # placed after all, or its message is not this diagnosis's
        pod = snap.pods[key]
        if key in session.placements or key in nominated or nominated_node(pod):
            continue
        g = snap.groups.get(snap.group_of.get(key, ""))
        if g is None or len(g.pods) > 1 or g.min_member > 1:
            continue
        shared = {c.key for c in snap.pod_claims.get(key, ()) if c.group}
        for ck in unavailable:
            info = snap.claims.get(ck)
            if info is None or ck in shared or ck in session.claim_alloc or info.extended or info.deleting:
                continue
            if info.assumed or not (info.obj.get("status") or {}).get("allocation"):
                continue  # the cluster holds no allocation to clear (a pending BindRequest's)
            reserved = info.reserved_for + session.claim_reserved.get(ck, [])
            if reserved and (len(reserved) > 1 or reserved[0].get("uid") != pod.uid):
                continue
            out.append((pod, info.obj))
            # in place of the status it says when it deallocates nothing, before preemption's message
            rest = message[len(filtered):].removeprefix(f" {STILL_UNSCHEDULABLE}").removeprefix(",")
            session.unschedulable[key] = f"{filtered} {DEALLOCATED}" + (f",{rest}" if rest else ".")
            break
    return out


def run_cycle(snap: Snapshot, config: SchedulerConfig, now: str, avoid: frozenset[str] = frozenset()) -> CycleResult:
    """Run the configured actions on a fresh session and collect the decisions.

    ``avoid``: uids of pods not to choose as victims (their eviction was refused lately).
    """
    with collector_paused():
        return _run_cycle(snap, config, now, avoid)


def _run_cycle(snap: Snapshot, config: SchedulerConfig, now: str, avoid: frozenset[str]) -> CycleResult:
    started = time.perf_counter()
    session = Session(snap, config, now=now)
    session.disruption.avoid = avoid
    shares = fair_shares(snap.queues, snap.capacity, _queue_demand(session))
    for name in config.actions:
        ACTIONS[name](session, shares)
    out = CycleResult(shares=shares, group_messages=dict(session.group_messages),
                      delete_claims=list(snap.extended.stale.values()))
    for key, p in session.placements.items():
        if session.disruption.held(key):
            continue  # nominated: bound once its victims are gone; or room held for a moved pod
        out.placements.append(p)
        out.bind_requests.append(bind_request(p, snap.nodes[p.node].name))
        stale = snap.stale_bind_requests.get(key)
        if stale is not None:
            out.replace_bind_requests.append(stale)
        if not snap.groups[p.group].implicit:
            out.groups_placed[p.group] = out.groups_placed.get(p.group, 0) + 1
    out.deallocate_claims = _deallocations(snap, session)
    out.unschedulable = dict(session.unschedulable)
    for key, message in session.unschedulable.items():
        pod = snap.pods[key]
        if pod.condition != ("False", unschedulable_reason(message), message):
            since = _false_since(pod) or now  # the transition is to False, not to a new message
            out.pod_conditions.append((pod, unschedulable_condition(message, since)))
    out.evictions, out.nominations = list(session.disruption.evictions), nominations(session)
    out.failed_gangs = _failed_gangs(snap, session)
    out.beyond_limit = frozenset(session.beyond_limit)
    out.wake_at = session.disruption.wake_at
    for name, q in snap.queues.queues.items():
        status = queue_status(q, _allocated(session, name), session.usage.of(REQUESTED, name),
                              shares.get(name, {}), now)
        if q.obj is None:
            out.create_default_queue = name == DEFAULT_QUEUE and bool(session.usage.of(REQUESTED, name))
        elif status_changed(q, status):
            out.queue_statuses.append((q.obj, status))
    session.close()
    out.seconds = time.perf_counter() - started
    return out
