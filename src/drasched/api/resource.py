"""Typed, read-only views of resource.k8s.io/v1 objects (DRA with structured parameters).

The store keeps objects as wire-form dicts; scheduling logic decodes them with
:func:`msgspec.convert` into these Structs to get checked field names and defaults.
Unknown fields are ignored by the view and nothing here is ever written back, so a
newer API server's fields survive a round trip through drasched untouched.

Field names and semantics follow ``k8s.io/api/resource/v1/types.go`` (Kubernetes 1.36).
Quantities stay as the strings (or YAML numbers) they were written as; parse them with
:class:`drasched.quantity.Quantity` where arithmetic is needed.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from drasched.api.models import ObjectMeta, View

__all__ = [
    "ADMIN_ACCESS_NAMESPACE_LABEL",
    "ALLOCATION_RESULTS_MAX_SIZE",
    "FINALIZER",
    "RESERVED_FOR_MAX_SIZE",
    "AllocatedDeviceStatus",
    "AllocationResult",
    "CELDeviceSelector",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CapacityRequirements",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAllocationConfiguration",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClaimConfiguration",
    "DeviceClass",
    "DeviceClassConfiguration",
    "DeviceClassSpec",
    "DeviceConstraint",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceTaintRule",
    "DeviceTaintRuleSpec",
    "DeviceTaintSelector",
    "DeviceToleration",
    "ExactDeviceRequest",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "OpaqueDeviceConfiguration",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
    "decode",
]

FINALIZER = "resource.kubernetes.io/delete-protection"
"""Set on claims allocated by the control plane (upstream ``resourceapi.Finalizer``)."""

ADMIN_ACCESS_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
"""A namespace with this label set to ``"true"`` may use ``adminAccess: true``."""

ALLOCATION_RESULTS_MAX_SIZE = 32
"""At most this many devices in one claim's allocation (``AllocationResultsMaxSize``)."""

RESERVED_FOR_MAX_SIZE = 256
"""At most this many consumers in ``status.reservedFor``."""

# A quantity on the wire is a string; YAML authors also write bare numbers.
QuantityValue = str | int | float


# ---------------------------------------------------------------------------- core/v1 pieces


class NodeSelectorRequirement(View):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(View):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(View):
    node_selector_terms: list[NodeSelectorTerm] = []


# ---------------------------------------------------------------------------- ResourceSlice


class ResourcePool(View):
    name: str
    generation: int = 0
    resource_slice_count: int = 0


class DeviceAttribute(View):
    """Exactly one of the four values is set (upstream ``DeviceAttribute``)."""

    int_: int | None = msgspec.field(default=None, name="int")
    bool_: bool | None = msgspec.field(default=None, name="bool")
    string: str | None = None
    version: str | None = None

    def typed(self) -> tuple[str, Any] | None:
        """``(type, value)`` so that values of different types never compare equal."""
        if self.int_ is not None:
            return ("int", self.int_)
        if self.bool_ is not None:
            return ("bool", self.bool_)
        if self.string is not None:
            return ("string", self.string)
        if self.version is not None:
            return ("version", self.version)
        return None


class CapacityRequestPolicyRange(View):
    min: QuantityValue | None = None
    max: QuantityValue | None = None
    step: QuantityValue | None = None


class CapacityRequestPolicy(View):
    default: QuantityValue | None = None
    valid_values: list[QuantityValue] = []
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(View):
    value: QuantityValue
    request_policy: CapacityRequestPolicy | None = None


class Counter(View):
    value: QuantityValue


class CounterSet(View):
    name: str
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(View):
    counter_set: str
    counters: dict[str, Counter] = {}


class DeviceTaint(View):
    key: str
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class DeviceTaintSelector(View):
    """Which devices a DeviceTaintRule taints; every field set must match (1.35 dropped
    ``deviceClassName`` and ``selectors``)."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class DeviceTaintRuleSpec(View):
    taint: DeviceTaint
    device_selector: DeviceTaintSelector | None = None


class DeviceTaintRuleStatus(View):
    conditions: list[Any] = []


class DeviceTaintRule(View):
    """``resource.k8s.io/v1`` DeviceTaintRule (Kubernetes 1.37): one taint for the selected devices."""

    spec: DeviceTaintRuleSpec
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: DeviceTaintRuleStatus = msgspec.field(default_factory=DeviceTaintRuleStatus)


class Device(View):
    name: str
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    allow_multiple_allocations: bool | None = None


class ResourceSliceSpec(View):
    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    devices: list[Device] = []
    per_device_node_selection: bool | None = None
    shared_counters: list[CounterSet] = []


class ResourceSlice(View):
    spec: ResourceSliceSpec
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


# ---------------------------------------------------------------------------- claims


class CELDeviceSelector(View):
    expression: str


class DeviceSelector(View):
    cel: CELDeviceSelector | None = None


class DeviceToleration(View):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class CapacityRequirements(View):
    requests: dict[str, QuantityValue] = {}


class ExactDeviceRequest(View):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = "ExactCount"
    count: int = 0
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(View):
    name: str
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = "ExactCount"
    count: int = 0
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceRequest(View):
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(View):
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class OpaqueDeviceConfiguration(View):
    driver: str
    parameters: Any = None


class DeviceClaimConfiguration(View):
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(View):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(View):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(View):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, QuantityValue] = {}


class DeviceAllocationConfiguration(View):
    source: str
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(View):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(View):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(View):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class AllocatedDeviceStatus(View):
    driver: str
    pool: str
    device: str
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[dict[str, Any]] = []
    data: Any = None
    network_data: dict[str, Any] | None = None


class ResourceClaimStatus(View):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ResourceClaim(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


# ---------------------------------------------------------------------------- DeviceClass


class DeviceClassConfiguration(View):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(View):
    selectors: list[DeviceSelector] = []
    config: list[DeviceClassConfiguration] = []
    extended_resource_name: str | None = None


class DeviceClass(View):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


_T = TypeVar("_T")


def decode(obj: dict[str, Any], view: type[_T]) -> _T:
    """Decode a wire-form dict into a view; raises ``msgspec.ValidationError`` on bad shapes."""
    return msgspec.convert(obj, view, strict=False)
