"""A Job's ``podFailurePolicy``: which rule a failed pod matches, and what it means.

As upstream ``pkg/controller/job/pod_failure_policy.go`` (``matchPodFailurePolicy``): rules
are tried in order and the first that matches decides; a rule matches on a container's
non-zero exit code (``onExitCodes``, app containers before init containers) or on a pod
condition (``onPodConditions``, e.g. ``DisruptionTarget`` after a preemption). No match
counts the failure towards ``backoffLimit`` as without a policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

FAIL_JOB = "FailJob"
IGNORE = "Ignore"
COUNT = "Count"
FAIL_INDEX = "FailIndex"


@dataclass(frozen=True)
class PolicyMatch:
    """The rule a failed pod matched: its action and upstream's message for it."""

    action: str
    message: str


def match_pod_failure_policy(policy: Obj | None, pod: Obj) -> PolicyMatch | None:
    """The first rule of ``policy`` the failed ``pod`` matches, or None."""
    md = pod.get("metadata") or {}
    pod_ref = f"{md.get('namespace') or 'default'}/{md.get('name')}"
    for index, rule in enumerate((policy or {}).get("rules") or []):
        action = str(rule.get("action") or "")
        if action not in (FAIL_JOB, IGNORE, COUNT, FAIL_INDEX):
            continue  # an action this version does not know is skipped, as upstream does
        on_codes = rule.get("onExitCodes")
        if isinstance(on_codes, dict):
            hit = _exit_code_match(on_codes, pod)
            if hit is not None:
                name, code = hit
                return PolicyMatch(action, f"Container {name} for pod {pod_ref} failed with exit code {code} "
                                           f"matching {action} rule at index {index}")
        for pattern in rule.get("onPodConditions") or []:
            cond_type = pattern.get("type")
            want = pattern.get("status") or "True"
            for cond in (pod.get("status") or {}).get("conditions") or []:
                if cond.get("type") == cond_type and cond.get("status") == want:
                    return PolicyMatch(action, f"Pod {pod_ref} has condition {cond_type} matching {action} rule "
                                               f"at index {index}")
    return None


def _exit_code_match(requirement: Obj, pod: Obj) -> tuple[str, int] | None:
    status = pod.get("status") or {}
    wanted = {int(v) for v in requirement.get("values") or []}
    operator = requirement.get("operator")
    only = requirement.get("containerName")
    for statuses in (status.get("containerStatuses"), status.get("initContainerStatuses")):
        for cs in statuses or []:
            if only and cs.get("name") != only:
                continue
            terminated = (cs.get("state") or {}).get("terminated") or {}
            code = terminated.get("exitCode")
            if not isinstance(code, int) or code == 0:
                continue  # success never matches a rule
            if (operator == "In" and code in wanted) or (operator == "NotIn" and code not in wanted):
                return str(cs.get("name")), code
    return None
