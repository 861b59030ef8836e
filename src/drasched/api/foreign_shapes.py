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


def _refuse_unread_version(api_version: object, kind: object) -> None:
    """A gang API kind in a version drasched does not read (1.35's ``v1alpha1`` Workload, whose
    ``podGroups[].policy`` shape no later version kept): refused, naming the versions that are
    read, as an older resource.k8s.io version is (:mod:`drasched.api.conversion`)."""
    if kind not in ("Workload", "PodGroup") or not isinstance(api_version, str) \
            or not api_version.startswith("scheduling.k8s.io/") or api_version in UPSTREAM_READ:
        return
    newest, *older = UPSTREAM_READ
    also = ", ".join(f"{v} ({UPSTREAM_READ[v]})" for v in older)
    raise BadRequest(f"{api_version} {kind} is not read by drasched: write it as {newest} "
                     f"({UPSTREAM_READ[newest]}; also read: {also})")
