"""Older resource.k8s.io versions: what the real API server stores (read back as v1) is what
drasched's conversion plus defaulting makes of the same object."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.conversion import to_storage_version
from drasched.api.defaults import apply_builtin_defaults
from drasched.testing.apiserver import LocalCluster, ensure_namespace

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]


def _objects(suffix: str) -> list[Obj]:
    ns = f"conv-{suffix}"
    requests = [
        {"name": "flat", "deviceClassName": "gpu.example.com", "count": 2,
         "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        {"name": "all", "deviceClassName": "gpu.example.com", "allocationMode": "All",
         "tolerations": [{"key": "example.com/hot", "operator": "Exists", "effect": "NoSchedule"}]},
        {"name": "choice", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.example.com"},
                                              {"name": "small", "deviceClassName": "gpu.example.com", "count": 2}]},
    ]
    return [
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
         "metadata": {"name": "beta1", "namespace": ns}, "spec": {"devices": {"requests": requests}}},
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "beta1", "namespace": ns},
         "spec": {"spec": {"devices": {"requests": requests[:1]}}}},
        {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceClaim",
         "metadata": {"name": "beta2", "namespace": ns},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": f"slice-{suffix}"},
         "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                  "pool": {"name": f"p-{suffix}", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "basic": {
                      "attributes": {"model": {"string": "a100"}, "index": {"int": 0}},
                      "capacity": {"memory": {"value": "40Gi"}}}}]}},
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": f"class-{suffix}"},
         "spec": {"selectors": [{"cel": {"expression": "true"}}]}},
    ]


def test_server_stores_older_versions_as_drasched_converts_them(local_cluster: LocalCluster) -> None:
    store = local_cluster.store()
    suffix = uuid.uuid4().hex[:6]
    objs = _objects(suffix)
    ensure_namespace(store, f"conv-{suffix}")
    for obj in objs:
        group_version = obj["apiVersion"]
        rt = kinds.for_object({**obj, "apiVersion": "resource.k8s.io/v1"})
        path = rt.api_path(obj["metadata"].get("namespace")).replace("/resource.k8s.io/v1/", f"/{group_version}/")
        store.request("POST", path, obj, params={"fieldValidation": "Strict"})
        stored = store.get(rt, obj["metadata"]["name"], obj["metadata"].get("namespace"))
        ours = copy.deepcopy(to_storage_version(obj))
        apply_builtin_defaults(rt.kind, ours)
        assert stored["apiVersion"] == "resource.k8s.io/v1"
        assert stored["spec"] == ours["spec"], f"{obj['apiVersion']} {obj['kind']}"
