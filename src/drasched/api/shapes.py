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
from typing import Any

import msgspec.inspect as mi

from drasched.api import models, resource, workload_shapes
from drasched.api.decode_views import (
    INT32_MAX,
    TIME_PATTERN,
    Affinity,
    Condition,
    ConfigMap,
    ContainerClaim,
    ContainerPort,
    ContainerResizePolicy,
    ContainerRestartRule,
    ContainerStatus,
    EnvFromSource,
    EnvVar,
    EphemeralContainer,
    EvictionResponder,
    HostAlias,
    Int32,
    Lease,
    Lifecycle,
    LocalObjectReference,
    PodDisruptionBudget,
    PodDNSConfig,
    PodOS,
    PodReadinessGate,
    PodSchedulingGate,
    PodSchedulingGroup,
    PodSecurityContext,
    Probe,
    RuntimeClass,
    SecurityContext,
    ServiceAccount,
    Time,
    TopologySpreadConstraint,
    Volume,
    VolumeDevice,
    VolumeMount,
    WorkloadReference,
)
from drasched.api.kinds import ResourceType
from drasched.api.models import View


@dataclass(frozen=True)
class Shape:
    """One JSON type: ``string``, ``integer``, ``number``, ``boolean``, ``array``, ``object``,
    ``map`` (an object whose keys are free), ``quantity`` (a string ``resource.ParseQuantity``
    accepts, or a number), ``time`` (an RFC 3339 string), ``any``, or ``oneOf`` several shapes."""

    type: str
    fields: dict[str, Shape] = field(default_factory=dict)
    item: Shape | None = None
    options: tuple[Shape, ...] = ()
    nullable: bool = False
    bits: int = 64
    """For an integer: the width of its Go type (int32 fields refuse what int64 ones take)."""


ANY = Shape("any", nullable=True)



VIEW_OF: dict[str, type[View]] = {
    "Pod": models.Pod,
    "Node": models.Node,
    "Namespace": models.Namespace,
    "Event": models.Event,
    "ServiceAccount": ServiceAccount,
    "ConfigMap": ConfigMap,
    "PriorityClass": models.PriorityClass,
    "RuntimeClass": RuntimeClass,
    "Lease": Lease,
    "PodDisruptionBudget": PodDisruptionBudget,
    "DeviceClass": resource.DeviceClass,
    "ResourceClaim": resource.ResourceClaim,
    "ResourceClaimTemplate": resource.ResourceClaimTemplate,
    "ResourceSlice": resource.ResourceSlice,
    "DeviceTaintRule": resource.DeviceTaintRule,
    "Queue": models.Queue,
    "PodGroup": models.PodGroup,
    "BindRequest": models.BindRequest,
    "Job": workload_shapes.Job,
    "Deployment": workload_shapes.Deployment,
    "ReplicaSet": workload_shapes.ReplicaSet,
    "StatefulSet": workload_shapes.StatefulSet,
    "DaemonSet": workload_shapes.DaemonSet,
    "JobSet": workload_shapes.JobSet,
    "LeaderWorkerSet": workload_shapes.LeaderWorkerSet,
}
"""The view whose fields give each kind's shape, by kind (each kind has one API version)."""

SHAPE_OVERRIDES: dict[tuple[type[View], str], Any] = {
    (models.ObjectMeta, "creationTimestamp"): Time | None,
    (models.ObjectMeta, "deletionTimestamp"): Time | None,
    (models.PodCondition, "lastTransitionTime"): Time | None,
    (models.PodStatus, "startTime"): Time | None,
    (models.Taint, "timeAdded"): Time | None,
    (resource.DeviceTaint, "timeAdded"): Time | None,
    (resource.AllocationResult, "allocationTimestamp"): Time | None,
    (models.Event, "firstTimestamp"): Time | None,
    (models.Event, "lastTimestamp"): Time | None,
    (models.Event, "eventTime"): Time | None,
    (models.ClaimAllocation, "allocation"): resource.AllocationResult,
    (models.ExtendedResourceClaimAllocation, "allocation"): resource.AllocationResult,
    (models.ObjectMeta, "deletionGracePeriodSeconds"): int | None,
    (models.PodSpec, "schedulingGates"): list[PodSchedulingGate],
    (models.PodSpec, "schedulingGroup"): PodSchedulingGroup | None,
    (models.PodSpec, "workloadRef"): WorkloadReference | None,
    (models.PodSpec, "priority"): Int32 | None,
    (models.PodSpec, "runtimeClassName"): str | None,
    (models.PriorityClass, "value"): Int32,
    (models.QueueSpec, "priority"): Int32,
    (models.PodGroupSpec, "minMember"): Int32,
    (models.PodGroupStatus, "running"): Int32,
    (models.PodGroupStatus, "scheduled"): Int32,
    (models.BindRequestStatus, "attempts"): Int32,
    (models.Event, "count"): Int32,
    (models.PodSpec, "affinity"): Affinity | None,
    (models.PodSpec, "topologySpreadConstraints"): list[TopologySpreadConstraint],
    (models.PodSpec, "restartPolicy"): str,
    (models.PodSpec, "terminationGracePeriodSeconds"): int | None,
    (models.PodSpec, "activeDeadlineSeconds"): int | None,
    (models.PodSpec, "hostname"): str,
    (models.PodSpec, "subdomain"): str,
    (models.PodSpec, "serviceAccountName"): str,
    (models.PodSpec, "hostNetwork"): bool,
    (models.PodSpec, "resources"): models.ResourceRequirements | None,
    (models.Container, "imagePullPolicy"): str,
    (models.Container, "workingDir"): str,
    (models.Container, "ports"): list[ContainerPort],
    (models.Container, "volumeMounts"): list[VolumeMount],
    (models.Container, "env"): list[EnvVar],
    (models.Container, "envFrom"): list[EnvFromSource],
    (models.Container, "livenessProbe"): Probe | None,
    (models.Container, "readinessProbe"): Probe | None,
    (models.Container, "startupProbe"): Probe | None,
    (models.Container, "securityContext"): SecurityContext | None,
    (models.Container, "stdin"): bool,
    (models.Container, "stdinOnce"): bool,
    (models.Container, "tty"): bool,
    (models.Container, "terminationMessagePath"): str,
    (models.Container, "terminationMessagePolicy"): str,
    (models.Container, "lifecycle"): Lifecycle | None,
    (models.Container, "resizePolicy"): list[ContainerResizePolicy],
    (models.Container, "restartPolicyRules"): list[ContainerRestartRule],
    (models.Container, "volumeDevices"): list[VolumeDevice],
    (models.PodSpec, "volumes"): list[Volume],
    (models.PodSpec, "imagePullSecrets"): list[LocalObjectReference],
    (models.PodSpec, "securityContext"): PodSecurityContext | None,
    (models.PodSpec, "dnsPolicy"): str,
    (models.PodSpec, "serviceAccount"): str,
    (models.PodSpec, "automountServiceAccountToken"): bool | None,
    (models.PodSpec, "enableServiceLinks"): bool | None,
    (models.PodSpec, "shareProcessNamespace"): bool | None,
    (models.PodSpec, "setHostnameAsFQDN"): bool | None,
    (models.PodSpec, "hostIPC"): bool,
    (models.PodSpec, "hostPID"): bool,
    (models.PodSpec, "hostUsers"): bool | None,
    (models.PodSpec, "readinessGates"): list[PodReadinessGate],
    (models.PodSpec, "hostAliases"): list[HostAlias],
    (models.PodSpec, "os"): PodOS | None,
    (models.PodSpec, "dnsConfig"): PodDNSConfig | None,
    (models.PodSpec, "ephemeralContainers"): list[EphemeralContainer],
    (models.PodSpec, "evictionResponders"): list[EvictionResponder],
    (models.PodSpec, "hostnameOverride"): str | None,
    (models.PodStatus, "containerStatuses"): list[ContainerStatus],
    (models.PodStatus, "initContainerStatuses"): list[ContainerStatus],
    (models.NodeStatus, "conditions"): list[Condition],
    (models.QueueStatus, "conditions"): list[Condition],
    (models.PodGroupStatus, "conditions"): list[Condition],
    (models.ResourceRequirements, "claims"): list[ContainerClaim],
    (resource.AllocatedDeviceStatus, "conditions"): list[Condition],
    (resource.DeviceTaintRuleStatus, "conditions"): list[Condition],
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
        return Shape("time" if info.pattern == TIME_PATTERN else "string")
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
    """The object shape of one view (cached: views never change at run time). A view that
    extends another (``EphemeralContainer`` a ``Container``) has its overrides too."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    overrides = _overrides(cls)
    fields: dict[str, Shape] = {}
    for f in info.fields:
        override = overrides.get(f.encode_name)
        fields[f.encode_name] = _shape_of(mi.type_info(override)) if override is not None else _shape_of(f.type)
    for name, typ in overrides.items():
        if name not in fields:
            fields[name] = _shape_of(mi.type_info(typ))
    return Shape("object", fields)


def _overrides(cls: type[View]) -> dict[str, Any]:
    """``SHAPE_OVERRIDES`` of ``cls`` and of the views it extends (its own win), by JSON name."""
    out: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        out.update({name: typ for (owner, name), typ in SHAPE_OVERRIDES.items() if owner is base})
    return out


def shape_for(rt: ResourceType) -> Shape:
    """The shape of a whole object of kind ``rt`` (``any`` for a kind without a view)."""
    view = VIEW_OF.get(rt.kind)
    return struct_shape(view) if view is not None else ANY
