"""Workload changes over time, driven through an embedded run: what a user does with kubectl
between two moments (resume a Job, change a Deployment's template, scale a StatefulSet)."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.sim.runner import Simulation

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "4"}}}


def _pod_spec(image: str = "busybox") -> dict[str, Any]:
    return {"schedulerName": "drasched", "restartPolicy": "Never",
            "containers": [{"name": "main", "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}


def _pods(sim: Simulation, prefix: str) -> list[dict]:
    return sorted((p for p in sim.store.iter_kind(kinds.POD) if p["metadata"]["name"].startswith(prefix)),
                  key=lambda p: p["metadata"]["name"])


def _events(sim: Simulation, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in sim.store.iter_kind(kinds.EVENT)
            if e["involvedObject"]["name"] == name]


def test_resuming_a_suspended_job_starts_its_pods_and_resets_start_time() -> None:
    # upstream: "When a Job is resumed from suspension, its .status.startTime is reset to the current time"
    sim = Simulation()
    sim.load([NODE, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
                     "spec": {"suspend": True, "parallelism": 2, "completions": 2, "template": {
                         "metadata": {"annotations": {"drasched.io/sim-duration": "60s"}}, "spec": _pod_spec()}}}])
    assert sim.run()
    assert _pods(sim, "j-") == []
    sim.clock.advance(300)
    sim.store.patch(kinds.JOB, "j", "default", {"spec": {"suspend": False}})
    assert sim.run()
    job = sim.store.get(kinds.JOB, "j", "default")
    assert job["status"]["startTime"] == "2026-01-01T00:05:00Z"
    suspended = next(c for c in job["status"]["conditions"] if c["type"] == "Suspended")
    assert (suspended["status"], suspended["reason"], suspended["message"]) == ("False", "JobResumed", "Job resumed")
    assert job["status"]["succeeded"] == 2
    assert [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"] == [
        "SuccessCriteriaMet", "Complete"]
    assert ("Resumed", "Job resumed") in _events(sim, "j")


def test_suspending_a_running_job_deletes_its_pods_without_counting_them_as_failed() -> None:
    sim = Simulation()
    sim.load([NODE, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
                     "spec": {"parallelism": 2, "completions": 2, "template": {"spec": _pod_spec()}}}])
    assert sim.run()
    assert [p["status"]["phase"] for p in _pods(sim, "j-")] == ["Running", "Running"]
    sim.store.patch(kinds.JOB, "j", "default", {"spec": {"suspend": True}})
    assert sim.run()
    job = sim.store.get(kinds.JOB, "j", "default")
    assert _pods(sim, "j-") == []
    assert "failed" not in job["status"] and "active" not in job["status"]
    assert ("Suspended", "Job suspended") in _events(sim, "j")


def test_a_template_change_rolls_the_deployment_onto_a_new_replicaset() -> None:
    sim = Simulation()
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {**_pod_spec("web:1"), "restartPolicy": "Always"}}
    sim.load([NODE, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                     "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template}}])
    assert sim.run()
    [first] = list(sim.store.iter_kind(kinds.REPLICA_SET))
    new_template = {**template, "spec": {**template["spec"], "containers": [
        {**template["spec"]["containers"][0], "image": "web:2"}]}}
    sim.store.patch(kinds.DEPLOYMENT, "web", "default", {"spec": {"template": new_template}})
    assert sim.run()
    sets = {rs["metadata"]["name"]: rs for rs in sim.store.iter_kind(kinds.REPLICA_SET)}
    assert len(sets) == 2
    second = next(rs for name, rs in sets.items() if name != first["metadata"]["name"])
    assert sets[first["metadata"]["name"]]["spec"]["replicas"] == 0
    assert second["spec"]["replicas"] == 3
    assert second["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    pods = _pods(sim, "web-")
    assert len(pods) == 3 and {p["spec"]["containers"][0]["image"] for p in pods} == {"web:2"}
    assert all(p["metadata"]["name"].startswith(second["metadata"]["name"] + "-") for p in pods)
    dep = sim.store.get(kinds.DEPLOYMENT, "web", "default")
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert dep["status"]["updatedReplicas"] == 3 and dep["status"]["availableReplicas"] == 3
    # 4 GPUs for 3 replicas + maxSurge 1: at most 4 pods at any time, never fewer than 2 available (maxUnavailable 1)
    scaled = [m for r, m in _events(sim, "web") if r == "ScalingReplicaSet"]
    assert scaled[0].startswith("Scaled up replica set web-") and scaled[0].endswith("from 0 to 3")
    assert any("from 0 to 1" in m for m in scaled)


def test_statefulset_scale_down_removes_the_highest_ordinal_first() -> None:
    sim = Simulation()
    template = {"metadata": {"labels": {"app": "db"}}, "spec": {**_pod_spec(), "restartPolicy": "Always"}}
    sim.load([NODE, {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
                     "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}}, "template": template}}])
    assert sim.run()
    assert [p["metadata"]["name"] for p in _pods(sim, "db-")] == ["db-0", "db-1", "db-2"]
    sim.store.patch(kinds.STATEFUL_SET, "db", "default", {"spec": {"replicas": 1}})
    assert sim.run()
    assert [p["metadata"]["name"] for p in _pods(sim, "db-")] == ["db-0"]
    deletes = [m for r, m in _events(sim, "db") if r == "SuccessfulDelete"]
    assert deletes == ["delete Pod db-2 in StatefulSet db successful", "delete Pod db-1 in StatefulSet db successful"]


def test_a_jobset_that_does_not_fit_runs_whole_once_a_node_is_added() -> None:
    sim = Simulation()
    small = {**NODE, "status": {"allocatable": {**NODE["status"]["allocatable"], "nvidia.com/gpu": "3"}}}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "pretrain", "namespace": "default"},
              "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
                  "parallelism": 2, "completions": 2, "template": {
                      "metadata": {"annotations": {"drasched.io/sim-duration": "60s"}}, "spec": _pod_spec()}}}}]}}
    sim.load([small, jobset])
    assert sim.run()
    pods = _pods(sim, "pretrain-")
    assert len(pods) == 4 and not any(p["spec"].get("nodeName") for p in pods)  # 3 of 4 fit: none placed
    sim.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "n2", "labels": {"kubernetes.io/hostname": "n2"}}, "status": {"allocatable": {
            "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "1"}}})
    assert sim.run()
    pods = _pods(sim, "pretrain-")
    assert len(pods) == 4 and {p["status"]["phase"] for p in pods} == {"Succeeded"}
    assert len({p["status"]["startTime"] for p in pods}) == 1  # started together
    done = sim.store.get(kinds.JOB_SET, "pretrain", "default")
    assert done["status"]["terminalState"] == "Completed"
