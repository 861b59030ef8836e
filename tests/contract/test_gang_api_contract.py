"""The upstream gang API as the real API server serves it: drasched reads back what the server
stored (``scheduling.k8s.io/v1beta1`` Workload and PodGroup on 1.37, ``v1alpha2`` on 1.36) and
translates it to the drasched PodGroup it means, and the shapes it knows are the server's own.

Written in v1beta1 (1.37's shape, ``k8s.io/api/scheduling/v1beta1``) and converted to the
version the test server serves (:mod:`drasched.testing.served`).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any

import pytest

from drasched.api.errors import AlreadyExists, ApiError, Forbidden
from drasched.api.foreign import translate
from drasched.api.foreign_shapes import decode_foreign
from drasched.testing.apiserver import LocalCluster, ensure_namespace
from drasched.testing.served import as_served

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]


def _path(cluster: LocalCluster, ns: str, plural: str, name: str | None = None) -> str:
    base = f"/apis/{cluster.served.gang}/namespaces/{ns}/{plural}"
    return f"{base}/{name}" if name else base


def _create(store: Any, path: str, body: Obj) -> None:
    """POST, retried while the Priority admission plugin's informer has not seen the class yet."""
    for _ in range(100):
        try:
            store.request("POST", path, body, params={"fieldValidation": "Strict"})
            return
        except Forbidden:
            time.sleep(0.05)
    store.request("POST", path, body, params={"fieldValidation": "Strict"})


def _objects(ns: str) -> tuple[Obj, Obj]:
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                "metadata": {"name": "train", "namespace": ns},
                "spec": {"podGroupTemplates": [{
                    "name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}},
                    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                    "disruptionMode": {"all": {}}}]}}
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "train-workers", "namespace": ns, "labels": {"drasched.io/queue": "team-a"}},
             "spec": {"workloadRef": {"workloadName": "train", "templateName": "workers"},
                      "schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"all": {}},
                      "priorityClassName": "gang-high"}}
    return workload, group


def test_a_pod_group_read_back_from_the_server_is_the_gang_it_describes(local_cluster: LocalCluster) -> None:
    store = local_cluster.store()
    ns = f"gang-{uuid.uuid4().hex[:8]}"
    ensure_namespace(store, ns)
    with contextlib.suppress(AlreadyExists):
        store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": {"name": "gang-high"}, "value": 1000})
    stored = []
    for obj, plural in zip(_objects(ns), ("workloads", "podgroups"), strict=True):
        _create(store, _path(local_cluster, ns, plural), as_served(obj, local_cluster.served))
        got = store.request("GET", _path(local_cluster, ns, plural, obj["metadata"]["name"]))
        assert got["apiVersion"] == local_cluster.served.gang
        stored.append(got)
    for obj in stored:
        assert decode_foreign(obj), obj["kind"]
    out = translate(stored)
    assert out.warnings == []  # the server's defaults (preemptionPolicy, ...) mean nothing new here
    (group,) = out.kept
    assert group["spec"] == {"minMember": 4, "queue": "team-a", "priorityClassName": "gang-high",
                             "topologyConstraint": {"requiredTopologyKey": "topology.kubernetes.io/zone"}}
    assert group["metadata"]["annotations"]["drasched.io/translated-from"] == (
        f"{local_cluster.served.gang} PodGroup")


def test_the_server_refuses_the_other_versions_workload_reference(local_cluster: LocalCluster) -> None:
    """v1beta1 names the template ``spec.workloadRef``; v1alpha2 ``spec.podGroupTemplateRef``: each
    version's server field is unknown to the other (strict field validation refuses it)."""
    store = local_cluster.store()
    ns = f"gang-{uuid.uuid4().hex[:8]}"
    ensure_namespace(store, ns)
    _, group = _objects(ns)
    served = as_served(group, local_cluster.served)
    spec = dict(served["spec"])
    if "workloadRef" in spec:
        spec["podGroupTemplateRef"] = {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}}
        del spec["workloadRef"]
        foreign_field = "spec.podGroupTemplateRef"
    else:
        spec["workloadRef"] = {"workloadName": "train", "templateName": "workers"}
        del spec["podGroupTemplateRef"]
        foreign_field = "spec.workloadRef"
    with pytest.raises(ApiError) as refused:
        store.request("POST", _path(local_cluster, ns, "podgroups"), {**served, "spec": spec},
                      params={"fieldValidation": "Strict"})
    assert f'unknown field "{foreign_field}"' in refused.value.message
