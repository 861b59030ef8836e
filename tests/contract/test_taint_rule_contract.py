"""DeviceTaintRule validation parity: the memory store refuses what a real kube-apiserver
refuses, naming the same fields (pkg/apis/resource/validation ``ValidateDeviceTaintRule``),
and both default ``timeAdded`` (``SetDefaults_DeviceTaint``).

The server's rules are written in the version it serves: ``resource.k8s.io/v1`` on 1.37 (GA);
on 1.36 ``v1beta2`` (feature gate DRADeviceTaintRules), v1's shape, which drasched reads as v1.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest

from drasched.api.errors import Invalid
from drasched.store.memory import MemoryStore
from drasched.testing.apiserver import LocalCluster

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]


def served_path(cluster: LocalCluster) -> str:
    return f"/apis/{cluster.served.taint_rule}/devicetaintrules"


def rule(name: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"},
                     "taint": {"key": "example.com/unhealthy", "value": "ecc", "effect": "NoExecute"}}}


MUTATIONS: dict[str, tuple[str, Any]] = {
    "effect-prefer-no-schedule": ("spec.taint.effect", "PreferNoSchedule"),
    "effect-missing": ("spec.taint.effect", None),
    "key-missing": ("spec.taint.key", None),
    "key-bad": ("spec.taint.key", "-bad/key-"),
    "value-bad": ("spec.taint.value", "not ok!"),
    "driver-bad": ("spec.deviceSelector.driver", "Not_A_Driver"),
    "pool-bad": ("spec.deviceSelector.pool", "Bad Pool"),
    "device-bad": ("spec.deviceSelector.device", "GPU_0"),
}


def _mutate(obj: Obj, path: str, value: Any) -> Obj:
    out = copy.deepcopy(obj)
    *parents, leaf = path.split(".")
    cur = out
    for p in parents:
        cur = cur[p]
    if value is None:
        cur.pop(leaf, None)
    else:
        cur[leaf] = value
    return out


def _fields(exc: Invalid) -> list[str]:
    return sorted({c.field for c in exc.causes})


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_memory_store_refuses_what_the_server_refuses(local_cluster: LocalCluster, case: str) -> None:
    path, value = MUTATIONS[case]
    name = f"{case}-{uuid.uuid4().hex[:6]}"
    bad = _mutate(rule(name), path, value)
    with pytest.raises(Invalid) as server:
        local_cluster.store().request("POST", served_path(local_cluster),
                                      {**bad, "apiVersion": local_cluster.served.taint_rule})
    with pytest.raises(Invalid) as ours:
        MemoryStore().create(bad)
    assert _fields(ours.value) == _fields(server.value), (server.value.message, ours.value.message)


def test_both_accept_a_valid_rule_and_default_time_added(local_cluster: LocalCluster) -> None:
    name = f"ok-{uuid.uuid4().hex[:6]}"
    served = {**rule(name), "apiVersion": local_cluster.served.taint_rule}
    stored = local_cluster.store().request("POST", served_path(local_cluster), served)
    ours = MemoryStore().create(rule(name))
    assert stored["spec"]["taint"]["timeAdded"] and ours["spec"]["taint"]["timeAdded"]
    for obj in (stored, ours):
        del obj["spec"]["taint"]["timeAdded"]
    assert stored["spec"] == ours["spec"]
    assert stored["metadata"]["generation"] == ours["metadata"]["generation"] == 1
