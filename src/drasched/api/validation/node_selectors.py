"""Node selectors (pkg/apis/core/validation ``ValidateNodeSelector``), shared by a pod's node
affinity, a ResourceSlice's ``nodeSelector`` and a claim allocation's ``nodeSelector``."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.names import (
    as_list,
    bad,
    check_label_value,
    check_qualified_name,
    dict_items,
    forbidden,
    subdomain_errors,
)

Obj = dict[str, Any]


def _required(field: str, detail: str) -> Cause:
    return Cause(field, f"Required value: {detail}", "FieldValueRequired")


def check_requirement(req: Obj, path: str) -> list[Cause]:
    """``ValidateNodeSelectorRequirement``: operator and value count, a qualified key, label values."""
    op, values = req.get("operator") or "", as_list(req.get("values"))
    causes: list[Cause] = []
    if op in ("In", "NotIn"):
        if not values:
            causes.append(_required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            causes.append(forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or "
                                                      "'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            causes.append(_required(f"{path}.values", "must be specified single value when `operator` is 'Lt' "
                                                      "or 'Gt'"))
    else:
        causes.append(bad(f"{path}.operator", op, "not a valid selector operator"))
    causes += check_qualified_name(f"{path}.key", req.get("key") or "")
    for i, value in enumerate(values):
        if isinstance(value, str):
            causes += check_label_value(f"{path}.values[{i}]", value)
    return causes


def check_field_requirement(req: Obj, path: str) -> list[Cause]:
    """``ValidateNodeFieldSelectorRequirement``: only ``metadata.name``, one node name."""
    op, values = req.get("operator") or "", as_list(req.get("values"))
    causes: list[Cause] = []
    if op in ("In", "NotIn"):
        if len(values) != 1:
            causes.append(_required(f"{path}.values", "must be only one value when `operator` is 'In' or 'NotIn' "
                                                      "for node field selector"))
    else:
        causes.append(bad(f"{path}.operator", op, "not a valid selector operator"))
    if req.get("key") != "metadata.name":
        causes.append(bad(f"{path}.key", req.get("key") or "", "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            if isinstance(value, str):
                causes += [bad(f"{path}.values[{i}]", value, msg) for msg in subdomain_errors(value)]
    return causes


def check_term(term: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for j, req in dict_items(term.get("matchExpressions")):
        causes += check_requirement(req, f"{path}.matchExpressions[{j}]")
    for j, req in dict_items(term.get("matchFields")):
        causes += check_field_requirement(req, f"{path}.matchFields[{j}]")
    return causes


def check_node_selector(selector: Any, path: str) -> list[Cause]:
    if not isinstance(selector, dict):
        return []
    terms = as_list(selector.get("nodeSelectorTerms"))
    if not terms:
        return [_required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    return [c for i, term in dict_items(terms) for c in check_term(term, f"{path}.nodeSelectorTerms[{i}]")]


def check_node_affinity(affinity: Any, path: str) -> list[Cause]:
    """A pod's ``affinity.nodeAffinity``: the required selector and the weighted preferences."""
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if not isinstance(node_affinity, dict):
        return []
    path = f"{path}.nodeAffinity"
    causes = check_node_selector(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"),
                                 f"{path}.requiredDuringSchedulingIgnoredDuringExecution")
    preferred = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in dict_items(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        weight = term.get("weight")
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            causes.append(bad(f"{preferred}[{i}].weight", weight if weight is not None else 0,
                              "must be in the range 1-100"))
        if isinstance(term.get("preference"), dict):
            causes += check_term(term["preference"], f"{preferred}[{i}].preference")
    return causes
