"""Workload kinds' own rules (pkg/apis/apps/validation, pkg/apis/batch/validation, v1.36.3):
counts that may not be negative, a selector that matches the pod template's labels, a Job's
completion mode and restart policy. Their pod template is validated as a pod spec (``core``)."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import Cause
from drasched.api.kinds import ResourceType
from drasched.api.selectors import match_label_selector_object
from drasched.api.validation.core import check_pod_spec
from drasched.api.validation.int_or_percent import (
    check_not_more_than_100_percent,
    check_positive_int_or_percent,
    int_or_percent_value,
)
from drasched.api.validation.job_policies import check_pod_failure_policy, check_pod_replacement_policy
from drasched.api.validation.metadata import check_annotations, check_labels
from drasched.api.validation.names import bad, dns1123_label_errors, not_supported, required

Obj = dict[str, Any]

NEGATIVE_MSG = "must be greater than or equal to 0"
JOB_COUNTS = ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
              "backoffLimitPerIndex", "maxFailedIndexes")
_EMPTY_SELECTOR_WORD = {"Deployment": "deployment", "ReplicaSet": "deployment", "StatefulSet": "statefulset",
                        "DaemonSet": "daemonset"}
"""Upstream's word in "empty selector is invalid for ..." (a ReplicaSet says deployment too)."""


def _nonnegative(path: str, value: Any) -> list[Cause]:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [bad(path, value, NEGATIVE_MSG)]
    return []


def _template(spec: Obj) -> Obj:
    template = spec.get("template")
    return template if isinstance(template, dict) else {}


def _template_labels(spec: Obj) -> dict[str, str] | None:
    """The template's labels; None when it has none (upstream prints a nil map as null)."""
    md = _template(spec).get("metadata")
    labels = md.get("labels") if isinstance(md, dict) else None
    return labels if isinstance(labels, dict) else None


def _check_template(spec: Obj) -> list[Cause]:
    """``ValidatePodTemplateSpec``: its labels and annotations (upstream's paths omit ``metadata``)
    and its spec."""
    template = _template(spec)
    md: Obj = template["metadata"] if isinstance(template.get("metadata"), dict) else {}
    causes: list[Cause] = []
    if isinstance(md.get("labels"), dict):
        causes += check_labels(md["labels"], "spec.template.labels")
    if isinstance(md.get("annotations"), dict):
        causes += check_annotations(md["annotations"], "spec.template.annotations")
    # an absent template is Go's zero PodTemplateSpec: its spec is validated all the same
    pod_spec = template.get("spec")
    causes += check_pod_spec(pod_spec if isinstance(pod_spec, dict) else {}, "spec.template.spec")
    return causes


def _check_selector(spec: Obj, word: str | None) -> list[Cause]:
    selector = spec.get("selector")
    mismatch = bad("spec.template.metadata.labels", _template_labels(spec),
                   "`selector` does not match template `labels`")
    if not isinstance(selector, dict):
        # a nil selector selects nothing: upstream still compares it with the template's labels
        return [required("spec.selector"), mismatch]
    if word is not None and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return [bad("spec.selector", selector, f"empty selector is invalid for {word}")]
    if not match_label_selector_object(selector, _template_labels(spec) or {}):
        return [mismatch]
    return []


def validate_replicated(obj: Obj, rt: ResourceType) -> list[Cause]:
    """Deployment, ReplicaSet, StatefulSet, DaemonSet (an absent spec is validated as Go's zero spec)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    causes = _nonnegative("spec.replicas", spec.get("replicas"))
    if rt.kind == "DaemonSet":
        causes += _check_daemon_set(spec)
    if rt.kind == "Deployment":
        causes += _check_deployment_rolling_update(spec)
    causes += _check_selector(spec, _EMPTY_SELECTOR_WORD.get(rt.kind))
    policy = spec.get("podManagementPolicy")
    if rt.kind == "StatefulSet" and policy and policy not in ("OrderedReady", "Parallel"):
        causes.append(bad("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    service = spec.get("serviceName")
    if rt.kind == "StatefulSet" and isinstance(service, str) and service:
        # ValidateStatefulSetSpec: optional, but when set a DNS label (the pods' subdomain)
        causes += [bad("spec.serviceName", service, msg) for msg in dns1123_label_errors(service)]
    return causes + _check_template(spec)


def _check_daemon_set(spec: Obj) -> list[Cause]:
    """``ValidateDaemonSetSpec``'s own rules: the pods restart Always, have no active deadline,
    ``minReadySeconds`` is not negative, and the update strategy is one upstream knows."""
    causes = _nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    template_spec = _template(spec).get("spec")
    template_spec = template_spec if isinstance(template_spec, dict) else {}
    policy = template_spec.get("restartPolicy")
    if policy not in (None, "", "Always"):
        causes.append(not_supported("spec.template.spec.restartPolicy", policy, ["Always"]))
    if template_spec.get("activeDeadlineSeconds") is not None:
        causes.append(Cause("spec.template.spec.activeDeadlineSeconds",
                            "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported", "FieldValueForbidden"))
    strategy = spec.get("updateStrategy")
    kind = strategy.get("type") if isinstance(strategy, dict) else None
    if kind not in (None, "", "RollingUpdate", "OnDelete"):
        causes.append(not_supported("spec.updateStrategy.type", kind, ["OnDelete", "RollingUpdate"]))
    rolling = strategy.get("rollingUpdate") if isinstance(strategy, dict) else None
    if kind == "RollingUpdate" and isinstance(rolling, dict):
        causes += _check_daemon_set_rolling_update(rolling, "spec.updateStrategy.rollingUpdate")
    return causes


def _check_deployment_rolling_update(spec: Obj) -> list[Cause]:
    """``ValidateRollingUpdateDeployment``: counts or percentages, not both 0, at most 100%
    unavailable (unset ones are the 25% defaults)."""
    strategy = spec.get("strategy")
    rolling = strategy.get("rollingUpdate") if isinstance(strategy, dict) else None
    if not isinstance(rolling, dict):
        return []
    path = "spec.strategy.rollingUpdate"
    unavailable, surge = rolling.get("maxUnavailable", "25%"), rolling.get("maxSurge", "25%")
    causes = check_positive_int_or_percent(unavailable, f"{path}.maxUnavailable")
    causes += check_positive_int_or_percent(surge, f"{path}.maxSurge")
    if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
        causes.append(bad(f"{path}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"))
    return causes + check_not_more_than_100_percent(unavailable, f"{path}.maxUnavailable")


def _check_daemon_set_rolling_update(rolling: Obj, path: str) -> list[Cause]:
    """``ValidateRollingUpdateDaemonSet``: counts or percentages of at most 100%, exactly one of
    them non-zero (unset ones are the defaults: maxUnavailable 1, maxSurge 0)."""
    unavailable, surge = rolling.get("maxUnavailable", 1), rolling.get("maxSurge", 0)
    causes: list[Cause] = []
    for key, value in (("maxUnavailable", unavailable), ("maxSurge", surge)):
        causes += check_positive_int_or_percent(value, f"{path}.{key}")
    for key, value in (("maxUnavailable", unavailable), ("maxSurge", surge)):
        causes += check_not_more_than_100_percent(value, f"{path}.{key}")
    has_unavailable, has_surge = int_or_percent_value(unavailable) != 0, int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        causes.append(bad(f"{path}.maxSurge", surge, "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        causes.append(required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return causes


def validate_job(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    causes = [c for key in JOB_COUNTS for c in _nonnegative(f"spec.{key}", spec.get(key))]
    mode = spec.get("completionMode") or "NonIndexed"  # empty is unset: defaulted
    if mode not in ("NonIndexed", "Indexed"):
        causes.append(not_supported("spec.completionMode", mode, ["NonIndexed", "Indexed"]))
    elif mode == "Indexed" and spec.get("completions") is None:
        causes.append(Cause("spec.completions", "Required value: when completion mode is Indexed",
                            "FieldValueRequired"))
    template_spec = _template(spec).get("spec")
    policy = template_spec.get("restartPolicy") if isinstance(template_spec, dict) else None
    path = "spec.template.spec.restartPolicy"
    if policy in (None, "", "Always"):
        causes.append(Cause(path, 'Required value: valid values: "OnFailure", "Never"', "FieldValueRequired"))
    elif policy not in ("OnFailure", "Never"):
        causes.append(not_supported(path, policy, ["OnFailure", "Never"]))
    elif spec.get("podFailurePolicy") is not None and policy != "Never":
        causes.append(bad(path, policy, 'only "Never" is supported when podFailurePolicy is specified'))
    name = (obj.get("metadata") or {}).get("name")
    if isinstance(name, str) and len(name) > 63:
        # jobStrategy.PrepareForCreate labels the template with the name twice (job-name and
        # batch.kubernetes.io/job-name); 1.37 reports the too-long value once (1.36 twice)
        causes.append(bad("spec.template.labels", name, "must be no more than 63 bytes"))
    causes += check_pod_failure_policy(spec, template_spec if isinstance(template_spec, dict) else {})
    causes += check_pod_replacement_policy(spec)
    if spec.get("manualSelector") is True:  # else the server generates the selector from the Job's uid
        causes += _check_selector(spec, None)
    return causes + _check_template(spec)


def validators() -> dict[ResourceType, Any]:
    """The workload kinds drasched reads, each with its validator."""
    out: dict[ResourceType, Any] = {}
    for rt in kinds.ALL:
        if rt.group == "apps" and rt.kind in _EMPTY_SELECTOR_WORD:
            out[rt] = lambda obj, rt=rt: validate_replicated(obj, rt)
        elif rt.group == "batch" and rt.kind == "Job":
            out[rt] = validate_job
    return out
