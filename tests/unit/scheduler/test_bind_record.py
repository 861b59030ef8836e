"""Which placements serve writes as a BindRequest (drasched.scheduler.bindrecord)."""

from __future__ import annotations

from typing import Any

from drasched.scheduler.bindrecord import needs_bind_request, pod_moved_on
from drasched.scheduler.groups import GroupInfo
from drasched.scheduler.session import Placement


def _group(pods: int = 1, min_member: int = 1) -> GroupInfo:
    g = GroupInfo(key="default/g", namespace="default", name="g", obj=None, implicit=pods == 1, min_member=min_member,
                  queue="default", priority=0, created="", required_key=None, preferred_key=None, claim_entries=())
    g.pods = [object()] * pods  # type: ignore[list-item]
    return g


def _placement(claims: list[dict[str, Any]] = (), extended: dict[str, Any] | None = None) -> Placement:  # type: ignore[assignment]
    return Placement(pod=object(), node=0, claims=list(claims), group="default/g", extended=extended)  # type: ignore[arg-type]


def _allocation(**result: Any) -> dict[str, Any]:
    return {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n1", "device": "gpu-0", **result}]}}


POD = {"resource": "pods", "name": "p", "uid": "u"}
GROUP = {"apiGroup": "scheduling.drasched.io", "resource": "podgroups", "name": "g", "uid": "g"}


def test_a_lone_pods_placement_is_only_handed_over() -> None:
    assert not needs_bind_request(_placement(), _group())
    own_claim = {"name": "c", "allocation": _allocation(), "reservedFor": POD}
    assert not needs_bind_request(_placement([own_claim]), _group())
    assert not needs_bind_request(_placement(extended={"allocation": _allocation()}), _group())


def test_a_gang_member_a_group_claim_or_binding_conditions_are_written() -> None:
    assert needs_bind_request(_placement(), _group(pods=2))
    assert needs_bind_request(_placement(), _group(pods=1, min_member=2))
    assert needs_bind_request(_placement([{"name": "c", "reservedFor": GROUP}]), _group())
    # KEP-5007: the wait for a device's binding conditions is told in the request's status
    waits = _allocation(bindingConditions=["attached"], bindingFailureConditions=["failed"])
    assert needs_bind_request(_placement([{"name": "c", "allocation": waits, "reservedFor": POD}]), _group())
    assert needs_bind_request(_placement(extended={"allocation": waits}), _group())


def test_an_assumed_request_is_over_once_its_pod_is_bound_gone_or_replaced() -> None:
    br = {"spec": {"podName": "p", "podUID": "u", "selectedNode": "n1"}}
    pending = {"metadata": {"uid": "u"}, "spec": {}}
    assert not pod_moved_on(br, pending)
    assert pod_moved_on(br, None)
    assert pod_moved_on(br, {"metadata": {"uid": "other"}, "spec": {}})
    assert pod_moved_on(br, {"metadata": {"uid": "u"}, "spec": {"nodeName": "n1"}})
