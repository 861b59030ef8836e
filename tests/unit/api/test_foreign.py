"""KAI-Scheduler and upstream gang objects translated into drasched's, field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api.foreign import group_kind, kai_default_priority_class, kai_min_member, kai_queue_names, translate
from drasched.cli import main as cli_main

Obj = dict[str, Any]


def _kai_queue(spec: Obj, name: str = "team-a") -> Obj:
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def test_kai_queue_units_are_millicores_megabytes_and_gpus() -> None:
    # KAI's queue docs: "CPU: millicores, Memory: MB, GPU: units"; -1 means unlimited.
    out = translate([_kai_queue({
        "parentQueue": "research", "priority": 200,
        "resources": {"gpu": {"quota": 4, "limit": 8, "overQuotaWeight": 2},
                      "cpu": {"quota": 1500, "limit": -1},
                      "memory": {"quota": 2048, "limit": 4096}}})])
    assert out.warnings == []
    q = out.kept[0]
    assert (q["apiVersion"], q["kind"]) == ("scheduling.drasched.io/v1alpha1", "Queue")
    assert q["spec"] == {
        "parentQueue": "research", "priority": 200,
        "resources": {"nvidia.com/gpu": {"quota": "4", "limit": "8", "overQuotaWeight": 2},
                      "cpu": {"quota": "1500m"},
                      "memory": {"quota": "2048M", "limit": "4096M"}}}


def test_kai_fractional_gpu_quota_stays_exact() -> None:
    q = translate([_kai_queue({"resources": {"gpu": {"quota": 0.5, "limit": -1}}})]).kept[0]
    assert q["spec"]["resources"]["nvidia.com/gpu"] == {"quota": "0.5"}


def test_kai_unlimited_quota_is_drasched_unlimited_and_negative_weight_is_zero() -> None:
    # KAI: -1 is UnlimitedResourceQuantity (pkg/common/constants); a quota (deserved) of -1 is all
    # the queue asks (pkg/scheduler/plugins/proportion/resource_division/resource_division.go), a
    # limit of -1 no limit; a negative over-quota weight is floored to a share weight of 0.
    out = translate([_kai_queue({"resources": {"gpu": {"quota": -1, "limit": -1, "overQuotaWeight": -1},
                                               "cpu": {"quota": -1, "limit": 4000}, "memory": {"limit": -1}}})])
    assert out.kept[0]["spec"]["resources"] == {"nvidia.com/gpu": {"quota": "unlimited", "overQuotaWeight": 0},
                                                "cpu": {"quota": "unlimited", "limit": "4000m"}}
    assert out.warnings == ["scheduling.run.ai/v2 Queue team-a: spec.resources.gpu.overQuotaWeight: -1 gives the "
                            "queue no over-quota share in KAI (its weight is floored to 0); 0 is used"]


def test_an_unset_kai_limit_is_zero_as_kai_reads_it() -> None:
    # KAI's QueueResource.Limit is a float64 without a default (pkg/apis/scheduling/v2/resources.go); its
    # scheduler caps the queue at it unless it is -1 (capacity_policy/max_allowed_check.go, isOverLimit);
    # docs/queues/README.md: "limit 0 or unset: no additional resources allowed (default)". A resource the
    # Queue leaves out is the zero QueueResource: a limit of 0 too.
    out = translate([_kai_queue({"resources": {"gpu": {"quota": 2, "overQuotaWeight": 1}, "cpu": {"limit": -1}}})])
    assert out.kept[0]["spec"]["resources"] == {"nvidia.com/gpu": {"quota": "2", "limit": "0", "overQuotaWeight": 1},
                                                "memory": {"limit": "0M"}}
    assert out.warnings == [
        "scheduling.run.ai/v2 Queue team-a: spec.resources.gpu.limit: unset, which KAI reads as a limit of 0: the "
        "queue's pods may ask no gpu (write limit: -1 for no limit)",
        "scheduling.run.ai/v2 Queue team-a: spec.resources.memory: unset, which KAI reads as a limit of 0: the "
        "queue's pods may ask no memory (write limit: -1 for no limit)"]


def test_kai_default_priority_class_follows_the_top_owners_kind() -> None:
    # docs/priority/README.md, "Workload Default Priority": inference for a Deployment or a Knative
    # Service, build for a Kubeflow Notebook, train otherwise (the pod grouper's per-kind plugins).
    assert group_kind("apps/v1", "Deployment") == "Deployment.apps"
    assert group_kind("v1", "Pod") == "Pod"
    assert kai_default_priority_class("Deployment.apps") == "inference"
    assert kai_default_priority_class("Service.serving.knative.dev") == "inference"
    assert kai_default_priority_class("Notebook.kubeflow.org") == "build"
    for other in ("ReplicaSet.apps", "Job.batch", "JobSet.jobset.x-k8s.io", "Pod", "Deployment.example.com"):
        assert kai_default_priority_class(other) == "train"


def test_kai_batch_min_member_is_the_annotation_else_one() -> None:
    # pkg/podgrouper/podgrouper/plugins/job/job_grouper.go calcMinMember (constants.MinMemberOverrideKey)
    def job(annotations: dict[str, str]) -> Obj:
        return {"kind": "Job", "metadata": {"name": "j", "annotations": annotations}}
    assert kai_min_member(job({})) == (1, None)
    assert kai_min_member(job({"kai.scheduler/batch-min-member": "3"})) == (3, None)
    for bad in ("0", "-2", "three", ""):
        size, problem = kai_min_member(job({"kai.scheduler/batch-min-member": bad}))
        assert size == 1 and problem is not None and "kai.scheduler/batch-min-member" in problem
    assert kai_min_member(job({"kai.scheduler/min-member": "3"})) == (1, None)  # not KAI's Job grouper's key


def test_kai_queue_names_are_the_translated_ones_and_kais_own_unless_drasched_has_the_name() -> None:
    translated = translate([_kai_queue({"resources": {}}, "kai-a")]).kept[0]
    ours = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "shared"}}
    served = [_kai_queue({}, "kai-b"), _kai_queue({}, "shared")]
    assert kai_queue_names(iter([translated, ours]), served) == {"kai-a", "kai-b"}


def test_kai_pod_group_preemptibility_becomes_its_label() -> None:
    # KAI v2alpha2 PodGroup spec.preemptibility: preemptible | non-preemptible (else by priority).
    def group(value: str) -> Obj:
        return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                "metadata": {"name": "pg", "namespace": "ml", "labels": {"team": "a"}},
                "spec": {"minMember": 1, "queue": "team-a", "preemptibility": value}}
    out = translate([group("non-preemptible")])
    assert out.warnings == []
    assert out.kept[0]["metadata"]["labels"] == {"team": "a", "kai.scheduler/preemptibility": "non-preemptible"}
    assert "preemptibility" not in out.kept[0]["spec"]
    out = translate([group("sometimes")])
    assert out.warnings == ["scheduling.run.ai/v2alpha2 PodGroup ml/pg: spec.preemptibility: unknown value "
                            "'sometimes' (known: preemptible, non-preemptible); ignored, its priority decides as "
                            "in KAI"]
    assert out.kept[0]["metadata"]["labels"] == {"team": "a"}


def test_kai_fields_without_meaning_warn_naming_object_and_field() -> None:
    out = translate([_kai_queue({"displayName": "Team A", "resources": {
                         "gpu": {"quota": -1, "limit": -1}, "cpu": {"limit": -1}, "memory": {"limit": -1},
                         "tpu": {"quota": 1}}}),
                     {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                      "metadata": {"name": "pg", "namespace": "ml"},
                      "spec": {"minMember": 2, "queue": "team-a", "markUnschedulable": True,
                               "topologyConstraint": {"topology": "dc", "requiredTopologyLevel": "rack"}}}])
    assert out.warnings == [
        "scheduling.run.ai/v2 Queue team-a: spec.resources.tpu has no meaning here (known: gpu, cpu, memory)",
        "scheduling.run.ai/v2 Queue team-a: spec.displayName has no meaning here (a display name); ignored",
        "scheduling.run.ai/v2alpha2 PodGroup ml/pg: spec.markUnschedulable has no meaning here (marking a group "
        "unschedulable); ignored",
        "scheduling.run.ai/v2alpha2 PodGroup ml/pg: spec.topologyConstraint.topology has no meaning here (a named "
        "Topology object (the level keys are read)); ignored",
    ]
    pg = out.kept[1]
    assert pg["spec"] == {"minMember": 2, "queue": "team-a", "topologyConstraint": {"requiredTopologyKey": "rack"}}


def test_kai_pod_labels_become_drasched_aliases_and_drasched_wins() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "ml", "labels": {"runai/queue": "old", "drasched.io/queue": "new"},
                        "annotations": {"pod-group-name": "pg", "gpu-fraction": "0.25"}},
           "spec": {}}
    out = translate([pod])
    md = out.kept[0]["metadata"]
    assert md["labels"]["drasched.io/queue"] == "new"
    assert md["labels"]["drasched.io/pod-group"] == "pg"
    assert md["annotations"]["drasched.io/gpu-fraction"] == "0.25"
    assert out.warnings == ["v1 Pod ml/p: metadata.labels[runai/queue] 'old' ignored: drasched.io/queue says 'new'"]
    assert "drasched.io/pod-group" not in pod["metadata"]["labels"]  # the input is left as it was


def test_a_kai_fraction_alone_asks_one_gpu_in_the_container_kai_names() -> None:
    """KAI's gpu-sharing examples write ``gpu-fraction`` with no GPU request (its binder reserves
    the GPU itself); drasched's fraction shares one DRA GPU reached through ``nvidia.com/gpu: 1``."""
    def pod(annotations: Obj, containers: list[Obj]) -> Obj:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml",
                                                               "annotations": annotations},
                "spec": {"containers": containers}}

    out = translate([pod({"gpu-fraction": "0.5", "gpu-fraction-container-name": "gpu"},
                         [{"name": "sidecar", "image": "s"}, {"name": "gpu", "image": "g"}])])
    sidecar, gpu = out.kept[0]["spec"]["containers"]
    assert "resources" not in sidecar
    assert gpu["resources"] == {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
    assert out.kept[0]["metadata"]["annotations"]["drasched.io/gpu-fraction"] == "0.5"
    assert out.warnings == ["v1 Pod ml/p: metadata.annotations[gpu-fraction] without a GPU request: container 'gpu' "
                            "asks nvidia.com/gpu: 1, whose DRA device the fraction shares (drasched's fractional GPUs)"]

    asks = [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
    out = translate([pod({"gpu-fraction": "0.5"}, asks)])
    assert out.kept[0]["spec"]["containers"] == asks  # a pod that asks GPUs itself is left as written
    out = translate([pod({"gpu-fraction": "0.5", "drasched.io/gpu-fraction": "0.5"}, [{"name": "c", "image": "x"}])])
    assert "resources" not in out.kept[0]["spec"]["containers"][0]  # drasched's own annotation: the user's call


def test_upstream_pod_group_takes_unset_fields_from_its_workload_template() -> None:
    workload = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload",
                "metadata": {"name": "job", "namespace": "ml"},
                "spec": {"podGroupTemplates": [{
                    "name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}},
                    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                    "priorityClassName": "high", "disruptionMode": "PodGroup",
                    "resourceClaims": [{"name": "data", "resourceClaimTemplateName": "scratch"}]}]}}
    group = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
             "metadata": {"name": "job-workers", "namespace": "ml", "labels": {"drasched.io/queue": "team-a"}},
             "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "job", "podGroupTemplateName": "workers"}}}}
    out = translate([workload, group])
    assert out.objects[0] is None  # the Workload only carries templates
    assert out.warnings == []
    assert out.kept[0]["spec"] == {
        "minMember": 4, "queue": "team-a", "priorityClassName": "high",
        "topologyConstraint": {"requiredTopologyKey": "topology.kubernetes.io/zone"},
        "resourceClaims": [{"name": "data", "resourceClaimTemplateName": "scratch"}]}


@pytest.mark.parametrize(("field", "value", "warning"), [
    ("disruptionMode", {"single": {}},
     "spec.disruptionMode.single is read only in part: drasched evicts the group's pods beyond minCount one by one, "
     "and the group whole, never a pod of its minCount alone"),
    ("priority", 5, "spec.priority 5 has no meaning here"),
    ("workloadRef", {"workloadName": "gone", "templateName": "x"},
     "spec.workloadRef.workloadName: Workload ml/gone does not exist"),
    ("preemptionPolicy", "Never", "spec.preemptionPolicy Never has no meaning here"),
    ("parentCompositePodGroupName", "outer", "spec.parentCompositePodGroupName has no meaning here"),
])
def test_upstream_pod_group_field_without_meaning_warns(field: str, value: Any, warning: str) -> None:
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "ml"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, field: value}}
    out = translate([group])
    assert len(out.warnings) == 1
    assert out.warnings[0].startswith("scheduling.k8s.io/v1beta1 PodGroup ml/g: ")
    assert warning in out.warnings[0]
    assert out.kept[0]["spec"]["minMember"] == 2


def test_v1beta1_pod_group_reads_its_template_through_workload_ref() -> None:
    """1.37's v1beta1 shape (k8s.io/api/scheduling/v1beta1): ``spec.workloadRef.{workloadName,
    templateName}`` and the one-of ``disruptionMode: {all: {}}``."""
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                "metadata": {"name": "job", "namespace": "ml"},
                "spec": {"podGroupTemplates": [{
                    "name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}},
                    "schedulingConstraints": {"topology": [{"key": "rack"}]}, "disruptionMode": {"all": {}}}]}}
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "job-workers", "namespace": "ml"},
             "spec": {"workloadRef": {"workloadName": "job", "templateName": "workers"},
                      "schedulingPolicy": {"gang": {"minCount": 3}}}}
    out = translate([workload, group])
    assert out.warnings == []
    assert out.kept[0]["spec"] == {"minMember": 3, "topologyConstraint": {"requiredTopologyKey": "rack"}}
    assert out.kept[0]["metadata"]["annotations"]["drasched.io/evict-whole"] == "true"  # disruptionMode all


def test_a_missing_template_is_named_in_the_field_path_of_the_objects_version() -> None:
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                "metadata": {"name": "job", "namespace": "ml"},
                "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"basic": {}}}]}}
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "ml"},
             "spec": {"workloadRef": {"workloadName": "job", "templateName": "evaluators"}}}
    out = translate([workload, group])
    assert out.warnings == [
        "scheduling.k8s.io/v1beta1 Workload ml/job: spec.podGroupTemplates[0] (workers): no PodGroup is created from "
        "this template, so no pod can join it; create a PodGroup whose spec.workloadRef names job/workers",
        "scheduling.k8s.io/v1beta1 PodGroup ml/g: spec.workloadRef.templateName: Workload ml/job has no template "
        "'evaluators'; the PodGroup's own fields are used"]


def test_v1alpha2_single_pod_disruption_mode_warns_in_its_own_spelling() -> None:
    group = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "ml"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": "Pod"}}
    assert translate([group]).warnings == [
        "scheduling.k8s.io/v1alpha2 PodGroup ml/g: spec.disruptionMode Pod is read only in part: drasched evicts the "
        "group's pods beyond minCount one by one, and the group whole, never a pod of its minCount alone"]


def test_composite_pod_group_templates_warn() -> None:
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                "metadata": {"name": "job", "namespace": "ml"},
                "spec": {"podGroupTemplates": [],
                         "compositePodGroupTemplates": [{"name": "c", "schedulingPolicy": {"basic": {}}}]}}
    assert translate([workload]).warnings == [
        "scheduling.k8s.io/v1beta1 Workload ml/job: spec.compositePodGroupTemplates has no meaning here: drasched "
        "has no composite PodGroups; their PodGroups are scheduled each on its own"]


def test_a_drasched_object_of_the_same_name_wins() -> None:
    ours = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ml"}, "spec": {"minMember": 3}}
    theirs = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "g", "namespace": "ml"}, "spec": {}}
    out = translate([ours, theirs])
    assert out.kept == [ours]
    assert out.warnings == ["scheduling.k8s.io/v1beta1 PodGroup ml/g: ignored: scheduling.drasched.io/v1alpha1 "
                            "PodGroup of the same name exists and wins"]


def test_of_other_schedulers_pod_groups_of_one_name_the_upstream_one_wins_then_kais() -> None:
    """As serve merges them (scheduler/foreign_intake.py): the upstream PodGroup (v1beta1 before
    v1alpha2), then KAI's, then scheduler-plugins'; each loser is a warning naming the winner."""
    md = {"name": "g", "namespace": "ml"}
    upstream = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": md,
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    older = {**upstream, "apiVersion": "scheduling.k8s.io/v1alpha2"}
    kai = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": md,
           "spec": {"minMember": 3, "queue": "q"}}
    cosched = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": md,
               "spec": {"minMember": 4}}
    out = translate([cosched, kai, older, upstream])
    assert [o is not None for o in out.objects] == [False, False, False, True]
    assert out.kept[0]["spec"]["minMember"] == 2
    assert out.warnings == [
        f"{version} PodGroup ml/g: ignored: scheduling.k8s.io/v1beta1 PodGroup of the same name exists and wins"
        for version in ("scheduling.x-k8s.io/v1alpha1", "scheduling.run.ai/v2alpha2", "scheduling.k8s.io/v1alpha2")]
    out = translate([cosched, kai])
    assert [o is not None for o in out.objects] == [False, True]
    assert out.warnings == ["scheduling.x-k8s.io/v1alpha1 PodGroup ml/g: ignored: scheduling.run.ai/v2alpha2 "
                            "PodGroup of the same name exists and wins"]


def test_an_upstream_pod_group_reads_the_workload_of_its_own_version_only() -> None:
    """A server serves the gang API in one version (1.37 v1beta1, 1.36 v1alpha2): a v1beta1 PodGroup
    naming a Workload given only as v1alpha2 finds none, as serve would not."""
    workload = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload",
                "metadata": {"name": "job", "namespace": "ml"},
                "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]}}
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "ml"},
             "spec": {"workloadRef": {"workloadName": "job", "templateName": "workers"},
                      "schedulingPolicy": {"gang": {"minCount": 2}}}}
    out = translate([workload, group])
    assert out.kept[0]["spec"] == {"minMember": 2}
    assert out.warnings == [
        "scheduling.k8s.io/v1alpha2 Workload ml/job: spec.podGroupTemplates[0] (workers): no PodGroup is created from "
        "this template, so no pod can join it; create a PodGroup whose spec.podGroupTemplateRef.workload names "
        "job/workers",
        "scheduling.k8s.io/v1beta1 PodGroup ml/g: spec.workloadRef.workloadName: Workload ml/job does not exist; the "
        "PodGroup's own fields are used"]


def test_convert_prints_drasched_objects_and_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "kai.yaml"
    src.write_text(yaml.safe_dump_all([
        _kai_queue({"resources": {"gpu": {"quota": 2, "limit": -1}, "cpu": {"limit": -1}, "memory": {"limit": -1}},
                    "displayName": "A"}),
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                         "labels": {"kai.scheduler/queue": "team-a"}},
         "spec": {"containers": [{"name": "c", "image": "x"}]}}]))
    assert cli_main(["convert", str(src)]) == 0
    out, err = capsys.readouterr()
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert [(d["apiVersion"], d["kind"]) for d in docs] == [("scheduling.drasched.io/v1alpha1", "Queue"), ("v1", "Pod")]
    assert docs[0]["spec"] == {"resources": {"nvidia.com/gpu": {"quota": "2"}}}
    assert docs[1]["metadata"]["labels"]["drasched.io/queue"] == "team-a"
    assert err == "warning: scheduling.run.ai/v2 Queue team-a: spec.displayName has no meaning here (a display " \
                  "name); ignored\n"


def test_a_kai_topology_is_set_aside_with_a_warning_naming_its_levels() -> None:
    from drasched.api.foreign_shapes import decode_foreign

    topo = {"apiVersion": "kai.scheduler/v1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}}
    assert decode_foreign(topo), "read, not refused as a kind no one registered"
    out = translate([topo])
    assert out.objects == [None]
    assert out.warnings == ["kai.scheduler/v1 Topology t: ignored: drasched needs no Topology object; a PodGroup's "
                            "topology level is the node label key itself (rack, kubernetes.io/hostname)"]


@pytest.mark.parametrize("kind", ["Workload", "PodGroup"])
def test_an_unread_gang_api_version_is_refused_naming_the_versions_read(kind: str) -> None:
    from drasched.api.errors import BadRequest
    from drasched.api.foreign_shapes import decode_foreign

    with pytest.raises(BadRequest) as exc:
        decode_foreign({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": kind, "metadata": {"name": "w"}})
    assert exc.value.message.startswith(f"scheduling.k8s.io/v1alpha1 {kind} is not read by drasched: write it as "
                                        "scheduling.k8s.io/v1beta1 (Kubernetes 1.37; also read: "
                                        "scheduling.k8s.io/v1alpha2 (1.36)); 1.35's shape is gone: ")
    assert "spec.schedulingGroup.podGroupName instead of spec.workloadRef" in exc.value.message
    assert not decode_foreign({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"})


def test_scheduler_plugins_pre_v0_25_pod_group_is_refused_naming_the_new_group_and_label() -> None:
    """kubernetes-sigs/scheduler-plugins#526 (v0.25) moved PodGroup from scheduling.sigs.k8s.io to
    scheduling.x-k8s.io, and its pod label to scheduling.x-k8s.io/pod-group."""
    from drasched.api.errors import BadRequest
    from drasched.api.foreign_shapes import decode_foreign

    with pytest.raises(BadRequest) as exc:
        decode_foreign({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "g"}})
    assert "write it as scheduling.x-k8s.io/v1alpha1" in exc.value.message
    assert ("label its pods scheduling.x-k8s.io/pod-group instead of pod-group.scheduling.sigs.k8s.io"
            in exc.value.message)


@pytest.mark.parametrize(("api_version", "kind", "read"), [
    ("scheduling.volcano.sh/v1beta1", "PodGroup", "scheduling.x-k8s.io/v1alpha1 (scheduler-plugins' coscheduling), "
                                                  "scheduling.run.ai/v2alpha2 (KAI-Scheduler)"),
    ("scheduling.run.ai/v1", "Queue", "scheduling.run.ai/v2 (KAI-Scheduler)"),
])
def test_another_schedulers_unread_version_names_the_versions_read(api_version: str, kind: str, read: str) -> None:
    from drasched.api.errors import BadRequest
    from drasched.api.foreign_shapes import decode_foreign

    with pytest.raises(BadRequest) as exc:
        decode_foreign({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}})
    assert exc.value.message.startswith(f'no kind "{kind}" is registered for version "{api_version}" (drasched '
                                        f"serves {kind} as scheduling.drasched.io/v1alpha1")
    assert exc.value.message.endswith(f"and reads other schedulers' {kind} as {read})")


def test_scheduler_plugins_pre_v0_25_pod_label_warns_that_the_pods_join_no_group() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml",
                                                         "labels": {"pod-group.scheduling.sigs.k8s.io": "pg"}}}
    both = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "ml", "labels": {
        "pod-group.scheduling.sigs.k8s.io": "pg", "scheduling.x-k8s.io/pod-group": "pg"}}}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", "namespace": "ml"},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"metadata": {
                  "labels": {"pod-group.scheduling.sigs.k8s.io": "pg"}}}}}}]}}
    out = translate([pod, both, jobset])
    assert out.warnings == [
        "v1 Pod ml/p: metadata.labels[pod-group.scheduling.sigs.k8s.io] is scheduler-plugins' label before v0.25 and "
        "is not read: the pods join no PodGroup; label them scheduling.x-k8s.io/pod-group: pg "
        "(kubernetes-sigs/scheduler-plugins#526)",
        "jobset.x-k8s.io/v1alpha2 JobSet ml/js: spec.replicatedJobs[0].template.spec.template.metadata.labels"
        "[pod-group.scheduling.sigs.k8s.io] is scheduler-plugins' label before v0.25 and is not read: the pods join "
        "no PodGroup; label them scheduling.x-k8s.io/pod-group: pg (kubernetes-sigs/scheduler-plugins#526)"]


def test_kai_labels_on_a_workload_that_will_not_be_read_as_written_warn() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml", "labels": {
        "drasched.io/queue": "ours", "kai.scheduler/queue": "theirs", "priorityClassName": "build"}},
        "spec": {"template": {"spec": {"priorityClassName": "train"}}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml",
                                                         "labels": {"priorityClassName": "typo"}}, "spec": {}}
    known = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "ml",
                                                           "labels": {"priorityClassName": "build"}}, "spec": {}}
    build = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "build"}, "value": 1}
    assert translate([build, job, pod, known]).warnings == [
        "batch/v1 Job ml/j: metadata.labels[kai.scheduler/queue] 'theirs' ignored: drasched.io/queue says 'ours'",
        "batch/v1 Job ml/j: metadata.labels[priorityClassName] 'build' ignored: its pod template's "
        "spec.priorityClassName says 'train'",
        "v1 Pod ml/p: metadata.labels[priorityClassName]: PriorityClass 'typo' does not exist; ignored, as KAI "
        "ignores it: in a KAI queue the pods run at KAI's default class for their workload's kind, elsewhere at their "
        "own priority",
    ]


def test_simulate_refuses_a_1_35_workload_naming_the_versions_read(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # /tmp repro: KAI's docs point at Kubernetes 1.35's scheduling.k8s.io/v1alpha1 Workload
    src = tmp_path / "workload.yaml"
    src.write_text(yaml.safe_dump({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
                                   "metadata": {"name": "training", "namespace": "default"},
                                   "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}}]}}))
    assert cli_main(["simulate", str(src)]) == 2
    assert capsys.readouterr().err == (
        f"error: {src}: document 0: Workload default/training: scheduling.k8s.io/v1alpha1 Workload is not read by "
        "drasched: write it as scheduling.k8s.io/v1beta1 (Kubernetes 1.37; also read: scheduling.k8s.io/v1alpha2 "
        "(1.36)); 1.35's shape is gone: its Workload's spec.podGroups[].policy is a template now "
        "(spec.podGroupTemplates[].schedulingPolicy), each group is a PodGroup object made from one "
        "(spec.workloadRef: {workloadName, templateName}, spec.schedulingPolicy), and a pod joins it by "
        "spec.schedulingGroup.podGroupName instead of spec.workloadRef\nerror: 1 object(s) rejected; nothing was "
        "simulated\n")


# ---- kubernetes-sigs/scheduler-plugins (coscheduling) -------------------------------------------


def _coscheduling_group(spec: Obj, labels: Obj | None = None) -> Obj:
    md: Obj = {"name": "nginx", "namespace": "web"}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": md, "spec": spec}


def test_a_coscheduling_pod_group_is_a_drasched_gang_of_its_min_member() -> None:
    """scheduler-plugins' PodGroup (apis/scheduling/v1alpha1): minMember is the gang; the queue, which it
    has no field for, is its drasched.io/queue label, as for an upstream PodGroup."""
    from drasched.api.foreign_shapes import decode_foreign

    pg = _coscheduling_group({"minMember": 3}, {"drasched.io/queue": "team-a"})
    assert decode_foreign(pg), "read, not refused as a kind no one registered"
    out = translate([pg])
    assert out.warnings == []
    (group,) = out.kept
    assert (group["apiVersion"], group["kind"]) == ("scheduling.drasched.io/v1alpha1", "PodGroup")
    assert group["metadata"]["name"] == "nginx" and group["metadata"]["namespace"] == "web"
    assert group["metadata"]["annotations"] == {"drasched.io/translated-from": "scheduling.x-k8s.io/v1alpha1 PodGroup"}
    assert group["spec"] == {"minMember": 3, "queue": "team-a"}
    assert translate([_coscheduling_group({})]).kept[0]["spec"] == {"minMember": 1}, \
        "minMember 0 (unset): the coscheduling plugin lets every pod through alone"


def test_coscheduling_fields_drasched_cannot_honour_warn() -> None:
    out = translate([_coscheduling_group({"minMember": 2, "minResources": {"cpu": "6"},
                                          "scheduleTimeoutSeconds": 10, "someNewField": True})])
    assert out.kept[0]["spec"] == {"minMember": 2}
    assert out.warnings == [
        "scheduling.x-k8s.io/v1alpha1 PodGroup web/nginx: spec.minResources is not read: drasched places the group's "
        "minMember pods together only where what they ask fits (the coscheduling plugin's PreFilter first compares "
        "minResources with the cluster's free resources)",
        "scheduling.x-k8s.io/v1alpha1 PodGroup web/nginx: spec.scheduleTimeoutSeconds has no meaning here: drasched "
        "places a group's minMember pods in one cycle or none, so no placed pod waits for the others (the "
        "coscheduling plugin's Permit waits at most that long)",
        "scheduling.x-k8s.io/v1alpha1 PodGroup web/nginx: spec.someNewField has no meaning here; ignored",
    ]


def test_a_coscheduling_pod_group_label_is_drascheds_and_drasched_wins() -> None:
    """scheduler-plugins' PodGroupLabel, ``scheduling.x-k8s.io/pod-group``, names the pod's group."""
    from drasched.api.foreign import named_pod_group, names_pod_group

    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "web", "labels": {"scheduling.x-k8s.io/pod-group": "nginx"}},
           "spec": {}}
    out = translate([pod])
    assert out.kept[0]["metadata"]["labels"]["drasched.io/pod-group"] == "nginx" and out.warnings == []
    assert named_pod_group(pod["metadata"]) == "nginx" and names_pod_group(pod["metadata"])
    pod["metadata"]["labels"]["drasched.io/pod-group"] = "ours"
    out = translate([pod])
    assert out.kept[0]["metadata"]["labels"]["drasched.io/pod-group"] == "ours"
    assert out.warnings == ["v1 Pod web/p: metadata.labels[scheduling.x-k8s.io/pod-group] 'nginx' ignored: "
                            "drasched.io/pod-group says 'ours'"]
    assert named_pod_group(pod["metadata"]) == "ours"
    assert not names_pod_group({"labels": {"app": "x"}})


def test_a_drasched_pod_group_of_the_same_name_wins_over_a_coscheduling_one() -> None:
    ours = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "nginx", "namespace": "web"}, "spec": {"minMember": 5}}
    out = translate([ours, _coscheduling_group({"minMember": 3})])
    assert out.objects[1] is None
    assert out.warnings == ["scheduling.x-k8s.io/v1alpha1 PodGroup web/nginx: ignored: scheduling.drasched.io/v1alpha1 "
                            "PodGroup of the same name exists and wins"]


# ---- KAI-Scheduler's topology annotations on a workload -----------------------------------------


def test_kai_topology_annotations_on_a_workload_are_its_pod_groups_topology_keys() -> None:
    """KAI's pod grouper copies the top owner's placements into the PodGroup's topologyConstraint
    (defaultgrouper GetPodGroupMetadata); the levels are node label keys, as drasched's keys are."""
    from drasched.api.foreign import kai_topology_constraint

    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml", "annotations": {
        "kai.scheduler/topology": "cluster-topology",
        "kai.scheduler/topology-required-placement": "topology.kubernetes.io/zone",
        "kai.scheduler/topology-preferred-placement": "example.com/rack"}}, "spec": {}}
    assert kai_topology_constraint(job) == {"requiredTopologyKey": "topology.kubernetes.io/zone",
                                            "preferredTopologyKey": "example.com/rack"}
    assert kai_topology_constraint({"metadata": {"annotations": {"kai.scheduler/topology": "t"}}}) == {}
    assert translate([job]).warnings == [
        "batch/v1 Job ml/j: metadata.annotations[kai.scheduler/topology] (cluster-topology) has no meaning here (a "
        "named Topology object: the placement annotations are node label keys, read directly)"]


def test_kai_topology_on_a_workload_without_a_pod_group_warns() -> None:
    def deployment(annotations: Obj) -> Obj:
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "ml", "annotations": annotations}, "spec": {}}

    placed = {"kai.scheduler/topology-required-placement": "example.com/rack"}
    assert translate([deployment(placed)]).warnings == [
        "apps/v1 Deployment ml/web: metadata.annotations[kai.scheduler/topology-required-placement] is not read: a "
        "Deployment gets a PodGroup, whose topology it would set, only with the annotation drasched.io/gang-min-member"]
    assert translate([deployment({**placed, "drasched.io/gang-min-member": "2"})]).warnings == []
