"""Core (v1) kinds' rules, from pkg/apis/core/validation/validation.go."""

from __future__ import annotations

import json
from typing import Any

from drasched.api import pod_resources
from drasched.api.errors import Cause
from drasched.api.validation.metadata import check_labels
from drasched.api.validation.names import (
    bad,
    check_label,
    check_label_value,
    check_qualified_name,
    check_subdomain,
    dict_items,
    duplicate,
    forbidden,
    not_supported,
    required,
    subdomain_errors,
)
from drasched.api.validation.node_selectors import check_node_affinity
from drasched.api.validation.resource import is_extended_resource_name
from drasched.quantity import Quantity, QuantityError

Obj = dict[str, Any]

NODE_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
TOLERATION_OPERATORS = ["Equal", "Exists"]
PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]
RESTART_POLICIES = ["Always", "OnFailure", "Never"]


def _overcommit_allowed(resource: str) -> bool:
    """``helper.IsOvercommitAllowed``: native resources other than hugepages."""
    native = "/" not in resource or resource.startswith("kubernetes.io/") or ".kubernetes.io/" in resource
    return native and not resource.startswith("hugepages-")


def _quantity(value: Any) -> Quantity | None:
    """A parsed quantity, or None for what the decoder (not validation) refuses."""
    try:
        return Quantity.parse(value) if isinstance(value, str | int | float) else None
    except QuantityError:
        return None


def _whole(q: Quantity) -> bool:
    """Upstream's integer check, ``value.MilliValue() % 1000 == 0``, in Go's int64: a milli-value
    beyond int64 wraps around (``int64Multiply``, ``big.Int.Int64``) before the remainder is taken."""
    wrapped = (q.milli_value() + (1 << 63)) % (1 << 64) - (1 << 63)
    return wrapped % 1000 == 0


def check_resource_requirements(path: str, resources: Obj) -> list[Cause]:
    """``ValidateContainerResourceRequirements``: non-negative, requests within limits."""
    causes: list[Cause] = []
    limits: Obj = resources["limits"] if isinstance(resources.get("limits"), dict) else {}
    requests: Obj = resources["requests"] if isinstance(resources.get("requests"), dict) else {}
    for kind, values in (("limits", limits), ("requests", requests)):
        for name in sorted(values):
            q = _quantity(values[name])
            if q is not None and q.sign() < 0:
                causes.append(bad(f"{path}.{kind}[{name}]", str(q), "must be greater than or equal to 0"))
            elif q is not None and not _overcommit_allowed(name) and not _whole(q):
                causes.append(bad(f"{path}.{kind}[{name}]", str(q), "must be an integer"))
    for name in sorted(requests):
        req = _quantity(requests[name])
        if req is None:
            continue
        if name not in limits:
            if not _overcommit_allowed(name):
                causes.append(Cause(f"{path}.limits", "Required value: Limit must be set for non overcommitable "
                                                      "resources", "FieldValueRequired"))
            continue
        lim = _quantity(limits[name])
        if lim is None:
            continue
        if not _overcommit_allowed(name) and (req - lim).sign() != 0:
            causes.append(bad(f"{path}.requests", str(req),
                              f"must be equal to {name} limit of {lim}"))
        elif (req - lim).sign() > 0:
            causes.append(bad(f"{path}.requests", str(req),
                              f"must be less than or equal to {name} limit of {lim}"))
    return causes


def _check_pod_resources(spec: Obj, spec_path: str) -> list[Cause]:
    """``validatePodResources`` (PodLevelResources, on by default since 1.34): pod-level
    ``spec.resources`` names cpu, memory or hugepages only, no claims, requests within limits;
    then ``validatePodResourceConsistency``: the pod's requests cover the containers' aggregate
    requests, its hugepage limits their aggregate limits, and no container's limit exceeds the pod's."""
    resources = spec.get("resources")
    if not isinstance(resources, dict):
        return []
    path = f"{spec_path}.resources"
    if isinstance(spec.get("os"), dict) and spec["os"].get("name") == "windows":
        return [forbidden(path, "may not be set for a windows pod")]
    causes: list[Cause] = []
    if resources.get("claims") is not None:
        causes.append(forbidden(f"{path}.claims", "claims may not be set for Resources at pod-level"))
    for kind in ("limits", "requests"):
        values = resources.get(kind)
        for name in sorted(values) if isinstance(values, dict) else ():
            field = f"{path}.{kind}[{name}]"
            name_errors = check_qualified_name(field, name)
            causes += name_errors
            if not name_errors and not pod_resources.is_supported(name):
                causes.append(not_supported(field, name, list(pod_resources.SUPPORTED_NAMES)))
    causes += check_resource_requirements(path, resources)
    requests: Obj = resources["requests"] if isinstance(resources.get("requests"), dict) else {}
    limits: Obj = resources["limits"] if isinstance(resources.get("limits"), dict) else {}
    for name, aggregate in sorted(pod_resources.aggregate(spec, "requests").items()):
        pod_req = _quantity(requests.get(name)) if name in requests else None
        if pod_req is not None and aggregate > pod_req:
            causes.append(bad(f"{path}.requests[{name}]", str(pod_req),
                              f"must be greater than or equal to aggregate container requests of {aggregate}"))
    for name, aggregate in sorted(pod_resources.aggregate(spec, "limits").items()):
        pod_lim = _quantity(limits.get(name)) if name in limits else None
        if name.startswith(pod_resources.HUGEPAGES_PREFIX) and pod_lim is not None and aggregate > pod_lim:
            causes.append(bad(f"{path}.limits[{name}]", str(pod_lim),
                              f"must be greater than or equal to aggregate container limits of {aggregate}"))
    for i, c in dict_items(spec.get("containers")):
        res = c.get("resources")
        raw_limits = res.get("limits") if isinstance(res, dict) else None
        ctr_limits: Obj = raw_limits if isinstance(raw_limits, dict) else {}
        for name in sorted(ctr_limits):
            lim = _quantity(ctr_limits[name])
            pod_lim = _quantity(limits[name]) if name in limits else None
            if lim is not None and pod_lim is not None and lim > pod_lim:
                # upstream's path, as it builds it: fldPath.Child("containers").Index(i).Key(name).Child("limits")
                causes.append(bad(f"{path}.containers[{i}][{name}].limits", str(lim),
                                  f"must be less than or equal to pod limits of {pod_lim}"))
    return causes


def _check_container_claims(path: str, claims: Any, pod_claims: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, claim in dict_items(claims):
        name = claim.get("name")
        if not name:
            causes.append(required(f"{path}[{i}]"))
            continue
        key = f"{name}/{claim['request']}" if claim.get("request") else str(name)
        if key in seen:
            causes.append(duplicate(f"{path}[{i}]", key))
        seen.add(key)
        if name not in pod_claims:
            known = ": " + ", ".join(sorted(pod_claims)) if pod_claims else " which is empty"
            causes.append(Cause(f"{path}[{i}]", f'Not found: "{name}": must be one of the names in '
                                                f"pod.spec.resourceClaims{known}", "FieldValueNotFound"))
    return causes


def check_toleration(path: str, tol: Obj) -> list[Cause]:
    causes: list[Cause] = []
    key, op, value = tol.get("key") or "", tol.get("operator") or "", tol.get("value") or ""
    if key:
        causes += check_qualified_name(f"{path}.key", key)
    elif op != "Exists":
        causes.append(bad(f"{path}.operator", op, 'operator must be Exists when `key` is empty, which means '
                                                  '"match all values and all keys"'))
    effect = tol.get("effect") or ""
    if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
        causes.append(bad(f"{path}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if op in ("Equal", ""):
        errs = [c.message.split(": ", 2)[-1] for c in check_label_value(f"{path}.operator", value)]
        if errs:
            causes.append(bad(f"{path}.operator", value, ";".join(errs)))
    elif op == "Exists":
        if value:
            causes.append(bad(f"{path}.operator", value, "value must be empty when `operator` is 'Exists'"))
    elif op in ("Lt", "Gt"):
        # v1.37.2 ValidateTolerations (pkg/apis/core/validation/validation.go) with the alpha
        # TaintTolerationComparisonOperators gate off, the default: NotSupported listing Lt and Gt
        # among the valid values, so the server's message names the refused operator as supported.
        causes.append(not_supported(f"{path}.operator", op, [*TOLERATION_OPERATORS, "Lt", "Gt"]))
    else:
        causes.append(not_supported(f"{path}.operator", op, TOLERATION_OPERATORS))
    if effect and effect not in NODE_TAINT_EFFECTS:
        causes.append(not_supported(f"{path}.effect", effect, NODE_TAINT_EFFECTS))
    return causes


def _check_pod_claims(spec: Obj, spec_path: str) -> tuple[list[Cause], set[str]]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, rc in dict_items(spec.get("resourceClaims")):
        path = f"{spec_path}.resourceClaims[{i}]"
        name = rc.get("name")
        if not name:
            causes.append(required(f"{path}.name"))
        elif name in names:
            causes.append(duplicate(f"{path}.name", name))
        else:
            causes += check_label(f"{path}.name", name)
            names.add(name)
        claim_name, template_name = rc.get("resourceClaimName"), rc.get("resourceClaimTemplateName")
        shown = _go_pod_resource_claim(rc)
        if claim_name is not None and template_name is not None:
            causes.append(Cause(path, f"Invalid value: {shown}: at most one of `resourceClaimName` or "
                                      "`resourceClaimTemplateName` may be specified"))
        if claim_name is None and template_name is None:
            causes.append(Cause(path, f"Invalid value: {shown}: must specify one of: `resourceClaimName`, "
                                      "`resourceClaimTemplateName`"))
        for key, value in (("resourceClaimName", claim_name), ("resourceClaimTemplateName", template_name)):
            if isinstance(value, str):
                causes += [bad(f"{path}.{key}", value, msg) for msg in subdomain_errors(value)]
    return causes, names


def _go_pod_resource_claim(rc: Obj) -> str:
    """How upstream prints the claim in the error: the internal struct as JSON, Go field names."""
    fields = {"Name": rc.get("name") or "", "ResourceClaimName": rc.get("resourceClaimName"),
              "ResourceClaimTemplateName": rc.get("resourceClaimTemplateName")}
    return json.dumps(fields, separators=(",", ":"))


def validate_pod(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    return check_pod_spec(spec if isinstance(spec, dict) else {}, "spec")


def _check_scheduling_group(group: Any, path: str) -> list[Cause]:
    """The workload-aware scheduling API (1.36 GenericWorkload): a group names its PodGroup."""
    if not isinstance(group, dict):
        return []
    pod_group = group.get("podGroupName")
    if pod_group is None:
        return [bad(path, None, "must specify one of: `podGroupName`")]
    return [bad(path, pod_group, msg) for msg in subdomain_errors(str(pod_group))]


def _check_volume_mounts(path: str, mounts: Any) -> list[Cause]:
    """``ValidateVolumeMounts``'s name and path rules: both required, a path mounted once.
    (Whether the name matches a volume is not checked: a StatefulSet's mounts may name its
    volumeClaimTemplates.)"""
    causes: list[Cause] = []
    paths: set[str] = set()
    for i, m in dict_items(mounts):
        if not m.get("name"):
            causes.append(required(f"{path}[{i}].name"))
        mount_path = m.get("mountPath")
        if not mount_path:
            causes.append(required(f"{path}[{i}].mountPath"))
        elif mount_path in paths:
            causes.append(bad(f"{path}[{i}].mountPath", mount_path, "must be unique"))
        else:
            paths.add(str(mount_path))
    return causes


def check_pod_spec(spec: Obj, spec_path: str) -> list[Cause]:
    """``ValidatePodSpec``'s rules drasched enforces, for a pod or a workload's pod template."""
    causes, pod_claims = _check_pod_claims(spec, spec_path)
    if not spec.get("containers"):
        causes.append(required(f"{spec_path}.containers"))
    if spec.get("ephemeralContainers"):  # added to a running pod only, through its own subresource
        causes.append(forbidden(f"{spec_path}.ephemeralContainers", "cannot be set on create" if spec_path == "spec"
                                else "ephemeral containers not allowed in pod template"))
    seen: set[Any] = set()
    for group in ("initContainers", "containers"):
        for i, c in dict_items(spec.get(group)):
            path = f"{spec_path}.{group}[{i}]"
            causes += check_label(f"{path}.name", c.get("name"))
            if c.get("name") in seen:
                causes.append(duplicate(f"{path}.name", c.get("name")))
            seen.add(c.get("name"))
            if not c.get("image"):
                causes.append(required(f"{path}.image"))
            causes += _check_volume_mounts(f"{path}.volumeMounts", c.get("volumeMounts"))
            resources = c.get("resources")
            if isinstance(resources, dict):
                causes += check_resource_requirements(f"{path}.resources", resources)
                causes += _check_container_claims(f"{path}.resources.claims", resources.get("claims"), pod_claims)
    causes += _check_pod_resources(spec, spec_path)
    for i, tol in dict_items(spec.get("tolerations")):
        causes += check_toleration(f"{spec_path}.tolerations[{i}]", tol)
    if isinstance(spec.get("nodeName"), str) and spec["nodeName"]:
        causes += check_subdomain(f"{spec_path}.nodeName", spec["nodeName"])
    if isinstance(spec.get("nodeSelector"), dict):
        causes += check_labels(spec["nodeSelector"], f"{spec_path}.nodeSelector")
    causes += check_node_affinity(spec.get("affinity"), f"{spec_path}.affinity")
    if isinstance(spec.get("priorityClassName"), str) and spec["priorityClassName"]:
        name = spec["priorityClassName"]
        causes += [bad(f"{spec_path}.priorityClassName", name, msg) for msg in subdomain_errors(name)]
    causes += _check_scheduling_group(spec.get("schedulingGroup"), f"{spec_path}.schedulingGroup.podGroupName")
    policy = spec.get("restartPolicy")
    if policy and policy not in RESTART_POLICIES:  # empty defaults to Always
        causes.append(not_supported(f"{spec_path}.restartPolicy", policy, RESTART_POLICIES))
    # spec.priority and spec.preemptionPolicy are the Priority admission plugin's (403 before validation)
    return causes


INTEGER_RESOURCES = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
                               "configmaps", "persistentvolumeclaims", "services.nodeports",
                               "services.loadbalancers"})
"""``helper.IsIntegerResourceName``'s fixed names (extended resources are integers too)."""


def _check_node_resources(status: Obj) -> list[Cause]:
    """``ValidateNode``: every capacity and allocatable quantity passes
    ``ValidateResourceQuantityValue`` (non-negative; whole for integer resources). Upstream's
    path is ``field.NewPath("status", "capacity", name)``: dotted, not ``[name]``."""
    causes: list[Cause] = []
    for kind in ("capacity", "allocatable"):
        values: Obj = status[kind] if isinstance(status.get(kind), dict) else {}
        for name in sorted(values):
            q = _quantity(values[name])
            if q is None:
                continue
            path = f"status.{kind}.{name}"
            if q.sign() < 0:
                causes.append(bad(path, str(q), "must be greater than or equal to 0"))
            if (name in INTEGER_RESOURCES or is_extended_resource_name(name)) and not _whole(q):
                causes.append(bad(path, str(q), "must be an integer"))
    return causes


def validate_node(obj: Obj) -> list[Cause]:
    """``validateNodeTaints``; upstream roots the path at ``metadata`` (``metadata.taints[0]``).
    Then the status quantities, which a create keeps for nodes (a kubelet registers with them)."""
    status = obj.get("status")
    causes = _check_node_resources(status) if isinstance(status, dict) else []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return causes
    for i, taint in dict_items(spec.get("taints")):
        path = f"metadata.taints[{i}]"
        causes += check_qualified_name(f"{path}.key", taint.get("key") or "")
        value = taint.get("value") or ""
        errs = [c.message.split(": ", 2)[-1] for c in check_label_value(f"{path}.value", value)]
        if errs:
            causes.append(bad(f"{path}.value", value, ";".join(errs)))
        effect = taint.get("effect") or ""
        if not effect:
            causes.append(required(f"{path}.effect"))
        elif effect not in NODE_TAINT_EFFECTS:
            causes.append(not_supported(f"{path}.effect", effect, NODE_TAINT_EFFECTS))
    return causes
