"""PodDisruptionBudget status as upstream's disruption controller computes it (pkg/controller/disruption)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from drasched.controllers.pdbstatus import (
    ScaleError,
    count_healthy,
    disrupted_pod_map,
    expected_pod_count,
    go_label_selector,
    sync,
)

Obj = dict[str, Any]
NOW = datetime(2026, 1, 1, 1, tzinfo=UTC)
STAMP = "2026-01-01T01:00:00Z"


def _pod(name: str, *, ready: bool = True, owner: str | None = "rs-1", phase: str = "Running",
         deleting: bool = False) -> Obj:
    md: Obj = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner:
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner,
                                  "controller": True}]
    if deleting:
        md["deletionTimestamp"] = STAMP
    return {"metadata": md, "status": {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}


def _pdb(generation: int = 1, status: Obj | None = None, **spec: Any) -> Obj:
    return {"metadata": {"name": "b", "namespace": "default", "generation": generation},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, **spec}, "status": status or {}}


def _scales(**by_uid: int) -> Any:
    def find(ref: Obj, namespace: str) -> tuple[str, int] | None:
        return (ref["uid"], by_uid[ref["uid"]]) if ref["uid"] in by_uid else None
    return find


def test_an_integer_min_available_expects_the_pods_it_selects_finished_ones_too() -> None:
    # getExpectedPodCount: expectedCount = len(pods), the lister's pods of any phase
    pods = [_pod("a"), _pod("b", phase="Succeeded", ready=False), _pod("c", owner=None)]
    assert expected_pod_count(_pdb(minAvailable=2), pods, _scales()) == (3, 2, [])


def test_max_unavailable_and_percentages_expect_the_controllers_scale() -> None:
    pods = [_pod("a", owner="rs-1"), _pod("b", owner="rs-1"), _pod("c", owner="rs-2"), _pod("d", owner=None)]
    find = _scales(**{"rs-1": 4, "rs-2": 3})
    # getExpectedScale: each controller once; a pod without one is unmanaged
    assert expected_pod_count(_pdb(maxUnavailable="30%"), pods, find) == (7, 4, ["d"])  # ceil(2.1) = 3
    assert expected_pod_count(_pdb(maxUnavailable=9), pods, find) == (7, 0, ["d"])
    assert expected_pod_count(_pdb(minAvailable="50%"), pods, find) == (7, 4, ["d"])  # ceil(3.5)


def test_a_controller_that_is_not_found_fails_the_count() -> None:
    with pytest.raises(ScaleError, match='found no controllers for pod "a"'):
        expected_pod_count(_pdb(maxUnavailable=1), [_pod("a", owner="gone")], _scales())


def test_healthy_is_ready_and_not_being_deleted_nor_just_evicted() -> None:
    pods = [_pod("a"), _pod("b", ready=False), _pod("c", deleting=True), _pod("d"), _pod("e", phase="Pending")]
    just_evicted = {"d": "2026-01-01T00:59:00Z"}
    assert count_healthy(pods, just_evicted, NOW) == 2  # a, and e (IsPodReady reads the condition only)


def test_disrupted_pods_wait_two_minutes_for_their_deletion() -> None:
    pdb = _pdb(status={"disruptedPods": {"a": "2026-01-01T00:59:00Z", "b": "2026-01-01T00:57:00Z",
                                         "c": "2026-01-01T00:59:30Z", "gone": "2026-01-01T00:59:00Z"}})
    kept, recheck, expired = disrupted_pod_map(pdb, [_pod("a"), _pod("b"), _pod("c", deleting=True)], NOW)
    assert kept == {"a": "2026-01-01T00:59:00Z"}
    assert recheck == datetime(2026, 1, 1, 1, 1, tzinfo=UTC)
    assert [p["metadata"]["name"] for p in expired] == ["b"]


def test_status_numbers_and_the_disruption_allowed_condition() -> None:
    pods = [_pod("a"), _pod("b"), _pod("c", ready=False)]
    result = sync(_pdb(generation=2, minAvailable=1), pods, _scales(), NOW)
    assert result.status == {
        "observedGeneration": 2, "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 3,
        "conditions": [{"type": "DisruptionAllowed", "status": "True", "observedGeneration": 2,
                        "lastTransitionTime": STAMP, "reason": "SufficientPods", "message": ""}]}
    assert result.events == []
    # nothing to write when nothing changed (updatePdbStatus), even a minute later
    again = sync({**_pdb(generation=2, minAvailable=1), "status": result.status}, pods, _scales(),
                 NOW + timedelta(minutes=1))
    assert again.status == result.status
    # one pod less ready: no disruption allowed, the condition's transition time moves
    later = sync({**_pdb(generation=2, minAvailable=2), "status": result.status}, pods, _scales(),
                 NOW + timedelta(minutes=1))
    assert later.status["disruptionsAllowed"] == 0
    assert later.status["conditions"] == [{"type": "DisruptionAllowed", "status": "False", "observedGeneration": 2,
                                           "lastTransitionTime": "2026-01-01T01:01:00Z",
                                           "reason": "InsufficientPods", "message": ""}]


def test_nothing_expected_allows_nothing() -> None:
    # updatePdbStatus: expectedCount <= 0 -> disruptionsAllowed 0, however many are healthy
    result = sync(_pdb(minAvailable="10%"), [_pod("a", owner=None)], _scales(), NOW)
    assert (result.status["expectedPods"], result.status["currentHealthy"], result.status["disruptionsAllowed"]) == (
        0, 1, 0)
    assert [(e.type, e.reason) for e in result.events] == [("Warning", "UnmanagedPods")]
    assert [(e.type, e.reason, e.message) for e in sync(_pdb(minAvailable=1), [], _scales(), NOW).events] == [
        ("Normal", "NoPods", "No matching pods found")]


def test_a_failed_count_keeps_the_status_and_allows_no_disruption() -> None:
    # failSafe: DisruptionsAllowed 0, condition SyncFailed with the error, the rest as it was
    before = {"observedGeneration": 1, "disruptionsAllowed": 2, "currentHealthy": 3, "desiredHealthy": 1,
              "expectedPods": 3, "conditions": [{"type": "DisruptionAllowed", "status": "True", "observedGeneration": 1,
                                                 "lastTransitionTime": "2026-01-01T00:00:00Z",
                                                 "reason": "SufficientPods", "message": ""}]}

    def no_scale(ref: Obj, namespace: str) -> tuple[str, int] | None:
        raise ScaleError("jobs.batch does not implement the scale subresource")

    result = sync(_pdb(generation=2, status=before, maxUnavailable=1), [_pod("a")], no_scale, NOW)
    assert result.status == {**before, "disruptionsAllowed": 0, "conditions": [
        {"type": "DisruptionAllowed", "status": "False", "observedGeneration": 1, "lastTransitionTime": STAMP,
         "reason": "SyncFailed", "message": "jobs.batch does not implement the scale subresource"}]}
    assert [(e.reason, e.message) for e in result.events] == [(
        "CalculateExpectedPodCountFailed",
        "Failed to calculate the number of expected pods: jobs.batch does not implement the scale subresource")]


def test_selectors_print_as_go_prints_them() -> None:
    assert go_label_selector({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["x", "y"]}]}) == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{"
        "LabelSelectorRequirement{Key:tier,Operator:In,Values:[x y],},},}")
    assert go_label_selector(None) == "nil"
