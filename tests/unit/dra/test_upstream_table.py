"""Upstream's shared allocator test table, ported case by case.

Source: ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/
allocator_testing.go`` (Kubernetes 1.37.2, ``k8s.io/dynamic-resource-allocation`` v0.37.2; the cases
1.37 added are at the end, those it changed carry a "1.37" comment). Every case keeps its upstream
name; the inputs are the same objects in wire form and the expected ``status.allocation`` is what
upstream's allocator returns, compared field by field (shareIDs are replaced by a fixed value, as
upstream does).

Outcomes:

* a list of allocations: one per claim, in claim order;
* ``NONE``: the node does not fit (upstream: no result, no error);
* ``error(text)``: upstream returns an error, which aborts the pod's scheduling attempt
  (``statusError``): drasched's ``pod_error``;
* ``unschedulable(text)``: upstream fails only this node, or fails the pod in PreFilter as
  unschedulable (a missing DeviceClass, invalid pools surfaced with
  ``ErrFailedAllocationOnNode``): drasched's per-node reasons.

Not ported: cases that need a feature 1.37 does not enable by default (alpha:
``DRAListTypeAttributes``, ``DRADeviceCompatibilityGroups`` including its two "disabled" cases,
whose ``compatibilityGroups`` field the API server drops while the gate is off,
``DRADerivedAttributes``, ``DRAOptionalNodeOperations``, ``DRAFractionalCapacityRange``'s
enabled case) and the ``expectNumAllocateOneInvocations`` counters (an implementation detail).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from drasched.dra.allocated_state import AllocatedState
from drasched.dra.allocator import Allocator, Features
from tests.unit.dra.upstream_table import (
    ALL,
    BOOL_ATTR,
    CAPACITY0,
    CAPACITY1,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DEVICE4,
    DRIVER_A,
    DRIVER_B,
    INT_ATTR,
    MAX,
    NODE1,
    NODE2,
    PER_DEVICE,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    REQ2,
    REQ3,
    STRING_ATTR,
    SUB0,
    SUB1,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    TAINT_NONE,
    TOL_NO_EXECUTE,
    TOL_NO_SCHEDULE,
    TOL_NO_SCHEDULE_KEY1,
    VERSION_ATTR,
    all_request,
    allocation,
    attrs,
    capacity_in_use,
    cel,
    claim,
    claim_with_request,
    cls,
    consumes,
    counter_set,
    counters_slice,
    device,
    device_config,
    in_use,
    label_selector,
    local_selector,
    mem_at_least,
    node,
    partition,
    prioritized,
    range_policy,
    request,
    resource_pool,
    result,
    slice_,
    slice_many,
    slice_one,
    sub_request,
    values_policy,
    version,
    with_tolerations,
)

Obj = dict[str, Any]
ADMIN_NS = {"resource.kubernetes.io/admin-access": "true"}
NONE = "none"


@dataclass
class Outcome:
    kind: str  # "error" | "unschedulable"
    text: str


def error(text: str) -> Outcome:
    return Outcome("error", text)


def unschedulable(text: str = "") -> Outcome:
    return Outcome("unschedulable", text)


@dataclass
class Case:
    claims: list[Obj]
    classes: list[Obj]
    slices: list[Obj]
    expect: Any
    allocated: list[Obj] = field(default_factory=list)
    node: Obj = field(default_factory=node)
    features: Features = field(default_factory=Features)


def _dev(driver: str, pool: str, name: str) -> tuple[str, str, str]:
    return (driver, pool, name)


L1 = local_selector(NODE1)
A_A = cls(CLASS_A, DRIVER_A)
B_B = cls(CLASS_B, DRIVER_B)
MULTI_A = cls(CLASS_A, DRIVER_A, multi=True)
DEDICATED_A = cls(CLASS_A, DRIVER_A, multi=False)


def _gen(s: Obj, generation: int, count: int) -> Obj:
    s = copy.deepcopy(s)
    s["spec"]["pool"]["generation"] = generation
    s["spec"]["pool"]["resourceSliceCount"] = count
    return s


def _renamed(s: Obj, name: str) -> Obj:
    s = copy.deepcopy(s)
    s["metadata"]["name"] = name
    return s


def _admin(c: Obj, index: int = 0, mode: str | None = None, count: int | None = None) -> Obj:
    body = c["spec"]["devices"]["requests"][index]["exactly"]
    body["adminAccess"] = True
    if mode:
        body["allocationMode"] = mode
        if mode == "All":
            body.pop("count", None)
    if count is not None:
        body["count"] = count
    return c


def _cap(r: Obj, q: str | None, **more: str) -> Obj:
    body = r.get("exactly", r)
    reqs = {CAPACITY0: q} if q is not None else {}
    reqs.update(more)
    body["capacity"] = {"requests": reqs}
    return r


def _multi(d: Obj) -> Obj:
    d["allowMultipleAllocations"] = True
    return d


def _binding(d: Obj, conditions: list[str], failures: list[str]) -> Obj:
    d["bindingConditions"] = conditions
    d["bindingFailureConditions"] = failures
    return d


CASES: dict[str, Case] = {}


def case(name: str, c: Case) -> None:
    assert name not in CASES
    CASES[name] = c


# ------------------------------------------------------------------ basics

case(
    "simple",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "other-node",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_B), slice_one("slice-2", NODE2, POOL2, DRIVER_A)],
        [allocation(local_selector(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
        node=node(NODE2, REGION2),
    ),
)
_small_large = [request(REQ0, CLASS_A, 1, mem_at_least("1Gi")), request(REQ1, CLASS_A, 1, mem_at_least("2Gi"))]
case(
    "small-and-large",
    Case(
        [claim(CLAIM0, *copy.deepcopy(_small_large))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "1Gi"}),
                device(DEVICE2, {"memory": "2Gi"}),
            )
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
)
case(
    "small-and-large-backtrack-requests",
    Case(
        [claim(CLAIM0, *copy.deepcopy(_small_large))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE1, {"memory": "1Gi"}),
            )
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
)
case(
    "small-and-large-backtrack-claims",
    Case(
        [claim(CLAIM0, copy.deepcopy(_small_large[0])), claim(CLAIM1, copy.deepcopy(_small_large[1]))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE1, {"memory": "1Gi"}),
            )
        ],
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(L1, result(REQ1, DRIVER_A, POOL1, DEVICE2)),
        ],
    ),
)
case(
    "devices-split-across-different-slices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A), slice_one("slice-2", NODE1, POOL2, DRIVER_A)],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
)
case(
    "obsolete-slice",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [
            slice_("slice-1-obsolete", NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_("slice-1-obsolete-2", NODE1, resource_pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2)),
        ],
        NONE,
    ),
)
case(
    "duplicate-slice",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [
            _gen(slice_one("slice-1", NODE1, POOL1, DRIVER_A), 1, 2),
            _gen(slice_one("slice-1-2", NODE1, POOL1, DRIVER_A), 1, 2),
        ],
        unschedulable("duplicate device name device-1"),
    ),
)
case("no-slices", Case([claim_with_request(CLAIM0, REQ0, CLASS_A)], [A_A], [], NONE))
case(
    "not-enough-suitable-devices",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A), claim_with_request(CLAIM1, REQ1, CLASS_A)],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        NONE,
    ),
)
case(
    "no-classes",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        unschedulable("device class class-a does not exist"),
    ),
)
case(
    "unknown-class",
    Case(
        [claim_with_request(CLAIM0, REQ0, "unknown-class")],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        unschedulable("device class unknown-class does not exist"),
    ),
)
case(
    "empty-class",
    Case(
        [claim_with_request(CLAIM0, REQ0, "")],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("request req-0: missing device class name (unsupported request type?)"),
    ),
)
case("no-claims-to-allocate", Case([], [A_A], [slice_one("slice-1", NODE1, POOL1, DRIVER_A)], []))

# ------------------------------------------------------------------ allocationMode: All

case(
    "all-devices-single",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "all-devices-many",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A), slice_one("slice-1b", NODE1, POOL2, DRIVER_A)],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
)
case(
    "all-devices-of-the-incomplete-pool",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A],
        [_gen(slice_one("slice-1", NODE1, POOL1, DRIVER_A), 1, 2)],
        error("request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated"),
    ),
)
_two_slices_ab = [slice_one("slice-1", NODE1, POOL1, DRIVER_A), slice_one("slice-1b", NODE1, POOL1, DRIVER_B)]
case(
    "all-devices-plus-another",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B, 1))],
        [A_A, B_B],
        copy.deepcopy(_two_slices_ab),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(L1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
)
case(
    "all-devices-plus-another-reversed",
    Case(
        [claim(CLAIM1, request(REQ0, CLASS_B, 1)), claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A, B_B],
        copy.deepcopy(_two_slices_ab),
        [
            allocation(L1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
        ],
    ),
)
_many_ab = [
    slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
    slice_one("slice-1b", NODE1, POOL1, DRIVER_B),
]
case(
    "all-devices-many-plus-another",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B, 1))],
        [A_A, B_B],
        copy.deepcopy(_many_ab),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)),
            allocation(L1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
)
case(
    "all-devices-many-plus-another-reversed",
    Case(
        [claim(CLAIM1, request(REQ0, CLASS_B, 1)), claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A, B_B],
        copy.deepcopy(_many_ab),
        [
            allocation(L1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)),
        ],
    ),
)
case(
    "all-devices-no-solution",
    Case(
        [claim(CLAIM1, request(REQ0, CLASS_A, 1)), claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        NONE,
    ),
)
case(
    "all-devices-no-solution-reversed",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        NONE,
    ),
)
case(
    "all-devices-slice-without-devices",
    Case([claim(CLAIM0, all_request(REQ0, CLASS_A))], [A_A], [slice_("slice-1", NODE1, POOL1, DRIVER_A)], NONE),
)
case("all-devices-no-slices", Case([claim(CLAIM0, all_request(REQ0, CLASS_A))], [A_A], [], NONE))
_two_devs = [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))]
case(
    "all-devices-some-allocated",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A],
        copy.deepcopy(_two_devs),
        NONE,
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1)),
    ),
)

# ------------------------------------------------------------------ admin access

case(
    "all-devices-some-allocated-admin-access",
    Case(
        [_admin(claim_with_request(CLAIM0, REQ0, CLASS_A), mode="All")],
        [A_A],
        copy.deepcopy(_two_devs),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True), result(REQ0, DRIVER_A, POOL1, DEVICE2, True))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1)),
    ),
)
case(
    "all-devices-some-allocating-admin-access",
    Case(
        [_admin(_admin(claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))), 1, mode="All")],
        [A_A],
        copy.deepcopy(_two_devs),
        NONE,
    ),
)
case(
    "count-devices-some-allocated-admin-access",
    Case(
        [_admin(claim_with_request(CLAIM0, REQ0, CLASS_A), count=2)],
        [A_A],
        copy.deepcopy(_two_devs),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True), result(REQ0, DRIVER_A, POOL1, DEVICE2, True))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1)),
    ),
)
case(
    "separate-claims-share-device-admin-access",
    Case(
        [_admin(claim_with_request(CLAIM0, REQ0, CLASS_A)), _admin(claim_with_request(CLAIM1, REQ0, CLASS_A))],
        [A_A],
        copy.deepcopy(_two_devs),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
        ],
    ),
)
case(
    "admin-access-claims-device-allocating-for-non-admin-access",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A), _admin(claim_with_request(CLAIM1, REQ0, CLASS_A))],
        [A_A],
        copy.deepcopy(_two_devs),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
        ],
    ),
)
case(
    "admin-access-disabled",
    Case(
        [_admin(claim_with_request(CLAIM0, REQ0, CLASS_A))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("request req-0: admin access is requested, but the feature is disabled"),
        features=Features(admin_access=False),
    ),
)
case(
    "admin-access-enabled",
    Case(
        [_admin(claim_with_request(CLAIM0, REQ0, CLASS_A))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1), _dev(DRIVER_A, POOL1, DEVICE2)),
    ),
)

# ------------------------------------------------------------------ prioritized list with All


def _fa_all_first(klass_second: str = CLASS_B) -> Obj:
    return claim(
        CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, mode="All"), sub_request(SUB1, klass_second, 1))
    )


case(
    "all-devices-slice-without-devices-prioritized-list",
    Case(
        [_fa_all_first()],
        [A_A, B_B],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A), slice_one("slice-2", NODE1, POOL2, DRIVER_B)],
        [allocation(L1, result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1))],
    ),
)
case(
    "all-devices-no-slices-prioritized-list",
    Case(
        [_fa_all_first()],
        [A_A, B_B],
        [slice_one("slice-2", NODE1, POOL2, DRIVER_B)],
        [allocation(L1, result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1))],
    ),
)
case(
    "all-devices-some-allocated-prioritized-list",
    Case(
        [_fa_all_first()],
        [A_A, B_B],
        [
            slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            slice_one("slice-2", NODE1, POOL2, DRIVER_B),
        ],
        [allocation(L1, result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1)),
    ),
)

# ------------------------------------------------------------------ node selection

case(
    "network-attached-device",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_one("slice-1", label_selector("region", REGION1), POOL1, DRIVER_A)],
        [allocation(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "unsuccessful-allocation-network-attached-device",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_one("slice-1", label_selector("region", REGION1), POOL1, DRIVER_A)],
        NONE,
        node=node(NODE2, REGION2),
    ),
)
case(
    "many-network-attached-devices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 4))],
        [A_A],
        [
            slice_one("slice-1", label_selector("region", REGION1), POOL1, DRIVER_A),
            slice_one("slice-1b", ALL, POOL2, DRIVER_A),
            slice_one("slice-1c", label_selector("planet", "earth"), POOL3, DRIVER_A),
            slice_one("slice-1d", local_selector(NODE1), POOL4, DRIVER_A),
        ],
        [
            allocation(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "region", "operator": "In", "values": [REGION1]},
                                {"key": "planet", "operator": "In", "values": ["earth"]},
                            ],
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE1]}],
                        }
                    ]
                },
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
                result(REQ0, DRIVER_A, POOL3, DEVICE1),
                result(REQ0, DRIVER_A, POOL4, DEVICE1),
            )
        ],
    ),
)
case(
    "local-and-network-attached-devices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        [A_A],
        [
            slice_one("slice-1", label_selector("region", REGION1), POOL1, DRIVER_A),
            slice_one("slice-1b", NODE1, POOL2, DRIVER_A),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
)
case(
    "several-different-drivers",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A), claim_with_request(CLAIM0, REQ0, CLASS_B)],
        [A_A, B_B],
        copy.deepcopy(_many_ab),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(L1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
)
case(
    "already-allocated-devices",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        NONE,
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1), _dev(DRIVER_A, POOL1, DEVICE2)),
    ),
)

# ------------------------------------------------------------------ constraints

_all_typed = attrs(driverVersion=version("1.0.0"), numa=1, stringAttribute="stringAttributeValue", boolAttribute=True)
case(
    "with-constraint",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                constraints=[
                    {"matchAttribute": INT_ATTR},
                    {"matchAttribute": VERSION_ATTR},
                    {"matchAttribute": STRING_ATTR},
                    {"matchAttribute": BOOL_ATTR},
                ],
            )
        ],
        [A_A],
        [
            slice_(
                "slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, None, _all_typed), device(DEVICE2, None, _all_typed)
            )
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
)
case(
    "with-constraint-non-existent-attribute",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A, {"matchAttribute": f"{DRIVER_A}/NonExistentAttribute"})],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        NONE,
    ),
)


def _two_with(name: str, v1: Any, v2: Any) -> list[Obj]:
    return [
        slice_(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEVICE1, None, attrs(**{name: v1})),
            device(DEVICE2, None, attrs(**{name: v2})),
        )
    ]


for _label, _attr, _short, _v1, _v2 in (
    ("int", INT_ATTR, "numa", 1, 2),
    ("string", STRING_ATTR, "stringAttribute", "stringAttributeValue", "stringAttributeValue2"),
    ("bool", BOOL_ATTR, "boolAttribute", True, False),
    ("version", VERSION_ATTR, "driverVersion", version("1.0.0"), version("2.0.0")),
):
    case(
        f"with-constraint-not-matching-{_label}-attribute",
        Case(
            [claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[{"matchAttribute": _attr}])],
            [A_A, B_B],
            _two_with(_short, _v1, _v2),
            NONE,
        ),
    )
case(
    "with-constraint-not-matching-int-attribute-all-devices",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A), constraints=[{"matchAttribute": INT_ATTR}])],
        [A_A, B_B],
        _two_with("numa", 1, 2),
        error(
            "request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be "
            "satisfied"
        ),
    ),
)
case(
    "with-constraint-for-request",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                constraints=[{"requests": [REQ0], "matchAttribute": VERSION_ATTR}],
            )
        ],
        [A_A, B_B],
        _two_with("driverVersion", version("1.0.0"), version("2.0.0")),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
)
case(
    "with-constraint-for-request-retry",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                constraints=[{"requests": [REQ0], "matchAttribute": VERSION_ATTR}, {"matchAttribute": STRING_ATTR}],
            )
        ],
        [A_A, B_B],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, attrs(driverVersion=version("1.0.0"), stringAttribute="a")),
                device(DEVICE2, None, attrs(driverVersion=version("2.0.0"), stringAttribute="b")),
                device(DEVICE3, None, attrs(driverVersion=version("3.0.0"), stringAttribute="b")),
            )
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3))],
    ),
)

# ------------------------------------------------------------------ config

case(
    "with-class-device-config",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [cls(CLASS_A, DRIVER_A, config_attr="classAttribute")],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[{**device_config(DRIVER_A, "classAttribute"), "source": "FromClass"}],  # 1.37: all
            )
        ],
    ),
)
case(
    "with-class-device-config-with-multiple-request-and-configs",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1), request(REQ2, CLASS_B, 1))],
        [
            cls(CLASS_A, DRIVER_A, config_attr="classAttribute-A"),
            cls(CLASS_B, DRIVER_B, config_attr="classAttribute-B"),
        ],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, 2), slice_one("slice-2", NODE1, POOL1, DRIVER_B)],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE0),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ2, DRIVER_B, POOL1, DEVICE1),
                config=[
                    {**device_config(DRIVER_A, "classAttribute-A"), "source": "FromClass", "requests": [REQ0, REQ1]},
                    {**device_config(DRIVER_B, "classAttribute-B"), "source": "FromClass", "requests": [REQ2]},
                ],
            )
        ],
    ),
)
case(
    "claim-with-device-config",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), config=[device_config(DRIVER_A, "deviceAttribute")])],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[{**device_config(DRIVER_A, "deviceAttribute"), "source": "FromClaim"}],
            )
        ],
    ),
)

# ------------------------------------------------------------------ bad input

case(
    "unknown-selector",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, {}))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("CEL expression empty (unsupported selector type?)"),
    ),
)
case(
    "unknown-allocation-mode",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, mode="future-mode"))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("unsupported count mode future-mode"),
    ),
)
case(
    "unknown-constraint",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), constraints=[{}])],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("empty constraint (unsupported constraint type?)"),
    ),
)
case(
    "invalid-CEL-one-device",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, cel("noSuchVar")))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("undeclared reference"),
    ),
)
case(
    "invalid-CEL-one-device-class",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [{**A_A, "spec": {"selectors": [cel("noSuchVar")]}}],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("undeclared reference"),
    ),
)
case(
    "invalid-CEL-all-devices",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A, cel("noSuchVar")))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("undeclared reference"),
    ),
)
case(
    "too-many-devices-single-request",
    Case([claim(CLAIM0, request(REQ0, CLASS_A, 500))], [A_A], [], error("exceeds the claim limit")),
)
case("many-devices-okay", Case([claim(CLAIM0, request(REQ0, CLASS_A, MAX))], [A_A], [], NONE))
case(
    "too-many-devices-total",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, MAX), request(REQ1, CLASS_A, 1))],
        [A_A],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, MAX + 1)],
        error("exceeds the claim limit"),
    ),
)

# ------------------------------------------------------------------ prioritized list

R0S0, R0S1, R1S0, R1S1, R2S0, R2S1 = (
    f"{REQ0}/{SUB0}",
    f"{REQ0}/{SUB1}",
    f"{REQ1}/{SUB0}",
    f"{REQ1}/{SUB1}",
    f"{REQ2}/{SUB0}",
    f"{REQ2}/{SUB1}",
)
case(
    "prioritized-list-first-unavailable",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1), sub_request(SUB1, CLASS_A, 1)))],
        [A_A, B_B],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "prioritized-list-non-available",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 2), sub_request(SUB1, CLASS_A, 2)))],
        [A_A, B_B],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A), slice_one("slice-2", NODE1, POOL2, DRIVER_B)],
        NONE,
    ),
)
case(
    "prioritized-list-device-config",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(REQ0, sub_request(SUB0, CLASS_A, 1), sub_request(SUB1, CLASS_B, 2)),
                config=[
                    {"requests": [R0S0], **device_config(DRIVER_A, "foo")},
                    {"requests": [R0S1], **device_config(DRIVER_B, "bar")},
                ],
            )
        ],
        [A_A, B_B],
        [slice_("slice-1", NODE1, POOL1, DRIVER_B, device(DEVICE1, None, {}), device(DEVICE2, None, {}))],
        [
            allocation(
                L1,
                result(R0S1, DRIVER_B, POOL1, DEVICE1),
                result(R0S1, DRIVER_B, POOL1, DEVICE2),
                config=[{"source": "FromClaim", **device_config(DRIVER_B, "bar")}],  # 1.37: covers every request
            )
        ],
    ),
)
case(
    "prioritized-list-class-config",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_B, 2)))],
        [cls(CLASS_A, DRIVER_A, config_attr="foo"), cls(CLASS_B, DRIVER_B, config_attr="bar")],
        [
            slice_("slice-1", NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2)),
            slice_("slice-2", NODE1, POOL2, DRIVER_A, device(DEVICE3)),
        ],
        [
            allocation(
                L1,
                result(R0S1, DRIVER_B, POOL1, DEVICE1),
                result(R0S1, DRIVER_B, POOL1, DEVICE2),
                config=[{"source": "FromClass", **device_config(DRIVER_B, "bar")}],  # 1.37: covers every request
            )
        ],
    ),
)
case(
    "prioritized-list-subrequests-with-expressions",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, mem_at_least("1Gi")),
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, mem_at_least("4Gi")),
                    sub_request(SUB1, CLASS_A, 2, mem_at_least("2Gi")),
                ),
            )
        ],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "2Gi"}),
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE3, {"memory": "1Gi"}),
            )
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(R1S1, DRIVER_A, POOL1, DEVICE1),
                result(R1S1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
)
_mem_ver = [
    slice_(
        "slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "8Gi"}, attrs(driverVersion=version("1.0.0")))
    ),
    slice_(
        "slice-2",
        NODE1,
        POOL2,
        DRIVER_A,
        device(DEVICE2, {"memory": "2Gi"}, attrs(driverVersion=version("2.0.0"))),
        device(DEVICE3, {"memory": "1Gi"}, attrs(driverVersion=version("1.0.0"))),
    ),
]
_fa_8_2_1 = [
    request(REQ0, CLASS_A, 1, mem_at_least("8Gi")),
    prioritized(
        REQ1, sub_request(SUB0, CLASS_A, 1, mem_at_least("2Gi")), sub_request(SUB1, CLASS_A, 1, mem_at_least("1Gi"))
    ),
]
case(
    "prioritized-list-subrequests-with-constraints-ref-parent-request",
    Case(
        [
            claim(
                CLAIM0,
                *copy.deepcopy(_fa_8_2_1),
                constraints=[{"requests": [REQ0, REQ1], "matchAttribute": VERSION_ATTR}],
            )
        ],
        [A_A],
        copy.deepcopy(_mem_ver),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL2, DEVICE3))],
    ),
)
case(
    "prioritized-list-subrequests-with-constraints-ref-sub-request",
    Case(
        [
            claim(
                CLAIM0,
                *copy.deepcopy(_fa_8_2_1),
                constraints=[{"requests": [REQ0, R1S0], "matchAttribute": VERSION_ATTR}],
            )
        ],
        [A_A],
        [
            copy.deepcopy(_mem_ver[0]),
            slice_(
                "slice-2",
                NODE1,
                POOL2,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}, attrs(driverVersion=version("2.0.0"))),
            ),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL2, DEVICE2))],
    ),
)
case(
    "prioritized-list-subrequests-with-allocation-mode-all",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, mode="All"), sub_request(SUB1, CLASS_A, 1)))],
        [A_A],
        copy.deepcopy(_two_devs),
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE2))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1)),
    ),
)
case(
    "prioritized-list-allocation-mode-all-multiple-requests",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                prioritized(REQ1, sub_request(SUB0, CLASS_A, 0, mode="All"), sub_request(SUB1, CLASS_A, 1)),
            )
        ],
        [A_A],
        copy.deepcopy(_two_devs),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE2))],
    ),
)
case(
    "prioritized-list-disabled",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1)))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"),
        features=Features(prioritized_list=False),
    ),
)
_8_4 = [
    slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "8Gi"}, {})),
    slice_("slice-2", NODE1, POOL2, DRIVER_A, device(DEVICE2, {"memory": "4Gi"}, {})),
]
case(
    "prioritized-list-multi-request",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ1, CLASS_A, 1, mem_at_least("8Gi")),
                prioritized(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, mem_at_least("8Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
            )
        ],
        [A_A],
        copy.deepcopy(_8_4),
        [allocation(L1, result(REQ1, DRIVER_A, POOL1, DEVICE1), result(R0S1, DRIVER_A, POOL2, DEVICE2))],
    ),
)
case(
    "prioritized-list-with-backtracking",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, mem_at_least("8Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
                request(REQ1, CLASS_A, 1, mem_at_least("8Gi")),
            )
        ],
        [A_A],
        copy.deepcopy(_8_4),
        [allocation(L1, result(R0S1, DRIVER_A, POOL2, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "prioritized-list-too-many-in-first-subrequest",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 500), sub_request(SUB1, CLASS_A, 1)))],
        [A_A, B_B],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1))],
    ),
)

# ------------------------------------------------------------------ partitionable devices


def _pool2(name: str = POOL1) -> Obj:
    return resource_pool(name, 2)


case(
    "partitionable-devices-single-device",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi"), from_counters=False),
            ),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
_4_6_4 = [
    partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi")),
    partition(DEVICE2, consumes(COUNTER_SET1, memory="6Gi")),
    partition(DEVICE3, consumes(COUNTER_SET1, memory="4Gi")),
]
case(
    "partitionable-devices-prioritized-list",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, mem_at_least("6Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
            )
        ],
        [A_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A, *copy.deepcopy(_4_6_4)),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE3))],
    ),
)
case(
    "partitionable-devices-multiple-devices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        [A_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A, *copy.deepcopy(_4_6_4)),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE3))],
    ),
)
case(
    "partitionable-devices-multiple-capacity-pools",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, mem_at_least("6Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
            )
        ],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi"), consumes(COUNTER_SET2, cpus="4")),
                partition(DEVICE2, consumes(COUNTER_SET1, memory="6Gi"), consumes(COUNTER_SET2, cpus="6")),
                partition(DEVICE3, consumes(COUNTER_SET1, memory="4Gi"), consumes(COUNTER_SET2, cpus="4")),
            ),
            counters_slice(
                "slice-2",
                NODE1,
                _pool2(),
                DRIVER_A,
                counter_set(COUNTER_SET1, memory="18Gi"),
                counter_set(COUNTER_SET2, cpus="8"),
            ),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE3))],
    ),
)
case(
    "partitionable-devices-multiple-counters",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                partition(
                    DEVICE1,
                    consumes(COUNTER_SET1, memory="4Gi", cpus="6"),
                    consumes(COUNTER_SET2, cpus="4", memory="2Gi"),
                ),
                partition(
                    DEVICE2,
                    consumes(COUNTER_SET1, memory="6Gi", cpus="4"),
                    consumes(COUNTER_SET2, cpus="6", memory="6Gi"),
                ),
                partition(
                    DEVICE3,
                    consumes(COUNTER_SET1, memory="4Gi", cpus="4"),
                    consumes(COUNTER_SET2, cpus="4", memory="4Gi"),
                ),
            ),
            counters_slice(
                "slice-2",
                NODE1,
                _pool2(),
                DRIVER_A,
                counter_set(COUNTER_SET1, cpus="8", memory="18Gi"),
                counter_set(COUNTER_SET2, cpus="12", memory="18Gi"),
            ),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3))],
    ),
)
case(
    "partitionable-devices-multiple-pools",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, cpus="6", memory="4Gi")),
                partition(DEVICE2, consumes(COUNTER_SET1, cpus="4", memory="6Gi")),
                partition(DEVICE3, consumes(COUNTER_SET1, cpus="4", memory="4Gi")),
            ),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, cpus="8", memory="18Gi")),
            slice_(
                "slice-3",
                NODE1,
                _pool2(POOL2),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, cpus="6", memory="4Gi")),
                partition(DEVICE2, consumes(COUNTER_SET1, cpus="1", memory="7Gi")),
                partition(DEVICE3, consumes(COUNTER_SET1, cpus="1", memory="7Gi")),
            ),
            counters_slice(
                "slice-4", NODE1, _pool2(POOL2), DRIVER_A, counter_set(COUNTER_SET1, cpus="8", memory="18Gi")
            ),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL2, DEVICE2), result(REQ1, DRIVER_A, POOL2, DEVICE3))],
        allocated=in_use(
            _dev(DRIVER_A, POOL1, DEVICE2), _dev(DRIVER_A, POOL1, DEVICE3), _dev(DRIVER_A, POOL2, DEVICE1)
        ),
    ),
)
case(
    "partitionable-devices-unused-counters-in-counter-set",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="5Gi"), from_counters=False),
                partition(DEVICE2, consumes(COUNTER_SET1, memory="4Gi"), from_counters=False),
                partition(DEVICE3, consumes(COUNTER_SET1, memory="4Gi"), from_counters=False),
            ),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi", unused="1Gi")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ0, DRIVER_A, POOL1, DEVICE3))],
    ),
)
# Upstream writes these two with single-slice pools (a counter slice and a device slice
# both claiming resourceSliceCount 1): two slices of one generation for a count of 1 make
# the pool incomplete here and upstream alike, so nothing is allocated either way.
case(
    "partitionable-devices-no-capacity-available",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi")),
                partition(DEVICE2, consumes(COUNTER_SET1, memory="16Gi")),
            ),
            counters_slice("slice-2", NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")),
        ],
        NONE,
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE2)),
    ),
)
case(
    "partitionable-devices-overallocated-capacity-pool",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi")),
                partition(DEVICE2, consumes(COUNTER_SET1, memory="20Gi")),
            ),
            counters_slice("slice-2", NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")),
        ],
        NONE,
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE2)),
    ),
)
case(
    "partitionable-devices-disabled-device-consumes-counters",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi"), from_counters=False),
            ),
            counters_slice("slice-2", NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")),
        ],
        NONE,
        features=Features(partitionable_devices=False),
    ),
)
case(
    "partitionable-devices-per-device-node-selection-nodename",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, mem_at_least("6Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
            )
        ],
        [A_A],
        [
            slice_(
                "slice-1",
                PER_DEVICE,
                _pool2(),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi"), nodeName=NODE1),
                partition(DEVICE2, consumes(COUNTER_SET1, memory="6Gi"), nodeName=NODE2),
            ),
            counters_slice("slice-2", PER_DEVICE, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")),
        ],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "partitionable-devices-per-device-node-selection-node-selector",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                PER_DEVICE,
                _pool2(),
                DRIVER_A,
                partition(
                    DEVICE1, consumes(COUNTER_SET1, memory="4Gi"), nodeSelector=label_selector("region", REGION1)
                ),
            ),
            counters_slice("slice-2", PER_DEVICE, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")),
        ],
        [allocation(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 3), request(REQ1, CLASS_B, 3))],
        [A_A, B_B],
        [
            slice_(
                "slice-1",
                PER_DEVICE,
                _pool2(),
                DRIVER_A,
                partition(
                    DEVICE1, consumes(COUNTER_SET1, memory="4Gi"), nodeSelector=label_selector("region", REGION1)
                ),
                partition(DEVICE2, consumes(COUNTER_SET1, memory="4Gi"), nodeName=NODE1),
                partition(DEVICE3, consumes(COUNTER_SET1, memory="4Gi"), allNodes=True),
            ),
            counters_slice("slice-2", PER_DEVICE, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")),
            slice_(
                "slice-3",
                NODE1,
                _pool2(POOL2),
                DRIVER_B,
                partition(DEVICE1, consumes(COUNTER_SET2, memory="4Gi")),
                partition(DEVICE2, consumes(COUNTER_SET2, memory="4Gi")),
                partition(DEVICE3, consumes(COUNTER_SET2, memory="4Gi")),
            ),
            counters_slice("slice-4", NODE1, _pool2(POOL2), DRIVER_B, counter_set(COUNTER_SET2, memory="12Gi")),
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1, DRIVER_B, POOL2, DEVICE1),
                result(REQ1, DRIVER_B, POOL2, DEVICE2),
                result(REQ1, DRIVER_B, POOL2, DEVICE3),
            )
        ],
    ),
)

# ------------------------------------------------------------------ device taints

_tainted_two = [
    slice_(
        "slice-1",
        NODE1,
        POOL1,
        DRIVER_A,
        device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
        device(DEVICE2, taints=[TAINT_NO_EXECUTE]),
    )
]
case("tainted-two-devices", Case([claim_with_request(CLAIM0, REQ0, CLASS_A)], [A_A], copy.deepcopy(_tainted_two), NONE))
case(
    "tainted-one-device-two-taints",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
        NONE,
    ),
)
case(
    "tainted-two-devices-tolerated",
    Case(
        [with_tolerations(claim_with_request(CLAIM0, REQ0, CLASS_A), TOL_NO_EXECUTE)],
        [A_A],
        copy.deepcopy(_tainted_two),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2, False, TOL_NO_EXECUTE))],
    ),
)
case(
    "tainted-two-devices-prioritized-list-tolerated",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0, sub_request(SUB0, CLASS_A, 1), sub_request(SUB1, CLASS_A, 1, tolerations=[TOL_NO_EXECUTE])
                ),
            )
        ],
        [A_A],
        copy.deepcopy(_tainted_two),
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE2, False, TOL_NO_EXECUTE))],
    ),
)
case(
    "tainted-no-effect",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NONE]))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "tainted-one-device-two-taints-both-tolerated",
    Case(
        [with_tolerations(claim_with_request(CLAIM0, REQ0, CLASS_A), TOL_NO_SCHEDULE, TOL_NO_EXECUTE)],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, False, TOL_NO_SCHEDULE, TOL_NO_EXECUTE))],
    ),
)
case(
    "tainted-disabled",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        features=Features(device_taints=False),
    ),
)
case(
    "tainted-prioritized-list",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1), sub_request(SUB1, CLASS_A, 1)))],
        [A_A, B_B],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        NONE,
    ),
)
case(
    "tainted-admin-access",
    Case(
        [_admin(claim_with_request(CLAIM0, REQ0, CLASS_A))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        NONE,
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1), _dev(DRIVER_A, POOL1, DEVICE2)),
    ),
)
case(
    "tainted-admin-access-disabled",
    Case(
        [_admin(claim_with_request(CLAIM0, REQ0, CLASS_A))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1), _dev(DRIVER_A, POOL1, DEVICE2)),
        features=Features(device_taints=False),
    ),
)
case(
    "tainted-all-devices-single-disabled",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        features=Features(device_taints=False),
    ),
)
case(
    "tainted-prioritized-list-disabled",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1), sub_request(SUB1, CLASS_A, 1)))],
        [A_A, B_B],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1))],
        features=Features(device_taints=False),
    ),
)
case(
    "partitionable-devices-disabled-other-device-do-not-consume-counters",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi"), from_counters=False),
                device(DEVICE2),
            ),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
        features=Features(partitionable_devices=False),
    ),
)
case(
    "tainted-all-devices-single",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        NONE,
    ),
)

# ------------------------------------------------------------------ prioritized list and All

case(
    "prioritized-list-allocation-mode-all",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, mode="All"), sub_request(SUB1, CLASS_A, 1)))],
        [A_A],
        copy.deepcopy(_two_devs),
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE2)),
    ),
)
_gen_sel = [
    prioritized(
        REQ0,
        sub_request(SUB0, CLASS_A, 0, cel(f'device.attributes["{DRIVER_A}"].generation == "v6"'), mode="All"),
        sub_request(SUB1, CLASS_A, 0, cel(f'device.attributes["{DRIVER_A}"].generation == "v5"'), mode="All"),
    )
]
case(
    "prioritized-list-allocation-mode-all-with-selectors",
    Case(
        [claim(CLAIM0, *copy.deepcopy(_gen_sel))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, None, attrs(generation="v5")))],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools",
    Case(
        [claim(CLAIM0, *copy.deepcopy(_gen_sel))],
        [A_A],
        [
            slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, None, attrs(generation="v5"))),
            slice_("slice-2", NODE1, POOL2, DRIVER_A, device(DEVICE1, None, attrs(generation="v5"))),
        ],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1), result(R0S1, DRIVER_A, POOL2, DEVICE1))],
    ),
)
case(
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes",
    Case(
        [claim(CLAIM0, *copy.deepcopy(_gen_sel))],
        [A_A],
        [
            slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, None, attrs(generation="v5"))),
            slice_(
                "slice-2",
                NODE2,
                POOL2,
                DRIVER_A,
                device(DEVICE1, None, attrs(generation="v5")),
                device(DEVICE2, None, attrs(generation="v6")),
            ),
        ],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset",
    Case(
        [claim(CLAIM0, *copy.deepcopy(_gen_sel))],
        [
            {
                **A_A,
                "spec": {
                    "selectors": [cel(f'device.driver == "{DRIVER_A}" && device.attributes["{DRIVER_A}"].selected')]
                },
            }
        ],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, attrs(generation="v6", selected=False)),
                device(DEVICE2, None, attrs(generation="v5", selected=False)),
                device(DEVICE3, None, attrs(generation="v5", selected=True)),
            )
        ],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE3))],
    ),
)
case(
    "max-number-devices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, MAX))],
        [A_A],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, MAX)],
        [allocation(L1, *[result(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(MAX)])],
    ),
)
case(
    "partitionable-devices-with-attribute-selector",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                request(REQ1, CLASS_A, 1, cel(f'device.attributes["{DRIVER_A}"].special')),
            )
        ],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                partition(
                    DEVICE1,
                    consumes(COUNTER_SET1, cpu1="1"),
                    consumes(COUNTER_SET2, mem="10Gi"),
                    from_counters=False,
                    attributes=attrs(special=True),
                ),
                partition(
                    DEVICE2,
                    consumes(COUNTER_SET1, cpu2="1"),
                    consumes(COUNTER_SET2, mem="10Gi"),
                    from_counters=False,
                    attributes=attrs(special=False),
                ),
                partition(
                    DEVICE3,
                    consumes(COUNTER_SET1, cpu3="1"),
                    consumes(COUNTER_SET2, mem="10Gi"),
                    from_counters=False,
                    attributes=attrs(special=False),
                ),
            ),
            counters_slice(
                "slice-2",
                NODE1,
                _pool2(),
                DRIVER_A,
                counter_set(COUNTER_SET1, cpu1="1", cpu2="1", cpu3="1"),
                counter_set(COUNTER_SET2, mem="30Gi"),
            ),
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
            )
        ],
    ),
)
case(
    "prioritized-list-max-allocation-limit-request",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(REQ0, sub_request(SUB0, CLASS_A, MAX), sub_request(SUB1, CLASS_A, MAX // 2)),
                prioritized(REQ1, sub_request(SUB0, CLASS_A, MAX), sub_request(SUB1, CLASS_A, MAX // 2)),
            )
        ],
        [A_A],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, MAX * 2)],
        [
            allocation(
                L1,
                *[result(R0S1, DRIVER_A, POOL1, f"device-{i}") for i in range(MAX // 2)],
                *[result(R1S1, DRIVER_A, POOL1, f"device-{i}") for i in range(MAX // 2, MAX)],
            )
        ],
    ),
)
case(
    "prioritized-list-max-allocation-allocation-mode-all",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, mode="All"), sub_request(SUB1, CLASS_A, 2)),
                request(REQ1, CLASS_B, 2),
            )
        ],
        [A_A, B_B],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, MAX - 1), slice_many("slice-2", NODE1, POOL2, DRIVER_B, 2)],
        [
            allocation(
                L1,
                result(R0S1, DRIVER_A, POOL1, DEVICE0),
                result(R0S1, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_B, POOL2, DEVICE0),
                result(REQ1, DRIVER_B, POOL2, DEVICE1),
            )
        ],
    ),
)

# ------------------------------------------------------------------ binding conditions

BC = (["IsPrepare"], ["BindingFailed"])
case(
    "device-binding-conditions",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, _binding(device(DEVICE1), *BC))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, binding=BC))],
    ),
)
case(
    "binding-conditions-multiple-devices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                _binding(device(DEVICE1), *BC),
                _binding(device(DEVICE2), ["IsPrepare2"], ["BindingFailed2"]),
                _binding(device(DEVICE3), ["IsPrepare3"], ["BindingFailed3"]),
            )
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, binding=BC),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, binding=(["IsPrepare2"], ["BindingFailed2"])),
                result(REQ1, DRIVER_A, POOL1, DEVICE3, binding=(["IsPrepare3"], ["BindingFailed3"])),
            )
        ],
    ),
)
case(
    "binding-conditions-with-and-without",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1), _binding(device(DEVICE2), *BC))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2, binding=BC))],
    ),
)
case(
    "binding-conditions-without-feature-gate",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, _binding(device(DEVICE1), *BC))],
        NONE,
        features=Features(device_binding_and_status=False),
    ),
)
case(
    "node-restriction",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [slice_("slice-1", label_selector("planet", "earth"), POOL1, DRIVER_A, device(DEVICE1, bindsToNode=True))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "partitionable-devices-with-binding-conditions",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                _binding(partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi")), *BC),
            ),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, binding=BC))],
    ),
)
case(
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 3))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                _binding(partition(DEVICE1, consumes(COUNTER_SET1, memory="2Gi")), *BC),
                partition(DEVICE2, consumes(COUNTER_SET1, memory="2Gi")),
                _binding(partition(DEVICE3, consumes(COUNTER_SET1, memory="4Gi")), ["IsReady"], ["BindingTimeout"]),
            ),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, binding=BC),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3, binding=(["IsReady"], ["BindingTimeout"])),
            )
        ],
    ),
)
case(
    "partitionable-devices-with-binding-conditions-multi-slices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        [A_A],
        [
            slice_(
                "slice-4",
                NODE1,
                resource_pool(POOL1, 4),
                DRIVER_A,
                _binding(partition(DEVICE1, consumes(COUNTER_SET1, memory="4Gi")), *BC),
            ),
            counters_slice(
                "slice-3", NODE1, resource_pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
            slice_(
                "slice-2",
                NODE1,
                resource_pool(POOL1, 4),
                DRIVER_A,
                partition(DEVICE2, consumes(COUNTER_SET2, memory="4Gi")),
            ),
            counters_slice(
                "slice-1", NODE1, resource_pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET2, memory="8Gi")
            ),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ0, DRIVER_A, POOL1, DEVICE1, binding=BC))],
    ),
)
_bc_taint = [
    _binding(
        partition(
            DEVICE1,
            consumes(COUNTER_SET1, memory="4Gi"),
            taints=[{"key": "key1", "value": "value1", "effect": "NoSchedule"}],
        ),
        *BC,
    ),
    partition(DEVICE2, consumes(COUNTER_SET1, memory="4Gi")),
]
case(
    "partitionable-devices-with-binding-conditions-and-taints-tolerated",
    Case(
        [with_tolerations(claim(CLAIM0, request(REQ0, CLASS_A, 2)), TOL_NO_SCHEDULE_KEY1)],
        [A_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A, *copy.deepcopy(_bc_taint)),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, False, TOL_NO_SCHEDULE_KEY1, binding=BC),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, False, TOL_NO_SCHEDULE_KEY1),
            )
        ],
    ),
)
case(
    "partitionable-devices-with-binding-conditions-and-taints",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        [A_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A, *copy.deepcopy(_bc_taint)),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        NONE,
    ),
)

# ------------------------------------------------------------------ consumable capacity

ONE, TWO, THREE, FOUR = "1", "2", "3", "4"
D1 = _dev(DRIVER_A, POOL1, DEVICE1)


def _mslice(*devices: Obj, pool: Any = POOL1) -> list[Obj]:
    return [slice_("slice-1", NODE1, pool, DRIVER_A, *devices)]


case(
    "consumable-capacity-disabled-feature",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [A_A],
        [slice_one("slice-1", NODE1, POOL1, DRIVER_A)],
        error("request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled"),
        features=Features(consumable_capacity=False),
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [A_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY1: ONE}))),
        NONE,
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request",
    Case(
        [claim(CLAIM0, _cap(all_request(REQ0, CLASS_A), ONE))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY1: ONE}))),
        NONE,
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1))),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True)),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True)),
        ],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: ONE})), _multi(device(DEVICE2, {CAPACITY0: ONE}))),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE})),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2, share=True, consumed={CAPACITY0: ONE})),
        ],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: TWO}))),
        NONE,
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE)), claim(CLAIM1, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: TWO}))),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE})),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE})),
        ],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)}))),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO})),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO})),
        ],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: values_policy(ONE, "0")}))),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: "0"})),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: "0"})),
        ],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: values_policy(ONE, "0")}))),
        NONE,
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE)), claim(CLAIM1, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)}))),
        [
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO})),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO})),
        ],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-range-policy-step",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), THREE))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)}))),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: FOUR}))],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), TWO))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: values_policy(FOUR, ONE, TWO)}))),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}))],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), TWO))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: values_policy(THREE, ONE, THREE)}))),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: THREE}))],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE)), claim(CLAIM1, _cap(request(REQ0, CLASS_A, 1), TWO))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(TWO)}))),
        NONE,
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), "6"))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy("10")}))),
        NONE,
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), TWO))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)}))),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}))],
        allocated=capacity_in_use(D1, **{CAPACITY0: TWO}),
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), TWO))],
        [MULTI_A],
        _mslice(
            _multi(device(DEVICE1, {CAPACITY0: range_policy(TWO)})),
            _multi(device(DEVICE2, {CAPACITY0: range_policy(TWO)})),
        ),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2, share=True, consumed={CAPACITY0: TWO}))],
        allocated=capacity_in_use(D1, **{CAPACITY0: TWO}),
    ),
)
case(
    "consumable-capacity-with-multi-allocatable-device-backtrack",
    Case(
        [
            claim(
                CLAIM0,
                _cap(request(REQ0, CLASS_A, 1), TWO),
                _cap(request(REQ1, CLASS_A, 1), TWO),
                constraints=[{"matchAttribute": STRING_ATTR}],
            ),
            claim(CLAIM1, _cap(request(REQ0, CLASS_A, 1), TWO)),
        ],
        [A_A],
        _mslice(
            _multi(device(DEVICE2, {CAPACITY0: range_policy(TWO)}, attrs(stringAttribute="stringAttributeValue1"))),
            _multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)}, attrs(stringAttribute="stringAttributeValue2"))),
        ),
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}),
                result(REQ1, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}),
            ),
            allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2, share=True, consumed={CAPACITY0: TWO})),
        ],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-subrequest",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    _cap(sub_request(SUB0, CLASS_A, 1), FOUR),
                    _cap(sub_request(SUB1, CLASS_A, 1), TWO),
                    sub_request(SUB1, CLASS_A, 1),
                ),
            )
        ],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(TWO)}))),
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}))],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), TWO))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(TWO)}))),
        NONE,
        allocated=capacity_in_use(D1, **{CAPACITY0: TWO}),
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity",
    Case(
        [claim(CLAIM0, _cap(all_request(REQ0, CLASS_A), TWO))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: TWO})), _multi(device(DEVICE2))),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}))],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity",
    Case(
        [claim(CLAIM0, _cap(all_request(REQ0, CLASS_A), TWO))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: TWO})), _multi(device(DEVICE2, {CAPACITY0: ONE}))),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}))],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE), _cap(all_request(REQ1, CLASS_A), ONE))],
        [A_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: TWO})), _multi(device(DEVICE2, {CAPACITY0: ONE}))),
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE}),
                result(REQ1, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE}),
                result(REQ1, DRIVER_A, POOL1, DEVICE2, share=True, consumed={CAPACITY0: ONE}),
            )
        ],
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient",
    Case(
        [claim(CLAIM0, _cap(all_request(REQ0, CLASS_A), ONE))],
        [A_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: TWO})), _multi(device(DEVICE2, {CAPACITY0: ONE}))),
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE}),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, share=True, consumed={CAPACITY0: ONE}),
            )
        ],
        allocated=capacity_in_use(D1, **{CAPACITY0: ONE}),
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE), _cap(all_request(REQ1, CLASS_A), ONE))],
        [A_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: ONE})), _multi(device(DEVICE2, {CAPACITY0: ONE}))),
        NONE,
    ),
)
case(
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient",
    Case(
        [claim(CLAIM0, _cap(all_request(REQ0, CLASS_A), ONE))],
        [A_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: ONE})), _multi(device(DEVICE2, {CAPACITY0: ONE}))),
        NONE,  # 1.37: device-1's capacity is used up but it still matches, so "All" fails
        allocated=capacity_in_use(D1, **{CAPACITY0: ONE}),
    ),
)
case(
    "consumable-capacity-dedicated-device-with-consumable-capacity-request",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [DEDICATED_A],
        _mslice(device(DEVICE1, {CAPACITY0: ONE})),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE)), claim(CLAIM1, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [DEDICATED_A],
        _mslice(device(DEVICE1, {CAPACITY0: range_policy(TWO)})),
        NONE,
    ),
)
case(
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [DEDICATED_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: ONE}))),
        NONE,
    ),
)
case(
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(TWO)}))),
        NONE,
        allocated=in_use(D1),
    ),
)
case(
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ONE))],
        [MULTI_A],
        _mslice(device(DEVICE1, {CAPACITY0: range_policy(TWO)})),
        NONE,
        allocated=capacity_in_use(D1, **{CAPACITY0: ONE}),
    ),
)
case(
    "allow-multiple-allocations-with-partitionable-device",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, mem_at_least("6Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
            )
        ],
        [MULTI_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A, *[_multi(d) for d in copy.deepcopy(_4_6_4)]),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={"memory": "4Gi"}),
                result(R1S1, DRIVER_A, POOL1, DEVICE3, share=True, consumed={"memory": "4Gi"}),
            )
        ],
    ),
)


def _cc_partition(name: str, c0: str) -> Obj:
    d = partition(name, consumes(COUNTER_SET1, **{CAPACITY0: c0}), consumes(COUNTER_SET2, **{CAPACITY1: FOUR}))
    d["capacity"][CAPACITY1] = range_policy(FOUR)
    return _multi(d)


case(
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools",
    Case(
        [
            claim(
                CLAIM0,
                _cap(request(REQ0, CLASS_A, 1), ONE),
                _cap(request(REQ2, CLASS_A, 1), TWO),
                prioritized(
                    REQ1,
                    _cap(
                        sub_request(
                            SUB0,
                            CLASS_A,
                            1,
                            cel(f'device.capacity["{DRIVER_A}"]["{CAPACITY0}"].compareTo(quantity("4")) >= 0'),
                        ),
                        ONE,
                    ),
                    _cap(
                        sub_request(
                            SUB1,
                            CLASS_A,
                            1,
                            cel(f'device.capacity["{DRIVER_A}"]["{CAPACITY0}"].compareTo(quantity("2")) >= 0'),
                        ),
                        ONE,
                    ),
                ),
            )
        ],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                _cc_partition(DEVICE1, TWO),
                _cc_partition(DEVICE2, FOUR),
                _cc_partition(DEVICE3, TWO),
            ),
            counters_slice(
                "slice-2",
                NODE1,
                _pool2(),
                DRIVER_A,
                counter_set(COUNTER_SET1, **{CAPACITY0: FOUR}),
                counter_set(COUNTER_SET2, **{CAPACITY1: "8"}),
            ),
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE, CAPACITY1: TWO}),
                result(REQ2, DRIVER_A, POOL1, DEVICE3, share=True, consumed={CAPACITY0: TWO, CAPACITY1: TWO}),
                result(R1S1, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE, CAPACITY1: TWO}),
            )
        ],
    ),
)

# ------------------------------------------------------------------ distinctAttribute

case(
    "with-distinct-constraints",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                request(REQ2, CLASS_A, 1),
                request(REQ3, CLASS_A, 1),
                constraints=[
                    {"distinctAttribute": BOOL_ATTR, "requests": [REQ0, REQ1]},
                    {"distinctAttribute": VERSION_ATTR, "requests": [REQ0, REQ1, REQ2]},
                    {"distinctAttribute": INT_ATTR, "requests": [REQ0, REQ1, REQ2, REQ3]},
                ],
            )
        ],
        [A_A],
        _mslice(
            _multi(device(DEVICE1, None, attrs(driverVersion=version("1.0.0"), numa=0, boolAttribute=True))),
            _multi(device(DEVICE2, None, attrs(driverVersion=version("1.0.1"), numa=1, boolAttribute=False))),
            _multi(device(DEVICE3, None, attrs(driverVersion=version("1.0.2"), numa=2, boolAttribute=True))),
            _multi(device(DEVICE4, None, attrs(driverVersion=version("1.0.0"), numa=3, boolAttribute=True))),
        ),
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True),
                result(REQ1, DRIVER_A, POOL1, DEVICE2, share=True),
                result(REQ2, DRIVER_A, POOL1, DEVICE3, share=True),
                result(REQ3, DRIVER_A, POOL1, DEVICE4, share=True),
            )
        ],
    ),
)
case(
    "with-distinct-constraints-attribute-not-set",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), constraints=[{"distinctAttribute": BOOL_ATTR, "requests": [REQ0]}])],
        [A_A],
        _mslice(_multi(device(DEVICE1))),
        NONE,
    ),
)
case(
    "with-distinct-constraints-with-subrequests",
    Case(
        [
            claim(
                CLAIM0,
                *[
                    prioritized(
                        r,
                        sub_request(SUB0, CLASS_A, 1, cel(f'device.attributes["{DRIVER_A}"].boolAttribute')),
                        sub_request(SUB1, CLASS_A, 1),
                    )
                    for r in (REQ0, REQ1, REQ2)
                ],
                constraints=[{"distinctAttribute": BOOL_ATTR, "requests": [REQ0, REQ1]}],
            )
        ],
        [A_A],
        _mslice(
            _multi(device(DEVICE1, None, attrs(boolAttribute=True))),
            _multi(device(DEVICE2, None, attrs(boolAttribute=False))),
        ),
        [
            allocation(
                L1,
                result(R0S0, DRIVER_A, POOL1, DEVICE1, share=True),
                result(R1S1, DRIVER_A, POOL1, DEVICE2, share=True),
                result(R2S0, DRIVER_A, POOL1, DEVICE1, share=True),
            )
        ],
    ),
)
case(
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint",
    Case(
        [
            claim(
                CLAIM0,
                _cap(request(REQ0, CLASS_A, 1), ONE),
                _cap(request(REQ1, CLASS_A, 1), ONE),
                constraints=[{"distinctAttribute": STRING_ATTR}],
            )
        ],
        [MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(TWO)}, attrs(stringAttribute="stringAttributeValue")))),
        NONE,
    ),
)
case(
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint",
    Case(
        [
            claim(
                CLAIM0,
                _cap(request(REQ0, CLASS_A, 1), TWO),
                _cap(request(REQ1, CLASS_A, 1), TWO),
                constraints=[{"distinctAttribute": STRING_ATTR}],
            )
        ],
        [MULTI_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                _multi(
                    device(DEVICE1, {CAPACITY0: range_policy(FOUR)}, attrs(stringAttribute="stringAttributeValue1"))
                ),
            ),
            slice_(
                "slice-1b",
                NODE1,
                _pool2(),
                DRIVER_A,
                _multi(
                    device(DEVICE2, {CAPACITY0: range_policy(FOUR)}, attrs(stringAttribute="stringAttributeValue2"))
                ),
            ),
        ],
        [
            allocation(
                L1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}),
                result(REQ1, DRIVER_A, POOL1, DEVICE2, share=True, consumed={CAPACITY0: TWO}),
            )
        ],
    ),
)

# ------------------------------------------------------------------ pools spanning nodes, generations

case(
    "allocation-mode-all-with-multi-host-resource-pool",
    Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [A_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A, device(DEVICE1)),
            slice_("slice-2", NODE2, _pool2(), DRIVER_A, device(DEVICE2)),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "multi-host-resource-pool-with-stale-slice-for-current-node",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [
            _gen(slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1)), 1, 2),
            _gen(slice_("slice-2", NODE2, POOL1, DRIVER_A, device(DEVICE2)), 2, 2),
        ],
        NONE,
    ),
)
case(
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [
            _gen(slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1)), 1, 2),
            _gen(slice_("slice-1b", NODE1, POOL1, DRIVER_A, device(DEVICE2)), 1, 2),
            _gen(slice_("slice-2", NODE2, POOL1, DRIVER_A, device(DEVICE1)), 2, 2),
            _gen(slice_("slice-2b", NODE2, POOL1, DRIVER_A, device(DEVICE2)), 2, 2),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [
            _gen(slice_("slice-1", NODE2, POOL1, DRIVER_A, device(DEVICE1)), 1, 2),
            _gen(slice_("slice-1b", NODE2, POOL1, DRIVER_A, device(DEVICE2)), 1, 2),
            _gen(slice_("slice-2", NODE1, POOL1, DRIVER_A, device(DEVICE1)), 2, 2),
            _gen(slice_("slice-2b", NODE1, POOL1, DRIVER_A, device(DEVICE2)), 2, 2),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [
            _gen(slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1)), 1, 2),
            _gen(slice_("slice-1b", NODE1, POOL1, DRIVER_A, device(DEVICE2)), 1, 2),
            _gen(slice_("slice-2", NODE2, POOL1, DRIVER_A, device(DEVICE1)), 2, 2),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
)
case(
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1",
    Case(
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
        [A_A],
        [
            _gen(slice_("slice-1", NODE2, POOL1, DRIVER_A, device(DEVICE1)), 1, 2),
            _gen(slice_("slice-1b", NODE2, POOL1, DRIVER_A, device(DEVICE2)), 1, 2),
            _gen(slice_("slice-2", NODE1, POOL1, DRIVER_A, device(DEVICE1)), 2, 2),
        ],
        NONE,
    ),
)
case(
    "partitionable-devices-same-counter-set-name-in-different-resource-slices",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_("slice-1", NODE1, resource_pool(POOL1, 4), DRIVER_A, device(DEVICE1)),
            counters_slice("slice-2", NODE1, resource_pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1)),
            slice_("slice-3", NODE1, resource_pool(POOL1, 4), DRIVER_A, device(DEVICE2)),
            counters_slice("slice-4", NODE1, resource_pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1)),
        ],
        unschedulable("duplicate counter set name counter-set-1"),
    ),
)
case(
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1", NODE1, _pool2(), DRIVER_A, partition(DEVICE1, consumes(COUNTER_SET2), from_counters=False)
            ),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1)),
        ],
        unschedulable("counter set counter-set-2 not found"),
    ),
)
case(
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                _pool2(),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="8Gi"), from_counters=False),
            ),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, **{"other-memory": "8Gi"})),
        ],
        unschedulable("counter memory not found in counter set counter-set-1"),
    ),
)
case(
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="8Gi"), from_counters=False),
            ),
            counters_slice("slice-2", NODE1, POOL2, DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")),
        ],
        unschedulable("counter set counter-set-1 not found"),
    ),
)
case(
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, mem_at_least("6Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem_at_least("2Gi")),
                ),
            )
        ],
        [A_A],
        [
            counters_slice(
                "slice-1", NODE1, resource_pool(POOL1, 3), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
            slice_(
                "slice-2",
                NODE1,
                resource_pool(POOL1, 3),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="6Gi")),
                partition(DEVICE2, consumes(COUNTER_SET1, memory="2Gi")),
            ),
            slice_(
                "slice-3",
                NODE2,
                resource_pool(POOL1, 3),
                DRIVER_A,
                partition(DEVICE3, consumes(COUNTER_SET1, memory="6Gi"), from_counters=False),
            ),
        ],
        [allocation(L1, result(R0S1, DRIVER_A, POOL1, DEVICE2))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE3)),
    ),
)
case(
    "partitionable-devices-validation-error-on-non-targeting-slice",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            counters_slice(
                "slice-1", NODE1, resource_pool(POOL1, 3), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
            slice_(
                "slice-2",
                NODE1,
                resource_pool(POOL1, 3),
                DRIVER_A,
                partition(DEVICE1, consumes(COUNTER_SET1, memory="6Gi")),
            ),
            slice_(
                "slice-3",
                NODE2,
                resource_pool(POOL1, 3),
                DRIVER_A,
                partition(DEVICE3, consumes(COUNTER_SET2, memory="6Gi"), from_counters=False),
            ),
        ],
        unschedulable("counter set counter-set-2 not found"),
    ),
)
case(
    "different-resourceslices-in-pool-can-target-different-nodes",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_("slice-1", NODE2, _pool2(), DRIVER_A, device(DEVICE1)),
            slice_("slice-2", NODE1, _pool2(), DRIVER_A, device(DEVICE2)),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
)
_invalid_plus_valid = [
    slice_("slice-1", NODE1, _pool2(), DRIVER_A, device(DEVICE1)),
    slice_("slice-2", NODE1, _pool2(), DRIVER_A, device(DEVICE1)),
    slice_("slice-3", NODE1, resource_pool(POOL2, 1), DRIVER_A, device(DEVICE2)),
]
case(
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        copy.deepcopy(_invalid_plus_valid),
        [allocation(L1, result(REQ0, DRIVER_A, POOL2, DEVICE2))],
    ),
)
case(
    "invalid-pool-is-error-if-no-other-device-can-be-allocated",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        copy.deepcopy(_invalid_plus_valid),
        unschedulable("duplicate device name device-1"),
        allocated=in_use(_dev(DRIVER_A, POOL2, DEVICE2)),
    ),
)
case(
    "no-allocation-from-incomplete-pools",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [slice_("slice-1", NODE1, _pool2(), DRIVER_A, device(DEVICE1))],
        NONE,
    ),
)
_xyy = [
    slice_(
        "slice-1",
        NODE1,
        POOL1,
        DRIVER_A,
        device(DEVICE1, None, attrs(type="X")),
        device(DEVICE2, None, attrs(type="Y")),
        device(DEVICE3, None, attrs(type="Y")),
    )
]
for _suffix, _slices in (
    (
        "single-pool-single-slice",
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, *[device(f"device-{i}") for i in range(1, 5)])],
    ),
    (
        "single-pool-multiple-slices",
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A, device(DEVICE1), device(DEVICE2)),
            slice_("slice-2", NODE1, _pool2(), DRIVER_A, device(DEVICE3), device(DEVICE4)),
        ],
    ),
    ("many-pools", [slice_(f"slice-{i}", NODE1, f"pool-{i}", DRIVER_A, device(f"device-{i}")) for i in range(1, 5)]),
):
    case(
        f"check-combinations-within-single-request-{_suffix}",
        Case([claim(CLAIM0, request(REQ0, CLASS_A, 5))], [A_A], _slices, NONE),
    )
case(
    "check-combinations-with-backtracking",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ1, CLASS_A, 2),
                request(REQ2, CLASS_A, 1, cel(f'device.attributes["{DRIVER_A}"].type == "X"')),
            )
        ],
        [A_A],
        copy.deepcopy(_xyy),
        [
            allocation(
                L1,
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
    ),
)
case(
    "check-combinations-with-backtracking-across-slices-and-pools",
    Case(
        [
            claim(
                CLAIM0,
                request(REQ1, CLASS_A, 2),
                request(REQ2, CLASS_A, 1, cel(f'device.attributes["{DRIVER_A}"].type == "X"')),
            )
        ],
        [A_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A, device(DEVICE1, None, attrs(type="X"))),
            slice_("slice-2", NODE1, _pool2(), DRIVER_A, device(DEVICE2, None, attrs(type="Y"))),
            slice_(
                "slice-3", NODE1, POOL2, DRIVER_A, _binding(device(DEVICE3, None, attrs(type="Y")), ["IsPrepare"], [])
            ),
        ],
        [
            allocation(
                L1,
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL2, DEVICE3, binding=(["IsPrepare"], [])),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
    ),
)
case(
    "check-combinations-with-prioritized-list",
    Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 3, cel(f'device.attributes["{DRIVER_A}"].type == "Y"')),
                    sub_request(SUB1, CLASS_A, 2),
                ),
                prioritized(
                    REQ2,
                    sub_request(SUB0, CLASS_A, 2),
                    sub_request(SUB1, CLASS_A, 1, cel(f'device.attributes["{DRIVER_A}"].type == "X"')),
                ),
            )
        ],
        [A_A],
        copy.deepcopy(_xyy),
        [
            allocation(
                L1,
                result(R1S1, DRIVER_A, POOL1, DEVICE2),
                result(R1S1, DRIVER_A, POOL1, DEVICE3),
                result(R2S1, DRIVER_A, POOL1, DEVICE1),
            )
        ],
    ),
)


# ------------------------------------------------------------------ added in 1.37

INT64_HALF_PLUS_ONE = 2**62  # math.MaxInt/2+1 on 64 bits
case(
    "with-claim-config-for-two-requests",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1), request(REQ2, CLASS_A, 1),
               config=[{"requests": [REQ0, REQ1], **device_config(DRIVER_A, "deviceAttribute")}])],
        [A_A],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, 3)],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE0), result(REQ1, DRIVER_A, POOL1, DEVICE1),
                    result(REQ2, DRIVER_A, POOL1, DEVICE2),
                    config=[{"source": "FromClaim", "requests": [REQ0, REQ1],
                             **device_config(DRIVER_A, "deviceAttribute")}])],
    ),
)
case(
    "exact-count-total-overflows-claim-limit",
    Case([claim(CLAIM0, request(REQ0, CLASS_A, INT64_HALF_PLUS_ONE), request(REQ1, CLASS_A, INT64_HALF_PLUS_ONE))],
         [A_A], [], error("exceeds the claim limit")),
)
case(
    "exact-count-total-would-wrap-to-zero",
    Case([claim(CLAIM0, *(request(r, CLASS_A, INT64_HALF_PLUS_ONE) for r in (REQ0, REQ1, REQ2, REQ3)))],
         [A_A], [], error("exceeds the claim limit")),
)
case(
    "exact-count-sum-exceeds-claim-limit",
    Case([claim(CLAIM0, request(REQ0, CLASS_A, 20), request(REQ1, CLASS_A, 20))], [A_A], [],
         error(f"request {REQ1}")),
)
case(
    "exact-count-sum-exactly-fills-claim-limit",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, MAX // 2), request(REQ1, CLASS_A, MAX // 2))],
        [A_A],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, MAX)],
        [allocation(L1, *(result(REQ0 if i < MAX // 2 else REQ1, DRIVER_A, POOL1, f"device-{i}") for i in range(MAX)))],
    ),
)
case(
    "claim-config-scoped-to-subrequests-of-one-request",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1), sub_request(SUB1, CLASS_B, 1)),
               request(REQ1, CLASS_A, 1),
               config=[{"requests": [R0S0, R0S1], **device_config(DRIVER_A, "scoped")}])],
        [A_A, B_B],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, 2)],
        [allocation(L1, result(R0S0, DRIVER_A, POOL1, DEVICE0), result(REQ1, DRIVER_A, POOL1, DEVICE1),
                    config=[{"source": "FromClaim", "requests": [R0S0, R0S1], **device_config(DRIVER_A, "scoped")}])],
    ),
)
case(
    "claim-config-covering-all-requests-is-cleared",
    Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1), sub_request(SUB1, CLASS_B, 1)),
               request(REQ1, CLASS_A, 1),
               config=[{"requests": [R0S0, REQ1], **device_config(DRIVER_A, "all")}])],
        [A_A, B_B],
        [slice_many("slice-1", NODE1, POOL1, DRIVER_A, 2)],
        [allocation(L1, result(R0S0, DRIVER_A, POOL1, DEVICE0), result(REQ1, DRIVER_A, POOL1, DEVICE1),
                    config=[{"source": "FromClaim", **device_config(DRIVER_A, "all")}])],
    ),
)
case(
    "prioritized-list-minimum-sum-exceeds-claim-limit",
    Case([claim(CLAIM0, request(REQ0, CLASS_A, 20),
                prioritized(REQ1, sub_request(SUB0, CLASS_A, 20), sub_request(SUB1, CLASS_A, 24)))],
         [A_A], [], error(f"request {REQ1}")),
)
case(
    "prioritized-list-overflowing-first-subrequest-is-pruned",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1),
               prioritized(REQ1, sub_request(SUB0, CLASS_A, 2**63 - 1), sub_request(SUB1, CLASS_A, 1)))],
        [A_A],
        [slice_("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE2))],
    ),
)
case(
    "partitionable-devices-counter-quantities-are-not-modified",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A,
                   partition(DEVICE1, consumes(COUNTER_SET1, c="9000000000000000000"), from_counters=False),
                   partition(DEVICE2, consumes(COUNTER_SET1, c="1"), from_counters=False)),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, c="10000000000000000000")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1)),
    ),
)
case(
    "partitionable-devices-counter-cache-scoped-by-pool-ID",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ1, CLASS_B, 1))],
        [A_A, B_B],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A,
                   partition(DEVICE1, consumes(COUNTER_SET1, c="1"), from_counters=False)),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, c="1")),
            slice_("slice-3", NODE1, _pool2(), DRIVER_B,
                   partition(DEVICE2, consumes(COUNTER_SET1, c="2"), from_counters=False)),
            counters_slice("slice-4", NODE1, _pool2(), DRIVER_B, counter_set(COUNTER_SET1, c="2")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
         allocation(L1, result(REQ1, DRIVER_B, POOL1, DEVICE2))],
    ),
)
case(
    "partitionable-devices-counter-cache-not-crossed-between-driver-schemas",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ1, CLASS_B, 1))],
        [A_A, B_B],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A,
                   partition(DEVICE1, consumes(COUNTER_SET1, c="1"), from_counters=False)),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, c="1")),
            slice_("slice-3", NODE1, _pool2(), DRIVER_B,
                   partition(DEVICE2, consumes(COUNTER_SET2, d="2"), from_counters=False)),
            counters_slice("slice-4", NODE1, _pool2(), DRIVER_B, counter_set(COUNTER_SET2, d="1")),
        ],
        NONE,
    ),
)
case(
    "partitionable-consumable-capacity-shared-device-counter-not-recharged",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            slice_("slice-1", NODE1, _pool2(), DRIVER_A,
                   _multi(partition(DEVICE1, consumes(COUNTER_SET1, c="1"), from_counters=False))),
            counters_slice("slice-2", NODE1, _pool2(), DRIVER_A, counter_set(COUNTER_SET1, c="1")),
        ],
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True))],
        # a persisted share of device-1 known only by its share ID (no consumed capacity)
        allocated=[{"devices": {"results": [{"request": "r", "driver": DRIVER_A, "pool": POOL1, "device": DEVICE1,
                                             "shareID": "00000000-0000-0000-0000-000000000001"}]}}],
    ),
)
case(
    "partitionable-devices-devices-consume-counter-set-in-different-nodes",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A_A],
        [
            counters_slice("slice-1", NODE1, resource_pool(POOL1, 3), DRIVER_A,
                           counter_set(COUNTER_SET1, memory="8Gi")),
            slice_("slice-2", NODE1, resource_pool(POOL1, 3), DRIVER_A,
                   partition(DEVICE1, consumes(COUNTER_SET1, memory="6Gi"))),
            slice_("slice-3", NODE2, resource_pool(POOL1, 3), DRIVER_A,
                   partition(DEVICE2, consumes(COUNTER_SET1, memory="6Gi")),
                   partition(DEVICE3, consumes(COUNTER_SET1, memory="2Gi"))),
        ],
        [allocation(local_selector(NODE2), result(REQ0, DRIVER_A, POOL1, DEVICE3))],
        allocated=in_use(_dev(DRIVER_A, POOL1, DEVICE1)),
        node=node(NODE2, REGION1),
    ),
)


ABOVE_INT64 = "18446744073709551616"  # 2^64
_RANGE_MULTI_A = cls(CLASS_A, DRIVER_A, multi=True)
case(
    "consumable-capacity-range-policy-request-above-int64-rejected",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ABOVE_INT64))],
        [_RANGE_MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)}))),
        error("cannot be represented"),
    ),
)
case(
    "consumable-capacity-range-policy-rounded-value-overflow-rejected",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), "9223372036854775807"))],
        [_RANGE_MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)}))),
        error("cannot be represented"),
    ),
)
case(
    "consumable-capacity-range-policy-overflow-aborts-not-skip",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), ABOVE_INT64))],
        [_RANGE_MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)})),
                _multi(device(DEVICE2, {CAPACITY0: "36893488147419103232"}))),
        error("cannot be represented"),
    ),
)
case(
    "consumable-capacity-range-policy-allocation-mode-all-overflow-aborts",
    Case(
        [claim(CLAIM0, _cap(all_request(REQ0, CLASS_A), ABOVE_INT64))],
        [_RANGE_MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(FOUR)}))),
        error("cannot be represented"),
    ),
)
case(
    "consumable-capacity-negative-request-aborts",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), "-5"))],
        [_RANGE_MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: "10"}))),
        error("negative"),
    ),
)
case(
    "consumable-capacity-requests-are-not-modified",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), TWO),
               _cap(request(REQ1, CLASS_A, 1), "1000000000000000000000"))],
        [A_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: {
            "value": "1000000000000000000002",
            "requestPolicy": {"default": "1000000000000000000000", "validRange": {"min": TWO}}}}))),
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: TWO}),
                    # 10^21, as drasched's Quantity writes it (upstream compares the value)
                    result(REQ1, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: "1e21"}))],
    ),
)
case(
    "consumable-capacity-fractional-range-gate-disabled",
    Case(
        [claim(CLAIM0, _cap(request(REQ0, CLASS_A, 1), "200m"))],
        [_RANGE_MULTI_A],
        _mslice(_multi(device(DEVICE1, {CAPACITY0: range_policy(ONE, default="200m", lo="200m", step="100m",
                                                                 hi=ONE)}))),
        # DRAFractionalCapacityRange (alpha, off): the policy's quantities are read as whole
        # numbers (200m and 100m round up to 1), so the request takes min + 0 steps = 1
        [allocation(L1, result(REQ0, DRIVER_A, POOL1, DEVICE1, share=True, consumed={CAPACITY0: ONE}))],
    ),
)


def _strings(*values: str) -> list[Obj]:
    return [device(f"device-{i}", None, attrs(stringAttribute=v)) for i, v in enumerate(values, start=1)]


def _numas(*values: int) -> list[Obj]:
    return [device(f"device-{i}", None, attrs(numa=v)) for i, v in enumerate(values, start=1)]


case(
    "distinct-constraint-single-request-count-3-not-distinct",
    Case([claim(CLAIM0, request(REQ0, CLASS_A, 3), constraints=[{"distinctAttribute": STRING_ATTR}])],
         [A_A], _mslice(*_strings("value1", "value2", "value1")), NONE),
)
case(
    "distinct-constraint-single-request-count-3-all-distinct",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 3), constraints=[{"distinctAttribute": STRING_ATTR}])],
        [A_A],
        _mslice(*_strings("value1", "value2", "value3")),
        [allocation(L1, *(result(REQ0, DRIVER_A, POOL1, d) for d in (DEVICE1, DEVICE2, DEVICE3)))],
    ),
)
case(
    "distinct-constraint-two-requests-with-count-not-distinct",
    Case([claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1),
                constraints=[{"distinctAttribute": STRING_ATTR, "requests": [REQ0, REQ1]}])],
         [A_A], _mslice(*_strings("value1", "value2", "value1")), NONE),
)
case(
    "distinct-constraint-single-request-multiple-devices-attribute-not-set",
    Case([claim(CLAIM0, request(REQ0, CLASS_A, 3), constraints=[{"distinctAttribute": INT_ATTR}])],
         [A_A], _mslice(device(DEVICE1), device(DEVICE2), device(DEVICE3)), NONE),
)
case(
    "distinct-constraint-single-request-not-enough-distinct-values",
    Case([claim(CLAIM0, request(REQ0, CLASS_A, 3), constraints=[{"distinctAttribute": INT_ATTR}])],
         [A_A], _mslice(*_numas(1, 2, 2, 2)), NONE),
)
case(
    "distinct-constraint-single-request-multiple-devices-attribute-set",
    Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 3), constraints=[{"distinctAttribute": INT_ATTR}])],
        [A_A],
        _mslice(*_numas(1, 2, 1, 3)),
        [allocation(L1, *(result(REQ0, DRIVER_A, POOL1, d) for d in (DEVICE1, DEVICE2, DEVICE4)))],
    ),
)


# ------------------------------------------------------------------ runner


def _normalise(a: Obj) -> Obj:
    a = copy.deepcopy(a)
    for r in a.get("devices", {}).get("results", []):
        if "shareID" in r:
            r["shareID"] = "SHARE"
    return a


def run(c: Case) -> Any:
    state = AllocatedState()
    for a in c.allocated:
        state.add(a)
    alloc = Allocator(c.classes, c.slices, state, c.features)
    claims = copy.deepcopy(c.claims)
    out = alloc.allocate(c.node, claims, ADMIN_NS)
    assert claims == c.claims, "the allocator must not modify its input"
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_case(name: str) -> None:
    c = CASES[name]
    out = run(c)
    if isinstance(c.expect, Outcome):
        assert not out.ok
        if c.expect.kind == "error":
            assert out.pod_error is not None, out.message
            assert c.expect.text in out.pod_error
        else:
            assert out.pod_error is None, out.pod_error
            assert c.expect.text in out.message
    elif c.expect == NONE:
        assert not out.ok
        assert out.pod_error is None, out.pod_error
    else:
        assert out.ok, out.message
        assert [_normalise(a) for a in out.allocations] == c.expect


def test_share_ids_are_unique_per_result() -> None:
    # upstream "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request":
    # every share of a device gets its own ID
    out = run(CASES["consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request"])
    ids = [r["shareID"] for a in out.allocations for r in a["devices"]["results"]]
    assert len(ids) == 2 and len(set(ids)) == 2
