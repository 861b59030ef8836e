"""Defaults the API server fills into workload objects (batch/v1 and apps/v1).

Upstream ``pkg/apis/batch/v1/defaults.go`` (``SetDefaults_Job``) and
``pkg/apis/apps/v1/defaults.go`` (``SetDefaults_Deployment``, ``SetDefaults_ReplicaSet``,
``SetDefaults_StatefulSet``, ``SetDefaults_DaemonSet``): the workload controllers read these fields as always set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]

JOB_DEFAULT_BACKOFF_LIMIT = 6
INT32_MAX = 2**31 - 1


def _job(obj: Obj) -> None:
    spec = obj["spec"]
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = INT32_MAX if spec.get("backoffLimitPerIndex") is not None else JOB_DEFAULT_BACKOFF_LIMIT
    # The template's labels go to a Job without labels once the selector's labels are in them
    # (drasched.api.job_strategy, on create).
    spec.setdefault("manualSelector", False)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in policy.get("rules") or []:
            for pattern in (rule or {}).get("onPodConditions") or []:
                if isinstance(pattern, dict):
                    pattern.setdefault("status", "True")
    spec.setdefault("podReplacementPolicy", "Failed" if policy is not None else "TerminatingOrFailed")


def _deployment(obj: Obj) -> None:
    spec = obj["spec"]
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def _replica_set(obj: Obj) -> None:
    obj["spec"].setdefault("replicas", 1)


def _stateful_set(obj: Obj) -> None:
    spec = obj["spec"]
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    update = spec.setdefault("updateStrategy", {})
    update.setdefault("type", "RollingUpdate")
    if update["type"] == "RollingUpdate":
        update.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})


def _daemon_set(obj: Obj) -> None:
    spec = obj["spec"]
    update = spec.setdefault("updateStrategy", {})
    if isinstance(update, dict):
        update.setdefault("type", "RollingUpdate")
        if update["type"] == "RollingUpdate":
            rolling = update.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)


TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
"""apps/v1's form of the internal ``spec.templateGeneration`` (``pkg/apis/apps/v1/conversion.go``)."""


def prepare_daemon_set(obj: Obj, old: Obj | None) -> None:
    """The DaemonSet strategy's ``PrepareForCreate`` / ``PrepareForUpdate``
    (``pkg/registry/apps/daemonset/strategy.go``): the template generation starts at 1 (or the
    one written, if higher) and grows by one each time ``spec.template`` changes; a value the
    client writes on update is ignored. apps/v1 carries it as an annotation."""
    md = obj.setdefault("metadata", {})
    annotations = md.get("annotations") if isinstance(md.get("annotations"), dict) else {}

    def generation(o: Obj | None) -> int:
        text = (((o or {}).get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
        try:
            return int(text) if text is not None else 0
        except (TypeError, ValueError):
            return 0

    if old is None:
        value = max(1, generation(obj))
    else:
        value = max(1, generation(old))
        if (obj.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            value += 1
    md["annotations"] = {**annotations, TEMPLATE_GENERATION: str(value)}


def _job_set(obj: Obj) -> None:
    """The JobSet webhook's defaults (``jobset_webhook.go`` Default): every replicated Job is
    Indexed, success means All jobs, DNS hostnames are on."""
    spec = obj["spec"]
    spec.setdefault("successPolicy", {"operator": "All", "targetReplicatedJobs": []})
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    network = spec.setdefault("network", {})
    network.setdefault("enableDNSHostnames", True)
    network.setdefault("publishNotReadyAddresses", True)
    for rjob in spec.get("replicatedJobs") or []:
        if not isinstance(rjob, dict):
            continue
        rjob.setdefault("replicas", 1)
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        if isinstance(job_spec, dict):
            job_spec.setdefault("completionMode", "Indexed")
            pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
            if isinstance(pod_spec, dict):
                pod_spec.setdefault("restartPolicy", "OnFailure")


def _leader_worker_set(obj: Obj) -> None:
    """The LeaderWorkerSet webhook's defaults (``leaderworkerset_webhook.go`` Default)."""
    spec = obj["spec"]
    spec.setdefault("replicas", 1)
    template = spec.setdefault("leaderWorkerTemplate", {})
    if isinstance(template, dict):
        template.setdefault("size", 1)
        template.setdefault("restartPolicy", "RecreateGroupOnPodRestart")
    spec.setdefault("startupPolicy", "LeaderCreated")
    rollout = spec.setdefault("rolloutStrategy", {})
    if isinstance(rollout, dict):
        rollout.setdefault("type", "RollingUpdate")
        rollout.setdefault("rollingUpdateConfiguration", {"maxUnavailable": 1, "maxSurge": 0})
    spec.setdefault("networkConfig", {"subdomainPolicy": "Shared"})


WORKLOAD_DEFAULTS: dict[str, Callable[[Obj], None]] = {
    "LeaderWorkerSet": _leader_worker_set,
    "JobSet": _job_set,
    "Job": _job,
    "Deployment": _deployment,
    "ReplicaSet": _replica_set,
    "StatefulSet": _stateful_set,
    "DaemonSet": _daemon_set,
}
"""Kind -> the function that fills its spec's defaults in place (``obj["spec"]`` is a dict)."""
