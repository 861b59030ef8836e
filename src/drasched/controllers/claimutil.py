"""Pure helpers about pods, PodGroups and their ResourceClaims (no I/O).

Shared by the claim controller, the simulated kubelet and (later) the scheduler, so they
all resolve a pod's claims the same way. Upstream references:
``k8s.io/dynamic-resource-allocation/resourceclaim`` (Name, IsForPod, IsReservedForPod)
and ``pkg/controller/resourceclaim/controller.go`` (name generation, isPodDone).
"""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.meta import controller_uid
from drasched.api.resource import FINALIZER, RESERVED_FOR_MAX_SIZE
from drasched.api.validation import check_label

Obj = dict[str, Any]

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""On a claim generated for a pod: the ``pod.spec.resourceClaims[].name`` it was made for."""

PODGROUP_CLAIM_ANNOTATION = "resource.kubernetes.io/podgroup-claim-name"
"""On a claim generated for a PodGroup (KEP-5729): the group's ``spec.resourceClaims[].name``."""

DELETE_PROTECTION_FINALIZER = FINALIZER
"""Set by the binder on an allocated claim; removed here once the claim is deallocated."""

GROUP_CLAIM_FINALIZER = "scheduling.drasched.io/claim-protection"
"""On a PodGroup while it holds an allocated claim, so its reservation cannot vanish early."""

POD_GROUP_LABEL = "drasched.io/pod-group"
"""Pods join a drasched PodGroup with this label (docs/design.md, "One gang per pod")."""

MAX_GROUP_CLAIMS = 4
"""A PodGroup lists at most this many claims."""

MAX_RESERVED_FOR = RESERVED_FOR_MAX_SIZE

MAX_GENERATE_NAME_BASE = 57
"""Room for 5 random characters and a hyphen in a 63-character name (upstream ``maxBaseLen``)."""

PODGROUP_CONSUMER_GROUP = kinds.DRASCHED
PODGROUP_CONSUMER_RESOURCE = kinds.POD_GROUP.plural


class ClaimNotCreated(Exception):
    """A template entry whose claim is not recorded in the owner's status yet."""


def generate_name(owner_name: str, entry_name: str) -> str:
    """``<owner>-<entry>-``, both parts cut in proportion when longer than 57 characters.

    A port of upstream's rule: the API server would cut the end, losing the entry name
    of a long pod, so both strings are truncated proportionally (integer division over
    the untruncated length). A truncated name has no trailing hyphen, as upstream.
    """
    name = f"{owner_name}-{entry_name}-"
    if len(name) > MAX_GENERATE_NAME_BASE:
        total = len(name)
        name = (owner_name[: len(owner_name) * MAX_GENERATE_NAME_BASE // total] + "-"
                + entry_name[: len(entry_name) * MAX_GENERATE_NAME_BASE // total])
    return name


def pod_is_done(pod: Obj) -> bool:
    """No container runs nor ever will: terminal phase, or deleted before it was scheduled.

    A deleting pod that is bound still runs until its kubelet finishes it (upstream
    ``isPodDone``), so it keeps its reservations until then.
    """
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    md = pod.get("metadata") or {}
    return bool(md.get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")


def done_reason(pod: Obj) -> str:
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return f"pod {phase}"
    return "pod deleted before it was scheduled"


def pod_group_name(pod: Obj) -> str | None:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL) or None


def group_entry_for(pod_entry: Obj, group: Obj | None) -> Obj | None:
    """The PodGroup entry this pod entry shares, or None (KEP-5729; docs/design.md, "Group claims").

    Same entry name and the same ``resourceClaimName`` or ``resourceClaimTemplateName``.
    """
    if group is None:
        return None
    for g in (group.get("spec") or {}).get("resourceClaims") or []:
        if not isinstance(g, dict) or g.get("name") != pod_entry.get("name"):
            continue
        for field in ("resourceClaimName", "resourceClaimTemplateName"):
            if pod_entry.get(field) and pod_entry.get(field) == g.get(field):
                return g
    return None


def status_claim_names(obj: Obj) -> dict[str, str | None]:
    """``status.resourceClaimStatuses`` of a pod or PodGroup as entry name -> claim name."""
    out: dict[str, str | None] = {}
    for s in (obj.get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(s, dict) and s.get("name"):
            out[s["name"]] = s.get("resourceClaimName") or None
    return out


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


controller_owner_uid = controller_uid


def owned_by(obj: Obj, owner: Obj) -> bool:
    """``obj`` is controlled by ``owner`` (same uid), as upstream ``IsForPod``."""
    return controller_owner_uid(obj) == (owner.get("metadata") or {}).get("uid")


def consumer_ref(obj: Obj) -> Obj:
    """The ``reservedFor`` entry for a pod or a PodGroup."""
    md = obj.get("metadata") or {}
    if obj.get("kind") == "Pod":
        return {"resource": "pods", "name": md.get("name"), "uid": md.get("uid")}
    rt = kinds.for_object(obj)
    return {"apiGroup": rt.group, "resource": rt.plural, "name": md.get("name"), "uid": md.get("uid")}


def reserved_for(claim: Obj) -> list[Obj]:
    return [r for r in (claim.get("status") or {}).get("reservedFor") or [] if isinstance(r, dict)]


def is_reserved_for(claim: Obj, uid: str | None) -> bool:
    return bool(uid) and any(r.get("uid") == uid for r in reserved_for(claim))


def is_pod_ref(ref: Obj) -> bool:
    return not ref.get("apiGroup") and ref.get("resource") == "pods"


def is_group_ref(ref: Obj) -> bool:
    return ref.get("apiGroup") == PODGROUP_CONSUMER_GROUP and ref.get("resource") == PODGROUP_CONSUMER_RESOURCE


def is_allocated(claim: Obj) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


def group_claim_problems(group: Obj) -> list[str]:
    """Why a PodGroup's ``spec.resourceClaims`` cannot be used, in the API server's words."""
    entries = (group.get("spec") or {}).get("resourceClaims") or []
    problems: list[str] = []
    if not isinstance(entries, list):
        return ["spec.resourceClaims: Invalid value: must be a list"]
    if len(entries) > MAX_GROUP_CLAIMS:
        problems.append(f"spec.resourceClaims: Too many: {len(entries)}: must have at most "
                        f"{MAX_GROUP_CLAIMS} items")
    seen: set[str] = set()
    for i, e in enumerate(entries):
        path = f"spec.resourceClaims[{i}]"
        if not isinstance(e, dict):
            problems.append(f"{path}: Invalid value: must be an object")
            continue
        problems += [str(c) for c in check_label(f"{path}.name", e.get("name"))]
        if e.get("name") in seen:
            problems.append(f'{path}.name: Duplicate value: "{e.get("name")}"')
        seen.add(str(e.get("name")))
        if bool(e.get("resourceClaimName")) == bool(e.get("resourceClaimTemplateName")):
            problems.append(f"{path}: Invalid value: must specify one of: `resourceClaimName`, "
                            "`resourceClaimTemplateName`")
    return problems
