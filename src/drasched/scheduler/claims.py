"""A pod's ResourceClaims: which claim each entry names, and what a claim costs in accounting.

Resolution follows upstream: ``resourceClaimName`` names the claim; a template entry's
claim is the one recorded in ``pod.status.resourceClaimStatuses`` (and must be owned by the
pod). Group claims (docs/design.md, "Group claims") come from the PodGroup's
``status.resourceClaimStatuses`` instead. An entry that cannot be resolved yet carries the
message the pod waits with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from drasched.dra.claimrules import ClaimEntry, is_group_entry
from drasched.dra.claimrules import claim_entries as claim_entries
from drasched.dra.claimrules import controlled_by as _controlled_by
from drasched.dra.claimrules import status_claim_names as _status_names
from drasched.scheduler.constants import EXTENDED_CLAIM_ANNOTATION
from drasched.scheduler.devices import DeviceAccounting

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PodClaim:
    """An entry resolved against the cache: the claim's key, or why the pod must wait."""

    entry: str
    key: str | None
    group: bool
    waiting: str | None = None


@dataclass(slots=True)
class ClaimInfo:
    """A ResourceClaim as the cycle sees it (allocation may be assumed from a pending BindRequest)."""

    key: str
    obj: Obj
    uid: str
    allocation: Obj | None
    assumed: bool
    reserved_for: list[Obj]
    deleting: bool
    extended: bool
    demand: dict[str, float] = field(default_factory=dict)
    """Accounting dimension -> devices this claim takes (counted once, whoever shares it)."""
    prefilter: dict[str, int] = field(default_factory=dict)
    """DeviceClass -> devices the claim surely needs on one node (a necessary condition)."""


def resolve_pod_claims(
    namespace: str,
    pod: Obj,
    pod_uid: str,
    entries: tuple[ClaimEntry, ...],
    group: Obj | None,
    group_entries: tuple[ClaimEntry, ...],
    claims: Mapping[str, ClaimInfo],
    templates: Mapping[str, Obj],
) -> list[PodClaim]:
    """Resolve every entry of a pod; entries whose template produced no claim are dropped."""
    pod_status = _status_names(pod)
    group_status = _status_names(group)
    out: list[PodClaim] = []
    for e in entries:
        grouped = group is not None and is_group_entry(e, group_entries)
        if e.claim_name:
            name: str | None = e.claim_name
        elif e.template_name:
            statuses = group_status if grouped else pod_status
            if e.name not in statuses and grouped and e.name in pod_status:
                statuses = pod_status
            if f"{namespace}/{e.template_name}" not in templates and e.name not in statuses:
                out.append(PodClaim(e.name, None, grouped,
                                    f"waiting for ResourceClaimTemplate {namespace}/{e.template_name}, "
                                    "which does not exist"))
                continue
            if e.name not in statuses:
                out.append(PodClaim(e.name, None, grouped,
                                    f"waiting for a ResourceClaim to be created from template "
                                    f"{namespace}/{e.template_name} (entry {e.name})"))
                continue
            name = statuses[e.name]
            if not name:
                continue  # upstream: no claim was needed for this entry
        else:
            out.append(PodClaim(e.name, None, grouped,
                                f"resource claim entry {e.name} names neither a claim nor a template"))
            continue
        key = f"{namespace}/{name}"
        info = claims.get(key)
        if info is None:
            out.append(PodClaim(e.name, None, grouped, f"waiting for ResourceClaim {key} to be created"))
            continue
        if info.deleting:
            out.append(PodClaim(e.name, None, grouped, f"ResourceClaim {key} is being deleted"))
            continue
        if e.template_name and not grouped and not _controlled_by(info.obj, pod_uid):
            out.append(PodClaim(e.name, None, grouped,
                                f"ResourceClaim {key} was not created for this pod (owner mismatch)"))
            continue
        out.append(PodClaim(e.name, key, grouped))
    return out


def named_claims(namespace: str, pod: Obj, entries: tuple[ClaimEntry, ...], group: Obj | None) -> set[str]:
    """Keys of every claim :func:`resolve_pod_claims` may look up for this pod: a claim named
    directly, or one its (or its group's) status names for a template. When one of them
    changes, the pod's claims are resolved again."""
    keys = {f"{namespace}/{e.claim_name}" for e in entries if e.claim_name}
    for statuses in (_status_names(pod), _status_names(group)):
        keys.update(f"{namespace}/{name}" for name in statuses.values() if name)
    return keys


def _request_classes(spec: Obj) -> dict[str, str]:
    """Request name (``req`` or ``req/sub``) -> DeviceClass name."""
    out: dict[str, str] = {}
    for r in (spec.get("devices") or {}).get("requests") or []:
        name = str(r.get("name", ""))
        if r.get("exactly"):
            out[name] = str(r["exactly"].get("deviceClassName", ""))
        for sub in r.get("firstAvailable") or []:
            out[f"{name}/{sub.get('name', '')}"] = str(sub.get("deviceClassName", ""))
    return out


def claim_costs(claim: Obj, allocation: Obj | None, accounting: DeviceAccounting) -> tuple[
        dict[str, float], dict[str, int]]:
    """What a claim counts in accounting dimensions, and what it needs per class on one node.

    Allocated: one per result (admin access takes nothing; a GPU result counts its GPU
    units, e.g. 0.5 for half a GPU). Not yet allocated: ExactCount
    requests count their ``count``; ``All`` and ``firstAvailable`` count 1 (the real number
    is known once allocated) and are not used to pre-filter nodes.
    """
    spec = claim.get("spec") or {}
    demand: dict[str, float] = {}
    prefilter: dict[str, int] = {}
    if allocation:
        classes = _request_classes(spec)
        for r in (allocation.get("devices") or {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            cls = classes.get(str(r.get("request", "")))
            if cls:
                dim = accounting.class_dim(cls)
                demand[dim] = demand.get(dim, 0.0) + accounting.result_units(cls, r)
        return demand, prefilter
    for r in (spec.get("devices") or {}).get("requests") or []:
        exactly = r.get("exactly")
        if exactly:
            if exactly.get("adminAccess"):
                continue
            cls = str(exactly.get("deviceClassName", ""))
            exact = exactly.get("allocationMode", "ExactCount") == "ExactCount"
            count = int(exactly.get("count") or 1) if exact else 1
            if exact:
                prefilter[cls] = prefilter.get(cls, 0) + count
        else:
            subs = r.get("firstAvailable") or []
            if not subs:
                continue
            cls = str(subs[0].get("deviceClassName", ""))
            count = int(subs[0].get("count") or 1)
        dim = accounting.class_dim(cls)
        demand[dim] = demand.get(dim, 0.0) + float(count)
    return demand, prefilter


def build_claim_info(key: str, claim: Obj, assumed_allocation: Obj | None, assumed_reservations: list[Obj],
                     accounting: DeviceAccounting) -> ClaimInfo:
    md = claim.get("metadata") or {}
    status = claim.get("status") or {}
    allocation = status.get("allocation") or assumed_allocation
    extended = (md.get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) == "true"
    info = ClaimInfo(
        key=key,
        obj=claim,
        uid=str(md.get("uid", "")),
        allocation=allocation,
        assumed=not status.get("allocation") and assumed_allocation is not None,
        reserved_for=list(status.get("reservedFor") or []) + assumed_reservations,
        deleting=bool(md.get("deletionTimestamp")),
        extended=extended,
    )
    if not extended:  # extended-resource claims are counted through the pod's container requests
        info.demand, info.prefilter = claim_costs(claim, allocation, accounting)
    return info
