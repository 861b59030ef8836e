"""Decode-only views: the JSON types of fields the msgspec views keep loose (``Any``) but
drasched's logic reads, and of the kinds that have no view elsewhere.

They describe shapes for :mod:`drasched.api.shapes`; nothing decodes objects into them.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from drasched.api import models, resource
from drasched.api.models import View

TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}"
Time = Annotated[str, msgspec.Meta(pattern=TIME_PATTERN)]
"""A ``metav1.Time`` (RFC 3339): decoding parses it, so a malformed time is refused there."""

INT32_MAX = 2**31 - 1
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=INT32_MAX)]
"""A Go int32 field (``format: int32`` in a CRD)."""


# ---- decode-only refinements of fields the views keep as Any ---------------------------------


class LabelSelectorRequirement(View):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class LabelSelector(View):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class PreferredSchedulingTerm(View):
    weight: int = 0
    preference: resource.NodeSelectorTerm = msgspec.field(default_factory=resource.NodeSelectorTerm)


class NodeAffinity(View):
    required_during_scheduling_ignored_during_execution: resource.NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(View):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None


class WeightedPodAffinityTerm(View):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(View):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(View):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class ContainerStateTerminated(View):
    exit_code: Int32 = 0
    signal: Int32 = 0
    reason: str = ""
    message: str = ""
    started_at: Time | None = None
    finished_at: Time | None = None


class ContainerState(View):
    waiting: dict[str, Any] | None = None
    running: dict[str, Any] | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(View):
    name: str = ""
    ready: bool = False
    started: bool | None = None
    restart_count: int = 0
    image: str = ""
    state: ContainerState | None = None
    last_state: ContainerState | None = None


class Condition(View):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: Time | None = None


class ContainerClaim(View):
    name: str = ""
    request: str = ""


class TopologySpreadConstraint(View):
    max_skew: Int32 = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class ContainerPort(View):
    name: str = ""
    host_port: Int32 = 0
    container_port: Int32 = 0
    protocol: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")


class EnvVar(View):
    name: str = ""
    value: str = ""


class EnvFromSource(View):
    prefix: str = ""


class Probe(View):
    initial_delay_seconds: Int32 = 0
    timeout_seconds: Int32 = 0
    period_seconds: Int32 = 0
    success_threshold: Int32 = 0
    failure_threshold: Int32 = 0
    termination_grace_period_seconds: int | None = None


class SecurityContext(View):
    """A container's ``securityContext`` (the fields of one JSON type; the nested ones are left to the server)."""

    privileged: bool | None = None
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    read_only_root_filesystem: bool | None = None
    allow_privilege_escalation: bool | None = None


class PodSecurityContext(View):
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    fs_group: int | None = None
    supplemental_groups: list[int] = []


class LocalObjectReference(View):
    name: str = ""


class Volume(View):
    """A pod volume's name; its source (one of many kinds) is left to the server."""

    name: str = ""


class PodReadinessGate(View):
    condition_type: str = ""


class HostAlias(View):
    ip: str = ""
    hostnames: list[str] = []


class PodOS(View):
    name: str = ""


class VolumeMount(View):
    name: str = ""
    read_only: bool = False
    recursive_read_only: str | None = None
    mount_path: str = ""
    sub_path: str = ""
    mount_propagation: str | None = None
    sub_path_expr: str = ""


# ---- kinds without a view elsewhere ------------------------------------------------------------


class ConfigMap(View):
    """ConfigMap ``data`` values are strings; a YAML alias tree is not one."""

    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    data: dict[str, str] = {}
    binary_data: dict[str, str] = {}
    immutable: bool | None = None


class Overhead(View):
    pod_fixed: dict[str, str | int | float] = {}


class Scheduling(View):
    node_selector: dict[str, str] = {}
    tolerations: list[models.Toleration] = []


class RuntimeClass(View):
    """node.k8s.io/v1: what the RuntimeClass admission plugin copies into a new pod."""

    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    handler: str = ""
    overhead: Overhead | None = None
    scheduling: Scheduling | None = None


class ServiceAccount(View):
    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)


class LeaseSpec(View):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class Lease(View):
    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)


class PodDisruptionBudgetSpec(View):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(View):
    observed_generation: int = 0
    disrupted_pods: dict[str, str] = {}
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    conditions: list[Condition] = []


class PodDisruptionBudget(View):
    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


class PodSchedulingGate(View):
    name: str = ""


class PodSchedulingGroup(View):
    """``spec.schedulingGroup`` (upstream gang API): the PodGroup a pod belongs to."""

    pod_group_name: str | None = None


class WorkloadReference(View):
    """``spec.workloadRef`` (Kubernetes 1.35's gang API)."""

    name: str = ""
    pod_group: str = ""
    pod_group_replica_key: str = ""
