"""A batch/v1 Job run by kube-controller-manager's Job controller, scheduled by ``drasched serve``
as one gang through its implicit PodGroup.

The Job controller creates the Job's pods one by one, as in any cluster; nothing labels them
but drasched's implicit-gang controller, which makes the PodGroup ``train`` (minMember =
parallelism) and joins each pod to it, while the scheduler holds every pod that is not
joined yet (the ``implicitGangGate`` plugin). On three one-GPU nodes the four one-GPU pods
all wait (no partial placement) and say why; a fourth node lets all four bind.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drasched.api import kinds
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster
from tests.deploy.helm import render
from tests.e2e.kcm import kube_controller_manager, running_kcm
from tests.e2e.test_helm_install_e2e import install, service_account_store
from tests.e2e.test_serve_scenarios_e2e import Serving, load, wait_quiet
from tests.scenarios.runner import Scenario

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
PARALLELISM = 4


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """A fresh API server with kube-controller-manager running the Job controller only."""
    kube_controller_manager()  # built before the server starts
    with LocalCluster() as c, running_kcm(c, "job-controller"):
        yield c


def gpu_node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"},
                       "allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"}}}


def job() -> Obj:
    """A Job as a user writes it: no selector, no labels, no PodGroup."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "default"},
            "spec": {"parallelism": PARALLELISM, "completions": PARALLELISM, "completionMode": "Indexed",
                     "template": {"spec": {
                         "schedulerName": "drasched", "restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "busybox",
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def job_pods(store: KubeStore) -> list[Obj]:
    return sorted((p for p in store.list(kinds.POD, "default").items
                   if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == "train"),
                  key=lambda p: p["metadata"]["name"])


def wait_for_pods(store: KubeStore, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while len(job_pods(store)) < count:
        assert time.monotonic() < deadline, f"the Job controller made {len(job_pods(store))} of {count} pods"
        time.sleep(0.2)


def scheduled_condition(pod: Obj) -> Obj | None:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), None)


@pytest.mark.parametrize("identity", ["admin", "chart"])
def test_a_job_of_the_real_job_controller_is_placed_all_or_nothing_through_its_implicit_podgroup(
        cluster: LocalCluster, identity: str) -> None:
    """``chart``: serve runs as the Helm chart's ServiceAccount, with the verbs its ClusterRoles grant."""
    store = cluster.store()
    serve_as: KubeStore | None = None
    if identity == "chart":
        install(store, render("claimController.enabled=true"))
        serve_as = service_account_store(cluster, store)
    load(store, Scenario(Path("implicit-gang"), "three one-GPU nodes", {}, [gpu_node(f"n{i}") for i in (1, 2, 3)]))
    created = store.create(job())
    wait_for_pods(store, PARALLELISM)

    # The implicit-gang controller lagging behind (here: not running): the scheduler holds the pods.
    with Serving(cluster, store=serve_as, without=("implicit-gangs",)) as lagging:
        wait_quiet(store)
    assert lagging.error is None, lagging.error
    assert store.list(kinds.POD_GROUP, "default").items == []
    for p in job_pods(store):
        assert not p["spec"].get("nodeName"), "a pod placed on its own, before its gang exists"
        cond = scheduled_condition(p)
        assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
            "False", "Unschedulable",
            "0/3 nodes are available: 3 waiting for the pod's implicit PodGroup (Job default/train).")

    with Serving(cluster, store=serve_as) as serving:
        wait_quiet(store)
        pods = job_pods(store)
        assert len(pods) == PARALLELISM
        assert all(p["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"] for p in pods)
        assert [p["spec"].get("nodeName") for p in pods] == [None] * PARALLELISM, "no partial placement"
        assert {p["metadata"]["labels"].get("drasched.io/pod-group") for p in pods} == {"train"}
        group = store.get(kinds.POD_GROUP, "train", "default")
        assert group["spec"]["minMember"] == PARALLELISM
        assert group["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        for p in pods:
            cond = scheduled_condition(p)
            assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable")
            assert cond["message"].startswith(
                "pod group default/train: 3 of the 4 pods needed to reach minMember 4 fit together"), cond["message"]

        load(store, Scenario(Path("implicit-gang"), "a fourth node", {}, [gpu_node("n4")]))
        wait_quiet(store)
    assert serving.error is None, serving.error
    forbidden = [e["message"] for e in store.list(kinds.EVENT).items if "forbidden" in str(e.get("message", ""))]
    assert not forbidden, forbidden
    placed = [p["spec"].get("nodeName") for p in job_pods(store)]
    assert sorted(placed) == ["n1", "n2", "n3", "n4"], placed
