"""The Job controller's pure rules, each against what upstream's job controller does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from drasched.api.workload_defaults import WORKLOAD_DEFAULTS
from drasched.controllers.workloads.gangs import ImplicitGangs, annotated_gang, job_gang
from drasched.controllers.workloads.job import backoff_remaining, format_indexes
from drasched.controllers.workloads.podfailurepolicy import match_pod_failure_policy

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_completed_indexes_compress_three_or_more_in_a_row_as_upstream_documents() -> None:
    # JobStatus.completedIndexes: "if the completed indexes are 1, 3, 4, 5 and 7, they are represented as 1,3-5,7"
    assert format_indexes({1, 3, 4, 5, 7}) == "1,3-5,7"
    assert format_indexes({0, 1}) == "0,1"
    assert format_indexes(set(range(8))) == "0-7"
    assert format_indexes(set()) == ""


def test_pod_failure_backoff_doubles_from_ten_seconds_up_to_ten_minutes() -> None:
    # upstream DefaultJobPodFailureBackOff = 10s, MaxJobPodFailureBackOff = 10m (backoffRecord.getRemainingTime)
    assert backoff_remaining(0, T0, T0) == timedelta(0)
    assert backoff_remaining(1, T0, T0) == timedelta(seconds=10)
    assert backoff_remaining(2, T0, T0 + timedelta(seconds=5)) == timedelta(seconds=15)
    assert backoff_remaining(3, T0, T0) == timedelta(seconds=40)
    assert backoff_remaining(20, T0, T0) == timedelta(minutes=10)
    assert backoff_remaining(1, T0, T0 + timedelta(minutes=1)) == timedelta(0)


def _failed_pod(exit_code: int, conditions: list[dict] | None = None) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": "Failed", "conditions": conditions or [],
                       "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": exit_code}}}]}}


def test_first_matching_failure_rule_wins_with_upstreams_message() -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
                        {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [42]}}]}
    hit = match_pod_failure_policy(policy, _failed_pod(42))
    assert hit is not None and hit.action == "FailJob"
    assert hit.message == "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"
    preempted = match_pod_failure_policy(policy, _failed_pod(137, [{"type": "DisruptionTarget", "status": "True"}]))
    assert preempted is not None and preempted.action == "Ignore"
    assert preempted.message == "Pod ns/p has condition DisruptionTarget matching Ignore rule at index 0"
    counted = match_pod_failure_policy(policy, _failed_pod(1))
    assert counted is not None and counted.action == "Count"


def test_exit_code_zero_never_matches_a_rule() -> None:
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}}]}
    assert match_pod_failure_policy(policy, _failed_pod(0)) is None
    assert match_pod_failure_policy(None, _failed_pod(3)) is None


def test_job_defaults_as_the_api_server_fills_them() -> None:
    # pkg/apis/batch/v1/defaults.go SetDefaults_Job
    job = {"metadata": {}, "spec": {"template": {"metadata": {"labels": {"app": "x"}}}}}
    WORKLOAD_DEFAULTS["Job"](job)
    filled = {k: v for k, v in job["spec"].items() if k != "template"}
    assert filled == {"completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                      "suspend": False, "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": False}
    # the labels go to the Job on create, with the selector's (tests/contract/test_job_selector_contract.py)
    assert job["metadata"] == {}
    work_queue = {"spec": {"parallelism": 4, "podFailurePolicy": {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}}
    WORKLOAD_DEFAULTS["Job"](work_queue)
    assert "completions" not in work_queue["spec"]
    assert work_queue["spec"]["podReplacementPolicy"] == "Failed"
    assert work_queue["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"


def test_deployment_and_statefulset_defaults() -> None:
    # pkg/apis/apps/v1/defaults.go
    dep: dict = {"spec": {}}
    WORKLOAD_DEFAULTS["Deployment"](dep)
    assert dep["spec"] == {"replicas": 1, "strategy": {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": "25%", "maxSurge": "25%"}}, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}
    sts: dict = {"spec": {"replicas": 3}}
    WORKLOAD_DEFAULTS["StatefulSet"](sts)
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}


def test_gang_sizes() -> None:
    assert job_gang({"spec": {"parallelism": 8, "completions": 16}}) == 8
    assert job_gang({"spec": {"parallelism": 8, "completions": 3}}) == 3
    assert job_gang({"spec": {"parallelism": 4}}) == 4
    assert annotated_gang({"metadata": {"annotations": {"drasched.io/gang-min-member": "3"}}}) == 3
    assert annotated_gang({"metadata": {"annotations": {"drasched.io/gang-min-member": "x"}}}) is None
    assert annotated_gang({"metadata": {}}) is None


def test_implicit_gang_switch_per_kind() -> None:
    settings = ImplicitGangs.parse({"Job": False})
    assert not settings.on("Job") and settings.on("Deployment")
    assert ImplicitGangs.parse(None).on("Job")
    for bad, words in (({"CronJob": True}, "unknown kind"), ({"Job": "no"}, "true or false"), ([], "mapping")):
        try:
            ImplicitGangs.parse(bad)
        except ValueError as exc:
            assert words in str(exc)
        else:
            raise AssertionError(f"{bad!r} accepted")


def test_jobset_gang_counts_every_pod_that_runs_at_once() -> None:
    from drasched.controllers.workloads.gangs import jobset_gang

    jobset = {"spec": {"replicatedJobs": [
        {"name": "leader", "replicas": 1, "template": {"spec": {"parallelism": 1}}},
        {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 4, "completions": 4}}}]}}
    assert jobset_gang(jobset) == 9


def test_jobset_job_key_is_sha1_of_namespace_and_name() -> None:
    import hashlib

    from drasched.controllers.workloads.jobset import job_key

    assert job_key("default", "a-b-0") == hashlib.sha1(b"default/a-b-0").hexdigest()
    assert job_key("default", "a-b-0") != job_key("other", "a-b-0")


def test_lws_defaults_as_its_webhook_fills_them() -> None:
    lws: dict = {"spec": {"leaderWorkerTemplate": {"workerTemplate": {}}}}
    WORKLOAD_DEFAULTS["LeaderWorkerSet"](lws)
    assert lws["spec"]["replicas"] == 1 and lws["spec"]["startupPolicy"] == "LeaderCreated"
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 1
