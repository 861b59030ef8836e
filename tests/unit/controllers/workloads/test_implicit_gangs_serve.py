"""The implicit-gang controller as ``drasched serve`` runs it: pods arrive from another
process's controller (kube-controller-manager's Job controller), possibly before the
workload's own watch event, and the scheduler holds them until they are grouped
(``implicitGangGate``), so every pod it cannot group must be released explicitly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError, NotFound
from drasched.api.implicitgang import IMPLICIT_GANG_ANNOTATION, POD_GROUP_LABEL, awaited_gang
from drasched.controllers.workloads.gangs import ImplicitGangController, ImplicitGangs
from drasched.controllers.workloads.leaderworkerset import group_key
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.base import ListResult, WatchEvent
from drasched.store.informer import SharedInformers
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]
JOB_UID = "0b7c1d6e-0000-4000-8000-000000000001"


def ctx_of(store: MemoryStore | None = None) -> SimContext:
    clock = VirtualClock()
    return SimContext(store or MemoryStore(clock=clock.now, auto_namespaces=True), clock)


def job(name: str = "train", uid: str = JOB_UID, parallelism: int = 4) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "uid": uid, "labels": {"drasched.io/queue": "team-a"}},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {"spec": {
                "schedulerName": "drasched", "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}]}}}}


def job_pod(name: str, owner: str = "train", uid: str = JOB_UID, scheduler: str = "drasched") -> Obj:
    """A pod as kube-controller-manager's Job controller writes it."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"job-name": owner},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": uid,
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"schedulerName": scheduler, "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox"}]}}


def pod_of(ctx: SimContext, name: str) -> Obj:
    return ctx.store.get(kinds.POD, name, "default")


class ServeLikeContext(SimContext):
    """Says its caches are fed in the background, as serve's are: a workload missing from them
    may only be late."""

    @property
    def informers(self) -> SharedInformers | None:
        return SharedInformers(self.store)


def test_a_pod_that_arrives_before_its_job_waits_then_joins_the_jobs_podgroup() -> None:
    clock = VirtualClock()
    ctx = ServeLikeContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    gangs = ImplicitGangController()
    ctx.store.create(job_pod("train-abcde"))
    assert not gangs.reconcile(ctx), "its Job is not known yet: nothing to decide"
    assert awaited_gang(pod_of(ctx, "train-abcde")) == "Job default/train"  # the scheduler holds it
    assert ctx.store.list(kinds.POD_GROUP).items == []

    ctx.store.create(job())
    assert gangs.reconcile(ctx)
    (group,) = ctx.store.list(kinds.POD_GROUP).items
    assert (group["metadata"]["name"], group["spec"]["minMember"], group["spec"]["queue"]) == ("train", 4, "team-a")
    assert group["metadata"]["ownerReferences"][0]["uid"] == JOB_UID
    assert pod_of(ctx, "train-abcde")["metadata"]["labels"][POD_GROUP_LABEL] == "train"
    assert awaited_gang(pod_of(ctx, "train-abcde")) is None  # released: it is scheduled with its gang


def test_in_an_embedded_run_a_pod_of_a_job_that_does_not_exist_is_released() -> None:
    ctx = ctx_of()
    ctx.store.create(job_pod("train-abcde"))
    assert ImplicitGangController().reconcile(ctx)
    assert pod_of(ctx, "train-abcde")["metadata"]["annotations"] == {IMPLICIT_GANG_ANNOTATION: "none"}


def test_a_kind_switched_off_releases_its_pods_with_an_annotation_instead_of_a_group() -> None:
    ctx = ctx_of()
    ctx.store.create(job())
    ctx.store.create(job_pod("train-abcde"))
    ImplicitGangController(ImplicitGangs.parse({"Job": False})).reconcile(ctx)
    pod = pod_of(ctx, "train-abcde")
    assert POD_GROUP_LABEL not in pod["metadata"]["labels"]
    assert pod["metadata"]["annotations"] == {IMPLICIT_GANG_ANNOTATION: "none"}
    assert awaited_gang(pod) is None
    assert ctx.store.list(kinds.POD_GROUP).items == []


def test_the_configuration_files_switch_holds_unless_the_configmap_overrides_it() -> None:
    ctx = ctx_of()
    ctx.store.create(job())
    ctx.store.create(job_pod("train-abcde"))
    ctx.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "drasched-scheduler", "namespace": "kube-system"},
                      "data": {"config.yaml": "implicitGangs: {Deployment: false}"}})
    ImplicitGangController(base=ImplicitGangs.parse({"Job": False})).reconcile(ctx)
    assert pod_of(ctx, "train-abcde")["metadata"]["annotations"] == {IMPLICIT_GANG_ANNOTATION: "none"}


def test_a_podgroup_of_that_name_owned_by_something_else_releases_the_pods_with_a_warning() -> None:
    ctx = ctx_of()
    ctx.store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
                      "metadata": {"name": "train", "namespace": "default"}, "spec": {"minMember": 2}})
    ctx.store.create(job())
    ctx.store.create(job_pod("train-abcde"))
    ImplicitGangController().reconcile(ctx)
    pod = pod_of(ctx, "train-abcde")
    assert POD_GROUP_LABEL not in pod["metadata"]["labels"] and awaited_gang(pod) is None
    warnings = [e["reason"] for e in ctx.store.list(kinds.EVENT).items if e["type"] == "Warning"]
    assert warnings == ["PodGroupExists"]


def test_pods_of_another_scheduler_are_left_alone() -> None:
    ctx = ctx_of()
    ctx.store.create(job())
    ctx.store.create(job_pod("train-abcde", scheduler="default-scheduler"))
    assert not ImplicitGangController(schedules=lambda name: name == "drasched").reconcile(ctx)
    assert ctx.store.list(kinds.POD_GROUP).items == []
    assert "annotations" not in pod_of(ctx, "train-abcde")["metadata"]


class WithoutJobSets(MemoryStore):
    """An API server without the JobSet CRD: listing JobSets is a 404."""

    def list(self, rt: Any, *args: Any, **kw: Any) -> Any:
        if rt is kinds.JOB_SET:
            raise NotFound("the server could not find the requested resource")
        return super().list(rt, *args, **kw)


def test_a_workload_kind_the_server_does_not_serve_is_not_watched_and_the_rest_works() -> None:
    clock = VirtualClock()
    ctx = ctx_of(WithoutJobSets(clock=clock.now, auto_namespaces=True))
    gangs = ImplicitGangController()
    ctx.store.create(job())
    ctx.store.create(job_pod("train-abcde"))
    gangs.reconcile(ctx)
    assert "JobSet" not in gangs.owners
    assert pod_of(ctx, "train-abcde")["metadata"]["labels"][POD_GROUP_LABEL] == "train"


class FlakyJobs(MemoryStore):
    """The first list of Jobs fails as a restarting API server answers (500)."""

    failed = False

    def list(self, rt: Any, *args: Any, **kw: Any) -> Any:
        if rt is kinds.JOB and not self.failed:
            self.failed = True
            raise ApiError("the server is currently unable to handle the request", code=500)
        return super().list(rt, *args, **kw)


def test_a_failed_list_other_than_not_served_is_asked_again_not_taken_for_an_unserved_kind() -> None:
    clock = VirtualClock()
    ctx = ctx_of(FlakyJobs(clock=clock.now, auto_namespaces=True))
    gangs = ImplicitGangController()
    ctx.store.create(job())
    ctx.store.create(job_pod("train-abcde"))
    with pytest.raises(ApiError):
        gangs.reconcile(ctx)  # serve's loop logs it and runs the controller again
    gangs.reconcile(ctx)
    assert "Job" in gangs.owners
    assert pod_of(ctx, "train-abcde")["metadata"]["labels"][POD_GROUP_LABEL] == "train"


def lws(name: str, replicas: int = 1, size: int = 2) -> Obj:
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": size, "workerTemplate": {"spec": {
                "containers": [{"name": "main", "image": "busybox"}]}}}}}


@pytest.mark.parametrize(("name", "hashed"), [("serve", False), ("l" * 62, True)])
def test_a_leaderworkerset_group_name_too_long_for_a_label_becomes_its_group_key(name: str, hashed: bool) -> None:
    """LeaderWorkerSet labels each group by ``group-key``, the SHA-1 of ``<namespace>/<lws>-<group>``,
    whatever the name's length (kubernetes-sigs/lws pod webhook); a PodGroup name must fit in the
    ``drasched.io/pod-group`` label (63 characters), so a longer ``<lws>-<group>`` becomes that key."""
    from drasched.controllers.workloads.leaderworkerset import LeaderWorkerSetController

    ctx = ctx_of()
    ctx.store.create(lws(name))
    for _ in range(3):
        LeaderWorkerSetController().reconcile(ctx)
    gangs = ImplicitGangController()
    gangs.reconcile(ctx)
    want = group_key("default", name, 0) if hashed else f"{name}-0"
    assert len(want) <= 63
    (group,) = ctx.store.list(kinds.POD_GROUP).items
    assert (group["metadata"]["name"], group["spec"]["minMember"]) == (want, 2)
    pods = ctx.store.list(kinds.POD).items
    assert len(pods) == 2
    assert {p["metadata"]["labels"][POD_GROUP_LABEL] for p in pods} == {want}


def test_pods_of_upstreams_leaderworkerset_controller_are_held_and_grouped_by_their_labels() -> None:
    """Upstream's LWS controller makes a leader StatefulSet and one worker StatefulSet per group:
    the pods' controller is a StatefulSet, the LWS is named by the ``leaderworkerset.sigs.k8s.io/name``
    label (kubernetes-sigs/lws pod webhook)."""
    ctx = ctx_of()
    ctx.store.create(lws("serve", size=2))
    for worker in (0, 1):
        ctx.store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "serve-0" if worker == 0 else "serve-0-1", "namespace": "default",
            "labels": {"leaderworkerset.sigs.k8s.io/name": "serve", "leaderworkerset.sigs.k8s.io/group-index": "0",
                       "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
                       "leaderworkerset.sigs.k8s.io/group-key": group_key("default", "serve", 0)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                 "name": "serve" if worker == 0 else "serve-0", "uid": f"sts-{worker}",
                                 "controller": True}]},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    assert awaited_gang(pod_of(ctx, "serve-0-1")) == "LeaderWorkerSet default/serve"
    ImplicitGangController().reconcile(ctx)
    (group,) = ctx.store.list(kinds.POD_GROUP).items
    assert (group["metadata"]["name"], group["spec"]["minMember"]) == ("serve-0", 2)
    assert group["metadata"]["ownerReferences"][0]["kind"] == "LeaderWorkerSet"
    assert {pod_of(ctx, n)["metadata"]["labels"][POD_GROUP_LABEL] for n in ("serve-0", "serve-0-1")} == {"serve-0"}


PYTORCHJOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
              "metadata": {"name": "bert", "namespace": "default", "uid": "ptj-uid"},
              "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 3}}}}


class WithPyTorchJob(MemoryStore):
    """A server with the training operator's CRD: the job is read as it was written."""

    def get(self, rt: Any, name: str, namespace: str | None = None) -> Obj:
        if rt.kind == "PyTorchJob" and (rt.group, rt.version, rt.plural) == ("kubeflow.org", "v1", "pytorchjobs"):
            return PYTORCHJOB
        return super().get(rt, name, namespace)


def master_pod() -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "bert-master-0", "namespace": "default",
        "labels": {"training.kubeflow.org/job-name": "bert", "training.kubeflow.org/replica-type": "master"},
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "bert",
                             "uid": "ptj-uid", "controller": True}]},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


@pytest.mark.parametrize(("serve", "min_member"), [(True, 4), (False, 1)])
def test_a_pytorchjobs_gang_counts_its_declared_replicas_in_serve_and_its_pods_in_simulate(
        serve: bool, min_member: int) -> None:
    """In a cluster the training operator makes the master first and the workers after: the gang is
    the replicas the job declares (Master 1 + Worker 3), not the one pod seen. An embedded run
    has every pod from the start and no training operator."""
    clock = VirtualClock()
    store = WithPyTorchJob(clock=clock.now, auto_namespaces=True)
    ctx = ServeLikeContext(store, clock) if serve else SimContext(store, clock)
    ctx.store.create(master_pod())
    assert awaited_gang(pod_of(ctx, "bert-master-0")) == "PyTorchJob default/bert"
    ImplicitGangController().reconcile(ctx)
    (group,) = ctx.store.list(kinds.POD_GROUP).items
    assert (group["metadata"]["name"], group["spec"]["minMember"]) == ("bert", min_member)


def test_kais_queue_and_priority_labels_on_the_job_make_the_gangs_queue_and_class() -> None:
    # KAI's default grouper reads kai.scheduler/queue and priorityClassName on the top owner first
    clock = VirtualClock()
    ctx = ServeLikeContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    ctx.store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "build"},
                      "value": 100})
    labelled = job()
    labelled["metadata"]["labels"] = {"kai.scheduler/queue": "team", "priorityClassName": "build"}
    ctx.store.create(labelled)
    ctx.store.create(job_pod("train-abcde"))
    assert ImplicitGangController().reconcile(ctx)
    (group,) = ctx.store.list(kinds.POD_GROUP).items
    assert (group["spec"]["queue"], group["spec"]["priorityClassName"]) == ("team", "build")


def test_drascheds_queue_label_on_the_job_wins_and_a_missing_kai_priority_class_is_left_out() -> None:
    clock = VirtualClock()
    ctx = ServeLikeContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    labelled = job()  # drasched.io/queue: team-a
    labelled["metadata"]["labels"].update({"runai/queue": "team-b", "priorityClassName": "no-such-class"})
    ctx.store.create(labelled)
    ctx.store.create(job_pod("train-abcde"))
    assert ImplicitGangController().reconcile(ctx)
    (group,) = ctx.store.list(kinds.POD_GROUP).items
    assert group["spec"]["queue"] == "team-a"
    assert "priorityClassName" not in group["spec"], "KAI ignores a class that does not exist: no blocked gang"
    (warning,) = [e for e in ctx.store.list(kinds.EVENT).items if e["reason"] == "PriorityClassNotFound"]
    assert warning["message"] == ("label priorityClassName=no-such-class ignored: PriorityClass no-such-class does "
                                  "not exist; the pods keep their own priority (in a KAI queue, KAI's default class "
                                  "for the workload's kind)")


def kai_queue(name: str) -> Obj:
    """A KAI Queue as the server serves it (serve reads it untranslated)."""
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name},
            "spec": {"resources": {r: {"quota": -1, "limit": -1} for r in ("gpu", "cpu", "memory")}}}


class WithKaiQueues(MemoryStore):
    """A server that serves KAI's Queue CRD, holding one KAI Queue, ``kai-team``."""

    def list(self, rt: Any, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> ListResult:
        if rt is kinds.KAI_QUEUE:
            return ListResult([kai_queue("kai-team")], "1")
        return super().list(rt, namespace, label_selector, field_selector)

    def watch(self, rt: Any, resource_version: str, namespace: str | None = None,
              timeout_seconds: float = 1.0) -> Iterator[WatchEvent]:
        if rt is kinds.KAI_QUEUE:
            return iter(())
        return super().watch(rt, resource_version, namespace, timeout_seconds)


def serve_ctx() -> ServeLikeContext:
    clock = VirtualClock()
    return ServeLikeContext(WithKaiQueues(clock=clock.now, auto_namespaces=True), clock)


@pytest.mark.parametrize(("queue_label", "annotations", "min_member"), [
    ({"kai.scheduler/queue": "kai-team"}, {}, 1),  # KAI's Job grouper: minMember 1
    ({"kai.scheduler/queue": "kai-team"}, {"kai.scheduler/batch-min-member": "3"}, 3),
    ({"drasched.io/queue": "team-a"}, {"kai.scheduler/batch-min-member": "3"}, 4),  # drasched's: parallelism
])
def test_a_jobs_gang_in_a_kai_queue_is_kais_and_elsewhere_drascheds(queue_label: Obj, annotations: Obj,
                                                                     min_member: int) -> None:
    # pkg/podgrouper/podgrouper/plugins/job/job_grouper.go calcMinMember: the annotation, else 1
    ctx = serve_ctx()
    j = job()
    j["metadata"]["labels"] = dict(queue_label)
    j["metadata"]["annotations"] = dict(annotations)
    ctx.store.create(j)
    ctx.store.create(job_pod("train-abcde"))
    assert ImplicitGangController().reconcile(ctx)
    (group,) = ctx.store.list(kinds.POD_GROUP).items
    assert group["spec"]["minMember"] == min_member
    ctx.store.patch(kinds.JOB, "train", "default", {"status": {"active": 1}})
    ImplicitGangController().reconcile(ctx)  # the Job's changes keep KAI's size, not drasched's
    assert ctx.store.get(kinds.POD_GROUP, "train", "default")["spec"]["minMember"] == min_member


def test_a_bad_kai_min_member_annotation_is_a_warning_and_one_is_used() -> None:
    ctx = serve_ctx()
    j = job()
    j["metadata"]["labels"] = {"kai.scheduler/queue": "kai-team"}
    j["metadata"]["annotations"] = {"kai.scheduler/batch-min-member": "0"}
    ctx.store.create(j)
    ctx.store.create(job_pod("train-abcde"))
    ImplicitGangController().reconcile(ctx)
    assert ctx.store.get(kinds.POD_GROUP, "train", "default")["spec"]["minMember"] == 1
    (warning,) = [e for e in ctx.store.list(kinds.EVENT).items if e["reason"] == "InvalidMinMember"]
    assert "kai.scheduler/batch-min-member='0'" in warning["message"]


def replica_set_pod(name: str) -> Obj:
    """A pod as kube-controller-manager's ReplicaSet controller writes it, in a KAI queue, naming no class."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"app": "web", "pod-template-hash": "5d8", "kai.scheduler/queue": "kai-team"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8",
                                              "uid": "rs-uid", "controller": True}]},
            "spec": {"schedulerName": "drasched", "containers": [{"name": "main", "image": "nginx"}]}}


def test_a_replicasets_pod_in_a_kai_queue_is_held_until_its_top_owners_kind_is_written() -> None:
    # KAI's pod grouper walks ownerReferences to the top owner (a Deployment: class inference); the
    # scheduler sees only the ReplicaSet, so the controller writes the kind and the gate holds the pod till then.
    from drasched.scheduler.plugins.implicitgang import ImplicitGangGate
    from drasched.scheduler.podinfo import parse_pod

    ctx = serve_ctx()
    gangs = ImplicitGangController()
    ctx.store.create(replica_set_pod("web-5d8-abcde"))
    assert not gangs.reconcile(ctx), "its ReplicaSet is not known yet: nothing to decide"
    held = parse_pod("default/web-5d8-abcde", pod_of(ctx, "web-5d8-abcde"), {})
    check = ImplicitGangGate().prepare(held)
    assert check is not None and check(None) == (  # type: ignore[arg-type]
        "waiting for the pod's top owner to be read (ReplicaSet default/web-5d8 and its owners): KAI's default "
        "PriorityClass follows its kind")

    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "default", "uid": "deploy-uid"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}
    replica_set = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": "web-5d8", "namespace": "default", "uid": "rs-uid",
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                                     "uid": "deploy-uid", "controller": True}]},
                   "spec": {"selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}
    ctx.store.create(deployment)
    ctx.store.create(replica_set)
    assert gangs.reconcile(ctx)
    pod = pod_of(ctx, "web-5d8-abcde")
    assert pod["metadata"]["annotations"] == {"drasched.io/top-owner": "Deployment.apps"}
    assert ImplicitGangGate().prepare(parse_pod("default/web-5d8-abcde", pod, {})) is None


def test_kais_topology_annotations_on_the_job_make_the_gangs_topology_keys() -> None:
    """KAI's pod grouper fills its PodGroup's topologyConstraint from the top owner's
    ``kai.scheduler/topology-required-placement`` / ``-preferred-placement`` (defaultgrouper)."""
    ctx = serve_ctx()
    annotated = job()
    annotated["metadata"]["annotations"] = {"kai.scheduler/topology": "cluster-topology",
                                            "kai.scheduler/topology-required-placement": "topology.kubernetes.io/zone",
                                            "kai.scheduler/topology-preferred-placement": "example.com/rack"}
    ctx.store.create(annotated)
    ctx.store.create(job_pod("train-abcde"))
    assert ImplicitGangController().reconcile(ctx)
    (group,) = ctx.store.list(kinds.POD_GROUP).items
    assert group["spec"]["topologyConstraint"] == {"requiredTopologyKey": "topology.kubernetes.io/zone",
                                                   "preferredTopologyKey": "example.com/rack"}


def test_a_leaderworkersets_exclusive_topology_wins_over_kais_required_placement() -> None:
    from drasched.controllers.workloads.gangs import GangSpec

    annotated = lws("serve")
    annotated["metadata"]["annotations"] = {"kai.scheduler/topology-required-placement": "example.com/block",
                                            "kai.scheduler/topology-preferred-placement": "example.com/rack"}
    spec = GangSpec(annotated, 2, topology_key="example.com/rack").pod_group()["spec"]
    assert spec["topologyConstraint"] == {"requiredTopologyKey": "example.com/rack",
                                          "preferredTopologyKey": "example.com/rack"}


def test_a_staged_jobsets_per_job_gang_takes_kais_topology_from_the_jobset() -> None:
    """KAI reads the annotations on the top owner, the JobSet, not on the Job it made."""
    from drasched.controllers.workloads.gangs import GangSpec

    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "js", "namespace": "default",
                           "annotations": {"kai.scheduler/topology-required-placement": "example.com/rack"}}}
    assert GangSpec(job(), 4, top_owner=jobset).pod_group()["spec"]["topologyConstraint"] == {
        "requiredTopologyKey": "example.com/rack"}
    assert "topologyConstraint" not in GangSpec(job(), 4).pod_group()["spec"]


def test_a_jobs_pod_that_names_a_coscheduling_group_gets_no_implicit_gang() -> None:
    """scheduler-plugins' ``scheduling.x-k8s.io/pod-group`` label names the pod's group, as drasched's does."""
    ctx = serve_ctx()
    ctx.store.create(job())
    pod = job_pod("train-abcde")
    assert awaited_gang(pod) == "Job default/train"
    pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "nginx"
    assert awaited_gang(pod) is None, "the scheduler does not hold it for the Job's gang"
    ctx.store.create(pod)
    ImplicitGangController().reconcile(ctx)
    assert ctx.store.list(kinds.POD_GROUP).items == []
    assert POD_GROUP_LABEL not in pod_of(ctx, "train-abcde")["metadata"]["labels"]
