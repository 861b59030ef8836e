"""Decode-only views of the workload kinds the embedded controllers read: batch/v1 Job,
apps/v1 Deployment, ReplicaSet, StatefulSet and DaemonSet, jobset.x-k8s.io/v1alpha2 JobSet and
leaderworkerset.x-k8s.io/v1 LeaderWorkerSet.

Only their JSON types matter here (field names and Go types from k8s.io/api batch/v1 and
apps/v1 ``types.go``, sigs.k8s.io/jobset ``jobset_types.go`` and sigs.k8s.io/lws
``leaderworkerset_types.go``); the controllers keep reading wire-form dicts. A pod template's spec has the Pod's shape.
"""

from __future__ import annotations

from typing import Any

import msgspec

from drasched.api.decode_views import Condition, Int32, IntOrString, LabelSelector
from drasched.api.models import ObjectMeta, PodSpec, View


class PodTemplateSpec(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


# ---- batch/v1 Job --------------------------------------------------------------------------------


class PodFailurePolicyOnExitCodesRequirement(View):
    container_name: str | None = None
    operator: str = ""
    values: list[Int32] = []


class PodFailurePolicyOnPodConditionsPattern(View):
    type: str = ""
    status: str = ""


class PodFailurePolicyRule(View):
    action: str = ""
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement | None = None
    on_pod_conditions: list[PodFailurePolicyOnPodConditionsPattern] = []


class PodFailurePolicy(View):
    rules: list[PodFailurePolicyRule] = []


class SuccessPolicyRule(View):
    succeeded_indexes: str | None = None
    succeeded_count: Int32 | None = None


class SuccessPolicy(View):
    rules: list[SuccessPolicyRule] = []


class JobSpec(View):
    parallelism: Int32 | None = None
    completions: Int32 | None = None
    active_deadline_seconds: int | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    success_policy: SuccessPolicy | None = None
    backoff_limit: Int32 | None = None
    backoff_limit_per_index: Int32 | None = None
    max_failed_indexes: Int32 | None = None
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    ttl_seconds_after_finished: Int32 | None = None
    completion_mode: str | None = None
    suspend: bool | None = None
    pod_replacement_policy: str | None = None
    managed_by: str | None = None


class UncountedTerminatedPods(View):
    succeeded: list[str] = []
    failed: list[str] = []


class JobStatus(View):
    conditions: list[Condition] = []
    start_time: str | None = None
    completion_time: str | None = None
    active: Int32 = 0
    succeeded: Int32 = 0
    failed: Int32 = 0
    terminating: Int32 | None = None
    completed_indexes: str = ""
    failed_indexes: str | None = None
    uncounted_terminated_pods: UncountedTerminatedPods | None = None
    ready: Int32 | None = None


class Job(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)
    status: JobStatus = msgspec.field(default_factory=JobStatus)


# ---- apps/v1 ------------------------------------------------------------------------------------


class RollingUpdateDeployment(View):
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None


class DeploymentStrategy(View):
    type: str = ""
    rolling_update: RollingUpdateDeployment | None = None


class DeploymentSpec(View):
    replicas: Int32 | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    strategy: DeploymentStrategy | None = None
    min_ready_seconds: Int32 = 0
    revision_history_limit: Int32 | None = None
    paused: bool = False
    progress_deadline_seconds: Int32 | None = None


class ReplicasStatus(View):
    """The status fields Deployment, ReplicaSet and StatefulSet share."""

    observed_generation: int = 0
    replicas: Int32 = 0
    updated_replicas: Int32 = 0
    ready_replicas: Int32 = 0
    available_replicas: Int32 = 0
    unavailable_replicas: Int32 = 0
    fully_labeled_replicas: Int32 = 0
    current_replicas: Int32 = 0
    terminating_replicas: Int32 | None = None
    collision_count: Int32 | None = None
    current_revision: str = ""
    update_revision: str = ""
    conditions: list[Condition] = []


class Deployment(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeploymentSpec = msgspec.field(default_factory=DeploymentSpec)
    status: ReplicasStatus = msgspec.field(default_factory=ReplicasStatus)


class ReplicaSetSpec(View):
    replicas: Int32 | None = None
    min_ready_seconds: Int32 = 0
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class ReplicaSet(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = msgspec.field(default_factory=ReplicaSetSpec)
    status: ReplicasStatus = msgspec.field(default_factory=ReplicasStatus)


class RollingUpdateStatefulSetStrategy(View):
    partition: Int32 | None = None
    max_unavailable: IntOrString | None = None


class StatefulSetUpdateStrategy(View):
    type: str = ""
    rolling_update: RollingUpdateStatefulSetStrategy | None = None


class StatefulSetOrdinals(View):
    start: Int32 = 0


class StatefulSetSpec(View):
    replicas: Int32 | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    volume_claim_templates: list[dict[str, Any]] = []
    service_name: str = ""
    pod_management_policy: str = ""
    update_strategy: StatefulSetUpdateStrategy | None = None
    revision_history_limit: Int32 | None = None
    min_ready_seconds: Int32 = 0
    ordinals: StatefulSetOrdinals | None = None


class StatefulSet(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: StatefulSetSpec = msgspec.field(default_factory=StatefulSetSpec)
    status: ReplicasStatus = msgspec.field(default_factory=ReplicasStatus)


class RollingUpdateDaemonSet(View):
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None


class DaemonSetUpdateStrategy(View):
    type: str = ""
    rolling_update: RollingUpdateDaemonSet | None = None


class DaemonSetSpec(View):
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    update_strategy: DaemonSetUpdateStrategy | None = None
    min_ready_seconds: Int32 = 0
    revision_history_limit: Int32 | None = None


class DaemonSetStatus(View):
    current_number_scheduled: Int32 = 0
    number_misscheduled: Int32 = 0
    desired_number_scheduled: Int32 = 0
    number_ready: Int32 = 0
    observed_generation: int = 0
    updated_number_scheduled: Int32 = 0
    number_available: Int32 = 0
    number_unavailable: Int32 = 0
    collision_count: Int32 | None = None
    conditions: list[Condition] = []


class DaemonSet(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DaemonSetSpec = msgspec.field(default_factory=DaemonSetSpec)
    status: DaemonSetStatus = msgspec.field(default_factory=DaemonSetStatus)


# ---- jobset.x-k8s.io/v1alpha2 JobSet (a CRD) ------------------------------------------------------


class JobTemplateSpec(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)


class DependsOn(View):
    name: str = ""
    status: str = ""


class ReplicatedJob(View):
    name: str = ""
    group_name: str = ""
    template: JobTemplateSpec = msgspec.field(default_factory=JobTemplateSpec)
    replicas: Int32 = 1
    depends_on: list[DependsOn] = []


class Network(View):
    enable_dns_hostnames: bool | None = msgspec.field(default=None, name="enableDNSHostnames")
    subdomain: str = ""
    publish_not_ready_addresses: bool | None = None


class JobSetSuccessPolicy(View):
    operator: str = ""
    target_replicated_jobs: list[str] = []


class FailurePolicyRule(View):
    name: str = ""
    action: str = ""
    on_job_failure_reasons: list[str] = []
    target_replicated_jobs: list[str] = []


class FailurePolicy(View):
    max_restarts: Int32 = 0
    restart_strategy: str = ""
    rules: list[FailurePolicyRule] = []


class StartupPolicy(View):
    startup_policy_order: str = ""


class JobSetSpec(View):
    replicated_jobs: list[ReplicatedJob] = []
    network: Network | None = None
    success_policy: JobSetSuccessPolicy | None = None
    failure_policy: FailurePolicy | None = None
    startup_policy: StartupPolicy | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    ttl_seconds_after_finished: Int32 | None = None


class ReplicatedJobStatus(View):
    name: str = ""
    ready: Int32 = 0
    succeeded: Int32 = 0
    failed: Int32 = 0
    active: Int32 = 0
    suspended: Int32 = 0


class JobSetStatus(View):
    conditions: list[Condition] = []
    restarts: Int32 = 0
    restarts_count_towards_max: Int32 = 0
    terminal_state: str = ""
    replicated_jobs_status: list[ReplicatedJobStatus] = []


class JobSet(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSetSpec = msgspec.field(default_factory=JobSetSpec)
    status: JobSetStatus = msgspec.field(default_factory=JobSetStatus)


# ---- leaderworkerset.x-k8s.io/v1 LeaderWorkerSet (a CRD) -------------------------------------------


class SubGroupPolicy(View):
    sub_group_policy_type: str | None = None
    sub_group_size: Int32 | None = None


class LeaderWorkerTemplate(View):
    leader_template: PodTemplateSpec | None = None
    worker_template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    size: Int32 | None = None
    restart_policy: str = ""
    sub_group_policy: SubGroupPolicy | None = None


class RollingUpdateConfiguration(View):
    partition: Int32 | None = None
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None


class RolloutStrategy(View):
    type: str = ""
    rolling_update_configuration: RollingUpdateConfiguration | None = None


class NetworkConfig(View):
    subdomain_policy: str | None = None


class LeaderWorkerSetSpec(View):
    replicas: Int32 | None = None
    leader_worker_template: LeaderWorkerTemplate = msgspec.field(default_factory=LeaderWorkerTemplate)
    rollout_strategy: RolloutStrategy | None = None
    startup_policy: str = ""
    network_config: NetworkConfig | None = None


class LeaderWorkerSetStatus(View):
    conditions: list[Condition] = []
    ready_replicas: Int32 = 0
    updated_replicas: Int32 = 0
    replicas: Int32 = 0
    hpa_pod_selector: str = ""


class LeaderWorkerSet(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: LeaderWorkerSetSpec = msgspec.field(default_factory=LeaderWorkerSetSpec)
    status: LeaderWorkerSetStatus = msgspec.field(default_factory=LeaderWorkerSetStatus)
