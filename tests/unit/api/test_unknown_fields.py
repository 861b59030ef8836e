"""A field a DRA kind does not declare is reported (the API server refuses it under kubectl's
default strict validation: ``unknown field "spec.devices.requests[0].exactly.allocationmode"``)."""

from __future__ import annotations

from drasched.api import kinds
from drasched.api.unknown_fields import unknown_fields


def claim(exactly: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default", "managedFields": [{"manager": "kubectl"}]},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def test_a_misspelt_allocation_mode_is_reported_with_its_path() -> None:
    obj = claim({"deviceClassName": "gpu", "allocationmode": "All"})
    assert unknown_fields(obj, kinds.RESOURCE_CLAIM) == ["spec.devices.requests[0].exactly.allocationmode"]


def test_every_declared_field_passes_metadata_included() -> None:
    obj = claim({"deviceClassName": "gpu", "allocationMode": "All", "adminAccess": False,
                 "selectors": [{"cel": {"expression": "true"}}], "tolerations": [{"operator": "Exists"}],
                 "capacity": {"requests": {"memory": "1Gi"}}})
    obj["status"] = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p",
                                                             "device": "x", "bindingConditions": ["A"]}]},
                                    "allocationTimestamp": "2026-01-01T00:00:00Z"},
                     "devices": [{"driver": "d", "pool": "p", "device": "x", "conditions": [],
                                  "data": {"any": "thing"}, "networkData": {"interfaceName": "eth0"}}]}
    assert unknown_fields(obj, kinds.RESOURCE_CLAIM) == []


def test_a_misspelt_slice_device_field_is_reported() -> None:
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": "d", "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0", "allowMultipleAllocationz": True,
                                 "attributes": {"model": {"string": "x"}}, "capacity": {"memory": {"value": "1Gi"}}}]}}
    assert unknown_fields(obj, kinds.RESOURCE_SLICE) == ["spec.devices[0].allowMultipleAllocationz"]


def test_other_kinds_and_older_versions_are_not_checked() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"whatever": 1}}
    assert unknown_fields(pod, kinds.POD) == []
    old = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "c"},
           "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu"}]}}}
    v1beta1 = kinds.ResourceType("resource.k8s.io", "v1beta1", "ResourceClaim", "resourceclaims", True)
    assert unknown_fields(old, v1beta1) == []
