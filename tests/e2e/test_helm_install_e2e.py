"""The chart on a real API server with RBAC: what `helm template` renders installs, and
`drasched serve` runs the serve scenarios as the chart's ServiceAccount, with only the
verbs the chart grants. Taking one verb away gives a clear, surfaced error, not a crash.

The test API server runs with ``--authorization-mode=Node,RBAC``; the admin identity
installs the chart (as a platform team would), a TokenRequest mints a token for the
chart's ServiceAccount, and serve connects with that token alone.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.serve.leader import LeaderElector
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace
from tests.deploy.helm import by_kind, render
from tests.e2e.test_serve_scenarios_e2e import (
    SCENARIOS,
    Serving,
    load,
    read_back,
    scenario_problems,
    settle_under_serve,
)
from tests.scenarios.runner import load_scenario

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
NAMESPACE = "drasched-system"
PLURALS = {"ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps", "Service": "services",
           "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
           "RoleBinding": "rolebindings", "Deployment": "deployments", "PodDisruptionBudget": "poddisruptionbudgets"}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding"}


def api_path(obj: Obj) -> str:
    group_version = obj["apiVersion"]
    prefix = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    if obj["kind"] in CLUSTER_SCOPED:
        return f"{prefix}/{PLURALS[obj['kind']]}"
    return f"{prefix}/namespaces/{obj['metadata'].get('namespace', NAMESPACE)}/{PLURALS[obj['kind']]}"


def install(store: KubeStore, objs: list[Obj]) -> None:
    """Create every rendered object as it is, with strict field validation."""
    ensure_namespace(store, NAMESPACE)
    for obj in objs:
        store.request("POST", api_path(obj), obj, params={"fieldValidation": "Strict"})


def service_account_store(cluster: LocalCluster, admin: KubeStore, name: str = "drasched") -> KubeStore:
    """A KubeStore that authenticates with a bound token of the chart's ServiceAccount only."""
    answer = admin.request(
        "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    token = answer["status"]["token"]
    return KubeStore(cluster.url, token=token, ca_file=cluster.ca_file)


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster() as c:
        yield c


def test_rendered_chart_installs_and_its_identity_can_do_only_what_serve_needs(cluster: LocalCluster) -> None:
    admin = cluster.store()
    install(admin, render("claimController.enabled=true"))
    dep = admin.request("GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/drasched")
    assert dep["spec"]["replicas"] == 2
    with service_account_store(cluster, admin) as sa:
        assert sa.list(kinds.POD).items == []
        # leader election works in the release namespace, on the chart's Lease only
        assert LeaderElector(sa, name="drasched", namespace=NAMESPACE).try_acquire_or_renew()
        with pytest.raises(ApiError) as denied:
            sa.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": "other", "namespace": "default"}})
        assert denied.value.code == 403
        with pytest.raises(ApiError) as secrets:
            sa.request("GET", "/api/v1/secrets")
        assert secrets.value.code == 403


SA_CASES = [
    "claims/001-template-claims-three-containers.yaml",  # the claim controller's writes
    "scheduler/004-gang-all-or-nothing.yaml",  # PodGroup status, events, gangs
    "scheduler/001-fair-share-three-levels.yaml",  # queue status
    "binder/bind-claims-and-extended-resources.yaml",  # the binder's claim writes and the extended claim
]


@pytest.mark.parametrize("case", SA_CASES)
def test_serve_scenario_as_the_charts_service_account(case: str, cluster: LocalCluster) -> None:
    admin = cluster.store()
    install(admin, render("claimController.enabled=true"))
    scn = load_scenario(SCENARIOS / case)
    uids = load(admin, scn)
    with service_account_store(cluster, admin) as sa:
        settle_under_serve(cluster, store=sa)
    forbidden = [f"{e['involvedObject'].get('name')}: {e['message']}" for e in admin.list(kinds.EVENT).items
                 if "forbidden" in str(e.get("message", ""))]
    assert not forbidden, forbidden
    problems = scenario_problems(scn, uids, read_back(admin))
    assert not problems, f"{case}: {scn.description}\n" + "\n".join(problems)


def _without_binding(objs: list[Obj]) -> list[Obj]:
    out = copy.deepcopy(objs)
    for role in by_kind(out, "ClusterRole"):
        role["rules"] = [r for r in role["rules"] if r["resources"] != ["pods/binding"]]
    return out


def test_a_missing_verb_is_reported_on_the_pod_and_serve_keeps_running(cluster: LocalCluster) -> None:
    """Without ``create pods/binding`` the binder cannot bind: it retries with backoff, then
    rolls back and records a Warning event on the pod that names the refused verb."""
    admin = cluster.store()
    install(admin, _without_binding(render()))
    ns = f"rbac-{uuid.uuid4().hex[:6]}"
    ensure_namespace(admin, ns)
    node = admin.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    node["status"] = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                      "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                      "conditions": [{"type": "Ready", "status": "True"}]}
    node = admin.update_status(node)
    node["spec"]["taints"] = []  # the server's not-ready taint: no kubelet here to clear it
    admin.update(node)
    admin.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
                  "spec": {"schedulerName": "drasched",
                           "containers": [{"name": "c", "image": "busybox",
                                           "resources": {"requests": {"cpu": "1"}}}]}})
    with service_account_store(cluster, admin) as sa, Serving(cluster, store=sa) as serving:
        deadline = time.monotonic() + 90
        events: list[Obj] = []
        while time.monotonic() < deadline and not events:
            events = [e for e in admin.list(kinds.EVENT, namespace=ns).items
                      if e.get("reason") == "FailedScheduling" and "pods/binding" in e.get("message", "")]
            time.sleep(1)
        alive = serving.thread.is_alive()
    assert serving.error is None and alive
    assert events, "no FailedScheduling event naming the refused pods/binding verb"
    assert 'cannot create resource "pods/binding"' in events[0]["message"]
    assert not admin.get(kinds.POD, "p", ns)["spec"].get("nodeName")
