"""Other schedulers' objects read by ``drasched serve`` from a real kube-apiserver (1.37).

The upstream gang API (``scheduling.k8s.io/v1beta1`` Workload and PodGroup) is served by the
test server itself (GenericWorkload on); KAI-Scheduler's ``scheduling.run.ai`` Queue (v2) and
PodGroup (v2alpha2) are CRDs, installed here from minimal definitions written after KAI's
published ones (``spec`` and ``status`` kept free-form). Nothing is rewritten on the server:
serve discovers the kinds at start (:func:`~drasched.serve.main.served_foreign_kinds`) and the
scheduler reads them translated, pods joining an upstream PodGroup through
``spec.schedulingGroup.podGroupName`` and KAI's through its labels and annotations.

The scenarios are the ones ``simulate`` runs in tests/scenarios/test_foreign_apis.py and
tests/scenarios/gangapi, rewritten the same way, so serve is held to simulate's answers.
No kubelet runs: nodes are marked ready by the loader, a pod counts as placed once bound,
and an evicted pod (graceful, so Terminating) is deleted by the test as its kubelet would.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.kinds import ResourceType
from drasched.scheduler.foreign_intake import CONDITION_OF
from drasched.serve.main import build_controllers, served_foreign_kinds
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import CRD_PATH, FEATURE_GATES, LocalCluster, ensure_namespace
from drasched.testing.served import as_served, is_gang
from tests.deploy.helm import render
from tests.e2e.kcm import kube_controller_manager, running_kcm
from tests.e2e.test_helm_install_e2e import install, service_account_store
from tests.e2e.test_serve_scenarios_e2e import Serving as ScenarioServing
from tests.e2e.test_serve_scenarios_e2e import _Stamps, load, read_back, scenario_problems, wait_quiet
from tests.scenarios.runner import Scenario, load_scenario
from tests.scenarios.test_foreign_apis import (
    GROUP_CLAIM_PODS,
    _kai_pod,
    _kai_queue,
    _shared_claim_manifests,
    _upstream_group,
    _upstream_pod,
    coscheduling,
)

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
KAI_KINDS = (kinds.KAI_QUEUE, kinds.KAI_POD_GROUP)


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster() as c:
        yield c


# -------------------------------------------------------------------------------- KAI's CRDs


def _kai_crd(plural: str, kind: str, version: str, scope: str, group: str = "scheduling.run.ai") -> Obj:
    """A CustomResourceDefinition with KAI's group, names, scope and served version, and its
    status subresource (``queues.scheduling.run.ai``: v2, Cluster; ``podgroups``: v2alpha2); or
    another project's (``group``)."""
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": free, "status": free}}}}]}}


def install_kai_crds(store: KubeStore) -> None:
    """KAI's Queue and PodGroup CRDs, waited for until the server serves them."""
    for rt in KAI_KINDS:
        crd = _kai_crd(rt.plural, rt.kind, rt.version, "Namespaced" if rt.namespaced else "Cluster")
        store.request("POST", CRD_PATH, crd)
    deadline = time.monotonic() + 60
    while set(KAI_KINDS) - set(served_foreign_kinds(store)):
        assert time.monotonic() < deadline, "KAI's CRDs were not served within 60 s"
        time.sleep(0.2)


def install_coscheduling_crd(store: KubeStore) -> None:
    """scheduler-plugins' PodGroup CRD (``podgroups.scheduling.x-k8s.io``, v1alpha1, Namespaced),
    waited for until the server serves it."""
    rt = kinds.COSCHEDULING_POD_GROUP
    store.request("POST", CRD_PATH, _kai_crd(rt.plural, rt.kind, rt.version, "Namespaced", group=rt.group))
    deadline = time.monotonic() + 60
    while rt not in served_foreign_kinds(store):
        assert time.monotonic() < deadline, "scheduler-plugins' CRD was not served within 60 s"
        time.sleep(0.2)


# -------------------------------------------------------------------------------- loading and serving


def create_foreign(store: KubeStore, cluster: LocalCluster, obj: Obj) -> Obj:
    """POST an object drasched has no kind of its own for (the gang API in the version this
    server serves, KAI's CRDs); returns what the server stored."""
    obj = copy.deepcopy(as_served(obj, cluster.served) if is_gang(obj) else obj)
    rt = _foreign_kind(obj)
    md = obj["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        md.pop(key, None)
    status = obj.pop("status", None)
    created = store.request("POST", rt.api_path(md.get("namespace") if rt.namespaced else None), obj,
                            params={"fieldValidation": "Strict"})
    if status:
        created["status"] = status
        created = store.request("PUT", rt.api_path(md.get("namespace"), md["name"]) + "/status", created)
    return created


def _foreign_kind(obj: Obj) -> ResourceType:
    return next(rt for rt in kinds.FOREIGN if (rt.api_version, rt.kind) == (obj["apiVersion"], obj["kind"]))


def load_mixed(store: KubeStore, cluster: LocalCluster, manifests: list[Obj]) -> dict[str, str]:
    """The foreign objects first (pods name their groups by name only; in the scenarios used
    here the groups are older than their pods), in the order of their creationTimestamps as
    the serve scenario loader keeps it (the scheduler takes older groups first), then drasched's
    and core objects as that loader creates them; returns scenario uid -> server uid."""
    ensure_namespace(store, "default")
    foreign = sorted((o for o in manifests if _is_foreign(o)),
                     key=lambda o: str((o.get("metadata") or {}).get("creationTimestamp") or ""))
    stamps = _Stamps()
    for o in foreign:
        stamps.before_create(o)
        stamps.after_create(o, create_foreign(store, cluster, o))
    return load(store, Scenario(Path("foreign"), "", {}, [o for o in manifests if not _is_foreign(o)]))


def _is_foreign(obj: Obj) -> bool:
    return is_gang(obj) or str(obj.get("apiVersion", "")).startswith(("scheduling.run.ai/", "scheduling.x-k8s.io/"))


class Serving(ScenarioServing):
    """``drasched serve``'s loop in a thread, with the kinds it discovers on this server, as
    the command builds it; ``claim_controller``: drasched's own (else none runs, as in a
    cluster whose kube-controller-manager owns claims)."""

    def __init__(self, store: KubeStore, claim_controller: bool = True) -> None:
        self.foreign = served_foreign_kinds(store)
        super().__init__(None, store=store, controllers=build_controllers(
            enable_claim_controller=claim_controller, foreign=self.foreign))

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        assert self.error is None, self.error


def placements(store: KubeStore) -> dict[str, str | None]:
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"].get("nodeName")
            for p in store.list(kinds.POD).items}


def wait_bound(store: KubeStore, count: int, timeout: float) -> dict[str, str | None]:
    """Until ``count`` pods are bound (a light poll: listing everything a settle check lists,
    every 0.2 s, would take the CPU the 1,000 binds need); returns the placements."""
    deadline = time.monotonic() + timeout
    while True:
        placed = placements(store)
        if sum(1 for n in placed.values() if n) >= count or time.monotonic() > deadline:
            return placed
        time.sleep(2.0)


def upstream_group(store: KubeStore, cluster: LocalCluster, name: str) -> Obj:
    return store.request("GET", f"/apis/{cluster.served.gang}/namespaces/default/podgroups/{name}")


def condition(obj: Obj, kind: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def events_about(store: KubeStore, kind: str, name: str) -> list[Obj]:
    return [e for e in store.list(kinds.EVENT, "default").items
            if e["involvedObject"].get("kind") == kind and e["involvedObject"].get("name") == name]


# -------------------------------------------------------------------------------- the tests


def gang_kinds(cluster: LocalCluster) -> tuple[ResourceType, ResourceType]:
    """The gang API kinds this server serves: v1beta1 on 1.37, v1alpha2 on 1.36."""
    if cluster.served.gang == kinds.UPSTREAM_POD_GROUP.api_version:
        return kinds.UPSTREAM_POD_GROUP, kinds.UPSTREAM_WORKLOAD
    return kinds.UPSTREAM_POD_GROUP_V1ALPHA2, kinds.UPSTREAM_WORKLOAD_V1ALPHA2


def test_serve_discovers_the_gang_api_and_carries_on_without_kais_crds(cluster: LocalCluster) -> None:
    store = cluster.store()
    assert served_foreign_kinds(store) == gang_kinds(cluster)
    install_kai_crds(store)
    assert served_foreign_kinds(store) == (*gang_kinds(cluster), *KAI_KINDS)


def test_the_charts_identity_may_read_what_serve_discovers(cluster: LocalCluster) -> None:
    """The Helm chart's ClusterRole grants what discovery lists (else a served kind would be
    logged as not served, and its objects ignored)."""
    admin = cluster.store()
    install(admin, render())
    install_kai_crds(admin)
    install_coscheduling_crd(admin)
    with service_account_store(cluster, admin) as sa:
        assert served_foreign_kinds(sa) == (*gang_kinds(cluster), *KAI_KINDS, kinds.COSCHEDULING_POD_GROUP)


def test_upstream_gang_minimum_met_and_not_met_in_serve(cluster: LocalCluster) -> None:
    """tests/scenarios/gangapi/001 in serve: "workers" (its minimum from its Workload template) is
    placed whole, "big" cannot reach its minimum and nothing of it is bound; each pod says why,
    and each upstream PodGroup gets the PodGroupInitiallyScheduled condition kube-scheduler
    writes (k8s.io/api scheduling/v1beta1 PodGroupStatus), never a drasched PodGroup."""
    scn = load_scenario(SCENARIOS / "gangapi" / "001-upstream-gang-minimum.yaml")
    store = cluster.store()
    uids = load_mixed(store, cluster, scn.manifests)
    with Serving(store):
        wait_quiet(store)
    expect = copy.deepcopy(scn.expect)
    expect["objects"] = {k: v for k, v in (expect.get("objects") or {}).items()
                         if not k.startswith(("PodGroup:", "Workload:"))}  # checked below, in the served version
    problems = scenario_problems(Scenario(scn.path, scn.description, expect, scn.manifests), uids, read_back(store))
    assert problems == []
    assert store.list(kinds.POD_GROUP).items == [], "nothing is written as a drasched PodGroup"
    assert placements(store)["default/worker-1"] == "n1"
    scheduled, _ = CONDITION_OF[gang_kinds(cluster)[0]]  # 1.36: PodGroupScheduled
    workers = condition(upstream_group(store, cluster, "workers"), scheduled)
    assert workers is not None and (workers["status"], workers["reason"]) == ("True", "Scheduled")
    big = condition(upstream_group(store, cluster, "big"), scheduled)
    assert big is not None and (big["status"], big["reason"]) == ("False", "Unschedulable")
    assert big["message"].startswith("pod group default/big: "), big["message"]
    assert any(e["reason"] == "Unschedulable" and e["involvedObject"]["apiVersion"] == cluster.served.gang
               for e in events_about(store, "PodGroup", "big"))


def test_an_upstream_group_claim_is_shared_by_a_thousand_pods_in_serve(cluster: LocalCluster) -> None:
    """KEP-5729 in serve: the claim in the upstream PodGroup's spec.resourceClaims is reserved for
    the upstream PodGroup (scheduling.k8s.io podgroups, its uid) as one consumer, so all 1,000
    pods share it past the 256-consumer limit of reservedFor. No claim controller runs: the
    claim is named, not made from a template (kube-controller-manager's job in a cluster)."""
    store = cluster.store()
    # the claim is allocated already, without allocationTimestamp: the binder must leave the
    # allocation as it is (the API server refuses any change to it)
    load_mixed(store, cluster, _shared_claim_manifests(GROUP_CLAIM_PODS, 10))
    with Serving(store, claim_controller=False):
        placed = wait_bound(store, GROUP_CLAIM_PODS, timeout=480.0)
    assert len(placed) == GROUP_CLAIM_PODS
    assert [k for k, node in placed.items() if not node] == []
    group = upstream_group(store, cluster, "readers")
    claim = store.get(kinds.RESOURCE_CLAIM, "dataset", "default")
    assert claim["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                               "name": "readers", "uid": group["metadata"]["uid"]}]


def test_upstream_disruption_mode_all_evicts_the_whole_group_in_serve(cluster: LocalCluster) -> None:
    """tests/scenarios/preemption/005 with upstream PodGroups (disruptionMode all): q-b's pods
    reclaim from q-a, whose youngest gang g2 is evicted whole, on both nodes; g1 stays."""
    scn = load_scenario(SCENARIOS / "preemption" / "005-victim-gang-evicted-whole.yaml")
    manifests = [_upstream_group(o, "v1beta1") if o.get("kind") == "PodGroup" else
                 _upstream_pod(o) if o.get("kind") == "Pod" else o for o in scn.manifests]
    store = cluster.store()
    load_mixed(store, cluster, manifests)
    victims = [f"g2-{i}" for i in range(1, 5)]
    with Serving(store):
        deadline = time.monotonic() + 90
        while True:
            pods = {p["metadata"]["name"]: p for p in store.list(kinds.POD, "default").items}
            if all(v not in pods or pods[v]["metadata"].get("deletionTimestamp") for v in victims):
                break
            assert time.monotonic() < deadline, "g2 was not evicted whole"
            time.sleep(0.2)
        assert not any(pods[f"g1-{i}"]["metadata"].get("deletionTimestamp") for i in range(1, 5))
        for v in victims:  # what the kubelet would do once the containers stopped
            if v in pods:
                store.delete(kinds.POD, v, "default", grace_period_seconds=0)
        wait_quiet(store)
    placed = placements(store)
    assert {k: placed.get(f"default/{k}") for k in ("b-1", "b-2")} == {"b-1": "n1", "b-2": "n1"}
    assert [k for k in placed if k.startswith("default/g2-")] == []
    assert sorted(placed[f"default/g1-{i}"] or "" for i in range(1, 5)) == ["n1", "n1", "n2", "n2"]
    assert any(e["reason"] == "Reclaimed" for v in victims for e in events_about(store, "Pod", v))


def test_kai_podgroups_and_their_pods_annotations_schedule_in_serve_as_drasched(cluster: LocalCluster) -> None:
    """tests/scenarios/scheduler/004 (gangs all or nothing) with KAI's v2alpha2 PodGroups and
    pods joining them through KAI's ``pod-group-name`` annotation: every expectation of the
    scenario holds (the gang Events are on KAI's PodGroups), and no pod is rewritten."""
    scn = load_scenario(SCENARIOS / "scheduler" / "004-gang-all-or-nothing.yaml")

    def kai(o: Obj) -> Obj:
        o = copy.deepcopy(o)
        if o.get("kind") == "PodGroup":
            o["apiVersion"] = "scheduling.run.ai/v2alpha2"
        if o.get("kind") == "Pod":
            group = o["metadata"]["labels"].pop("drasched.io/pod-group")
            o["metadata"].setdefault("annotations", {})["pod-group-name"] = group
        return o

    store = cluster.store()
    install_kai_crds(store)
    uids = load_mixed(store, cluster, [kai(o) for o in scn.manifests])
    with Serving(store):
        wait_quiet(store)
    problems = scenario_problems(scn, uids, read_back(store))
    assert problems == [], "\n".join(problems)
    assert store.list(kinds.POD_GROUP).items == []
    assert all("drasched.io/pod-group" not in (p["metadata"].get("labels") or {}) for p in store.list(kinds.POD).items)
    assert {e["involvedObject"]["apiVersion"] for e in events_about(store, "PodGroup", "big")} == {
        "scheduling.run.ai/v2alpha2"}


def test_coscheduling_podgroups_and_their_pods_label_schedule_in_serve_as_drasched(cluster: LocalCluster) -> None:
    """tests/scenarios/scheduler/004 (gangs all or nothing) with scheduler-plugins' PodGroups and
    pods joining them by its ``scheduling.x-k8s.io/pod-group`` label: every expectation holds, the
    gang Events are on scheduler-plugins' PodGroups, and drasched writes neither a PodGroup of its
    own nor a status to theirs (their controller's)."""
    scn = load_scenario(SCENARIOS / "scheduler" / "004-gang-all-or-nothing.yaml")
    store = cluster.store()
    install_coscheduling_crd(store)
    uids = load_mixed(store, cluster, [coscheduling(o) for o in scn.manifests])
    with Serving(store):
        wait_quiet(store)
    problems = scenario_problems(scn, uids, read_back(store))
    assert problems == [], "\n".join(problems)
    assert store.list(kinds.POD_GROUP).items == []
    assert all("drasched.io/pod-group" not in (p["metadata"].get("labels") or {}) for p in store.list(kinds.POD).items)
    assert {e["involvedObject"]["apiVersion"] for e in events_about(store, "PodGroup", "big")} == {
        "scheduling.x-k8s.io/v1alpha1"}
    assert all("status" not in g for g in store.list(kinds.COSCHEDULING_POD_GROUP, "default").items)


def test_a_kai_queue_tree_and_kai_labelled_pods_schedule_in_serve_as_their_drasched_translation() -> None:
    """tests/scenarios/scheduler/001 (three queue levels) as written, then as KAI's Queues and
    ``kai.scheduler/queue``-labelled pods on a server with KAI's CRDs: the same pods bound to
    the same nodes, the same pods pending. KAI's Queues get no status from drasched."""
    scn = load_scenario(SCENARIOS / "scheduler" / "001-fair-share-three-levels.yaml")
    kai = [_kai_queue(o) if o.get("kind") == "Queue" else _kai_pod(o) if o.get("kind") == "Pod" else o
           for o in scn.manifests]
    assert any(o.get("apiVersion") == "scheduling.run.ai/v2" for o in kai)
    runs = []
    for manifests, with_kai in ((scn.manifests, False), (kai, True)):
        with LocalCluster() as c:
            store = c.store()
            if with_kai:
                install_kai_crds(store)
            load_mixed(store, c, manifests)
            with Serving(store):
                wait_quiet(store)
            runs.append(placements(store))
            if with_kai:
                assert store.list(kinds.QUEUE).items == [], "nothing is written as a drasched Queue"
                research = store.request("GET", kinds.KAI_QUEUE.api_path(None, "research"))
                assert "status" not in research
    ours, theirs = runs
    assert theirs == ours
    assert sum(1 for n in ours.values() if n) == 16, "all 16 GPUs in use: a real mix of placed and pending"
    assert any(n is None for n in ours.values())


# -------------------------------------------------------------------------------- group claims from templates


@pytest.fixture
def cluster_with_claim_controller() -> Iterator[LocalCluster]:
    """A fresh API server with kube-controller-manager running its resourceclaim controller,
    which in 1.37 (``DRAWorkloadResourceClaims``) also makes an upstream PodGroup's claims from
    their templates and names them in the PodGroup's ``status.resourceClaimStatuses``
    (pkg/controller/resourceclaim: ``enqueuePodGroup``, ``resourceclaim.NameFromPodGroup``)."""
    kube_controller_manager()  # built before the server starts
    with LocalCluster() as c:
        gates = ",".join(f"{g}=true" for g in (*FEATURE_GATES, *c.served.gang_gates))
        with running_kcm(c, "resourceclaim-controller", f"--feature-gates={gates}"):
            yield c


def _template_group_manifests(pods: int) -> list[Obj]:
    """One node with one GPU device, a template asking for one GPU, an upstream PodGroup that
    lists it in spec.resourceClaims, and ``pods`` pods sharing that group entry."""
    driver = "gpu.example.com"
    objs: list[Obj] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
         "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpus"},
         "spec": {"driver": driver, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0"}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one-gpu", "namespace": "default"},
         "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]}}}},
        {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "trainers", "namespace": "default"},
         "spec": {"schedulingPolicy": {"gang": {"minCount": pods}}, "disruptionMode": {"all": {}},
                  "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}},
    ]
    objs += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"t-{i}", "namespace": "default"},
              "spec": {"schedulingGroup": {"podGroupName": "trainers"},
                       "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
                       "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}}
             for i in range(pods)]
    return objs


def test_an_upstream_group_claim_from_a_template_made_by_kube_controller_manager_is_shared_in_serve(
        cluster_with_claim_controller: LocalCluster) -> None:
    """KEP-5729 as 1.37 runs it: kube-controller-manager makes the group's one claim from the
    template, owned by the upstream PodGroup, and names it in the PodGroup's status; serve
    (without its own claim controller) reads that status through the translation, allocates
    the claim once and reserves it for the upstream PodGroup; all three pods share the one
    device."""
    cluster = cluster_with_claim_controller
    store = cluster.store()
    load_mixed(store, cluster, _template_group_manifests(3))
    with Serving(store, claim_controller=False):
        placed = wait_bound(store, 3, timeout=120.0)
        group = upstream_group(store, cluster, "trainers")
    assert placed == {"default/t-0": "n1", "default/t-1": "n1", "default/t-2": "n1"}
    (status,) = group["status"]["resourceClaimStatuses"]
    claims = store.list(kinds.RESOURCE_CLAIM, "default").items
    assert [c["metadata"]["name"] for c in claims] == [status["resourceClaimName"]], "one claim for the group"
    (claim,) = claims
    assert_made_for_the_group(claim, group)
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert claim["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                               "name": "trainers", "uid": group["metadata"]["uid"]}]


def assert_made_for_the_group(claim: Obj, group: Obj) -> None:
    """The group claim as kube-controller-manager's ``handlePodGroupClaim`` makes it (the test
    above holds kube-controller-manager itself to it; the one below, drasched's controller)."""
    md = claim["metadata"]
    assert md["generateName"] == "trainers-gpu-"
    assert md["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    assert md["ownerReferences"] == [{"apiVersion": group["apiVersion"], "kind": "PodGroup", "name": "trainers",
                                      "uid": group["metadata"]["uid"], "controller": True}]
    assert group["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": md["name"]}]


def test_drasched_claim_controller_makes_and_frees_an_upstream_group_claim_in_serve(cluster: LocalCluster) -> None:
    """serve --enable-claim-controller with no kube-controller-manager at all: drasched's claim
    controller makes the upstream PodGroup's one claim from its template, as 1.37's does, and
    names it in the group's status and each pod's; the scheduler reserves it for the group and
    binds every pod. Deleting the pods and the group (Terminating: kube-controller-manager's
    podgroup-protection controller would let it go now) releases, deallocates and deletes it."""
    pods = 4
    store = cluster.store()
    load_mixed(store, cluster, _template_group_manifests(pods))
    with Serving(store):
        placed = wait_bound(store, pods, timeout=120.0)
        assert placed == {f"default/t-{i}": "n1" for i in range(pods)}
        group = upstream_group(store, cluster, "trainers")
        (claim,) = store.list(kinds.RESOURCE_CLAIM, "default").items
        assert_made_for_the_group(claim, group)
        name = claim["metadata"]["name"]
        assert claim["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                                   "name": "trainers", "uid": group["metadata"]["uid"]}]
        for p in store.list(kinds.POD, "default").items:
            assert p["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": name}]
        assert events_about(store, "ResourceClaim", name) == [], "no UnknownConsumer warning"
        for i in range(pods):  # no kubelet: as it would once the containers stopped
            store.delete(kinds.POD, f"t-{i}", "default", grace_period_seconds=0)
        store.request("DELETE", f"/apis/{cluster.served.gang}/namespaces/default/podgroups/trainers")
        deadline = time.monotonic() + 60
        while store.list(kinds.RESOURCE_CLAIM, "default").items:
            assert time.monotonic() < deadline, store.list(kinds.RESOURCE_CLAIM, "default").items
            time.sleep(0.2)
    assert store.list(kinds.POD_GROUP).items == [], "nothing is written as a drasched PodGroup"
