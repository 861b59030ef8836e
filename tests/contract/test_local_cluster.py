"""What LocalCluster promises the e2e tests: credentials that work, CRDs served, and the
real-server-only parts of KubeStore (kubeconfig loading, list paging)."""

from __future__ import annotations

import uuid

import pytest
import yaml

from drasched.api import kinds
from drasched.api.errors import ApiError, BadRequest
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("which", ["token", "client certificate"])
def test_kubeconfig_files_authenticate(local_cluster: LocalCluster, which: str) -> None:
    path = local_cluster.kubeconfig_path if which == "token" else local_cluster.client_cert_kubeconfig_path
    with KubeStore.from_kubeconfig(path) as store:
        sa = store.get(kinds.SERVICE_ACCOUNT, "default", "default")
        assert sa["metadata"]["namespace"] == "default"
        # system:masters may do anything, including cluster-scoped writes.
        name = f"kc-{uuid.uuid4().hex[:8]}"
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def test_wrong_token_is_refused(local_cluster: LocalCluster) -> None:
    with (
        KubeStore(local_cluster.url, token="wrong", ca_file=local_cluster.ca_file) as store,
        pytest.raises(ApiError) as e,
    ):
        store.get(kinds.NAMESPACE, "default")
    assert (e.value.code, e.value.reason) == (401, "Unauthorized")


def test_crds_are_served(local_cluster: LocalCluster) -> None:
    store = local_cluster.store()
    crd_files = sorted(local_cluster.crd_dir.glob("*.yaml"))
    assert crd_files, "deploy/crds has no CRDs"
    for path in crd_files:
        crd = yaml.safe_load(path.read_text())
        got = store.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
        conds = {c["type"]: c["status"] for c in got["status"]["conditions"]}
        assert conds["Established"] == "True"
    ns = f"t-{uuid.uuid4().hex[:10]}"
    ensure_namespace(store, ns)
    queue = store.create(
        {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": f"q-{ns}"}}
    )
    assert store.get(kinds.QUEUE, queue["metadata"]["name"])["metadata"]["uid"] == queue["metadata"]["uid"]


def test_list_pages_through_continue_tokens(local_cluster: LocalCluster) -> None:
    ns = f"t-{uuid.uuid4().hex[:10]}"
    with KubeStore(local_cluster.url, token=local_cluster.token, ca_file=local_cluster.ca_file, page_size=2) as s:
        ensure_namespace(s, ns)
        made = [
            s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": ns}})
            for i in range(5)
        ]
        result = s.list(kinds.CONFIG_MAP, ns)
    assert [o["metadata"]["name"] for o in result.items] == [f"c{i}" for i in range(5)]
    # The collection version is the first page's: one consistent snapshot.
    assert int(result.resource_version) >= int(made[-1]["metadata"]["resourceVersion"])


def test_strict_field_validation_rejects_unknown_fields(local_cluster: LocalCluster) -> None:
    store = local_cluster.store()
    ns = f"t-{uuid.uuid4().hex[:10]}"
    ensure_namespace(store, ns)
    with pytest.raises(BadRequest) as e:
        store.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": ns},
                "dataa": {"typo": "x"},
            }
        )
    assert (
        str(e.value)
        == 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "dataa"'
    )
