"""The JSON shape of every kind drasched reads, derived from the msgspec views.

A shape says which JSON type each known field must have; it is what the API server's
decoder enforces before any validation runs (a string where an object belongs is a
decode error, not a validation error). The views in :mod:`drasched.api.models` and
:mod:`drasched.api.resource` already describe these types, so the shapes are built from
them, with a few decode-only refinements (``SHAPE_OVERRIDES``) for fields the views keep
as ``Any`` but drasched's logic still reads. Unknown fields have no shape and stay allowed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec
import msgspec.inspect as mi

from drasched.api import kinds, models, resource
from drasched.api.kinds import ResourceType
from drasched.api.models import View


@dataclass(frozen=True)
class Shape:
    """One JSON type: ``string``, ``integer``, ``number``, ``boolean``, ``array``, ``object``,
    ``map`` (an object whose keys are free), ``quantity`` (a string ``resource.ParseQuantity``
    accepts, or a number), ``any``, or ``oneOf`` several shapes."""

    type: str
    fields: dict[str, Shape] = field(default_factory=dict)
    item: Shape | None = None
    options: tuple[Shape, ...] = ()
    nullable: bool = False
    bits: int = 64
    """For an integer: the width of its Go type (int32 fields refuse what int64 ones take)."""


ANY = Shape("any", nullable=True)

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


class ContainerState(View):
    waiting: dict[str, Any] | None = None
    running: dict[str, Any] | None = None
    terminated: dict[str, Any] | None = None


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
    last_transition_time: str | None = None


class ContainerClaim(View):
    name: str = ""
    request: str = ""


# ---- kinds without a view elsewhere ------------------------------------------------------------


class ConfigMap(View):
    """ConfigMap ``data`` values are strings; a YAML alias tree is not one."""

    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    data: dict[str, str] = {}
    binary_data: dict[str, str] = {}
    immutable: bool | None = None


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


VIEW_OF: dict[ResourceType, type[View]] = {
    kinds.POD: models.Pod,
    kinds.NODE: models.Node,
    kinds.NAMESPACE: models.Namespace,
    kinds.EVENT: models.Event,
    kinds.SERVICE_ACCOUNT: ServiceAccount,
    kinds.CONFIG_MAP: ConfigMap,
    kinds.PRIORITY_CLASS: models.PriorityClass,
    kinds.LEASE: Lease,
    kinds.POD_DISRUPTION_BUDGET: PodDisruptionBudget,
    kinds.DEVICE_CLASS: resource.DeviceClass,
    kinds.RESOURCE_CLAIM: resource.ResourceClaim,
    kinds.RESOURCE_CLAIM_TEMPLATE: resource.ResourceClaimTemplate,
    kinds.RESOURCE_SLICE: resource.ResourceSlice,
    kinds.QUEUE: models.Queue,
    kinds.POD_GROUP: models.PodGroup,
    kinds.BIND_REQUEST: models.BindRequest,
}
"""The view whose fields give each kind's shape."""

SHAPE_OVERRIDES: dict[tuple[type[View], str], Any] = {
    (models.PodSpec, "priority"): Int32 | None,
    (models.PriorityClass, "value"): Int32,
    (models.QueueSpec, "priority"): Int32,
    (models.PodGroupSpec, "minMember"): Int32,
    (models.PodGroupStatus, "running"): Int32,
    (models.PodGroupStatus, "scheduled"): Int32,
    (models.BindRequestStatus, "attempts"): Int32,
    (models.Event, "count"): Int32,
    (models.PodSpec, "affinity"): Affinity | None,
    (models.PodStatus, "containerStatuses"): list[ContainerStatus],
    (models.PodStatus, "initContainerStatuses"): list[ContainerStatus],
    (models.NodeStatus, "conditions"): list[Condition],
    (models.QueueStatus, "conditions"): list[Condition],
    (models.PodGroupStatus, "conditions"): list[Condition],
    (models.ResourceRequirements, "claims"): list[ContainerClaim],
    (resource.AllocatedDeviceStatus, "conditions"): list[Condition],
}
"""Fields whose view type is looser than what drasched's logic reads (view, JSON name) -> type."""


def _shape_of(info: mi.Type) -> Shape:
    if isinstance(info, mi.UnionType):
        nullable = any(isinstance(t, mi.NoneType) for t in info.types)
        options = tuple(_shape_of(t) for t in info.types if not isinstance(t, mi.NoneType))
        if {o.type for o in options} == {"string", "integer", "number"} and len(options) == 3:
            return Shape("quantity", nullable=nullable)  # the views' QuantityValue: str | int | float
        if len(options) == 1:
            one = options[0]
            return Shape(one.type, one.fields, one.item, one.options, nullable=nullable, bits=one.bits)
        return Shape("oneOf", options=options, nullable=nullable)
    if isinstance(info, mi.StrType):
        return Shape("string")
    if isinstance(info, mi.BoolType):
        return Shape("boolean")
    if isinstance(info, mi.IntType):
        return Shape("integer", bits=32 if info.le == INT32_MAX else 64)
    if isinstance(info, mi.FloatType):
        return Shape("number")
    if isinstance(info, mi.ListType):
        return Shape("array", item=_shape_of(info.item_type))
    if isinstance(info, mi.DictType):
        return Shape("map", item=_shape_of(info.value_type))
    if isinstance(info, mi.StructType):
        return struct_shape(info.cls)
    return ANY


@functools.cache
def struct_shape(cls: type[View]) -> Shape:
    """The object shape of one view (cached: views never change at run time)."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    fields: dict[str, Shape] = {}
    for f in info.fields:
        override = _override(cls, f.encode_name)
        fields[f.encode_name] = _shape_of(mi.type_info(override)) if override is not None else _shape_of(f.type)
    for (owner, name), typ in SHAPE_OVERRIDES.items():
        if owner is cls and name not in fields:
            fields[name] = _shape_of(mi.type_info(typ))
    return Shape("object", fields)


def _override(cls: type[View], name: str) -> Any:
    return SHAPE_OVERRIDES.get((cls, name))


def shape_for(rt: ResourceType) -> Shape:
    """The shape of a whole object of kind ``rt`` (``any`` for a kind without a view)."""
    view = VIEW_OF.get(rt)
    return struct_shape(view) if view is not None else ANY
