"""Indexed Jobs: ``backoffLimitPerIndex`` / ``maxFailedIndexes`` / ``FailIndex`` and ``successPolicy``,
each against the upstream function (kubernetes ``pkg/controller/job``) it follows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from drasched.api import kinds
from drasched.controllers.workloads.job import backoff_remaining
from drasched.controllers.workloads.job_indexes import (
    INDEX_FAILURE_COUNT,
    INDEX_IGNORED_FAILURE_COUNT,
    index_absolute_failure_count,
    is_index_failed,
    match_success_policy,
    new_index_failure_counts,
    parse_indexes,
)
from drasched.controllers.workloads.podfailurepolicy import PolicyMatch
from drasched.sim.runner import Simulation

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}}}
# a lone replacement of one index cannot meet an implicit gang of `parallelism` (gangs.py's concern, not
# the Job controller's): tests that replace a single index switch implicit gangs off
NO_JOB_GANGS = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "drasched-scheduler",
                                                                      "namespace": "kube-system"},
                "data": {"config.yaml": "implicitGangs: {Job: false}\n"}}


def _job(name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"completionMode": "Indexed", **spec, "template": {
                "metadata": {"annotations": annotations or {}},
                "spec": {"schedulerName": "drasched", "restartPolicy": "Never", "containers": [
                    {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def _pods(sim: Simulation, job: str) -> list[dict[str, Any]]:
    return sorted((p for p in sim.store.iter_kind(kinds.POD) if p["metadata"]["name"].startswith(f"{job}-")),
                  key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"]))


def _true_conditions(job: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in job["status"].get("conditions") or [] if c["status"] == "True"]


def _pod_of_index(sim: Simulation, job: str, index: int) -> dict[str, Any]:
    return next(p for p in _pods(sim, job) if p["metadata"]["annotations"].get(
        "batch.kubernetes.io/job-completion-index") == str(index) and p["status"].get("phase") not in (
        "Succeeded", "Failed"))


# ---- pure rules ------------------------------------------------------------------------------

def test_indexes_parse_as_upstream_parse_indexes_from_string() -> None:
    # indexed_job_utils.go parseIndexesFromString: merge adjacent, clip at completions, skip corrupt parts
    assert parse_indexes("", 5) == []
    assert parse_indexes("0", 5) == [(0, 0)]
    assert parse_indexes("0,1,2-3,5-7", 10) == [(0, 3), (5, 7)]
    assert parse_indexes("1-9", 4) == [(1, 3)]
    assert parse_indexes("2,6,8", 5) == [(2, 2)]  # stops at the first interval past completions
    assert parse_indexes("x,2-y,3", 5) == [(3, 3)]


def test_success_policy_rules_as_upstream_match_success_policy() -> None:
    # success_policy.go matchSuccessPolicy / matchSucceededIndexesRule
    leader = {"rules": [{"succeededIndexes": "0"}]}
    assert match_success_policy(leader, 10, {0}) == "Matched rules at index 0"
    assert match_success_policy(leader, 10, {1, 2}) is None
    assert match_success_policy(leader, 10, set()) is None
    assert match_success_policy(None, 10, {0}) is None
    count = {"rules": [{"succeededIndexes": "9"}, {"succeededCount": 3}]}
    assert match_success_policy(count, 10, {0, 4}) is None
    assert match_success_policy(count, 10, {0, 4, 7}) == "Matched rules at index 1"
    both = {"rules": [{"succeededIndexes": "2-5", "succeededCount": 2}]}
    assert match_success_policy(both, 10, {0, 1, 5}) is None  # one of 2-5
    assert match_success_policy(both, 10, {3, 5, 9}) == "Matched rules at index 0"
    assert match_success_policy({"rules": [{"succeededIndexes": "1-3,5"}]}, 10, {1, 2, 3, 5}) is not None
    assert match_success_policy({"rules": [{"succeededIndexes": "bad"}]}, 10, {0}) is None


def test_replacement_pod_failure_counts_as_upstream_get_new_index_failure_counts() -> None:
    def pod(failed: int, ignored: int = 0) -> dict[str, Any]:
        ann = {INDEX_FAILURE_COUNT: str(failed)}
        if ignored:
            ann[INDEX_IGNORED_FAILURE_COUNT] = str(ignored)
        return {"metadata": {"annotations": ann}}

    assert new_index_failure_counts(None, None) == (0, 0)
    assert new_index_failure_counts(pod(0), None) == (1, 0)
    assert new_index_failure_counts(pod(2, 1), PolicyMatch("Count", "")) == (3, 1)
    assert new_index_failure_counts(pod(2, 1), PolicyMatch("Ignore", "")) == (2, 2)
    assert index_absolute_failure_count(pod(2, 1)) == 3
    # a corrupt or negative annotation reads as 0 (parseInt32)
    assert index_absolute_failure_count({"metadata": {"annotations": {INDEX_FAILURE_COUNT: "-4"}}}) == 0
    # isIndexFailed: FailIndex at once, else counted failures once the limit is reached
    assert is_index_failed(pod(0), PolicyMatch("FailIndex", ""), 5)
    assert not is_index_failed(pod(0), None, 1)
    assert is_index_failed(pod(1), None, 1)
    assert not is_index_failed(pod(1), PolicyMatch("Ignore", ""), 1)


def test_per_index_backoff_counts_every_failure_of_the_index() -> None:
    # backoff_utils.go getRemainingTimePerIndex: failures = absolute count of the last failed pod + 1
    assert backoff_remaining(0 + 1, T0, T0) == timedelta(seconds=10)
    assert backoff_remaining(3 + 1, T0, T0 + timedelta(seconds=30)) == timedelta(seconds=50)
    assert backoff_remaining(40, T0, T0) == timedelta(minutes=10)


# ---- the controller, on virtual time ---------------------------------------------------------

def test_the_docs_backoff_limit_per_index_example_ends_in_bounded_rounds() -> None:
    # before: the defaulted backoffLimit (MaxInt32) let every index be retried for ever (666 pods in 2000 rounds)
    sim = Simulation()
    sim.load([NODE, _job("per-index", {"completions": 4, "parallelism": 2, "backoffLimitPerIndex": 1,
                                       "maxFailedIndexes": 2},
                         {"drasched.io/sim-duration": "1m", "drasched.io/sim-exit-code": "1"})])
    assert sim.run(max_rounds=200), "the Job must end, not be retried for ever"
    assert sim.rounds < 100
    job = sim.store.get(kinds.JOB, "per-index", "default")
    assert job["spec"]["backoffLimit"] == 2**31 - 1
    assert _true_conditions(job) == [("FailureTarget", "MaxFailedIndexesExceeded"),
                                     ("Failed", "MaxFailedIndexesExceeded")]
    assert job["status"]["failedIndexes"] == "0-3"
    assert job["status"]["failed"] == 8
    pods = _pods(sim, "per-index")
    counts = [(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
               p["metadata"]["annotations"][INDEX_FAILURE_COUNT], p["status"]["startTime"][11:19]) for p in pods]
    # each index twice (failure count 0, then 1); a replacement waits its index's 10s back-off
    assert sorted(counts) == [("0", "0", "00:00:00"), ("0", "1", "00:01:10"), ("1", "0", "00:00:00"),
                              ("1", "1", "00:01:10"), ("2", "0", "00:02:10"), ("2", "1", "00:03:20"),
                              ("3", "0", "00:02:10"), ("3", "1", "00:03:20")]
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["lastTransitionTime"] == "2026-01-01T00:04:20Z"


def test_fail_index_rule_fails_the_index_and_all_indexes_finished_fails_the_job() -> None:
    # job_controller.go syncJob: failed + succeeded indexes >= completions, some failed -> FailedIndexes
    sim = Simulation()
    fail_index = {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}]}
    sim.load([NODE, NO_JOB_GANGS, _job("fi", {"completions": 3, "parallelism": 3, "backoffLimitPerIndex": 5,
                                              "podFailurePolicy": fail_index})])
    assert sim.run(max_rounds=100)
    # index 0 fails with 42 (FailIndex), index 2 succeeds, index 1 fails with 1 once and then succeeds
    sim.store.patch(kinds.POD, _pod_of_index(sim, "fi", 0)["metadata"]["name"], "default", {"metadata": {
        "annotations": {"drasched.io/sim-duration": "30s", "drasched.io/sim-exit-code": "42"}}})
    sim.store.patch(kinds.POD, _pod_of_index(sim, "fi", 1)["metadata"]["name"], "default", {"metadata": {
        "annotations": {"drasched.io/sim-duration": "30s", "drasched.io/sim-exit-code": "1"}}})
    sim.store.patch(kinds.POD, _pod_of_index(sim, "fi", 2)["metadata"]["name"], "default", {"metadata": {
        "annotations": {"drasched.io/sim-duration": "30s"}}})
    assert sim.run(max_rounds=100)
    job = sim.store.get(kinds.JOB, "fi", "default")
    assert job["status"]["failedIndexes"] == "0"
    assert _true_conditions(job) == []  # index 1 is retried (1 of 5), index 0 is not
    replacement = _pod_of_index(sim, "fi", 1)
    assert replacement["metadata"]["annotations"][INDEX_FAILURE_COUNT] == "1"
    assert replacement["status"]["startTime"] == "2026-01-01T00:00:40Z"  # 30s + the index's 10s back-off
    assert not any(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "0"
                   and p["status"]["phase"] not in ("Failed",) for p in _pods(sim, "fi"))
    sim.store.patch(kinds.POD, replacement["metadata"]["name"], "default", {"metadata": {
        "annotations": {"drasched.io/sim-duration": "30s"}}})
    assert sim.run(max_rounds=100)
    job = sim.store.get(kinds.JOB, "fi", "default")
    assert _true_conditions(job) == [("FailureTarget", "FailedIndexes"), ("Failed", "FailedIndexes")]
    assert (job["status"]["failedIndexes"], job["status"]["completedIndexes"]) == ("0", "1,2")
    assert (job["status"]["failed"], job["status"]["succeeded"]) == (2, 2)
    assert len(_pods(sim, "fi")) == 4


def test_max_failed_indexes_exceeded_deletes_the_running_pods() -> None:
    # a pod that vanishes while running is a failure (isPodFailed); limit 0 fails its index at once
    sim = Simulation()
    sim.load([NODE, _job("mf", {"completions": 3, "parallelism": 3, "backoffLimitPerIndex": 0,
                                "maxFailedIndexes": 0})])
    assert sim.run(max_rounds=100)
    assert [p["status"]["phase"] for p in _pods(sim, "mf")] == ["Running"] * 3
    sim.store.delete(kinds.POD, _pod_of_index(sim, "mf", 1)["metadata"]["name"], "default")
    assert sim.run(max_rounds=100)
    job = sim.store.get(kinds.JOB, "mf", "default")
    assert _true_conditions(job) == [("FailureTarget", "MaxFailedIndexesExceeded"),
                                     ("Failed", "MaxFailedIndexesExceeded")]
    assert job["status"]["failedIndexes"] == "1"
    assert job["status"]["failed"] == 3  # the two deleted for the failure count too, as upstream counts them
    assert _pods(sim, "mf") == []


def test_success_policy_ends_the_job_and_deletes_the_other_pods_without_failing_them() -> None:
    # job_controller.go: SuccessCriteriaMet (SuccessPolicy) -> delete active pods -> Complete, same reason
    sim = Simulation()
    sim.load([NODE, _job("leader", {"completions": 4, "parallelism": 4,
                                    "successPolicy": {"rules": [{"succeededIndexes": "0"}]}})])
    assert sim.run(max_rounds=100)
    sim.store.patch(kinds.POD, _pod_of_index(sim, "leader", 0)["metadata"]["name"], "default", {"metadata": {
        "annotations": {"drasched.io/sim-duration": "2m"}}})
    assert sim.run(max_rounds=100), "before: the other pods ran for ever and the Job never ended"
    job = sim.store.get(kinds.JOB, "leader", "default")
    assert _true_conditions(job) == [("SuccessCriteriaMet", "SuccessPolicy"), ("Complete", "SuccessPolicy")]
    assert job["status"]["conditions"][-1]["message"] == "Matched rules at index 0"
    assert job["status"]["completionTime"] == "2026-01-01T00:02:00Z"
    assert (job["status"]["succeeded"], job["status"]["completedIndexes"]) == (1, "0")
    assert "failed" not in job["status"]
    assert [p["status"]["phase"] for p in _pods(sim, "leader")] == ["Succeeded"]


def test_an_ignored_failure_still_backs_off_so_time_moves_on() -> None:
    # backoff_utils.go newBackoffRecord takes every failed pod, ignored ones included: an instant failure
    # under an Ignore rule is retried at 10s, 20s, 40s... and never many times in one virtual instant
    sim = Simulation()
    sim.load([NODE, _job("ign", {"completions": 1, "parallelism": 1, "completionMode": "NonIndexed",
                                 "podFailurePolicy": {"rules": [
                                     {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]}},
                         {"drasched.io/sim-duration": "0s", "drasched.io/sim-exit-code": "3"})])
    assert not sim.run(max_rounds=300)  # upstream retries this Job without end too
    pods = _pods(sim, "ign")
    starts = [p["metadata"]["creationTimestamp"] for p in pods]
    assert len(set(starts)) == len(starts), "one pod per back-off step, never two at the same instant"
    assert starts[:4] == ["2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z", "2026-01-01T00:00:30Z",
                          "2026-01-01T00:01:10Z"]
    assert "failed" not in sim.store.get(kinds.JOB, "ign", "default")["status"]
