"""BinderController inside ``simulate``: the default control plane, virtual-time backoff, record."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.binder import BinderController
from drasched.sim.registry import build_default_controllers
from drasched.sim.runner import simulate
from drasched.store.memory import MemoryStore
from tests.unit.binder.helpers import T0, allocation

POD_UID = "00000000-0000-4000-8000-000000000001"


def objects(node: str = "n1") -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "c1", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
         "spec": {"schedulerName": "drasched", "containers": [{"name": "main", "image": "busybox"}],
                  "resourceClaims": [{"name": "c1", "resourceClaimName": "c1"}]}},
        {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
         "metadata": {"name": "p", "namespace": "default"},
         "spec": {"podName": "p", "podUID": POD_UID, "selectedNode": node,
                  "resourceClaimAllocations": [{"name": "c1", "allocation": allocation(node, "gpu-0")}]}},
    ]


def test_the_default_control_plane_runs_the_binder() -> None:
    assert "binder" in [c.name for c in build_default_controllers()]


def test_simulate_binds_and_records_the_decision() -> None:
    result = simulate(objects(), controllers=[BinderController()])

    assert result.quiescent
    pod = result.store.get(kinds.POD, "p", "default")
    assert pod["spec"]["nodeName"] == "n1"
    assert result.store.get(kinds.RESOURCE_CLAIM, "c1", "default")["status"]["reservedFor"][0]["uid"] == POD_UID
    assert [(d["controller"], d["action"]) for d in result.decisions] == [("binder", "bind")]
    events = result.store.list(kinds.EVENT, "default").items
    assert [(e["reason"], e["message"]) for e in events] == [("Scheduled", "Successfully assigned default/p to n1")]


def test_backoff_advances_virtual_time(monkeypatch: pytest.MonkeyPatch) -> None:
    real_bind = MemoryStore.bind
    calls: list[int] = []

    def flaky_bind(self: MemoryStore, *args: Any, **kw: Any) -> None:
        calls.append(1)
        if len(calls) <= 2:
            raise ApiError("etcdserver: leader changed", 500)
        real_bind(self, *args, **kw)

    monkeypatch.setattr(MemoryStore, "bind", flaky_bind)
    result = simulate(objects(), controllers=[BinderController()])

    assert result.quiescent and len(calls) == 3
    assert result.store.get(kinds.POD, "p", "default")["spec"]["nodeName"] == "n1"
    assert [d["action"] for d in result.decisions] == ["retry", "retry", "bind"]
    assert result.context.now() == T0 + timedelta(seconds=1 + 2)  # 1 s, then 2 s of backoff
    br = result.store.get(kinds.BIND_REQUEST, "p", "default")
    assert (br["status"]["phase"], br["status"]["attempts"]) == ("Succeeded", 3)


def test_a_failed_bind_in_simulate_leaves_no_allocation() -> None:
    result = simulate(objects(node="missing"), controllers=[BinderController()])

    br = result.store.get(kinds.BIND_REQUEST, "p", "default")
    assert (br["status"]["phase"], br["status"]["reason"]) == ("Failed", "NodeNotFound")
    claim = result.store.get(kinds.RESOURCE_CLAIM, "c1", "default")
    assert not (claim.get("status") or {}).get("allocation")
    assert "nodeName" not in result.store.get(kinds.POD, "p", "default")["spec"]
