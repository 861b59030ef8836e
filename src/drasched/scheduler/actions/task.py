"""One pod: claims resolved, queue limits, then the profile's plugins: static filters, vector
fit, other filters, scorers, claim allocation.

The allocator runs last and lazily: on the feasible nodes in score order until one works,
and the allocation it found there is the one bound (never computed twice). A node where
pods of the same equivalence class already failed, unchanged since, is not asked again.
Extended resources that DRA serves on a node (KEP-5004) add the pod's node-specific
special claim to its real claims there (:mod:`drasched.scheduler.extended`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from drasched.api.resource import RESERVED_FOR_MAX_SIZE
from drasched.dra import explain as ex
from drasched.dra.allocator import AllocationOutcome
from drasched.dra.explain import Reason
from drasched.dra.extended import implicit_name
from drasched.scheduler.accounting import ALLOCATED, demand_with_claims
from drasched.scheduler.claims import PodClaim
from drasched.scheduler.constants import GPU
from drasched.scheduler.extended import PodExtended, SpecialClaim, stale_message
from drasched.scheduler.framework.api import PodState
from drasched.scheduler.messages import Diagnosis, queue_limit_message
from drasched.scheduler.plugins.dra import MSG_DRA_DISABLED, device_plugin_nodes, device_plugin_reasons
from drasched.scheduler.plugins.fit import RowNeed, class_reasons, fit_mask, fit_reasons
from drasched.scheduler.plugins.predicates import StaticResult
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.preemptibility import over_quota as non_preemptible_over_quota
from drasched.scheduler.session import Session, Statement
from drasched.scheduler.snapshot import GroupInfo

Obj = dict[str, Any]

MSG_OUTSIDE_DOMAIN = "node(s) outside the pod group's topology domain"
EXPLAIN_LIMIT = 32
"""Up to this many nodes rejected by the device-count pre-filter are explained by the allocator itself."""
ClassNeeds = list[tuple[str, RowNeed]]


def _container_needs(session: Session, t: PodInfo) -> list[RowNeed]:
    """Rows every node must have: GPU-dimension names on the GPU row, DRA-served others left out.

    A resource a DeviceClass serves outside the GPU dimension is routed per node
    (:meth:`~drasched.scheduler.extended.ExtendedIndex.fit`), so it has no row here.
    """
    snap = session.snap
    acc = snap.accounting
    pos = snap.index.pos
    rows: dict[int, RowNeed] = {}
    for r, v in t.requests.items():
        if acc.dim_of(r) == GPU:
            name = GPU
        elif acc.by_resource.class_for(r) is not None:
            continue
        else:
            name = r
        row = pos[name]
        prev = rows.get(row)
        rows[row] = RowNeed(row, name, v + (prev.value if prev else 0.0))
    return [rows[k] for k in sorted(rows)]


def task_needs(session: Session, t: PodInfo) -> tuple[list[RowNeed], ClassNeeds]:
    """Container rows the pod needs, and per-class device counts its unallocated claims surely need."""
    snap = session.snap
    container = session.needs_cache.get(t.eq_key)
    if container is None:
        container = _container_needs(session, t)
        session.needs_cache[t.eq_key] = container
    per_class: dict[str, int] = {}
    for c in snap.pod_claims.get(t.key, ()):
        if c.key is None or session.claim_allocation(c.key) is not None:
            continue
        for cls, n in snap.claims[c.key].prefilter.items():
            if cls in snap.class_rows and cls not in snap.multi_classes:
                per_class[cls] = per_class.get(cls, 0) + n
    classes = [(cls, RowNeed(snap.class_rows[cls], implicit_name(cls), float(n)))
               for cls, n in sorted(per_class.items())]
    return container, classes


def over_limit(session: Session, queue: str, demand: Mapping[str, float]) -> tuple[str, str] | None:
    """The first (queue, dimension) whose limit ``demand`` would exceed, from the leaf up."""
    tree = session.snap.queues
    for q in tree.ancestors(queue):
        info = tree.queues[q]
        if not info.resources:
            continue
        cur = session.usage.of(ALLOCATED, q)
        for d, v in demand.items():
            lim = info.settings(d).limit
            if lim is not None and v > 0 and cur.get(d, 0.0) + v > float(lim) + 1e-9:
                return q, d
    return None


def beyond_limit(session: Session, g: GroupInfo) -> tuple[str, str, float, float] | None:
    """(queue, dimension, limit, need) when the gang's ``minMember`` pods need more of a
    dimension than its queue's limit, or a parent queue's, allows: then it never fits there,
    whatever else runs (KAI-Scheduler's ``OverLimit`` unschedulable reason,
    pkg/apis/scheduling/v2alpha2/podgroup_types.go). None otherwise, or when no queue above it sets
    a limit. The need is a lower bound: per dimension the ``minMember`` smallest pods, each with
    its container requests and the claims it alone uses, plus the group's own claims once; a
    claim shared by several pods counts nowhere (it may be one device for all)."""
    tree = session.snap.queues
    limited = [q for q in tree.ancestors(g.queue)
               if any(s.limit is not None for s in tree.queues[q].resources.values())]
    if not limited:
        return None
    snap = session.snap
    members = [p for p in g.pods if not p.terminal and not p.deleting]
    if not members:
        return None
    users: dict[str, int] = {}
    group_claims: set[str] = set()
    for p in members:
        for c in snap.pod_claims.get(p.key, ()):
            if c.key is None:
                continue
            if c.group:
                group_claims.add(c.key)
            else:
                users[c.key] = users.get(c.key, 0) + 1
    per_pod = [demand_with_claims(snap, p, [c.key for c in snap.pod_claims.get(p.key, ())
                                            if c.key and not c.group and users.get(c.key) == 1]) for p in members]
    shared: dict[str, float] = {}
    for k in sorted(group_claims):
        info = snap.claims.get(k)
        for d, v in (info.demand if info is not None else {}).items():
            shared[d] = shared.get(d, 0.0) + v
    n = min(g.min_member, len(members))
    for q in limited:
        for d, s in sorted(tree.queues[q].resources.items()):
            if s.limit is None:
                continue
            need = sum(sorted(dem.get(d, 0.0) for dem in per_pod)[:n]) + shared.get(d, 0.0)
            if need > float(s.limit) + 1e-9:
                return q, d, float(s.limit), need
    return None


def _reservation_problem(session: Session, c: PodClaim, consumer_uid: str) -> str | None:
    assert c.key is not None
    uids = {r.get("uid") for r in session.reservations(c.key)}
    if consumer_uid in uids or len(uids) < RESERVED_FOR_MAX_SIZE:
        return None
    return (f"ResourceClaim {c.key} is already reserved for {RESERVED_FOR_MAX_SIZE} consumers, the maximum; "
            "to share it with more pods, list it in their PodGroup's spec.resourceClaims: it is then reserved "
            "for the group as one consumer")


def place_task(session: Session, stmt: Statement, g: GroupInfo, t: PodInfo, mask: np.ndarray | None) -> str | None:
    """Place one pod (restricted to ``mask`` if given); return ``None`` or why it does not fit."""
    snap = session.snap
    if t.error:
        return t.error
    ext = snap.extended
    stale = ext.stale.get(t.key)
    if stale is not None:
        return stale_message(stale)
    resolved = snap.pod_claims.get(t.key, [])
    waits = [c.waiting for c in resolved if c.waiting]
    if waits:
        return "; ".join(w for w in waits if w)
    claims = [c for c in resolved if c.key]
    profile = session.profile
    px = snap.extended.pod(t)
    if claims and profile.claim_allocation is None:
        return MSG_DRA_DISABLED
    for c in claims:
        problem = _reservation_problem(session, c, g.ref["uid"] if c.group else t.uid)
        if problem:
            return problem
    fresh = session.usage.new_claims(ALLOCATED, g.queue, [c.key for c in claims if c.key])
    demand = demand_with_claims(snap, t, fresh)
    over = over_limit(session, g.queue, demand)
    if over is not None:
        return queue_limit_message(snap.n_nodes, *over)
    held_back = non_preemptible_over_quota(session, g, demand)
    if held_back is not None:
        return Diagnosis(snap.n_nodes, extra=[held_back]).message()

    container, classes = task_needs(session, t)
    state = PodState(session, t, container, classes, px, claims)
    st = session.static(t)
    base = st.ok if mask is None else st.ok & mask
    pins = [(c.key, m) for c in claims if c.key and (m := session.allocation_nodes(c.key)) is not None]
    for _, m in pins:
        base = base & m
    fit_rows = profile.fit_rows(container)
    feasible = fit_mask(session.idle, fit_rows + [n for _, n in classes], base)
    if px is not None:
        route = base if profile.dra_extended or not px.mapped else base & device_plugin_nodes(ext, px)
        feasible &= ext.fit(session.idle, px, route)
    for f in profile.filters:
        feasible = f.filter(state, feasible)
    candidates = np.flatnonzero(feasible)
    tried: dict[int, list[Reason]] = {}
    if candidates.size:
        order = profile.order(state, candidates)
        if not claims and (px is None or not px.mapped):
            node = int(order[0])
            stmt.assign(t, g, node, container + ext.dp_needs(px, node), [], [], [])
            return None
        chosen, outcome, special, error = _allocate_first(session, t, claims, px, order, tried)
        if error is not None:
            return error
        if chosen is not None and outcome is not None:
            n = len(claims)
            extended = special.bind_entry(outcome.allocations[n]) if special is not None else None
            stmt.assign(t, g, chosen, container + ext.dp_needs(px, chosen), claims, outcome.allocations[:n],
                        outcome.newly_allocated[:n], extended)
            return None
    dra = bool(claims) or (px is not None and bool(px.mapped))
    dra = dra and session.profile.claim_allocation is not None
    if dra:
        session.dra_pods.add(t.key)
    explain = (lambda j: _explain(session, t, claims, px, j)) if dra else None
    diagnosis, unavailable = _diagnose(state, st, mask, fit_rows, pins, tried, explain)
    message = diagnosis.message()
    if mask is None and pins:
        # The first diagnosis over every node wins: the allocate action's, on the cycle's state
        # (a later one may be a preemption's dry run). See cycle.py, ``_deallocations``.
        session.unavailable_claims.setdefault(t.key, (message, unavailable))
    return message



def _claim_objs(session: Session, t: PodInfo, claims: list[PodClaim], px: PodExtended | None,
                j: int) -> tuple[list[Obj], SpecialClaim | None]:
    """The claims the allocator must satisfy on node ``j``: the pod's, then its special claim there."""
    objs = [session.claim_for_allocator(c.key) for c in claims if c.key]
    special = session.snap.extended.special_claim(t, px, j)
    if special is not None:
        objs.append(special.claim)
    return objs, special


def _explain(session: Session, t: PodInfo, claims: list[PodClaim], px: PodExtended | None, j: int) -> list[Reason]:
    objs, _ = _claim_objs(session, t, claims, px, j)
    dra = session.profile.claim_allocation
    assert dra is not None
    try:
        out = dra.allocate(session, j, objs, t.namespace)
    except Exception:  # explanations are best effort
        return []
    return out.reasons


FIRST_AVAILABLE_MAX = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


def first_available_score(claims: list[Obj], allocations: list[Obj]) -> int:
    """Upstream's DynamicResources Score (DRAPrioritizedList): for every ``firstAvailable``
    request, ``8 - i`` where ``i`` is the index of the subrequest that was allocated, so a
    node where more claims get their earlier choices scores higher."""
    score = 0
    for claim, allocation in zip(claims, allocations, strict=False):
        chosen = {r.get("request") for r in ((allocation or {}).get("devices") or {}).get("results") or []}
        for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            for i, sub in enumerate(req.get("firstAvailable") or []):
                if f"{req.get('name')}/{sub.get('name')}" in chosen:
                    score += FIRST_AVAILABLE_MAX - i
    return score


def _best_possible(claims: list[Obj]) -> int:
    return sum(FIRST_AVAILABLE_MAX for c in claims
               for req in ((c.get("spec") or {}).get("devices") or {}).get("requests") or []
               if req.get("firstAvailable") and not (c.get("status") or {}).get("allocation"))


def _allocate_first(session: Session, t: PodInfo, claims: list[PodClaim], px: PodExtended | None,
                    order: np.ndarray, tried: dict[int, list[Reason]]) -> tuple[
        int | None, AllocationOutcome | None, SpecialClaim | None, str | None]:
    """Ask the allocator node by node in ``order``; the first success wins (with its special claim).

    Claims with ``firstAvailable`` requests are the exception, as upstream scores them: the
    node whose allocation uses the earliest subrequests wins (ties keep node order), and the
    search stops early once a node gets every first choice.
    """
    dra = session.profile.claim_allocation
    keys = [c.key for c in claims if c.key]
    state_key = "|".join(k if session.claim_allocation(k) is not None else "" for k in keys)
    best: tuple[int, int, AllocationOutcome, SpecialClaim | None] | None = None
    for pos in order:
        j = int(pos)
        objs, special = _claim_objs(session, t, claims, px, j)
        if not objs:  # the device plugin serves everything on this node
            return j, AllocationOutcome(True), None, None
        if dra is None:  # nothing allocates devices: only device-plugin nodes will do
            continue
        cache_key = (t.eq_key + "#" + state_key, j)
        version = session.dra_version(j)
        hit = session.dra_failures.get(cache_key)
        if hit is not None and hit[0] == version:
            tried[j] = ex.rename_claims(hit[1], hit[2], keys)  # found for another pod of this shape
            continue
        try:
            outcome = dra.allocate(session, j, objs, t.namespace)
        except Exception as exc:  # a bug or bad input in one pod must not stop the cycle
            return None, None, None, f"allocating resource claims failed: {type(exc).__name__}: {exc}"
        if outcome.pod_error:
            return None, None, None, outcome.pod_error
        if outcome.ok:
            ceiling = _best_possible(objs)
            if ceiling == 0:
                return j, outcome, special, None
            score = first_available_score(objs, outcome.allocations)
            if best is None or score > best[0]:
                best = (score, j, outcome, special)
            if score >= ceiling:
                break
            continue
        session.dra_failures[cache_key] = (version, outcome.reasons, keys)
        tried[j] = outcome.reasons
    if best is not None:
        return best[1], best[2], best[3], None
    return None, None, None, None


def _diagnose(state: PodState, st: StaticResult, mask: np.ndarray | None, fit_rows: list[RowNeed],
              pins: list[tuple[str, np.ndarray]], tried: dict[int, list[Reason]],
              explain: Callable[[int], list[Reason]] | None) -> tuple[Diagnosis, tuple[str, ...]]:
    """Per-node reasons, computed only for a pod that fits nowhere (in the order the filters run),
    and the allocated claims found unavailable on a node that every filter before theirs let
    through (upstream DynamicResources Filter's ``unavailableClaims``: the allocation's node
    selector does not match a node the filters that run before DynamicResources accepted)."""
    session, px, classes = state.session, state.extended, state.classes
    d = Diagnosis(session.snap.n_nodes)
    among = np.ones(session.snap.n_nodes, dtype=bool)
    if mask is not None:
        outside = int((~mask).sum())
        if outside:
            d.counts[MSG_OUTSIDE_DOMAIN] += outside
        among = mask.copy()
    for idx in np.flatnonzero(among & ~st.ok):
        reason = st.reasons[int(idx)]
        if reason:
            d.counts[reason] += 1
    among &= st.ok
    failing = fit_reasons(session.idle, fit_rows, among, d.counts)
    among &= ~failing
    if px is not None and px.mapped and not session.profile.dra_extended:
        among &= ~device_plugin_reasons(session.snap.extended, px, among, d.counts)
    if px is not None:
        failing, dra_nodes, dra = session.snap.extended.reasons(session.idle, session.used, px, among, d.counts)
        if dra_nodes:
            d.add_dra(dra_nodes, dra)
        among &= ~failing
    for f in session.profile.filters:
        among &= ~f.reasons(state, among, d.counts)
    unavailable = tuple(key for key, pinned in pins if bool((among & ~pinned).any()))
    for key, pinned in pins:
        elsewhere = int((among & ~pinned).sum())
        if elsewhere:
            d.add_dra(elsewhere, [Reason(ex.CLAIM_ELSEWHERE, claim=key)])
        among &= pinned
    short = among & ~fit_mask(session.idle, [n for _, n in classes], among)
    if explain is not None and 0 < int(short.sum()) <= EXPLAIN_LIMIT:
        for idx in np.flatnonzero(short):
            reasons = explain(int(idx))
            if reasons:
                d.add_dra(1, reasons)
                short[idx] = False
    d.add_dra(*class_reasons(session.idle, session.used, classes, short))
    for reasons in tried.values():
        d.add_dra(1, reasons)
    return d, unavailable
