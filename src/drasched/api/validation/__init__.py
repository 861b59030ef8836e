"""Object validation in the API server's words (field path + reason).

One module per API group's rules (``core``, ``resource``, ...), all reached through
``validate`` / ``validate_update``; the real API server remains the authority in a cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drasched.api import kinds
from drasched.api.errors import Cause, Invalid, invalid
from drasched.api.kinds import ResourceType
from drasched.api.validation import (
    core,
    crds,
    gang,
    node,
    policy,
    resource,
    scheduling,
    slices,
    taintrules,
    workloads,
)
from drasched.api.validation.metadata import validate_metadata
from drasched.api.validation.names import (
    LABEL_MSG,
    SUBDOMAIN_MSG,
    check_label,
    check_subdomain,
    qualified_kind,
)

Obj = dict[str, Any]

_BY_TYPE: dict[ResourceType, Callable[[Obj], list[Cause]]] = {
    kinds.POD: core.validate_pod,
    kinds.RESOURCE_CLAIM: resource.validate_claim,
    kinds.RESOURCE_CLAIM_TEMPLATE: resource.validate_claim_template,
    kinds.DEVICE_CLASS: resource.validate_device_class,
    kinds.RESOURCE_SLICE: slices.validate_slice,
    kinds.DEVICE_TAINT_RULE: taintrules.validate_taint_rule,
    kinds.NODE: core.validate_node,
    **workloads.validators(),
    kinds.PRIORITY_CLASS: scheduling.validate_priority_class,
    kinds.RUNTIME_CLASS: node.validate_runtime_class,
    kinds.POD_GROUP: crds.validate_pod_group,
    kinds.UPSTREAM_WORKLOAD: gang.validate_workload,
    kinds.UPSTREAM_POD_GROUP: gang.validate_pod_group,
    kinds.POD_DISRUPTION_BUDGET: policy.validate_pod_disruption_budget,
}
_GANG_UPDATES: dict[ResourceType, Callable[[Obj, Obj], list[Cause]]] = {
    kinds.UPSTREAM_WORKLOAD: gang.validate_workload_update,
    kinds.UPSTREAM_POD_GROUP: gang.validate_pod_group_update,
}
_STATUS_BY_TYPE: dict[ResourceType, Callable[[Obj], list[Cause]]] = {
    kinds.RESOURCE_CLAIM: resource.validate_claim_status,
    kinds.DEVICE_TAINT_RULE: taintrules.validate_taint_rule_status,
}


def validate(obj: Obj, rt: ResourceType) -> None:
    """Raise ``Invalid`` naming every bad field of ``obj``, as the API server would."""
    causes = validate_metadata(obj, rt)
    extra = _BY_TYPE.get(rt)
    if extra is not None and isinstance(obj.get("spec"), dict | None):
        causes += extra(obj)
    elif extra is not None:
        causes.append(Cause("spec", "Invalid value: must be an object"))
    if causes:
        md = obj.get("metadata") or {}
        raise invalid(qualified_kind(rt), md.get("name") or md.get("generateName", ""), causes)


def validate_status(obj: Obj, rt: ResourceType) -> None:
    """Rules of a status write (the status subresource validates status alone)."""
    check = _STATUS_BY_TYPE.get(rt)
    causes = check(obj) if check is not None else []
    if causes:
        md = obj.get("metadata") or {}
        raise invalid(qualified_kind(rt), md.get("name", ""), causes)


def validate_status_update(old: Obj, new: Obj, rt: ResourceType) -> None:
    """Rules of a status write that compare it with the stored object (fields set once)."""
    causes = resource.validate_claim_status_update(old, new) if rt is kinds.RESOURCE_CLAIM else []
    if causes:
        raise invalid(qualified_kind(rt), (old.get("metadata") or {}).get("name", ""), causes)


def validate_update(old: Obj, new: Obj, rt: ResourceType) -> None:
    """Rules that only apply to updates: immutable fields."""
    if rt is kinds.RESOURCE_CLAIM and old.get("spec") != new.get("spec"):
        raise invalid(qualified_kind(rt), old["metadata"]["name"],
                      [Cause("spec", "Invalid value: field is immutable")])
    gang_rule = _GANG_UPDATES.get(rt)
    if gang_rule is not None and (causes := gang_rule(old, new)):
        raise invalid(qualified_kind(rt), old["metadata"]["name"], causes)
    if rt is kinds.RUNTIME_CLASS and (causes := node.validate_runtime_class_update(old, new)):
        raise invalid(qualified_kind(rt), old["metadata"]["name"], causes)
    if rt is kinds.POD:
        old_node = (old.get("spec") or {}).get("nodeName")
        if old_node and (new.get("spec") or {}).get("nodeName") != old_node:
            raise invalid(qualified_kind(rt), old["metadata"]["name"],
                          [Cause("spec", "Forbidden: pod updates may not change fields other than "
                                         "`spec.containers[*].image`, ...", "FieldValueForbidden")])


__all__ = [
    "LABEL_MSG",
    "SUBDOMAIN_MSG",
    "Invalid",
    "check_label",
    "check_subdomain",
    "qualified_kind",
    "validate",
    "validate_status",
    "validate_status_update",
    "validate_update",
]
