"""JobSet suspend, dependsOn and InOrder startup, driven through an embedded run.

Each test names the upstream function it follows (kubernetes-sigs/jobset,
``pkg/controllers/jobset_controller.go`` unless said otherwise).
"""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.controllers.workloads.jobset import all_replicas_started, dependency_reached, update_condition
from drasched.sim.runner import Simulation

T0 = "2026-01-01T00:00:00Z"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "4"}}}
NO_JOBSET_GANG = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "drasched-scheduler", "namespace": "kube-system"},
                  "data": {"config.yaml": "implicitGangs: {JobSet: false}\n"}}


def _rjob(name: str, replicas: int = 1, duration: str = "60s", gpus: int = 0, **extra: Any) -> dict[str, Any]:
    limits = {"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}} if gpus else {}
    annotations = {"drasched.io/sim-duration": duration} if duration else {}  # none: runs forever
    return {"name": name, "replicas": replicas, **extra, "template": {"spec": {"template": {
        "metadata": {"annotations": annotations},
        "spec": {"schedulerName": "drasched", "restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "busybox", **limits}]}}}}}


def _jobset(name: str, rjobs: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"replicatedJobs": rjobs, **spec}}


def _jobs(sim: Simulation) -> dict[str, dict[str, Any]]:
    return {j["metadata"]["name"]: j for j in sim.store.iter_kind(kinds.JOB)}


def _pods(sim: Simulation) -> list[dict[str, Any]]:
    return list(sim.store.iter_kind(kinds.POD))


def _conditions(sim: Simulation, name: str) -> dict[str, tuple[str, str, str]]:
    js = sim.store.get(kinds.JOB_SET, name, "default")
    return {c["type"]: (c["status"], c["reason"], c["lastTransitionTime"]) for c in js["status"].get("conditions", [])}


def _events(sim: Simulation, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in sim.store.iter_kind(kinds.EVENT)
            if e["involvedObject"]["name"] == name]


# ---- suspend -------------------------------------------------------------------------------------
def test_suspended_jobset_creates_suspended_jobs_and_runs_no_pod() -> None:
    # constructJob: job.Spec.Suspend = jobSetSuspended(js); suspendJobs: Suspended True, SuspendedJobs
    sim = Simulation()
    sim.load([NODE, _jobset("js", [_rjob("w", replicas=2)], suspend=True)])
    assert sim.run()
    jobs = _jobs(sim)
    assert sorted(jobs) == ["js-w-0", "js-w-1"]
    assert all(j["spec"]["suspend"] is True for j in jobs.values())
    assert _pods(sim) == []
    assert _conditions(sim, "js") == {"Suspended": ("True", "SuspendedJobs", T0)}
    assert ("SuspendedJobs", "jobset is suspended") in _events(sim, "js")
    js = sim.store.get(kinds.JOB_SET, "js", "default")
    assert js["status"]["replicatedJobsStatus"][0]["suspended"] == 2


def test_resuming_a_jobset_resumes_its_jobs_and_sets_suspended_false() -> None:
    # resumeJobsIfNecessary / resumeJob: spec.suspend false on each Job; Suspended False, ResumeJobs
    sim = Simulation()
    sim.load([NODE, _jobset("js", [_rjob("w", replicas=2)], suspend=True)])
    assert sim.run()
    sim.clock.advance(300)
    sim.store.patch(kinds.JOB_SET, "js", "default", {"spec": {"suspend": False}})
    assert sim.run()
    jobs = _jobs(sim)
    assert all(j["spec"]["suspend"] is False for j in jobs.values())
    assert all(j["status"]["startTime"] == "2026-01-01T00:05:00Z" for j in jobs.values())
    conds = _conditions(sim, "js")
    assert conds["Suspended"] == ("False", "ResumeJobs", "2026-01-01T00:05:00Z")
    assert conds["Completed"][2] == "2026-01-01T00:06:00Z"
    assert ("ResumeJobs", "jobset is resumed") in _events(sim, "js")


def test_suspending_a_running_jobset_suspends_its_jobs_and_their_pods_go() -> None:
    # suspendJobs: every active Job not yet suspended gets spec.suspend true (the Job controller deletes its pods)
    sim = Simulation()
    sim.load([NODE, _jobset("js", [_rjob("w", replicas=2, duration="")])])
    assert sim.run()
    assert len([p for p in _pods(sim) if p["status"]["phase"] == "Running"]) == 2
    sim.clock.advance(60)
    sim.store.patch(kinds.JOB_SET, "js", "default", {"spec": {"suspend": True}})
    assert sim.run()
    assert all(j["spec"]["suspend"] is True for j in _jobs(sim).values())
    assert _pods(sim) == []
    assert _conditions(sim, "js") == {"Suspended": ("True", "SuspendedJobs", "2026-01-01T00:01:00Z")}


def test_resume_merges_pod_template_changes_made_while_suspended() -> None:
    # resumeJob: labels, annotations, nodeSelector, tolerations, schedulingGates merged from the replicated Job
    sim = Simulation()
    sim.load([NODE, _jobset("js", [_rjob("w")], suspend=True)])
    assert sim.run()
    js = sim.store.get(kinds.JOB_SET, "js", "default")
    rjob = js["spec"]["replicatedJobs"][0]
    pod_template = rjob["template"]["spec"]["template"]
    pod_template["metadata"].setdefault("labels", {})["kueue.x-k8s.io/flavor"] = "a"
    pod_template["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n1"}
    pod_template["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    sim.store.patch(kinds.JOB_SET, "js", "default", {"spec": {"suspend": False, "replicatedJobs": [rjob]}})
    assert sim.run()
    template = _jobs(sim)["js-w-0"]["spec"]["template"]
    assert template["metadata"]["labels"]["kueue.x-k8s.io/flavor"] == "a"
    assert template["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "js"  # kept, not overwritten
    assert template["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "n1"}
    assert template["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert [p["metadata"]["labels"]["kueue.x-k8s.io/flavor"] for p in _pods(sim)] == ["a"]


# ---- dependsOn -----------------------------------------------------------------------------------
def test_depends_on_complete_creates_the_jobs_when_the_dependency_completed() -> None:
    # reconcileReplicatedJobs + dependencyReachedStatus (depends_on.go): Complete = all replicas succeeded
    sim = Simulation()
    sim.load([NO_JOBSET_GANG, NODE, _jobset("js", [
        _rjob("init", replicas=2, duration="5m"),
        _rjob("train", duration="1h", dependsOn=[{"name": "init", "status": "Complete"}])])])
    assert sim.run()
    jobs = _jobs(sim)
    assert jobs["js-train-0"]["metadata"]["creationTimestamp"] == "2026-01-01T00:05:00Z"
    assert jobs["js-train-0"]["status"]["completionTime"] == "2026-01-01T01:05:00Z"
    assert _conditions(sim, "js")["Completed"][2] == "2026-01-01T01:05:00Z"


def test_depends_on_ready_creates_the_jobs_once_every_dependency_job_is_ready() -> None:
    # dependencyReachedStatus: Ready = ready + succeeded + failed Jobs == replicas; the GPU is busy for 60s
    blocker = _jobset("blocker", [_rjob("b", duration="60s", gpus=4)])
    sim = Simulation()
    sim.load([NO_JOBSET_GANG, NODE, blocker, _jobset("js", [
        _rjob("driver", duration="1h", gpus=1),
        _rjob("workers", replicas=2, dependsOn=[{"name": "driver", "status": "Ready"}])])])
    assert sim.run()
    jobs = _jobs(sim)
    assert jobs["js-driver-0"]["metadata"]["creationTimestamp"] == T0
    assert jobs["js-workers-0"]["metadata"]["creationTimestamp"] == "2026-01-01T00:01:00Z"


def test_suspended_jobset_with_depends_on_creates_only_the_jobs_whose_dependencies_are_met() -> None:
    # reconcileReplicatedJobs checks dependencyReachedStatus whether or not the JobSet is suspended
    sim = Simulation()
    sim.load([NO_JOBSET_GANG, NODE, _jobset("js", [
        _rjob("init"), _rjob("train", dependsOn=[{"name": "init", "status": "Complete"}])], suspend=True)])
    assert sim.run()
    assert sorted(_jobs(sim)) == ["js-init-0"]


# ---- InOrder -------------------------------------------------------------------------------------
def test_in_order_creates_each_replicated_job_once_the_previous_one_is_ready() -> None:
    # reconcileReplicatedJobs with inOrderStartupPolicy; allReplicasStarted (startup_policy.go)
    blocker = _jobset("blocker", [_rjob("b", duration="60s", gpus=4)])
    sim = Simulation()
    sim.load([NO_JOBSET_GANG, NODE, blocker, _jobset("js", [_rjob("a", gpus=1, duration="1h"), _rjob("b"),
                                                            _rjob("c")],
                                                   startupPolicy={"startupPolicyOrder": "InOrder"})])
    assert sim.run()
    created = {n: j["metadata"]["creationTimestamp"] for n, j in _jobs(sim).items() if n.startswith("js-")}
    assert created == {"js-a-0": T0, "js-b-0": "2026-01-01T00:01:00Z", "js-c-0": "2026-01-01T00:01:00Z"}
    conds = _conditions(sim, "js")
    assert conds["StartupPolicyInProgress"] == ("False", "InOrderStartupPolicyInProgress", T0)
    assert conds["StartupPolicyCompleted"] == ("True", "InOrderStartupPolicyCompleted", "2026-01-01T00:01:00Z")


def test_in_order_suspended_jobset_creates_all_jobs_and_resumes_them_in_order() -> None:
    # suspended: reconcileReplicatedJobs skips the InOrder gate (every Job made, suspended);
    # resumeJobsIfNecessary resumes one replicated Job at a time and leaves Suspended True until the last.
    # a wants more GPUs than the node has, so it never gets ready and b stays suspended.
    sim = Simulation()
    sim.load([NO_JOBSET_GANG, NODE, _jobset("js", [_rjob("a", gpus=8), _rjob("b")],
                                            startupPolicy={"startupPolicyOrder": "InOrder"}, suspend=True)])
    assert sim.run()
    assert {n: j["spec"]["suspend"] for n, j in _jobs(sim).items()} == {"js-a-0": True, "js-b-0": True}
    assert "StartupPolicyInProgress" not in _conditions(sim, "js")
    sim.clock.advance(60)
    sim.store.patch(kinds.JOB_SET, "js", "default", {"spec": {"suspend": False}})
    assert sim.run()
    assert {n: j["spec"]["suspend"] for n, j in _jobs(sim).items()} == {"js-a-0": False, "js-b-0": True}
    conds = _conditions(sim, "js")
    assert conds["Suspended"] == ("True", "SuspendedJobs", T0)
    assert conds["StartupPolicyInProgress"] == ("True", "InOrderStartupPolicyInProgress", "2026-01-01T00:01:00Z")


# ---- the pure rules ------------------------------------------------------------------------------
def test_dependency_reached_follows_upstream_dependency_reached_status() -> None:
    rjob = {"name": "b", "dependsOn": [{"name": "a", "status": "Complete"}]}
    assert not dependency_reached(rjob, {"a": 2}, [{"name": "a", "succeeded": 1, "ready": 1}])
    assert dependency_reached(rjob, {"a": 2}, [{"name": "a", "succeeded": 2}])
    ready = {"name": "b", "dependsOn": [{"name": "a", "status": "Ready"}]}
    assert dependency_reached(ready, {"a": 3}, [{"name": "a", "succeeded": 1, "ready": 1, "failed": 1}])
    assert not dependency_reached(ready, {"a": 3}, [{"name": "a", "ready": 2}])
    assert not dependency_reached(ready, {}, [{"name": "a", "ready": 3}])  # only earlier replicated Jobs count
    assert dependency_reached({"name": "a"}, {}, [])


def test_all_replicas_started_counts_ready_succeeded_and_failed_jobs() -> None:
    assert all_replicas_started(3, {"ready": 1, "succeeded": 1, "failed": 1})
    assert not all_replicas_started(3, {"ready": 2, "active": 3})


def test_update_condition_follows_upstream_update_condition() -> None:
    status: dict[str, Any] = {}
    assert not update_condition(status, "Suspended", "False", "ResumeJobs", "m", T0)  # a False one is never added
    assert "conditions" not in status
    assert update_condition(status, "StartupPolicyInProgress", "True", "r1", "m1", T0)
    assert not update_condition(status, "StartupPolicyInProgress", "True", "other", "m", "later")  # same status
    assert update_condition(status, "StartupPolicyCompleted", "True", "r2", "m2", "t1")
    assert [(c["type"], c["status"], c["lastTransitionTime"]) for c in status["conditions"]] == [
        ("StartupPolicyInProgress", "False", T0), ("StartupPolicyCompleted", "True", "t1")]


def test_a_staged_jobset_runs_with_its_implicit_gang_on() -> None:
    """A JobSet-wide gang would wait for the pods of Jobs created only after the first stage: a
    staged JobSet is gang-scheduled one Job at a time (gangs.py ``staged``), and says so."""
    sim = Simulation()
    sim.load([NODE, _jobset("js", [_rjob("init", duration="5m"),
                                   _rjob("train", dependsOn=[{"name": "init", "status": "Complete"}])])])
    sim.run()
    assert _conditions(sim, "js").get("Completed", ("", "", ""))[0] == "True"
    events = [e for e in sim.store.iter_kind(kinds.EVENT) if e.get("reason") == "GangPerJob"]
    assert [e["involvedObject"]["name"] for e in events] == ["js"]
