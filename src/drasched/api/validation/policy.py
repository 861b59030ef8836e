"""PodDisruptionBudget's rules (``pkg/apis/policy/validation.ValidatePodDisruptionBudgetSpec``):
one of ``minAvailable`` / ``maxUnavailable``, each a non-negative count or a percentage of at most
100%, a valid label selector, a known unhealthy-pod eviction policy."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.int_or_percent import check_not_more_than_100_percent, check_positive_int_or_percent
from drasched.api.validation.metadata import check_labels
from drasched.api.validation.names import bad, not_supported

Obj = dict[str, Any]

UNHEALTHY_POD_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]


def validate_pod_disruption_budget(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    causes: list[Cause] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        # upstream prints the internal Go struct, which has no JSON tags: its field names
        internal = {"MinAvailable": spec.get("minAvailable"), "Selector": spec.get("selector"),
                    "MaxUnavailable": spec.get("maxUnavailable"),
                    "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy")}
        causes.append(bad("spec", internal, "minAvailable and maxUnavailable cannot be both set"))
    for key in ("minAvailable", "maxUnavailable"):
        causes += check_positive_int_or_percent(spec.get(key), f"spec.{key}")
        causes += check_not_more_than_100_percent(spec.get(key), f"spec.{key}")
    selector = spec.get("selector")
    if isinstance(selector, dict) and isinstance(selector.get("matchLabels"), dict):
        causes += check_labels(selector["matchLabels"], "spec.selector.matchLabels")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        causes.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, UNHEALTHY_POD_EVICTION_POLICIES))
    return causes
