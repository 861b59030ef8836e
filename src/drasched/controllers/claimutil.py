"""The claim controller's own rules about pods, PodGroups and their claims (no I/O).

Claim name generation, why a pod is done, the ``reservedFor`` entry of a consumer and the
checks of a PodGroup's ``spec.resourceClaims``. The rules the scheduler and the kubelet
share with the controller (which claim an entry uses, group entries, reservations) live in
:mod:`drasched.dra.claimrules`, a layer below all three; they are re-exported here so the
controller imports its rules from one place. Upstream reference:
``pkg/controller/resourceclaim/controller.go`` (name generation, isPodDone).
"""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.meta import controller_uid
from drasched.api.resource import FINALIZER, RESERVED_FOR_MAX_SIZE
from drasched.api.validation import check_label
from drasched.dra.claimrules import (
    POD_CLAIM_ANNOTATION,
    POD_GROUP_LABEL,
    PODGROUP_CLAIM_ANNOTATION,
    ClaimNotCreated,
    group_entry_for,
    is_allocated,
    is_reserved_for,
    owned_by,
    pod_claim_name,
    pod_group_name,
    pod_is_done,
    reserved_for,
    scheduling_group_name,
    status_claim_names,
)

__all__ = [
    "DELETE_PROTECTION_FINALIZER",
    "GROUP_CLAIM_FINALIZER",
    "MAX_GENERATE_NAME_BASE",
    "MAX_GROUP_CLAIMS",
    "MAX_RESERVED_FOR",
    "PODGROUP_CLAIM_ANNOTATION",
    "PODGROUP_CONSUMER_GROUP",
    "PODGROUP_CONSUMER_RESOURCE",
    "POD_CLAIM_ANNOTATION",
    "POD_GROUP_LABEL",
    "UPSTREAM_GROUP_API",
    "ClaimNotCreated",
    "consumer_ref",
    "controller_owner_uid",
    "done_reason",
    "generate_name",
    "group_claim_problems",
    "group_entry_for",
    "is_allocated",
    "is_group_ref",
    "is_pod_ref",
    "is_reserved_for",
    "is_upstream_group",
    "is_upstream_group_owner",
    "is_upstream_group_ref",
    "owned_by",
    "pod_claim_name",
    "pod_group_name",
    "pod_is_done",
    "reserved_for",
    "status_claim_names",
    "upstream_group_name",
]

Obj = dict[str, Any]

DELETE_PROTECTION_FINALIZER = FINALIZER
"""Set by the binder on an allocated claim; removed here once the claim is deallocated."""

GROUP_CLAIM_FINALIZER = "scheduling.drasched.io/claim-protection"
"""On a PodGroup while it holds an allocated claim, so its reservation cannot vanish early."""

MAX_GROUP_CLAIMS = 4
"""A PodGroup lists at most this many claims."""

MAX_RESERVED_FOR = RESERVED_FOR_MAX_SIZE

MAX_GENERATE_NAME_BASE = 57
"""Room for 5 random characters and a hyphen in a 63-character name (upstream ``maxBaseLen``)."""

PODGROUP_CONSUMER_GROUP = kinds.DRASCHED
PODGROUP_CONSUMER_RESOURCE = kinds.POD_GROUP.plural

UPSTREAM_GROUP_API = kinds.UPSTREAM_POD_GROUP.group
"""The upstream gang API's group (``scheduling.k8s.io``): its PodGroup, v1beta1 on 1.37 and
v1alpha2 on 1.36, is a claim owner and consumer of its own (KEP-5729)."""


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


def done_reason(pod: Obj) -> str:
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return f"pod {phase}"
    return "pod deleted before it was scheduled"


controller_owner_uid = controller_uid


def consumer_ref(obj: Obj) -> Obj:
    """The ``reservedFor`` entry for a pod or a PodGroup (drasched's or the upstream one)."""
    md = obj.get("metadata") or {}
    if obj.get("kind") == "Pod":
        return {"resource": "pods", "name": md.get("name"), "uid": md.get("uid")}
    if is_upstream_group(obj):  # upstream resourceclaim.BindTo
        return {"apiGroup": UPSTREAM_GROUP_API, "resource": "podgroups", "name": md.get("name"), "uid": md.get("uid")}
    rt = kinds.for_object(obj)
    return {"apiGroup": rt.group, "resource": rt.plural, "name": md.get("name"), "uid": md.get("uid")}


def is_pod_ref(ref: Obj) -> bool:
    return not ref.get("apiGroup") and ref.get("resource") == "pods"


def is_group_ref(ref: Obj) -> bool:
    """A ``reservedFor`` entry naming a drasched PodGroup."""
    return ref.get("apiGroup") == PODGROUP_CONSUMER_GROUP and ref.get("resource") == PODGROUP_CONSUMER_RESOURCE


def is_upstream_group_ref(ref: Obj) -> bool:
    """A ``reservedFor`` entry naming an upstream PodGroup (upstream ``isPodGroupClaim``)."""
    return ref.get("apiGroup") == UPSTREAM_GROUP_API and ref.get("resource") == "podgroups"


def is_upstream_group(obj: Obj) -> bool:
    """An upstream ``scheduling.k8s.io`` PodGroup, in whichever version the server serves."""
    return obj.get("kind") == "PodGroup" and str(obj.get("apiVersion", "")).startswith(UPSTREAM_GROUP_API + "/")


def is_upstream_group_owner(ref: Obj) -> bool:
    """An ownerReference naming an upstream PodGroup (upstream ``claimPodGroupOwnerIndexFunc``)."""
    return is_upstream_group(ref)


upstream_group_name = scheduling_group_name
"""The upstream PodGroup a pod joins (``spec.schedulingGroup.podGroupName``), or None."""


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
