"""The JSON shapes of other schedulers' objects that :mod:`drasched.api.foreign` translates:
the upstream gang API (``scheduling.k8s.io`` v1alpha2/v1beta1 Workload and PodGroup),
KAI-Scheduler's ``scheduling.run.ai`` Queue (v2) and PodGroup (v2alpha2) and its
``kai.scheduler/v1`` Topology (set aside with a warning), and scheduler-plugins'
``scheduling.x-k8s.io/v1alpha1`` PodGroup (the coscheduling plugin's).

They are decoded before translation, as their own API servers would decode them, so the
translation only reads well-typed fields. Only the fields the translation reads are
described (field names from upstream ``k8s.io/api/scheduling`` and KAI's ``apis/scheduling``);
the rest stay free.
"""

from __future__ import annotations

from typing import Any

import msgspec

from drasched.api import kinds
from drasched.api.decode import decode_as
from drasched.api.decode_views import Int32
from drasched.api.errors import BadRequest
from drasched.api.models import ObjectMeta, View
from drasched.api.shapes import struct_shape


class GangSchedulingPolicy(View):
    min_count: Int32 | None = None


class PodGroupSchedulingPolicy(View):
    gang: GangSchedulingPolicy | None = None
    basic: dict[str, Any] | None = None


class PodGroupTemplate(View):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy | None = None


class WorkloadSpec(View):
    pod_group_templates: list[PodGroupTemplate] = []


class Workload(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


class WorkloadTemplateReference(View):
    workload_name: str = ""
    pod_group_template_name: str = ""


class PodGroupTemplateReference(View):
    workload: WorkloadTemplateReference | None = None


class TopologyConstraint(View):
    key: str = ""


class SchedulingConstraints(View):
    topology: list[TopologyConstraint] = []


class UpstreamPodGroupSpec(View):
    """v1alpha2 (Kubernetes 1.36)."""

    pod_group_template_ref: PodGroupTemplateReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: list[dict[str, Any]] = []
    disruption_mode: str | None = None


class UpstreamPodGroup(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: UpstreamPodGroupSpec = msgspec.field(default_factory=UpstreamPodGroupSpec)


class WorkloadReference(View):
    """v1beta1's ``spec.workloadRef`` (v1alpha2: ``podGroupTemplateRef.workload``)."""

    workload_name: str = ""
    template_name: str = ""


class DisruptionMode(View):
    """v1beta1's one-of (v1alpha2: the string ``Pod`` or ``PodGroup``)."""

    single: dict[str, Any] | None = None
    all: dict[str, Any] | None = None


class PodGroupTemplateV1beta1(View):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    disruption_mode: DisruptionMode | None = None


class WorkloadSpecV1beta1(View):
    pod_group_templates: list[PodGroupTemplateV1beta1] = []
    composite_pod_group_templates: list[dict[str, Any]] = []


class WorkloadV1beta1(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpecV1beta1 = msgspec.field(default_factory=WorkloadSpecV1beta1)


class UpstreamPodGroupSpecV1beta1(View):
    """v1beta1 (Kubernetes 1.37, ``k8s.io/api/scheduling/v1beta1``)."""

    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: list[dict[str, Any]] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class UpstreamPodGroupV1beta1(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: UpstreamPodGroupSpecV1beta1 = msgspec.field(default_factory=UpstreamPodGroupSpecV1beta1)


class KaiQueueResource(View):
    quota: float | None = None
    limit: float | None = None
    over_quota_weight: float | None = None


class KaiQueueSpec(View):
    parent_queue: str = ""
    priority: Int32 | None = None
    preempt_min_runtime: str | None = None
    reclaim_min_runtime: str | None = None
    resources: dict[str, KaiQueueResource] = {}


class KaiQueue(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: KaiQueueSpec = msgspec.field(default_factory=KaiQueueSpec)


class KaiTopologyConstraint(View):
    required_topology_level: str = ""
    preferred_topology_level: str = ""
    topology: str = ""


class KaiPodGroupSpec(View):
    min_member: Int32 | None = None
    queue: str = ""
    priority_class_name: str = ""
    topology_constraint: KaiTopologyConstraint | None = None


class KaiPodGroup(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: KaiPodGroupSpec = msgspec.field(default_factory=KaiPodGroupSpec)


class KaiTopologyLevel(View):
    node_label: str = ""


class KaiTopologySpec(View):
    levels: list[KaiTopologyLevel] = []


class KaiTopology(View):
    """``kai.scheduler/v1`` Topology: read only to be set aside (a PodGroup's level is a node
    label key here, so the named hierarchy adds nothing)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: KaiTopologySpec = msgspec.field(default_factory=KaiTopologySpec)


class CoschedulingPodGroupSpec(View):
    """scheduler-plugins' ``PodGroupSpec`` (apis/scheduling/v1alpha1/types.go)."""

    min_member: Int32 | None = None
    min_resources: dict[str, Any] = {}
    schedule_timeout_seconds: Int32 | None = None


class CoschedulingPodGroup(View):
    """``scheduling.x-k8s.io/v1alpha1`` PodGroup, the coscheduling plugin's gang."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CoschedulingPodGroupSpec = msgspec.field(default_factory=CoschedulingPodGroupSpec)


FOREIGN_VIEWS: dict[tuple[str, str], type[View]] = {
    ("scheduling.k8s.io/v1alpha2", "Workload"): Workload,
    ("scheduling.k8s.io/v1beta1", "Workload"): WorkloadV1beta1,
    ("scheduling.k8s.io/v1alpha2", "PodGroup"): UpstreamPodGroup,
    ("scheduling.k8s.io/v1beta1", "PodGroup"): UpstreamPodGroupV1beta1,
    ("scheduling.run.ai/v2", "Queue"): KaiQueue,
    ("scheduling.run.ai/v2alpha2", "PodGroup"): KaiPodGroup,
    ("kai.scheduler/v1", "Topology"): KaiTopology,
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): CoschedulingPodGroup,
}


def decode_foreign(obj: dict[str, Any]) -> bool:
    """Decode ``obj`` if it is a kind :mod:`drasched.api.foreign` translates and say whether it
    was; raises the API server's BadRequest, or Invalid for KAI's CRDs, as :func:`decode_as`."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    view = FOREIGN_VIEWS.get((api_version, kind)) if isinstance(api_version, str) and isinstance(kind, str) else None
    if view is None:
        _refuse_unread_version(api_version, kind)
        return False
    group, _, version = str(api_version).rpartition("/")
    decode_as(obj, struct_shape(view), kind=str(kind), group=group, version=version)
    return True


UPSTREAM_READ = {"scheduling.k8s.io/v1beta1": "Kubernetes 1.37", "scheduling.k8s.io/v1alpha2": "1.36"}
"""The gang API versions read, newest first (the first is the one to write)."""


V1ALPHA1_SHAPE = ("1.35's shape is gone: its Workload's spec.podGroups[].policy is a template now "
                   "(spec.podGroupTemplates[].schedulingPolicy), each group is a PodGroup object made from one "
                   "(spec.workloadRef: {workloadName, templateName}, spec.schedulingPolicy), and a pod joins it by "
                   "spec.schedulingGroup.podGroupName instead of spec.workloadRef")
"""What changed between 1.35's ``v1alpha1`` gang API and 1.36's (KEP-4671, "Decouple PodGroup API",
KEP-5832): a version bump alone does not carry a 1.35 Workload over, so the refusal says what to write."""

OLD_COSCHEDULING_GROUP = "scheduling.sigs.k8s.io"
"""scheduler-plugins' API group before v0.25, which moved PodGroup to ``scheduling.x-k8s.io`` and its pod
label from ``pod-group.scheduling.sigs.k8s.io`` to ``scheduling.x-k8s.io/pod-group`` ("ACTION REQUIRED",
kubernetes-sigs/scheduler-plugins#526): v0.25 and later read neither old name, and neither does drasched."""

TRANSLATED_VERSIONS = {"PodGroup": ("scheduling.x-k8s.io/v1alpha1 (scheduler-plugins' coscheduling)",
                                    "scheduling.run.ai/v2alpha2 (KAI-Scheduler)"),
                       "Queue": ("scheduling.run.ai/v2 (KAI-Scheduler)",)}
"""Other schedulers' versions of a kind drasched reads (:data:`FOREIGN_VIEWS`), named when another
version of that kind is refused: the API server's "no kind is registered" lists only what it serves."""


def _refuse_unread_version(api_version: object, kind: object) -> None:
    """Another scheduler's kind in a version drasched does not read, refused with what to write:

    * a gang API kind (1.35's ``v1alpha1`` Workload, whose ``podGroups[].policy`` shape no later
      version kept), naming the versions that are read, as an older resource.k8s.io version is
      (:mod:`drasched.api.conversion`), and what changed since 1.35;
    * scheduler-plugins' PodGroup in its pre-v0.25 group ``scheduling.sigs.k8s.io``, naming the
      group and the pod label that replaced it;
    * any other PodGroup or Queue version, naming the other schedulers' versions that are read.
    """
    if not isinstance(api_version, str) or kind not in ("Workload", "PodGroup", "Queue"):
        return
    group = api_version.rpartition("/")[0]
    if group == "scheduling.k8s.io" and kind != "Queue" and api_version not in UPSTREAM_READ:
        newest, *older = UPSTREAM_READ
        also = ", ".join(f"{v} ({UPSTREAM_READ[v]})" for v in older)
        shape = f"; {V1ALPHA1_SHAPE}" if api_version == "scheduling.k8s.io/v1alpha1" else ""
        raise BadRequest(f"{api_version} {kind} is not read by drasched: write it as {newest} "
                         f"({UPSTREAM_READ[newest]}; also read: {also}){shape}")
    if group == OLD_COSCHEDULING_GROUP and kind == "PodGroup":
        raise BadRequest(f"{api_version} PodGroup is scheduler-plugins' PodGroup before v0.25, which moved it to "
                         "scheduling.x-k8s.io: write it as scheduling.x-k8s.io/v1alpha1 (the same fields) and label "
                         "its pods scheduling.x-k8s.io/pod-group instead of pod-group.scheduling.sigs.k8s.io, as "
                         "scheduler-plugins v0.25 asks (kubernetes-sigs/scheduler-plugins#526)")
    if kind in TRANSLATED_VERSIONS and group not in ("scheduling.drasched.io", "scheduling.k8s.io"):
        raise BadRequest(f'no kind "{kind}" is registered for version "{api_version}" (drasched serves {kind} as '
                         f"{', '.join(kinds.served_versions(kind))}, and reads other schedulers' {kind} as "
                         f"{', '.join(TRANSLATED_VERSIONS[kind])})")
