"""Other schedulers' objects read from the server: kept translated under drasched's kinds.

The cache is fed watch events directly (``apply``), as the serve informers would feed it;
what the snapshot builder reads is ``objects(POD_GROUP)`` / ``objects(QUEUE)`` and their
change log, so that is what these tests look at.
"""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.implicitgang import awaited_gang
from drasched.dra.claimrules import pod_group_name
from drasched.scheduler.cache import WATCHED, SchedulerCache
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.foreign_intake import (
    CACHE_ONLY,
    claim_consumer,
    initially_scheduled_patch,
    is_translated,
    source_of,
)
from drasched.scheduler.podinfo import parse_pod
from drasched.scheduler.snapshot import SnapshotBuilder
from tests.unit.scheduler.helpers import node, pod

Obj = dict[str, Any]
FOREIGN = (kinds.UPSTREAM_POD_GROUP, kinds.UPSTREAM_WORKLOAD, kinds.KAI_QUEUE, kinds.KAI_POD_GROUP,
           kinds.COSCHEDULING_POD_GROUP)


def workload(min_count: int, rv: str = "10") -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "train", "namespace": "default", "uid": "w-uid", "resourceVersion": rv},
            "spec": {"podGroupTemplates": [{"name": "workers",
                                            "schedulingPolicy": {"gang": {"minCount": min_count}}}]}}


def upstream_group(name: str = "workers", rv: str = "20", **spec: Any) -> Obj:
    spec.setdefault("workloadRef", {"workloadName": "train", "templateName": "workers"})
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid", "resourceVersion": rv,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": spec}


def drasched_group(name: str, min_member: int) -> Obj:
    return {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": "ours", "resourceVersion": "5"},
            "spec": {"minMember": min_member}}


def kai_queue(name: str, gpu_quota: int, parent: str | None = None, rv: str = "1") -> Obj:
    spec: Obj = {"resources": {"gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1},
                               "cpu": {"limit": -1}, "memory": {"limit": -1}}}  # unset: a limit of 0 in KAI
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
            "metadata": {"name": name, "uid": f"{name}-uid", "resourceVersion": rv}, "spec": spec}


def cache() -> SchedulerCache:
    return SchedulerCache(WATCHED, foreign=FOREIGN)


def test_an_upstream_podgroup_is_kept_as_a_drasched_podgroup_with_its_workloads_gang_minimum() -> None:
    c = cache()
    c.apply(kinds.UPSTREAM_WORKLOAD, "ADDED", workload(3))
    gen = c.generation
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group())
    pg = c.get(kinds.POD_GROUP, "default/workers")
    assert pg is not None and pg["spec"] == {"minMember": 3}
    assert pg["metadata"]["uid"] == "workers-uid", "claims are owned by and reserved for the upstream object"
    assert pg["metadata"]["annotations"]["drasched.io/translated-from"] == "scheduling.k8s.io/v1beta1 PodGroup"
    assert is_translated(pg) and pg["metadata"]["annotations"][CACHE_ONLY] == "true"
    assert c.changed_since(kinds.POD_GROUP, gen) == {"default/workers"}
    assert kinds.UPSTREAM_POD_GROUP not in c.watched, "the builder sees drasched's kinds only"


def test_a_workload_change_translates_the_podgroups_reading_it_again() -> None:
    c = cache()
    c.apply(kinds.UPSTREAM_WORKLOAD, "ADDED", workload(3))
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group())
    before = c.get(kinds.POD_GROUP, "default/workers")
    gen = c.generation
    c.apply(kinds.UPSTREAM_WORKLOAD, "MODIFIED", workload(5, rv="11"))
    after = c.get(kinds.POD_GROUP, "default/workers")
    assert after is not None and after["spec"]["minMember"] == 5
    assert before is not None and before["metadata"]["resourceVersion"] != after["metadata"]["resourceVersion"], \
        "a gang's signature reads the resourceVersion: a Workload change must change it"
    assert c.changed_since(kinds.POD_GROUP, gen) == {"default/workers"}


def test_the_same_object_version_is_translated_once() -> None:
    c = cache()
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group())
    first = c.get(kinds.POD_GROUP, "default/workers")
    c.apply(kinds.POD, "ADDED", pod("p"))  # an unrelated change
    assert c.get(kinds.POD_GROUP, "default/workers") is first


def test_a_missing_workload_is_reported_on_the_podgroup_and_its_own_fields_are_used() -> None:
    c = cache()
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group(schedulingPolicy={"gang": {"minCount": 2}}))
    pg = c.get(kinds.POD_GROUP, "default/workers")
    assert pg is not None and pg["spec"]["minMember"] == 2
    (problem,) = c.take_problems()
    assert problem.obj["kind"] == "PodGroup" and problem.obj["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert problem.message == ("scheduling.k8s.io/v1beta1 PodGroup default/workers: spec.workloadRef.workloadName: "
                               "Workload default/train does not exist; the PodGroup's own fields are used")
    c.apply(kinds.POD, "ADDED", pod("p"))
    assert c.take_problems() == [], "each problem once"
    again = upstream_group(rv="21", schedulingPolicy={"gang": {"minCount": 2}})
    again["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False"}]}
    c.apply(kinds.UPSTREAM_POD_GROUP, "MODIFIED", again)
    assert c.take_problems() == [], "a status write (the scheduler's own) says nothing new"
    c.apply(kinds.UPSTREAM_WORKLOAD, "ADDED", workload(2))
    assert c.take_problems() == []
    c.apply(kinds.UPSTREAM_WORKLOAD, "DELETED", workload(2))
    assert [p.message for p in c.take_problems()] == [problem.message], "missing again: said again"


def test_deleting_the_upstream_podgroup_removes_its_translation() -> None:
    c = cache()
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group())
    gen = c.generation
    c.apply(kinds.UPSTREAM_POD_GROUP, "DELETED", upstream_group())
    assert c.get(kinds.POD_GROUP, "default/workers") is None
    assert c.changed_since(kinds.POD_GROUP, gen) == {"default/workers"}


def test_drascheds_own_podgroup_of_the_same_name_wins_and_the_upstream_one_is_reported() -> None:
    c = cache()
    c.apply(kinds.POD_GROUP, "ADDED", drasched_group("workers", 4))
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group(schedulingPolicy={"gang": {"minCount": 2}}))
    assert c.get(kinds.POD_GROUP, "default/workers")["spec"] == {"minMember": 4}  # type: ignore[index]
    problems = [p for p in c.take_problems() if p.reason == "NameConflict"]
    assert [(p.obj["apiVersion"], p.message) for p in problems] == [(
        "scheduling.k8s.io/v1beta1",
        "scheduling.k8s.io/v1beta1 PodGroup default/workers: ignored: scheduling.drasched.io/v1alpha1 PodGroup "
        "default/workers has the same metadata.namespace/name and wins (drasched's own objects win, then the "
        "upstream PodGroup, then KAI's, then scheduler-plugins')")]
    gen = c.generation
    c.apply(kinds.POD_GROUP, "DELETED", drasched_group("workers", 4))
    assert c.get(kinds.POD_GROUP, "default/workers")["spec"] == {"minMember": 2}  # type: ignore[index]
    assert "default/workers" in (c.changed_since(kinds.POD_GROUP, gen) or set())


def test_a_kai_queue_tree_is_kept_as_drasched_queues() -> None:
    c = cache()
    for q in (kai_queue("research", 4), kai_queue("team-a", 2, "research"), kai_queue("team-b", 2, "research")):
        c.apply(kinds.KAI_QUEUE, "ADDED", q)
    queues = c.objects(kinds.QUEUE)
    assert set(queues) == {"research", "team-a", "team-b"}
    assert queues["team-a"]["spec"] == {"parentQueue": "research",
                                        "resources": {"nvidia.com/gpu": {"quota": "2", "overQuotaWeight": 1}}}


def test_a_kai_queue_and_a_drasched_queue_of_one_name_conflict_only_when_their_settings_differ() -> None:
    c = cache()
    ours = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": "team-a", "resourceVersion": "3"},
            "spec": {"resources": {"nvidia.com/gpu": {"quota": "2", "overQuotaWeight": 1}}}}
    c.apply(kinds.QUEUE, "ADDED", ours)
    c.apply(kinds.KAI_QUEUE, "ADDED", kai_queue("team-a", 2))
    assert c.get(kinds.QUEUE, "team-a") is ours
    assert c.take_problems() == []
    c.apply(kinds.KAI_QUEUE, "MODIFIED", kai_queue("team-a", 3, rv="2"))
    assert c.get(kinds.QUEUE, "team-a") is ours
    (problem,) = c.take_problems()
    assert problem.message.startswith("scheduling.run.ai/v2 Queue team-a: ignored: scheduling.drasched.io/v1alpha1 "
                                      "Queue team-a has the same metadata.name and wins")


def test_a_kai_podgroup_is_kept_with_its_queue_and_pods_join_it_through_kais_annotation() -> None:
    c = cache()
    kai_pg = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
              "metadata": {"name": "job-1", "namespace": "default", "uid": "k", "resourceVersion": "7"},
              "spec": {"minMember": 2, "queue": "team-a"}}
    c.apply(kinds.KAI_POD_GROUP, "ADDED", kai_pg)
    assert c.get(kinds.POD_GROUP, "default/job-1")["spec"] == {"minMember": 2, "queue": "team-a"}  # type: ignore[index]
    p = pod("p", gpu=1)
    p["metadata"]["annotations"] = {"pod-group-name": "job-1", "gpu-fraction": "0.5"}
    p["metadata"]["labels"] = {"kai.scheduler/queue": "team-a"}
    info = parse_pod("default/p", p, {})
    assert (info.group_label, info.queue_label, info.gpu_fraction, info.error) == ("job-1", "team-a", 0.5, None)


def test_drascheds_own_pod_labels_win_over_kais() -> None:
    p = pod("p", gpu=1, queue="ours", group="mine")
    p["metadata"]["labels"]["runai/queue"] = "theirs"
    p["metadata"]["annotations"] = {"pod-group-name": "theirs", "gpu-fraction": "0.9",
                                    "drasched.io/gpu-fraction": "0.25"}
    info = parse_pod("default/p", p, {})
    assert (info.group_label, info.queue_label, info.gpu_fraction) == ("mine", "ours", 0.25)


def test_a_bad_kai_gpu_fraction_names_kais_annotation() -> None:
    p = pod("p", gpu=1)
    p["metadata"]["annotations"] = {"gpu-fraction": "2"}
    assert parse_pod("default/p", p, {}).error == 'annotation gpu-fraction: "2" must lie between 0 and 1 (exclusive)'


def test_the_snapshot_builder_sees_the_upstream_gang_and_its_pods() -> None:
    c = cache()
    c.apply(kinds.NODE, "ADDED", node("n1", gpu=1))
    c.apply(kinds.UPSTREAM_WORKLOAD, "ADDED", workload(2))
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group())
    for i in (1, 2):
        p = pod(f"p{i}", gpu=1, created=f"2026-01-01T00:00:0{i}Z")
        p["spec"]["schedulingGroup"] = {"podGroupName": "workers"}
        c.apply(kinds.POD, "ADDED", p)
    c.apply(kinds.QUEUE, "ADDED", {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue",
                                   "metadata": {"name": "default"}, "spec": {}})
    builder = SnapshotBuilder(SchedulerConfig.embedded())
    snap = builder.build(c)
    g = snap.groups["default/workers"]
    assert (g.min_member, len(g.pods), g.blocked) == (2, 2, None)
    assert g.ref == {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "workers",
                     "uid": "workers-uid"}
    c.apply(kinds.UPSTREAM_WORKLOAD, "MODIFIED", workload(3, rv="11"))
    snap = builder.build(c)
    assert snap.groups["default/workers"].min_member == 3, "the builder follows the Workload's change in place"
    assert snap.groups["default/workers"].blocked == "PodGroup default/workers has 2 pods, fewer than its minMember 3"


def test_events_name_the_object_a_translation_was_made_from() -> None:
    c = cache()
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group())
    pg = c.get(kinds.POD_GROUP, "default/workers")
    assert pg is not None
    assert source_of(pg) == {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                             "metadata": {"name": "workers", "namespace": "default", "uid": "workers-uid"}}
    assert claim_consumer(pg) == ("scheduling.k8s.io", "podgroups")
    ours = drasched_group("x", 1)
    assert source_of(ours) is ours and claim_consumer(ours) == ("scheduling.drasched.io", "podgroups")


def test_simulates_translations_are_written_to_as_drasched_objects() -> None:
    """simulate creates its translations in the store: they carry translated-from, not cache-only."""
    created = {**drasched_group("x", 1)}
    created["metadata"] = {**created["metadata"],
                           "annotations": {"drasched.io/translated-from": "scheduling.k8s.io/v1beta1 PodGroup"}}
    assert not is_translated(created) and source_of(created) is created
    assert initially_scheduled_patch(created, True, "placed", "2026-01-01T00:00:00Z") is None


def test_the_upstream_condition_is_kube_schedulers_and_true_is_terminal() -> None:
    """k8s.io/api scheduling/v1beta1: PodGroupInitiallyScheduled, reasons Scheduled / Unschedulable;
    "Once this condition transitions to True ... it will never revert to False"."""
    c = cache()
    c.apply(kinds.UPSTREAM_POD_GROUP, "ADDED", upstream_group())
    pg = c.get(kinds.POD_GROUP, "default/workers")
    assert pg is not None
    planned = initially_scheduled_patch(pg, False, "2 of 3 fit", "2026-01-01T00:00:00Z")
    assert planned is not None
    rt, patch = planned
    assert rt == kinds.UPSTREAM_POD_GROUP
    assert patch == {"status": {"conditions": [{
        "type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable", "message": "2 of 3 fit",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    done = upstream_group(rv="21")
    done["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                                      "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    c.apply(kinds.UPSTREAM_POD_GROUP, "MODIFIED", done)
    pg = c.get(kinds.POD_GROUP, "default/workers")
    assert pg is not None and initially_scheduled_patch(pg, False, "evicted", "2026-01-01T00:01:00Z") is None


def test_a_pod_in_a_kai_podgroup_waits_for_no_implicit_gang_and_the_binder_knows_its_group() -> None:
    """KAI's pod-group-name names the pod's group for every reader, not only the scheduler: a
    Job's pod in a KAI PodGroup is not held for an implicit one, and the binder's and claim
    controller's group lookup finds it."""
    p = pod("p", gpu=1)
    p["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j",
                                         "controller": True}]
    assert awaited_gang(p) == "Job default/train"
    p["metadata"]["annotations"] = {"pod-group-name": "job-1"}
    assert awaited_gang(p) is None
    assert pod_group_name(p) == "job-1"


def test_a_v1alpha2_podgroup_gets_1_36s_condition_which_may_go_back_to_false() -> None:
    """k8s.io/api scheduling/v1alpha2 (1.36): PodGroupScheduled, written at each attempt."""
    c = SchedulerCache(WATCHED, foreign=(kinds.UPSTREAM_POD_GROUP_V1ALPHA2,))
    old = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
           "metadata": {"name": "g", "namespace": "default", "uid": "u", "resourceVersion": "1"},
           "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
           "status": {"conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled",
                                      "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    c.apply(kinds.UPSTREAM_POD_GROUP_V1ALPHA2, "ADDED", old)
    pg = c.get(kinds.POD_GROUP, "default/g")
    assert pg is not None and pg["spec"]["minMember"] == 2
    planned = initially_scheduled_patch(pg, False, "1 of 2 fit", "2026-01-01T00:01:00Z")
    assert planned is not None and planned[0] == kinds.UPSTREAM_POD_GROUP_V1ALPHA2
    assert planned[1]["status"]["conditions"][0]["type"] == "PodGroupScheduled"


def test_kais_priority_label_gives_the_pod_its_class_unless_the_spec_names_one() -> None:
    classes = {"build": 100, "train": 50}
    labelled = pod("p", gpu=1)
    labelled["metadata"]["labels"]["priorityClassName"] = "build"
    assert parse_pod("default/p", labelled, classes).priority == 100
    assert parse_pod("default/p", labelled, {}).priority == 0, "a class that does not exist is ignored, as KAI does"
    labelled["spec"].update(priorityClassName="train", priority=50)
    assert parse_pod("default/p", labelled, classes).priority == 50, "spec.priorityClassName wins"


def test_a_priority_class_created_after_a_pod_labelled_with_it_reaches_the_pods_priority() -> None:
    c = cache()
    c.apply(kinds.NODE, "ADDED", node("n1", gpu=1))
    c.apply(kinds.QUEUE, "ADDED", {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue",
                                   "metadata": {"name": "default"}, "spec": {}})
    p = pod("p", gpu=1)
    p["metadata"]["labels"]["priorityClassName"] = "build"
    p["spec"]["priority"] = 0  # as the API server's admission leaves a pod whose spec names no class
    c.apply(kinds.POD, "ADDED", p)
    builder = SnapshotBuilder(SchedulerConfig.embedded())
    assert builder.build(c).groups["pod:default/p"].priority == 0
    c.apply(kinds.PRIORITY_CLASS, "ADDED", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                            "metadata": {"name": "build"}, "value": 100})
    assert builder.build(c).groups["pod:default/p"].priority == 100


# ---- scheduler-plugins' coscheduling PodGroup ---------------------------------------------------


def coscheduling_group(name: str = "nginx", min_member: int = 3, rv: str = "30") -> Obj:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid", "resourceVersion": rv},
            "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 10},
            "status": {"phase": "Pending", "running": 0}}


def coscheduled_pod(name: str, group: str = "nginx", created: str = "2026-01-01T00:00:01Z") -> Obj:
    p = pod(name, gpu=1, created=created)
    p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = group
    return p


def test_a_coscheduling_podgroup_is_kept_as_a_drasched_gang_and_its_pods_join_by_its_label() -> None:
    c = cache()
    c.apply(kinds.NODE, "ADDED", node("n1", gpu=2))
    c.apply(kinds.QUEUE, "ADDED", {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue",
                                   "metadata": {"name": "default"}, "spec": {}})
    c.apply(kinds.COSCHEDULING_POD_GROUP, "ADDED", coscheduling_group())
    pg = c.get(kinds.POD_GROUP, "default/nginx")
    assert pg is not None and pg["spec"] == {"minMember": 3}
    assert pg["metadata"]["uid"] == "nginx-uid" and is_translated(pg)
    assert "status" not in pg, "scheduler-plugins' controller writes its status: not read"
    assert source_of(pg)["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    (problem,) = c.take_problems()
    assert (problem.reason, problem.obj["apiVersion"]) == ("Ignored", "scheduling.x-k8s.io/v1alpha1")
    assert "spec.scheduleTimeoutSeconds has no meaning here" in problem.message
    for i in (1, 2):
        c.apply(kinds.POD, "ADDED", coscheduled_pod(f"p{i}", created=f"2026-01-01T00:00:0{i}Z"))
    info = parse_pod("default/p1", c.get(kinds.POD, "default/p1"), {})  # type: ignore[arg-type]
    assert info.group_label == "nginx"
    assert pod_group_name(coscheduled_pod("p1")) == "nginx", "the binder and claim controller find the group too"
    snap = SnapshotBuilder(SchedulerConfig.embedded()).build(c)
    g = snap.groups["default/nginx"]
    assert (g.min_member, len(g.pods)) == (3, 2)
    assert g.blocked == "PodGroup default/nginx has 2 pods, fewer than its minMember 3"
    assert g.ref is not None and g.ref["apiGroup"] == "scheduling.drasched.io", \
        "a group claim is reserved as for KAI's groups: drasched's own kind"


def test_a_coscheduling_podgroup_gets_no_status_from_drasched() -> None:
    """scheduler-plugins' PodGroup controller writes its phase and counts (pkg/controllers/
    podgroup_controller.go); as for KAI's PodGroups, drasched writes none of it."""
    c = cache()
    c.apply(kinds.COSCHEDULING_POD_GROUP, "ADDED", coscheduling_group())
    pg = c.get(kinds.POD_GROUP, "default/nginx")
    assert pg is not None
    assert initially_scheduled_patch(pg, True, "placed", "2026-01-01T00:00:00Z") is None
    assert claim_consumer(pg) == ("scheduling.drasched.io", "podgroups")


def test_kais_podgroup_wins_a_name_over_a_coscheduling_one() -> None:
    c = cache()
    c.apply(kinds.COSCHEDULING_POD_GROUP, "ADDED", coscheduling_group("job-1", 3))
    c.apply(kinds.KAI_POD_GROUP, "ADDED", {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                                           "metadata": {"name": "job-1", "namespace": "default", "uid": "k",
                                                        "resourceVersion": "7"},
                                           "spec": {"minMember": 2}})
    assert c.get(kinds.POD_GROUP, "default/job-1")["spec"] == {"minMember": 2}  # type: ignore[index]
    (conflict,) = [p for p in c.take_problems() if p.reason == "NameConflict"]
    assert conflict.obj["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert conflict.message.startswith("scheduling.x-k8s.io/v1alpha1 PodGroup default/job-1: ignored: "
                                       "scheduling.run.ai/v2alpha2 PodGroup default/job-1 has the same "
                                       "metadata.namespace/name and wins")
    c.apply(kinds.KAI_POD_GROUP, "DELETED", {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                                             "metadata": {"name": "job-1", "namespace": "default"}})
    assert c.get(kinds.POD_GROUP, "default/job-1")["spec"] == {"minMember": 3}  # type: ignore[index]


def test_a_pod_naming_a_coscheduling_group_and_an_upstream_one_names_both_keys() -> None:
    p = coscheduled_pod("p")
    p["spec"]["schedulingGroup"] = {"podGroupName": "workers"}
    assert parse_pod("default/p", p, {}).error == (
        "InvalidPodGroup: the pod names two PodGroups, nginx (label scheduling.x-k8s.io/pod-group) and workers "
        "(spec.schedulingGroup.podGroupName); a pod joins one group")
    ours = pod("q", gpu=1, group="mine")
    ours["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "nginx"
    assert parse_pod("default/q", ours, {}).group_label == "mine", "drasched's own label wins"
