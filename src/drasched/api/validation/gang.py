"""The upstream gang API's value rules: ``scheduling.k8s.io/v1beta1`` Workload and PodGroup
(Kubernetes 1.37), as kube-apiserver v1.37.2 words them with its default feature gates.

Most of these are declarative in 1.37 (``+k8s:unionMember``, ``+k8s:maxItems``,
``+k8s:listType=map``, ``+k8s:minimum`` tags in ``k8s.io/api/scheduling/v1beta1``) and the rest
is ``pkg/apis/scheduling/validation``. The words, the field paths and their order were read off
the server itself (``tests/contract/test_gang_validation_contract.py`` runs every rule on both
stores): a list's size first (and nothing inside a list that is too long), then its duplicate
keys, then each item, a struct's one-of before its fields, fields in the type's order.

With the default gates of 1.37 the server drops ``compositePodGroupTemplates``,
``parentCompositePodGroupName`` and ``preemptionPolicy``: a Workload of composite templates
only has no templates at all, as the server says. drasched keeps those fields and warns that
they mean nothing to it (:mod:`drasched.api.foreign`).

The v1alpha2 kinds of 1.36 are not checked here: no 1.36 server was at hand to read its words
from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.names import (
    as_list,
    bad,
    check_label,
    check_qualified_name,
    check_subdomain,
    duplicate,
    required,
    too_many,
)

Obj = dict[str, Any]

MAX_TEMPLATES = 8
"""``WorkloadMaxPodGroupTemplates``: podGroupTemplates per Workload."""
MAX_TOPOLOGY_CONSTRAINTS = 1
MAX_GROUP_CLAIMS = 4
"""``+k8s:maxItems=4`` on a PodGroup's (and a template's) resourceClaims."""
MAX_PRIORITY = 1_000_000_000
"""``+k8s:maximum``: a PodGroup may not take a system class's priority."""


def _set(value: Any) -> bool:
    """A union member counts as given when it is a JSON object (``null`` is unset)."""
    return value is not None


def _one_of(path: str, obj: Obj, members: tuple[str, ...]) -> list[Cause]:
    """``+k8s:unionMember``: exactly one of ``members``, named in the type's order."""
    given = [m for m in members if _set(obj.get(m))]
    listed = ", ".join(f"`{m}`" for m in members)
    if not given:
        return [bad(path, "", f"must specify one of: {listed}")]
    if len(given) > 1:
        return [bad(path, "{" + ", ".join(given) + "}", f"must specify exactly one of: {listed}")]
    return []


def _ordered(obj: Obj, fields: tuple[str, ...], always: tuple[str, ...] = (),
             nested: dict[str, Callable[[Any], Any]] | None = None) -> Obj:
    """``obj`` with its keys in the Go type's order, as the server prints a duplicate: the
    fields in ``always`` printed even when unset (``null``: not ``omitempty``)."""
    out: Obj = {}
    for f in fields:
        if f in obj and obj[f] is not None:
            value = obj[f]
            out[f] = (nested or {}).get(f, lambda v: v)(value)
        elif f in always:
            out[f] = None
    return out


def _claim_json(claim: Obj) -> Obj:
    return _ordered(claim, ("name", "resourceClaimName", "resourceClaimTemplateName"))


def _policy_json(policy: Any) -> Any:
    return _ordered(policy, ("basic", "gang")) if isinstance(policy, dict) else policy


def _claims_json(claims: Any) -> Any:
    return [_claim_json(c) if isinstance(c, dict) else c for c in as_list(claims)]


def _disruption_json(mode: Any) -> Any:
    return _ordered(mode, ("single", "all")) if isinstance(mode, dict) else mode


def _template_json(template: Obj) -> Obj:
    return _ordered(template, ("name", "schedulingPolicy", "schedulingConstraints", "resourceClaims",
                               "disruptionMode", "priorityClassName", "priority"),
                    always=("schedulingConstraints",),
                    nested={"schedulingPolicy": _policy_json, "resourceClaims": _claims_json,
                            "disruptionMode": _disruption_json})


def _list_of_named(path: str, items: Any, limit: int, as_json: Callable[[Obj], Obj],
                   each: Callable[[str, Obj], list[Cause]]) -> list[Cause]:
    """A ``listType=map`` list keyed by name: too many (nothing else then), duplicates, items."""
    values = as_list(items)
    if len(values) > limit:
        return [too_many(path, len(values), limit)]
    causes: list[Cause] = []
    seen: set[Any] = set()
    for i, item in enumerate(values):
        if isinstance(item, dict):
            name = item.get("name")
            if name in seen:
                causes.append(duplicate(f"{path}[{i}]", as_json(item)))
            seen.add(name)
    for i, item in enumerate(values):
        if isinstance(item, dict):
            causes += each(f"{path}[{i}]", item)
    return causes


def _scheduling_policy(path: str, policy: Any) -> list[Cause]:
    policy = policy if isinstance(policy, dict) else {}
    causes = _one_of(path, policy, ("basic", "gang"))
    gang = policy.get("gang")
    if isinstance(gang, dict):
        count = gang.get("minCount")
        if not count:
            causes.append(required(f"{path}.gang.minCount"))
        elif isinstance(count, int) and count < 1:
            causes.append(bad(f"{path}.gang.minCount", count, "must be greater than or equal to 1"))
    return causes


def _constraints(path: str, constraints: Any) -> list[Cause]:
    if not isinstance(constraints, dict):
        return []
    topology = as_list(constraints.get("topology"))
    if len(topology) > MAX_TOPOLOGY_CONSTRAINTS:
        return [too_many(f"{path}.topology", len(topology), MAX_TOPOLOGY_CONSTRAINTS)]
    causes: list[Cause] = []
    for i, t in enumerate(topology):
        key = t.get("key") if isinstance(t, dict) else None
        where = f"{path}.topology[{i}].key"
        causes += [required(where)] if not key else check_qualified_name(where, str(key))
    return causes


def _claim(path: str, claim: Obj) -> list[Cause]:
    causes = _one_of(path, claim, ("resourceClaimName", "resourceClaimTemplateName"))
    causes += check_label(f"{path}.name", claim.get("name"))
    for source in ("resourceClaimName", "resourceClaimTemplateName"):
        if claim.get(source) is not None:
            causes += check_subdomain(f"{path}.{source}", claim[source])
    return causes


def _claims(path: str, claims: Any) -> list[Cause]:
    return _list_of_named(path, claims, MAX_GROUP_CLAIMS, _claim_json, _claim)


def _disruption_mode(path: str, mode: Any) -> list[Cause]:
    return _one_of(path, mode, ("single", "all")) if isinstance(mode, dict) else []


def _template(path: str, t: Obj) -> list[Cause]:
    causes = check_label(f"{path}.name", t.get("name"))
    causes += _scheduling_policy(f"{path}.schedulingPolicy", t.get("schedulingPolicy"))
    causes += _constraints(f"{path}.schedulingConstraints", t.get("schedulingConstraints"))
    causes += _claims(f"{path}.resourceClaims", t.get("resourceClaims"))
    causes += _disruption_mode(f"{path}.disruptionMode", t.get("disruptionMode"))
    if t.get("priorityClassName"):
        causes += check_subdomain(f"{path}.priorityClassName", t["priorityClassName"])
    return causes


def _controller_ref(path: str, ref: Any) -> list[Cause]:
    if not isinstance(ref, dict):
        return []
    causes: list[Cause] = []
    if ref.get("apiGroup"):
        causes += check_subdomain(f"{path}.apiGroup", ref["apiGroup"])
    for f in ("kind", "name"):  # path segment names
        value = ref.get(f)
        if not value:
            causes.append(required(f"{path}.{f}"))
        elif isinstance(value, str) and "/" in value:
            causes.append(bad(f"{path}.{f}", value, "may not contain '/'"))
    return causes


def _spec(obj: Obj) -> Obj:
    """The spec, or Go's zero spec for one that is absent (validated all the same)."""
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def validate_workload(obj: Obj) -> list[Cause]:
    """A v1beta1 Workload's spec (``ValidateWorkload``; its metadata is checked by the caller)."""
    spec = _spec(obj)
    templates = as_list(spec.get("podGroupTemplates"))
    causes: list[Cause] = []
    # the handwritten rule (validateWorkloadPriority: one priority for the whole workload) is said
    # before the declarative ones
    priorities = {(t.get("priorityClassName") or "", t.get("priority")) for t in templates if isinstance(t, dict)}
    if len(priorities) > 1:
        causes.append(bad("spec", None, "detected multiple priority configurations"))
    causes += _controller_ref("spec.controllerRef", spec.get("controllerRef"))
    if not templates:  # compositePodGroupTemplates alone: dropped by the server with its gate off
        causes.append(bad("spec", "", "must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`"))
        return causes
    causes += _list_of_named("spec.podGroupTemplates", templates, MAX_TEMPLATES, _template_json, _template)
    return causes


def validate_pod_group(obj: Obj) -> list[Cause]:
    """A v1beta1 PodGroup's spec, after the Priority admission plugin set ``spec.priority``."""
    spec = _spec(obj)
    causes: list[Cause] = []
    ref = spec.get("workloadRef")
    if isinstance(ref, dict):
        causes += check_subdomain("spec.workloadRef.workloadName", ref.get("workloadName"))
        causes += check_label("spec.workloadRef.templateName", ref.get("templateName"))
    causes += _scheduling_policy("spec.schedulingPolicy", spec.get("schedulingPolicy"))
    causes += _constraints("spec.schedulingConstraints", spec.get("schedulingConstraints"))
    causes += _claims("spec.resourceClaims", spec.get("resourceClaims"))
    causes += _disruption_mode("spec.disruptionMode", spec.get("disruptionMode"))
    priority = spec.get("priority")
    if isinstance(priority, int) and priority > MAX_PRIORITY:
        causes.append(bad("spec.priority", priority, f"must be less than or equal to {MAX_PRIORITY}"))
    return causes


# ---- updates: what may change once the object exists ------------------------------------------


def _immutable(path: str) -> Cause:
    """``+k8s:immutable``, in the declarative validator's words (the value is never printed)."""
    return bad(path, None, "field is immutable")


def _policy_update(path: str, old: Any, new: Any) -> list[Cause]:
    """``basic`` may not change; ``gang`` may neither appear nor go (its minCount may change)."""
    old = old if isinstance(old, dict) else {}
    new = new if isinstance(new, dict) else {}
    causes: list[Cause] = []
    if old.get("basic") != new.get("basic"):
        causes.append(_immutable(f"{path}.basic"))
    if _set(old.get("gang")) and not _set(new.get("gang")):
        causes.append(bad(f"{path}.gang", None, "field cannot be cleared once set"))
    elif not _set(old.get("gang")) and _set(new.get("gang")):
        causes.append(bad(f"{path}.gang", None, "field cannot be set once created"))
    return causes


def _unchanged(path: str, old: Obj, new: Obj, fields: tuple[str, ...]) -> list[Cause]:
    return [_immutable(f"{path}.{f}") for f in fields if old.get(f) != new.get(f)]


_TEMPLATE_IMMUTABLE = ("schedulingConstraints", "resourceClaims", "disruptionMode", "priorityClassName", "priority")
_GROUP_IMMUTABLE = ("workloadRef", "schedulingConstraints", "resourceClaims", "disruptionMode", "priorityClassName",
                    "priority")


def validate_workload_update(old: Obj, new: Obj) -> list[Cause]:
    """A Workload's templates are fixed once created: none added or removed (matched by name),
    and of each only the gang's ``minCount`` may change; ``controllerRef`` is immutable."""
    old_spec, new_spec = _spec(old), _spec(new)
    causes = [_immutable("spec.controllerRef")] if old_spec.get("controllerRef") != new_spec.get(
        "controllerRef") else []
    old_templates = {t.get("name"): t for t in as_list(old_spec.get("podGroupTemplates")) if isinstance(t, dict)}
    new_templates = as_list(new_spec.get("podGroupTemplates"))
    new_names = {t.get("name") for t in new_templates if isinstance(t, dict)}
    changed: list[Cause] = []
    for i, t in enumerate(new_templates):
        if not isinstance(t, dict):
            continue
        before = old_templates.get(t.get("name"))
        path = f"spec.podGroupTemplates[{i}]"
        if before is None:
            causes.append(Cause(path, "Forbidden: item may not be added", "FieldValueForbidden"))
            continue
        changed += _policy_update(f"{path}.schedulingPolicy", before.get("schedulingPolicy"),
                                  t.get("schedulingPolicy"))
        changed += _unchanged(path, before, t, _TEMPLATE_IMMUTABLE)
    if any(name not in new_names for name in old_templates):
        causes.append(Cause("spec.podGroupTemplates", "Forbidden: item may not be removed", "FieldValueForbidden"))
    return causes + changed


def validate_pod_group_update(old: Obj, new: Obj) -> list[Cause]:
    """A PodGroup keeps its template reference, constraints, claims, disruption mode and priority;
    its policy may not switch between basic and gang (the gang's ``minCount`` may change)."""
    old_spec, new_spec = _spec(old), _spec(new)
    causes = _unchanged("spec", old_spec, new_spec, _GROUP_IMMUTABLE[:1])
    causes += _policy_update("spec.schedulingPolicy", old_spec.get("schedulingPolicy"),
                             new_spec.get("schedulingPolicy"))
    return causes + _unchanged("spec", old_spec, new_spec, _GROUP_IMMUTABLE[1:])


def default_pod_group(obj: Obj) -> None:
    """``disruptionMode`` is ``{single: {}}`` when unset (the v1beta1 type's default)."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("disruptionMode") is None:
        spec["disruptionMode"] = {"single": {}}
