"""The ResourceClaim controller's decisions, as pure functions of what its caches hold.

Each function takes wire-form objects (plain dicts) and lookups, and says what to write;
the controller (``resourceclaim.py``) reads its caches, calls these, and performs the
writes. Upstream counterparts in ``pkg/controller/resourceclaim/controller.go``:
``podNeedsWork`` / ``handleClaim`` / ``findPodResourceClaim`` (:func:`plan_pod`,
:func:`claim_from_template`, :func:`find_adoptable`), ``syncPodGroup`` /
``handlePodGroupClaim`` / ``findPodGroupResourceClaim`` (:func:`plan_owner_claims` with an
upstream PodGroup, :func:`claim_annotation`), ``syncClaim``
(:func:`release_reason`, :func:`plan_release`, :func:`drops_finalizer`,
:func:`delete_reason`), ``reserveForPod`` (:attr:`PodPlan.reserve`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from drasched.api import kinds
from drasched.controllers.claimutil import (
    DELETE_PROTECTION_FINALIZER,
    GROUP_CLAIM_FINALIZER,
    MAX_RESERVED_FOR,
    POD_CLAIM_ANNOTATION,
    PODGROUP_CLAIM_ANNOTATION,
    ClaimNotCreated,
    consumer_ref,
    done_reason,
    generate_name,
    group_entry_for,
    is_allocated,
    is_group_ref,
    is_pod_ref,
    is_reserved_for,
    is_upstream_group,
    is_upstream_group_owner,
    is_upstream_group_ref,
    owned_by,
    pod_claim_name,
    pod_is_done,
    reserved_for,
    status_claim_names,
)
from drasched.store.wire import clone

Obj = dict[str, Any]
ClaimLookup = Callable[[str], "Obj | None"]
"""A claim of the owner's namespace by name, from the cache (None: not there)."""


def _md(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


# ---- claims for pods and PodGroups ------------------------------------------------------------


@dataclass
class PodPlan:
    """What a pod (or PodGroup) sync must do; empty when the owner needs no work."""

    create: list[Obj] = field(default_factory=list)
    """Template entries without a claim: one is created for each (if the template exists)."""
    adopt: dict[str, str] = field(default_factory=dict)
    """Entry name -> a claim we created before a crash: owned and annotated, not recorded."""
    statuses: dict[str, str | None] = field(default_factory=dict)
    """``resourceClaimStatuses`` wanted once the adoptions (not yet the creates) are in."""
    reserve: list[tuple[str, Obj]] = field(default_factory=list)
    """(claim name, consumer ref) for a pod bound without our scheduler (upstream ``reserveForPod``)."""
    full: list[str] = field(default_factory=list)
    """Claims such a pod needs reserved that already hold ``MAX_RESERVED_FOR`` consumers."""

    def needs_work(self, recorded: dict[str, str | None]) -> bool:
        return bool(self.create or self.adopt or self.reserve or self.full or self.statuses != recorded)


def claim_annotation(owner: Obj) -> str:
    """The annotation naming the entry a generated claim was made for.

    ``resource.kubernetes.io/pod-claim-name`` for a pod, and for an upstream PodGroup too
    (1.37's controller annotates a PodGroup's claims with ``PodResourceClaimAnnotation``);
    drasched's own PodGroup keeps ``podgroup-claim-name``.
    """
    if owner.get("kind") == "Pod" or is_upstream_group(owner):
        return POD_CLAIM_ANNOTATION
    return PODGROUP_CLAIM_ANNOTATION


def find_adoptable(owner: Obj, entry_name: str, owned_claims: Iterable[Obj]) -> Obj | None:
    """A live claim controlled by ``owner`` and annotated for ``entry_name`` (upstream
    ``findPodResourceClaim`` / ``findPodGroupResourceClaim``): created by us before a crash
    kept it out of the status."""
    annotation = claim_annotation(owner)
    for claim in owned_claims:
        md = _md(claim)
        if (md.get("annotations") or {}).get(annotation) == entry_name and not md.get("deletionTimestamp") \
                and owned_by(claim, owner):
            return claim
    return None


def plan_owner_claims(owner: Obj, entries: Iterable[Obj], get_claim: ClaimLookup,
                      owned_claims: Iterable[Obj]) -> PodPlan:
    """The template entries of a pod or PodGroup: keep the recorded claim, adopt, or create.

    A recorded claim that is gone or no longer owned by ``owner`` is replaced (upstream
    re-creates a claim deleted by accident).
    """
    plan = PodPlan(statuses=status_claim_names(owner))
    owned = list(owned_claims)
    for entry in entries:
        if not entry.get("resourceClaimTemplateName"):
            continue
        name = entry.get("name", "")
        recorded = plan.statuses.get(name)
        if recorded:
            claim = get_claim(recorded)
            if claim is not None and owned_by(claim, owner):
                continue
        found = find_adoptable(owner, name, owned)
        if found is not None:
            plan.adopt[name] = _md(found).get("name", "")
            plan.statuses[name] = plan.adopt[name]
        else:
            plan.create.append(entry)
    return plan


def plan_pod(pod: Obj, group: Obj | None, get_claim: ClaimLookup, owned_claims: Iterable[Obj], *,
             group_missing: bool = False) -> PodPlan:
    """Everything a live pod needs from the controller (empty plan: nothing).

    An entry that is its PodGroup's claim (same name and source) uses the group's claim
    once that exists; other template entries get their own (:func:`plan_owner_claims`).
    A bound pod gets its allocated claims reserved, or its group where the claim is the
    group's (KEP-5729: one reservation for the group covers its pods). A pod whose upstream
    PodGroup is not there (``group_missing``) gets nothing yet, as upstream ``syncPod``
    fails on ``getPodGroup`` before any entry: which entries are the group's is unknown.
    """
    if pod_is_done(pod) or _md(pod).get("deletionTimestamp") or group_missing:
        return PodPlan(statuses=status_claim_names(pod))
    entries = (pod.get("spec") or {}).get("resourceClaims") or []
    own = [e for e in entries if group_entry_for(e, group) is None]
    plan = plan_owner_claims(pod, own, get_claim, owned_claims)
    if group is not None:
        group_names = status_claim_names(group)
        for entry in entries:
            if entry.get("resourceClaimTemplateName") and group_entry_for(entry, group) is not None:
                gname = group_names.get(entry["name"])
                if gname and get_claim(gname) is not None:
                    plan.statuses[entry["name"]] = gname
    if (pod.get("spec") or {}).get("nodeName"):
        _plan_reservations(pod, group, entries, get_claim, plan)
    return plan


def _plan_reservations(pod: Obj, group: Obj | None, entries: list[Obj], get_claim: ClaimLookup,
                       plan: PodPlan) -> None:
    for entry in entries:
        try:
            name, _ = pod_claim_name(pod, entry)
        except ClaimNotCreated:
            continue
        claim = get_claim(name) if name else None
        if name is None or claim is None or not is_allocated(claim) or _md(claim).get("deletionTimestamp"):
            continue
        consumer = pod
        if group is not None and group_entry_for(entry, group) is not None:
            if _md(group).get("deletionTimestamp"):
                continue
            consumer = group
        if is_reserved_for(claim, _md(consumer).get("uid")) \
                or (group is not None and is_reserved_for(claim, _md(group).get("uid"))):
            continue
        if len(reserved_for(claim)) >= MAX_RESERVED_FOR:
            plan.full.append(name)
            continue
        plan.reserve.append((name, consumer_ref(consumer)))


def claim_from_template(owner: Obj, entry: Obj, template: Obj) -> Obj:
    """The claim to create for a template entry, as upstream ``handleClaim`` builds it.

    ``generateName`` ``<owner>-<entry>-`` with both parts cut in proportion past 57
    characters; owned by ``owner`` (``controller`` alone, as 1.37's ``handleClaim`` and
    ``handlePodGroupClaim`` write it); annotated with the entry name (:func:`claim_annotation`);
    the template's ``spec.metadata`` labels and annotations; its ``spec.spec``.
    """
    tmeta = ((template.get("spec") or {}).get("metadata")) or {}
    annotations = dict(tmeta.get("annotations") or {})
    annotations[claim_annotation(owner)] = entry["name"]
    # kube-controller-manager 1.37 (pkg/controller/resourceclaim, handleClaim and
    # handlePodGroupClaim): the owner reference sets ``controller`` alone, no blockOwnerDeletion.
    owner_ref: Obj = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": _md(owner).get("name"),
                      "uid": _md(owner).get("uid"), "controller": True}
    metadata: Obj = {
        "generateName": generate_name(_md(owner).get("name", ""), entry["name"]),
        "namespace": _md(owner).get("namespace") or "",
        "annotations": annotations,
        "ownerReferences": [owner_ref],
    }
    if tmeta.get("labels"):
        metadata["labels"] = dict(tmeta["labels"])
    return {
        "apiVersion": kinds.RESOURCE_CLAIM.api_version,
        "kind": kinds.RESOURCE_CLAIM.kind,
        "metadata": metadata,
        "spec": clone((template.get("spec") or {}).get("spec") or {}),
    }


def statuses_list(owner: Obj, names: dict[str, str | None]) -> list[Obj]:
    """``resourceClaimStatuses`` in spec order, then entries we do not know (kept as found)."""
    order = [e.get("name") for e in (owner.get("spec") or {}).get("resourceClaims") or [] if isinstance(e, dict)]
    out: list[Obj] = []
    for key in [*[n for n in order if n in names], *sorted(k for k in names if k not in order)]:
        item: Obj = {"name": key}
        if names[key]:
            item["resourceClaimName"] = names[key]
        out.append(item)
    return out


def unrecorded_template_entry(pod: Obj) -> bool:
    """Whether a live pod has a template entry that its status does not name a claim for yet."""
    if pod_is_done(pod) or _md(pod).get("deletionTimestamp"):
        return False
    recorded = status_claim_names(pod)
    return any(e.get("resourceClaimTemplateName") and not recorded.get(e.get("name", ""))
               for e in (pod.get("spec") or {}).get("resourceClaims") or [])


# ---- release, deallocation, deletion ----------------------------------------------------------


def release_reason(ref: Obj, consumer: Obj | None, *, group_has_live_pods: bool = True,
                   kind: str = "") -> str | None:
    """Why a ``reservedFor`` entry can go, or None while its consumer may still use it.

    ``consumer`` is the object with the entry's name as the cache or the API holds it (None:
    gone). A pod goes when gone, replaced or done (upstream ``syncClaim``; a bound pod
    being deleted still runs); a PodGroup (drasched's or the upstream one) when gone,
    replaced, or being deleted with none of its pods running; any other kind when gone or
    replaced. Upstream releases an upstream PodGroup once it is gone; a deleting one goes
    once none of its pods is active, when kube-controller-manager's podgroup-protection
    controller removes its finalizer, so "being deleted, no pod running" is the same moment,
    and serves a cluster where that controller does not run.
    """
    if is_pod_ref(ref):
        if consumer is None:
            return "pod is gone"
        if _md(consumer).get("uid") != ref.get("uid"):
            return "pod was replaced by a new one with the same name"
        return done_reason(consumer) if pod_is_done(consumer) else None
    group = is_group_ref(ref) or is_upstream_group_ref(ref)
    what = "PodGroup" if group else (kind or str(ref.get("resource")))
    if consumer is None:
        return f"{what} is gone (orphaned reservation)"
    if _md(consumer).get("uid") != ref.get("uid"):
        return f"{what} was replaced by a new one with the same name (orphaned reservation)"
    if group and _md(consumer).get("deletionTimestamp") and not group_has_live_pods:
        return "PodGroup is being deleted and none of its pods runs any more"
    return None


def claim_sync_idle(claim: Obj, pod: Callable[[str], Obj | None]) -> bool:
    """Whether syncing this claim would do nothing, as far as the cache shows: not being
    deleted, every consumer in ``status.reservedFor`` a pod the cache holds (same uid, not
    done), and no controller owner or one such pod. ``pod`` looks a pod of the claim's
    namespace up by name. Then neither :func:`plan_release`, :func:`drops_finalizer` nor
    :func:`delete_reason` finds anything, and the claim need not be queued for every change
    (in a burst each new claim changes two or three times); when such a pod goes or finishes,
    its claims are queued by the pod's own event. Anything else (a PodGroup consumer, a pod
    the cache lacks) is queued as before."""
    if _md(claim).get("deletionTimestamp"):
        return False

    def alive(ref: Obj) -> bool:
        found = pod(str(ref.get("name", "")))
        return (found is not None and _md(found).get("uid") == ref.get("uid") and not pod_is_done(found))

    if not all(is_pod_ref(r) and alive(r) for r in reserved_for(claim)):
        return False
    owner = controller_owner(claim)
    return owner is None or (owner.get("apiVersion") == "v1" and owner.get("kind") == "Pod" and alive(owner))


@dataclass
class ReleasePlan:
    """The status write ``syncClaim`` makes for one claim (None status: no write)."""

    keep: list[Obj]
    released: list[tuple[Obj, str]]
    deallocate: bool
    status: Obj | None


def plan_release(claim: Obj, reasons: list[str | None]) -> ReleasePlan:
    """Drop the entries with a reason; deallocate once none is left.

    DRA deallocates as soon as the last consumer stops using a claim, on the transition
    only ("was used" -> "is not"): a claim allocated but never reserved stays allocated.
    A claim being deleted with no consumer is deallocated too (upstream: a claim that was
    allocated, stopped being used, and then got deleted), so its finalizer can go.
    """
    refs = reserved_for(claim)
    keep = [r for r, why in zip(refs, reasons, strict=True) if why is None]
    released = [(r, why) for r, why in zip(refs, reasons, strict=True) if why is not None]
    status = dict(claim.get("status") or {})
    deleting_unused = (not refs and bool(_md(claim).get("deletionTimestamp"))
                       and DELETE_PROTECTION_FINALIZER in (_md(claim).get("finalizers") or []))
    deallocate = not keep and "allocation" in status and (bool(released) or deleting_unused)
    if not released and not deallocate:
        return ReleasePlan(keep, released, False, None)
    if keep:
        status["reservedFor"] = keep
    else:
        status.pop("reservedFor", None)
    if deallocate:
        status.pop("allocation", None)
        status.pop("devices", None)  # device status goes with the devices
    return ReleasePlan(keep, released, deallocate, status)


def goes_without_release(claim: Obj, plan: ReleasePlan) -> bool:
    """Whether the claim can simply go, with no release or deallocation written first.

    True when no consumer it holds is left (``plan.keep`` empty) and nothing but the
    delete-protection finalizer can keep the object once deleted. Then, if it is being
    deleted (or is a generated claim whose owner is done or gone, deleted first), dropping
    that finalizer removes it, allocation and reservations with it: the scheduler frees its
    devices on the delete event as it would on the deallocation, and a status write that
    the deletion makes moot costs the API server a write and a watch event for every
    watcher. Upstream's controller writes the release and the deallocation first; the end
    state, no claim, is the same. A claim with a finalizer of someone else's is released as
    before, since it may outlive our finalizer.
    """
    return not plan.keep and all(f == DELETE_PROTECTION_FINALIZER for f in _md(claim).get("finalizers") or [])


def drops_finalizer(claim: Obj, *, just_released: bool) -> bool:
    """Whether the delete-protection finalizer goes: it guards an allocation only.

    After the write that released the last consumer and deallocated, or for an unreserved
    claim being deleted (upstream: "to unblock removal"). Never otherwise: the binder adds
    the finalizer a write before the allocation, and dropping it between the two would
    leave an allocation unguarded.
    """
    md = _md(claim)
    if DELETE_PROTECTION_FINALIZER not in (md.get("finalizers") or []) or reserved_for(claim):
        return False
    return not is_allocated(claim) and (just_released or bool(md.get("deletionTimestamp")))


def without_finalizer(obj: Obj, finalizer: str) -> Obj:
    """A copy of ``obj`` without ``finalizer`` (and without an empty list)."""
    new = copy.deepcopy(obj)
    left = [f for f in new["metadata"].get("finalizers") or [] if f != finalizer]
    if left:
        new["metadata"]["finalizers"] = left
    else:
        new["metadata"].pop("finalizers", None)
    return new


def controller_owner(claim: Obj) -> Obj | None:
    return next((r for r in _md(claim).get("ownerReferences") or [] if r.get("controller")), None)


def delete_reason(claim: Obj, owner: Obj | None, *, group_has_live_pods: bool = True) -> str | None:
    """Why a generated claim that nothing reserves can be deleted, or None.

    ``owner`` is the object named by its controller reference as found (None: gone). A
    pod's claim goes once the pod is done or replaced (upstream ``syncClaim``); also once
    it is gone, and a PodGroup's once the group is gone or replaced: upstream leaves those
    to the garbage collector, which a cluster without kube-controller-manager lacks. An
    upstream PodGroup's claim goes as well once the group is being deleted with none of its
    pods running (``group_has_live_pods`` False): the moment its podgroup-protection
    finalizer would go, and the group with it (see :func:`release_reason`).
    """
    if _md(claim).get("deletionTimestamp") or reserved_for(claim):
        return None
    ref = controller_owner(claim)
    if ref is None:
        return None
    where = f"{_md(claim).get('namespace') or ''}/{ref.get('name')}"
    if ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
        if owner is None:
            return f"its pod {where} is gone"
        if _md(owner).get("uid") != ref.get("uid"):
            return f"its pod {where} was replaced"
        if pod_is_done(owner):
            return f"its pod {where} is done ({done_reason(owner)})"
        return None
    upstream = is_upstream_group_owner(ref)
    is_group = upstream or (ref.get("apiVersion") == kinds.POD_GROUP.api_version
                            and ref.get("kind") == kinds.POD_GROUP.kind)
    if is_group and (owner is None or _md(owner).get("uid") != ref.get("uid")):
        return f"its PodGroup {where} is gone"
    if upstream and owner is not None and _md(owner).get("deletionTimestamp") and not group_has_live_pods:
        return f"its PodGroup {where} is being deleted and none of its pods runs any more"
    return None


# ---- PodGroups --------------------------------------------------------------------------------


def group_finalizer_change(group: Obj, holds_allocated_claim: bool) -> str | None:
    """``"add"`` / ``"remove"`` the group's claim-protection finalizer, or None.

    A group keeps it while an allocated claim is reserved for it, so its reservation cannot
    vanish early; a deleting group only ever loses it.
    """
    has = GROUP_CLAIM_FINALIZER in (_md(group).get("finalizers") or [])
    if _md(group).get("deletionTimestamp"):
        return "remove" if has and not holds_allocated_claim else None
    if holds_allocated_claim == has:
        return None
    return "add" if holds_allocated_claim else "remove"


CLAIMS_VALID_CONDITION = "ResourceClaimsValid"
"""PodGroup condition: False when its ``spec.resourceClaims`` cannot be used."""


def claims_condition(conditions: list[Obj], problems: list[str]) -> Obj | None:
    """The ``ResourceClaimsValid`` condition to set (without its time), or None to leave it."""
    current = next((c for c in conditions if c.get("type") == CLAIMS_VALID_CONDITION), None)
    if problems:
        message = "; ".join(problems)
        want: Obj = {"type": CLAIMS_VALID_CONDITION, "status": "False",
                     "reason": "TooManyResourceClaims" if "Too many" in message else "InvalidResourceClaims",
                     "message": message}
    elif current is not None and current.get("status") != "True":
        want = {"type": CLAIMS_VALID_CONDITION, "status": "True", "reason": "Valid",
                "message": "every entry of spec.resourceClaims can be used"}
    else:
        return None
    if current is not None and all(current.get(k) == v for k, v in want.items()):
        return None
    return want


def consumer_text(ref: Obj) -> str:
    if is_pod_ref(ref):
        return f"pod {ref.get('name')}"
    if is_group_ref(ref):
        return f"PodGroup {ref.get('name')}"
    return f"{ref.get('resource')}.{ref.get('apiGroup')} {ref.get('name')}"
