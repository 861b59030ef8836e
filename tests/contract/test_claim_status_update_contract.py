"""A claim's allocation, once set, is written as it is or cleared, never changed.

Kubernetes 1.37 validates ``status.allocation`` declaratively with ``+k8s:update=NoModify``
(k8s.io/api resource/v1 ``ResourceClaimStatus.Allocation``; the check is apimachinery's
``validate.UpdatePointer``): a status write that changes a set allocation is refused with 422
``status.allocation: Invalid value: null: field cannot be modified once set``. Setting it on an
unallocated claim, writing it back unchanged (to add a consumer) and clearing it (deallocation)
are allowed. Every test runs on the memory store and on the real server.
"""

from __future__ import annotations

import copy

import pytest

from drasched.api import kinds
from drasched.api.errors import Invalid
from drasched.store.base import ClusterStore, Obj

DRIVER = "gpu.example.com"
REFUSAL = "field cannot be modified once set"


def _claim(ns: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": ns},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}


def _allocation(device: str = "gpu-0") -> Obj:
    return {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}}


def _allocated(store: ClusterStore, ns: str) -> Obj:
    created = store.create(_claim(ns))
    return store.update_status({**created, "status": {"allocation": _allocation()}})


def _consumer(name: str) -> Obj:
    return {"resource": "pods", "name": name, "uid": f"uid-{name}"}


@pytest.mark.parametrize("change", ["stamp-allocation-timestamp", "another-device"])
def test_changing_a_set_allocation_is_refused_in_the_api_servers_words(store: ClusterStore, ns: str,
                                                                       change: str) -> None:
    claim = _allocated(store, ns)
    changed = copy.deepcopy(claim)
    if change == "stamp-allocation-timestamp":  # what a binder stamping the time on a reused claim sends
        changed["status"]["allocation"]["allocationTimestamp"] = "2026-01-01T00:00:00Z"
    else:
        changed["status"]["allocation"] = _allocation("gpu-1")
    changed["status"]["reservedFor"] = [_consumer("p1")]
    with pytest.raises(Invalid) as caught:
        store.update_status(changed)
    err = caught.value
    assert err.code == 422
    assert str(err) == (f'ResourceClaim.resource.k8s.io "c" is invalid: status.allocation: '
                        f"Invalid value: null: {REFUSAL}")
    assert [(c.field, c.message, c.reason) for c in err.causes] == [
        ("status.allocation", f"Invalid value: null: {REFUSAL}", "FieldValueInvalid")]
    assert "reservedFor" not in (store.get(kinds.RESOURCE_CLAIM, "c", ns).get("status") or {}), "nothing was written"


def test_a_merge_patch_into_a_set_allocation_is_refused_too(store: ClusterStore, ns: str) -> None:
    _allocated(store, ns)
    with pytest.raises(Invalid) as caught:
        store.patch(kinds.RESOURCE_CLAIM, "c", ns,
                    {"status": {"allocation": {"allocationTimestamp": "2026-01-01T00:00:00Z"}}}, subresource="status")
    assert [(c.field, c.message) for c in caught.value.causes] == [
        ("status.allocation", f"Invalid value: null: {REFUSAL}")]


def test_the_same_allocation_written_back_with_a_consumer_is_accepted(store: ClusterStore, ns: str) -> None:
    claim = _allocated(store, ns)
    claim["status"]["reservedFor"] = [_consumer("p1")]
    written = store.update_status(claim)
    assert written["status"]["reservedFor"] == [_consumer("p1")]
    assert written["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_deallocation_then_a_new_allocation_is_accepted(store: ClusterStore, ns: str) -> None:
    claim = _allocated(store, ns)
    cleared = store.update_status({**claim, "status": {}})
    assert "allocation" not in (cleared.get("status") or {})
    again = store.update_status({**cleared, "status": {"allocation": _allocation("gpu-1")}})
    assert again["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
