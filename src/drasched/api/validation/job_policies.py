"""A Job's ``spec.podFailurePolicy`` and ``spec.podReplacementPolicy``, as
pkg/apis/batch/validation/validation.go (v1.36.3) validates them: ``validatePodFailurePolicy``,
``validatePodFailurePolicyRule``, ``...RuleOnExitCodes``, ``...RuleOnPodConditions`` and
``validatePodReplacementPolicy``. drasched reads neither policy (its Job controller only
creates pods), but a Job the API server refuses must not be simulated."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.names import (
    bad,
    check_qualified_name,
    dict_items,
    duplicate,
    not_supported,
    quote,
    too_many,
)

Obj = dict[str, Any]

MAX_RULES = 20
MAX_EXIT_CODES = 255
MAX_POD_CONDITIONS = 20
ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
OPERATORS = ["In", "NotIn"]
CONDITION_STATUSES = ["False", "True", "Unknown"]
REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]


def _required_one_of(path: str, values: list[str]) -> Cause:
    """``field.Required(path, fmt.Sprintf("valid values: %q", values))``: Go's %q of a slice."""
    listed = " ".join(f'"{v}"' for v in values)
    return Cause(path, f"Required value: valid values: [{listed}]", "FieldValueRequired")


def _omitted(path: str, detail: str) -> Cause:
    """``field.Invalid(path, field.OmitValueType{}, detail)``: no value printed."""
    return Cause(path, f"Invalid value: {detail}")


def _container_names(template_spec: Obj) -> set[Any]:
    groups = ("containers", "initContainers")
    return {c.get("name") for group in groups for _, c in dict_items(template_spec.get(group))}


def check_pod_failure_policy(spec: Obj, template_spec: Obj) -> list[Cause]:
    """``validatePodFailurePolicy``: at most 20 rules, each validated even past the limit."""
    policy = spec.get("podFailurePolicy")
    if not isinstance(policy, dict):
        return []
    path = "spec.podFailurePolicy.rules"
    rules: list[Any] = policy["rules"] if isinstance(policy.get("rules"), list) else []
    causes = [too_many(path, len(rules), MAX_RULES)] if len(rules) > MAX_RULES else []
    names = _container_names(template_spec)
    for i, rule in dict_items(rules):
        causes += _check_rule(spec, rule, f"{path}[{i}]", names)
    return causes


def _check_rule(spec: Obj, rule: Obj, path: str, names: set[Any]) -> list[Cause]:
    causes: list[Cause] = []
    action = rule.get("action") or ""
    if not action:
        causes.append(_required_one_of(f"{path}.action", ACTIONS))
    elif action == "FailIndex":
        if spec.get("backoffLimitPerIndex") is None:
            causes.append(bad(f"{path}.action", action, "requires the backoffLimitPerIndex to be set"))
    elif action not in ACTIONS:
        causes.append(not_supported(f"{path}.action", action, ACTIONS))
    exit_codes = rule.get("onExitCodes")
    conditions = rule.get("onPodConditions") if isinstance(rule.get("onPodConditions"), list) else []
    if isinstance(exit_codes, dict):
        causes += _check_exit_codes(exit_codes, f"{path}.onExitCodes", names)
    if conditions:
        causes += _check_pod_conditions(conditions, f"{path}.onPodConditions")
    if isinstance(exit_codes, dict) and conditions:
        causes.append(_omitted(path, "specifying both OnExitCodes and OnPodConditions is not supported"))
    if not isinstance(exit_codes, dict) and not conditions:
        causes.append(_omitted(path, "specifying one of OnExitCodes and OnPodConditions is required"))
    return causes


def _check_exit_codes(req: Obj, path: str, names: set[Any]) -> list[Cause]:
    causes: list[Cause] = []
    operator = req.get("operator") or ""
    if not operator:
        causes.append(_required_one_of(f"{path}.operator", OPERATORS))
    elif operator not in OPERATORS:
        causes.append(not_supported(f"{path}.operator", operator, OPERATORS))
    if req.get("containerName") is not None and req["containerName"] not in names:
        causes.append(bad(f"{path}.containerName", req["containerName"],
                          "must be one of the container or initContainer names in the pod template"))
    values = req.get("values") if isinstance(req.get("values"), list) else None
    codes = values or []
    if not codes:
        causes.append(Cause(f"{path}.values", f"Invalid value: {quote(values)}: at least one value is required"))
    elif len(codes) > MAX_EXIT_CODES:
        causes.append(too_many(f"{path}.values", len(codes), MAX_EXIT_CODES))
    seen: set[int] = set()
    for j, code in enumerate(codes):
        if operator == "In" and code == 0:
            causes.append(bad(f"{path}.values[{j}]", code, "must not be 0 for the In operator"))
        if code in seen:
            causes.append(duplicate(f"{path}.values[{j}]", code))
        seen.add(code)
    if any(codes[j - 1] > codes[j] for j in range(1, len(codes))):
        causes.append(bad(f"{path}.values", codes, "must be ordered"))
    return causes


def _check_pod_conditions(patterns: list[Any], path: str) -> list[Cause]:
    causes = [too_many(path, len(patterns), MAX_POD_CONDITIONS)] if len(patterns) > MAX_POD_CONDITIONS else []
    for j, pattern in dict_items(patterns):
        causes += check_qualified_name(f"{path}[{j}].type", pattern.get("type") or "")
        status = pattern.get("status") or ""
        if not status:
            causes.append(_required_one_of(f"{path}[{j}].status", CONDITION_STATUSES))
        elif status not in CONDITION_STATUSES:
            causes.append(not_supported(f"{path}[{j}].status", status, CONDITION_STATUSES))
    return causes


def check_pod_replacement_policy(spec: Obj) -> list[Cause]:
    """``validatePodReplacementPolicy``: only ``Failed`` alongside a pod failure policy."""
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    allowed = ["Failed"] if spec.get("podFailurePolicy") is not None else REPLACEMENT_POLICIES
    return [] if policy in allowed else [not_supported("spec.podReplacementPolicy", policy, allowed)]
