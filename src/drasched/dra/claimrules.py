"""The ResourceClaim rules the scheduler, the claim controller and the kubelet share (no I/O).

Which claim a pod's ``spec.resourceClaims`` entry uses, when an entry is its PodGroup's
claim, who a claim is reserved for, whether it is allocated, when a pod is done with its
claims. Kept in one module below all three, so they cannot drift apart. Upstream
references: ``k8s.io/dynamic-resource-allocation/resourceclaim`` (Name, IsForPod,
IsReservedForPod), ``pkg/controller/resourceclaim/controller.go`` (isPodDone) and
KEP-5729 (claims of a PodGroup). docs/design.md, "Group claims", states the group rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from drasched.api.foreign import named_pod_group
from drasched.api.meta import controller_uid

Obj = dict[str, Any]

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""On a claim generated for a pod: the ``pod.spec.resourceClaims[].name`` it was made for."""

PODGROUP_CLAIM_ANNOTATION = "resource.kubernetes.io/podgroup-claim-name"
"""On a claim generated for a PodGroup (KEP-5729): the group's ``spec.resourceClaims[].name``."""

POD_GROUP_LABEL = "drasched.io/pod-group"
"""Pods join a drasched PodGroup with this label (docs/design.md, "One gang per pod")."""


class ClaimNotCreated(Exception):
    """A template entry whose claim is not recorded in the owner's status yet."""


@dataclass(frozen=True, slots=True)
class ClaimEntry:
    """One ``spec.resourceClaims`` entry of a pod or PodGroup, as written."""

    name: str
    claim_name: str | None
    template_name: str | None


def claim_entry(entry: Obj) -> ClaimEntry:
    """One entry as written: its name and the claim or template it names."""
    return ClaimEntry(str(entry.get("name", "")), entry.get("resourceClaimName"),
                      entry.get("resourceClaimTemplateName"))


def claim_entries(spec: Obj) -> tuple[ClaimEntry, ...]:
    """The ``resourceClaims`` entries of a pod's or PodGroup's spec."""
    return tuple(claim_entry(e) for e in spec.get("resourceClaims") or [] if isinstance(e, dict))


def is_group_entry(entry: ClaimEntry, group_entries: Iterable[ClaimEntry]) -> bool:
    """KEP-5729: same entry name and the same claim or template name as one of the group's entries."""
    return any(_shares(entry, g) for g in group_entries)


def _shares(entry: ClaimEntry, g: ClaimEntry) -> bool:
    if g.name != entry.name:
        return False
    return bool((entry.claim_name and entry.claim_name == g.claim_name)
                or (entry.template_name and entry.template_name == g.template_name))


def group_entry_for(pod_entry: Obj, group: Obj | None) -> Obj | None:
    """The entry of ``group``'s ``spec.resourceClaims`` this pod entry shares, or None."""
    if group is None:
        return None
    entry = claim_entry(pod_entry)
    for g in (group.get("spec") or {}).get("resourceClaims") or []:
        if isinstance(g, dict) and _shares(entry, claim_entry(g)):
            return g
    return None


def pod_group_name(pod: Obj) -> str | None:
    """The PodGroup a pod joins: its label (or an alias: KAI-Scheduler's ``pod-group-name``
    annotation, scheduler-plugins' ``scheduling.x-k8s.io/pod-group`` label), else its upstream
    ``spec.schedulingGroup.podGroupName`` (an upstream PodGroup is read as a drasched PodGroup of
    the same name), or None."""
    label = named_pod_group(pod.get("metadata") or {})
    return label or ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or None


def scheduling_group_name(pod: Obj) -> str | None:
    """The upstream ``scheduling.k8s.io`` PodGroup a pod joins (``spec.schedulingGroup.podGroupName``),
    or None. Its claims (KEP-5729) are owned by and reserved for that PodGroup, which the kubelet
    checks as upstream ``resourceclaim.IsForPod`` / ``IsReservedForPod`` do with the pod's PodGroup."""
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or None


def status_claim_names(obj: Obj | None) -> dict[str, str | None]:
    """``status.resourceClaimStatuses`` of a pod or PodGroup as entry name -> claim name.

    None for an entry whose template needed no claim (upstream records it without a name).
    """
    out: dict[str, str | None] = {}
    for s in ((obj or {}).get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(s, dict) and s.get("name"):
            out[str(s["name"])] = s.get("resourceClaimName") or None
    return out


def claim_names_of(pod: Obj) -> set[str]:
    """Every claim a pod refers to: named entries and the claims its status records."""
    names = {str(e["resourceClaimName"]) for e in (pod.get("spec") or {}).get("resourceClaims") or []
             if isinstance(e, dict) and e.get("resourceClaimName")}
    names.update(n for n in status_claim_names(pod).values() if n)
    return names


def pod_claim_name(owner: Obj, entry: Obj) -> tuple[str | None, bool]:
    """The claim an entry of a pod (or PodGroup) uses, and whether its owner must be checked.

    As upstream ``resourceclaim.Name``: a named claim is used as is; a template entry
    resolves through ``status.resourceClaimStatuses`` (None there: no claim needed).
    Raises :class:`ClaimNotCreated` when the template's claim is not recorded yet.
    """
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"]), False
    if entry.get("resourceClaimTemplateName"):
        statuses = status_claim_names(owner)
        if entry.get("name") in statuses:
            return statuses[entry["name"]], True
        raise ClaimNotCreated(f"claim for entry {entry.get('name')!r} from template "
                              f"{entry['resourceClaimTemplateName']!r} is not created yet")
    raise ClaimNotCreated(f"entry {entry.get('name')!r} names neither a claim nor a template")


def controlled_by(obj: Obj, owner_uid: str | None) -> bool:
    """``obj``'s controller owner has ``owner_uid`` (upstream ``IsForPod`` on a claim)."""
    return bool(owner_uid) and controller_uid(obj) == owner_uid


def owned_by(obj: Obj, owner: Obj) -> bool:
    """``obj`` is controlled by ``owner`` (same uid), as upstream ``IsForPod``."""
    return controller_uid(obj) == (owner.get("metadata") or {}).get("uid")


def reserved_for(claim: Obj) -> list[Obj]:
    """The claim's ``status.reservedFor`` entries."""
    return [r for r in (claim.get("status") or {}).get("reservedFor") or [] if isinstance(r, dict)]


def is_reserved_for(claim: Obj, uid: str | None) -> bool:
    """The claim is reserved for the consumer with ``uid`` (upstream ``IsReservedForPod``)."""
    return bool(uid) and any(r.get("uid") == uid for r in reserved_for(claim))


def is_allocated(claim: Obj) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


def has_binding_conditions(allocation: Obj | None) -> bool:
    """Whether a device of ``allocation`` (a claim's ``status.allocation``) must meet binding
    conditions before its pod is bound (KEP-5007: the allocator copies a slice device's
    ``bindingConditions`` into the result; upstream requires ``bindingFailureConditions``
    to come with them, either marks such a device)."""
    for result in ((allocation or {}).get("devices") or {}).get("results") or []:
        if result.get("bindingConditions") or result.get("bindingFailureConditions"):
            return True
    return False


def pod_is_done(pod: Obj) -> bool:
    """No container runs nor ever will: terminal phase, or deleted before it was scheduled.

    A deleting pod that is bound still runs until its kubelet finishes it (upstream
    ``isPodDone``), so it keeps its reservations until then.
    """
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    md = pod.get("metadata") or {}
    return bool(md.get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")
