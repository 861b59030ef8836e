"""Typed read-only views of core and drasched objects (msgspec Structs).

The store keeps wire-form dicts, so nothing is lost on a round trip; these views are
decoded for logic that wants types and are never written back. msgspec was chosen by
measurement (BENCHMARKS.md, "Object model"): fastest decode, about half the memory of
a dict per pod. Unknown fields are ignored by the view, never dropped from the object.
"""

from __future__ import annotations

from typing import Any

import msgspec

from drasched.api.errors import Cause, invalid


class View(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


class OwnerReference(View):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(View):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []


class ResourceRequirements(View):
    requests: dict[str, str | int | float] = {}
    limits: dict[str, str | int | float] = {}
    claims: list[dict[str, Any]] = []


class Container(View):
    name: str = ""
    image: str = ""
    command: list[str] = []  # not read; typed so that a wrong JSON type is refused as the server does
    args: list[str] = []
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    restart_policy: str | None = None  # "Always" on an init container makes it a sidecar


class Toleration(View):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class PodResourceClaim(View):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSpec(View):
    containers: list[Container] = []
    init_containers: list[Container] = []
    node_name: str = ""
    node_selector: dict[str, str] = {}
    affinity: dict[str, Any] = {}
    tolerations: list[Toleration] = []
    scheduler_name: str = "default-scheduler"
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    resource_claims: list[PodResourceClaim] = []
    overhead: dict[str, str | int | float] = {}


class PodCondition(View):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class PodResourceClaimStatus(View):
    name: str
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(View):
    container_name: str
    resource_name: str
    request_name: str


class PodExtendedResourceClaimStatus(View):
    resource_claim_name: str
    request_mappings: list[ContainerExtendedResourceRequest] = []


class PodStatus(View):
    phase: str = "Pending"
    conditions: list[PodCondition] = []
    nominated_node_name: str = ""
    start_time: str | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(View):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class Taint(View):
    key: str
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class NodeSpec(View):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeStatus(View):
    capacity: dict[str, str | int | float] = {}
    allocatable: dict[str, str | int | float] = {}
    conditions: list[dict[str, Any]] = []


class Node(View):
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class Namespace(View):
    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class ObjectReference(View):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    uid: str = ""


class Event(View):
    api_version: str = "v1"
    kind: str = "Event"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    involved_object: ObjectReference = msgspec.field(default_factory=ObjectReference)
    type: str = ""
    reason: str = ""
    message: str = ""
    count: int = 0


class PriorityClass(View):
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    description: str = ""


# ---- drasched CRDs (scheduling.drasched.io/v1alpha1; schemas in deploy/crds/) ---------------


class QueueResource(View):
    quota: str | int | None = None
    limit: str | int | None = None
    over_quota_weight: float = 1.0


class QueueSpec(View):
    parent_queue: str = ""
    priority: int = 100
    min_runtime: str = ""
    resources: dict[str, QueueResource] = {}


class QueueStatus(View):
    allocated: dict[str, str] = {}
    requested: dict[str, str] = {}
    fair_share: dict[str, str] = {}
    conditions: list[dict[str, Any]] = []


class Queue(View):
    api_version: str = "scheduling.drasched.io/v1alpha1"
    kind: str = "Queue"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: QueueSpec = msgspec.field(default_factory=QueueSpec)
    status: QueueStatus = msgspec.field(default_factory=QueueStatus)


class TopologyConstraint(View):
    required_topology_key: str = ""
    preferred_topology_key: str = ""


class PodGroupSpec(View):
    min_member: int = 1
    queue: str = ""
    priority_class_name: str = ""
    topology_constraint: TopologyConstraint | None = None
    resource_claims: list[PodResourceClaim] = []


class PodGroupStatus(View):
    phase: str = ""
    running: int = 0
    scheduled: int = 0
    succeeded: int = 0
    failed: int = 0
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    conditions: list[dict[str, Any]] = []


class PodGroup(View):
    api_version: str = "scheduling.drasched.io/v1alpha1"
    kind: str = "PodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class ClaimAllocation(View):
    name: str
    uid: str = ""
    allocation: dict[str, Any] = {}
    reserved_for: dict[str, Any] = {}


class ExtendedResourceClaimAllocation(View):
    allocation: dict[str, Any] = {}
    device_requests: list[dict[str, Any]] = []
    container_mappings: list[ContainerExtendedResourceRequest] = []


class BindRequestSpec(View):
    pod_name: str = ""
    pod_uid: str = msgspec.field(default="", name="podUID")
    selected_node: str = ""
    resource_claim_allocations: list[ClaimAllocation] = []
    extended_resource_claim_allocation: ExtendedResourceClaimAllocation | None = None


class BindRequestStatus(View):
    phase: str = "Pending"
    attempts: int = 0
    reason: str = ""
    message: str = ""


class BindRequest(View):
    api_version: str = "scheduling.drasched.io/v1alpha1"
    kind: str = "BindRequest"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: BindRequestSpec = msgspec.field(default_factory=BindRequestSpec)
    status: BindRequestStatus = msgspec.field(default_factory=BindRequestStatus)


VIEWS: dict[str, type[View]] = {
    "Pod": Pod,
    "Node": Node,
    "Namespace": Namespace,
    "Event": Event,
    "PriorityClass": PriorityClass,
    "Queue": Queue,
    "PodGroup": PodGroup,
    "BindRequest": BindRequest,
}


def view(obj: dict[str, Any], cls: type[View] | None = None) -> Any:
    """Decode a wire-form object into its typed view; a wrong type names the field path."""
    cls = cls or VIEWS.get(obj.get("kind", ""))
    if cls is None:
        raise KeyError(f"no typed view for kind {obj.get('kind')!r}")
    try:
        return msgspec.convert(obj, cls, strict=False)
    except msgspec.ValidationError as exc:
        # msgspec says e.g. "Expected `int`, got `str` - at `$.spec.priority`"
        text = str(exc)
        field = text.rsplit("at `$.", 1)[1].rstrip("`") if "at `$." in text else ""
        md = obj.get("metadata") or {}
        raise invalid(obj.get("kind", "object"), md.get("name", ""),
                      [Cause(field, f"Invalid value: {text.split(' - at ')[0]}")]) from None
