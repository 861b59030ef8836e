"""A Job's implicit PodGroup follows the pods the Job still runs at once: once some of its pods
succeeded, a replacement for a failed one is not held for pods that will never come (in a cluster
the succeeded pods may be gone, garbage-collected, and the gang would wait "fewer than its
minMember" for ever)."""

from __future__ import annotations

from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.implicitgang import POD_GROUP_LABEL
from drasched.controllers.workloads.gangs import ImplicitGangController, job_gang
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]
JOB_UID = "0b7c1d6e-0000-4000-8000-000000000019"


def job_obj(spec: Obj, status: Obj | None = None) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "default"},
            "spec": spec, "status": status or {}}


# kueue pkg/controller/jobs/job/job_controller.go: podsCount = min(parallelism, completions);
# ReclaimablePods = parallelism - (completions ?? parallelism - status.succeeded) once that is less;
# kubernetes pkg/controller/job/job_controller.go manageJob: wantActive = min(completions - succeeded,
# parallelism), succeeded of an Indexed Job being its completed indexes
@pytest.mark.parametrize(("spec", "status", "want"), [
    ({"parallelism": 4, "completions": 4}, None, 4),  # the first gang: unchanged
    ({"parallelism": 4, "completions": 2}, None, 2),
    ({"parallelism": 4}, None, 4),  # completions unset: parallelism
    ({}, None, 1),  # parallelism defaults to 1
    ({"parallelism": 4, "completions": 4}, {"succeeded": 3, "failed": 1}, 1),  # NonIndexed
    ({"parallelism": 4, "completions": 10}, {"succeeded": 3}, 4),
    ({"parallelism": 4, "completions": 10}, {"succeeded": 8}, 2),
    ({"parallelism": 4}, {"succeeded": 1}, 3),  # completions unset: Kueue's default to parallelism
    ({"parallelism": 4, "completions": 4}, {"succeeded": 4}, 1),  # never below 1 (minMember > 0)
    ({"parallelism": 4, "completions": 4, "completionMode": "Indexed"}, {"succeeded": 3, "completedIndexes": "1-3"}, 1),
    ({"parallelism": 4, "completions": 8, "completionMode": "Indexed"}, {"completedIndexes": "0,2,4-6"}, 3),
    # backoffLimitPerIndex: failed indexes are not run again
    ({"parallelism": 4, "completions": 4, "completionMode": "Indexed", "backoffLimitPerIndex": 0},
     {"completedIndexes": "0", "failedIndexes": "1,2"}, 1),
])
def test_job_gang_is_the_pods_still_to_run_at_once(spec: Obj, status: Obj | None, want: int) -> None:
    assert job_gang(job_obj(spec, status)) == want


def ctx_of() -> SimContext:
    clock = VirtualClock()
    return SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)


def make_job(ctx: SimContext, status: Obj) -> Obj:
    obj = job_obj({"completionMode": "Indexed", "parallelism": 4, "completions": 4, "template": {"spec": {
        "schedulerName": "drasched", "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}})
    obj["metadata"]["uid"] = JOB_UID
    created = ctx.store.create(obj)
    if status:
        created["status"] = status
        created = ctx.store.update_status(created)
    return created


def replacement_pod(index: int = 0) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"train-{index}-abcde", "namespace": "default",
                         "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                                              "uid": JOB_UID, "controller": True}]},
            "spec": {"schedulerName": "drasched", "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox"}]}}


def group_of(ctx: SimContext) -> Obj:
    return ctx.store.get(kinds.POD_GROUP, "train", "default")


def test_a_replacement_after_the_others_succeeded_and_were_collected_joins_a_gang_of_one() -> None:
    ctx = ctx_of()
    gangs = ImplicitGangController()
    make_job(ctx, {})
    ctx.store.create(replacement_pod(1))
    assert gangs.reconcile(ctx)
    assert group_of(ctx)["spec"]["minMember"] == 4  # the first gang: every pod at once
    # later: indexes 1-3 succeeded, index 0 failed once; the succeeded pods are gone (pod GC)
    ctx.store.delete(kinds.POD, "train-1-abcde", "default")
    job = ctx.store.get(kinds.JOB, "train", "default")
    job["status"] = {"succeeded": 3, "failed": 1, "completedIndexes": "1-3"}
    ctx.store.update_status(job)
    ctx.store.create(replacement_pod(0))
    assert gangs.reconcile(ctx)
    assert group_of(ctx)["spec"]["minMember"] == 1
    pod = ctx.store.get(kinds.POD, "train-0-abcde", "default")
    assert pod["metadata"]["labels"][POD_GROUP_LABEL] == "train"
    assert any(d.action == "update" and "minMember 4 -> 1" in d.message for d in ctx.decisions)


def test_the_podgroup_follows_the_job_status_without_a_new_pod() -> None:
    ctx = ctx_of()
    gangs = ImplicitGangController()
    make_job(ctx, {})
    ctx.store.create(replacement_pod(0))
    assert gangs.reconcile(ctx)
    job = ctx.store.get(kinds.JOB, "train", "default")
    job["status"] = {"succeeded": 2, "completedIndexes": "2,3"}
    ctx.store.update_status(job)
    assert gangs.reconcile(ctx)
    assert group_of(ctx)["spec"]["minMember"] == 2
    assert not gangs.reconcile(ctx), "nothing changed: nothing written"


def test_a_finished_job_and_a_podgroup_it_does_not_own_are_left_alone() -> None:
    ctx = ctx_of()
    gangs = ImplicitGangController()
    make_job(ctx, {})
    ctx.store.create(replacement_pod(0))
    assert gangs.reconcile(ctx)
    job = ctx.store.get(kinds.JOB, "train", "default")
    job["status"] = {"succeeded": 4, "completedIndexes": "0-3", "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "message": "m",
         "lastTransitionTime": "2026-01-01T00:00:00Z", "lastProbeTime": "2026-01-01T00:00:00Z"}]}
    ctx.store.update_status(job)
    gangs.reconcile(ctx)
    assert group_of(ctx)["spec"]["minMember"] == 4  # its end is decided: the PodGroup stays as it ran

    other = ctx_of()
    other.store.create({"apiVersion": kinds.POD_GROUP.api_version, "kind": "PodGroup",
                        "metadata": {"name": "train", "namespace": "default"}, "spec": {"minMember": 4}})
    make_job(other, {"succeeded": 3, "completedIndexes": "1-3"})
    other.store.create(replacement_pod(0))
    ImplicitGangController().reconcile(other)
    assert group_of(other)["spec"]["minMember"] == 4  # someone else's PodGroup: not touched
