"""Decode parity: a body with a field of the wrong JSON type is refused by the memory store
as by a real kube-apiserver, with the same HTTP code, before any validation runs.

Upstream: a built-in kind that does not decode is 400 BadRequest
(k8s.io/apiserver/pkg/endpoints/handlers/rest.go, ``transformDecodeError``); a CRD field of
the wrong type is 422 Invalid from the OpenAPI schema validator, naming the field.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from drasched.api.errors import ApiError
from drasched.store.base import ClusterStore, Obj


def _name() -> str:
    return f"d-{uuid.uuid4().hex[:8]}"


def _pod(ns: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": _name(), "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def _claim(ns: str, requests: Any) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": _name(), "namespace": ns},
            "spec": {"devices": {"requests": requests}}}


BUILT_IN: dict[str, Callable[[str], Obj]] = {
    "claim-request-is-a-string": lambda ns: _claim(ns, ["gpu"]),
    "claim-count-is-a-bool": lambda ns: _claim(ns, [{"name": "gpu", "exactly": {"deviceClassName": "c",
                                                                                 "count": True}}]),
    "pod-containers-is-a-string": lambda ns: _pod(ns, containers="busybox"),
    "pod-node-selector-is-a-list": lambda ns: _pod(ns, nodeSelector=["a"]),
    "pod-priority-beyond-int64": lambda ns: _pod(ns, priority=2**63),
    "pod-priority-beyond-int32": lambda ns: _pod(ns, priority=2**40),
    "pod-toleration-seconds-beyond-int64": lambda ns: _pod(ns, tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2**63}]),
    "pod-quantity-with-a-space": lambda ns: _pod(ns, containers=[
        {"name": "c", "image": "busybox", "resources": {"requests": {"memory": "80 Gi"}}}]),
    "pod-spread-constraint-is-a-string": lambda ns: _pod(ns, topologySpreadConstraints=["zone"]),
    "pod-env-value-is-a-number": lambda ns: _pod(ns, containers=[
        {"name": "c", "image": "busybox", "env": [{"name": "WORKERS", "value": 4}]}]),
    "pod-volumes-is-a-map": lambda ns: _pod(ns, volumes={"data": {"emptyDir": {}}}),
    "pod-probe-period-is-a-string": lambda ns: _pod(ns, containers=[
        {"name": "c", "image": "busybox", "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": "10"}}]),
    "pod-run-as-user-is-a-string": lambda ns: _pod(ns, securityContext={"runAsUser": "1000"}),
    "pod-host-ipc-is-a-string": lambda ns: _pod(ns, hostIPC="yes"),
    "pod-dns-nameservers-is-a-string": lambda ns: _pod(ns, dnsConfig={"nameservers": "10.0.0.10"}),
    "pod-dns-option-value-is-a-number": lambda ns: _pod(ns, dnsConfig={"options": [{"name": "ndots", "value": 2}]}),
    "pod-prestop-sleep-seconds-is-a-string": lambda ns: _pod(ns, containers=[
        {"name": "c", "image": "busybox", "lifecycle": {"preStop": {"sleep": {"seconds": "5"}}}}]),
    "pod-poststart-port-is-a-fraction": lambda ns: _pod(ns, containers=[
        {"name": "c", "image": "busybox", "lifecycle": {"postStart": {"httpGet": {"path": "/", "port": 80.5}}}}]),
    "pod-probe-port-beyond-int32": lambda ns: _pod(ns, containers=[  # an IntOrString's IntVal is an int32
        {"name": "c", "image": "busybox", "livenessProbe": {"tcpSocket": {"port": 2**40}}}]),
    "pod-config-map-item-mode-is-a-string": lambda ns: _pod(ns, volumes=[
        {"name": "cfg", "configMap": {"name": "cm", "items": [{"key": "k", "path": "p", "mode": "0644"}]}}]),
    "pod-claim-read-only-is-a-string": lambda ns: _pod(ns, volumes=[
        {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": "true"}}]),
    "pod-empty-dir-size-limit-is-a-bool": lambda ns: _pod(ns, volumes=[
        {"name": "tmp", "emptyDir": {"sizeLimit": True}}]),
    "pod-secret-key-ref-optional-is-a-string": lambda ns: _pod(ns, containers=[
        {"name": "c", "image": "busybox", "env": [{"name": "TOKEN", "valueFrom": {
            "secretKeyRef": {"name": "s", "key": "token", "optional": "yes"}}}]}]),
    "pod-env-divisor-not-a-quantity": lambda ns: _pod(ns, containers=[
        {"name": "c", "image": "busybox", "env": [{"name": "MEM", "valueFrom": {
            "resourceFieldRef": {"resource": "limits.memory", "divisor": "1 Mi"}}}]}]),
    "pod-volume-device-path-is-a-number": lambda ns: _pod(ns, containers=[
        {"name": "c", "image": "busybox", "volumeDevices": [{"name": "blk", "devicePath": 1}]}]),
    "job-template-dns-search-is-a-number": lambda ns: {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": _name(), "namespace": ns},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "dnsConfig": {"searches": [1]},
                                       "containers": [{"name": "c", "image": "busybox"}]}}}},
    "configmap-data-not-strings": lambda ns: {"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": _name(), "namespace": ns},
                                              "data": {"a": ["x", "y"]}},
    "priorityclass-value-beyond-int32": lambda ns: {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                    "metadata": {"name": _name()}, "value": 2**40},
    "node-unschedulable-is-a-string": lambda ns: {"apiVersion": "v1", "kind": "Node", "metadata": {"name": _name()},
                                                  "spec": {"unschedulable": "no"}},
}


@pytest.mark.parametrize("case", sorted(BUILT_IN))
def test_a_built_in_kind_of_the_wrong_type_is_400_bad_request(store: ClusterStore, ns: str, case: str) -> None:
    obj = BUILT_IN[case](ns)
    with pytest.raises(ApiError) as err:
        store.create(obj)
    assert (err.value.code, err.value.reason) == (400, "BadRequest")
    version = obj["apiVersion"].rsplit("/", 1)[-1]
    assert f'{obj["kind"]} in version "{version}" cannot be handled as a {obj["kind"]}' in err.value.message


@pytest.mark.parametrize(("spec", "field"), [
    ({"priority": "high"}, "spec.priority"),
    ({"parentQueue": 5}, "spec.parentQueue"),
    ({"resources": {"cpu": "lots"}}, "spec.resources.cpu"),
])
def test_a_crd_field_of_the_wrong_type_is_422_naming_the_field(store: ClusterStore, spec: Obj, field: str) -> None:
    queue = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": _name()},
             "spec": spec}
    with pytest.raises(ApiError) as err:
        store.create(queue)
    assert err.value.code == 422
    assert field in [c.field for c in err.value.causes]
    assert f"{field} in body must be of type" in err.value.message


def test_a_crd_int32_field_beyond_int32_is_422(store: ClusterStore) -> None:
    queue = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": _name()},
             "spec": {"priority": 2**40}}
    with pytest.raises(ApiError) as err:
        store.create(queue)
    assert err.value.code == 422
    assert "format int32" in err.value.message


def test_well_typed_values_in_every_shaped_pod_field_are_accepted(store: ClusterStore, ns: str) -> None:
    """The shapes are no stricter than the decoder: a port by name or by number, a quantity as
    a string or as a number, an optional field left out all decode."""
    container = {
        "name": "c", "image": "busybox",
        "env": [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": 1}}},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "CFG", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": True}}},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token", "optional": True}}}],
        "envFrom": [{"configMapRef": {"name": "cm", "optional": True}}, {"secretRef": {"name": "s", "optional": True}}],
        "lifecycle": {"postStart": {"httpGet": {"path": "/", "port": "http",
                                                "httpHeaders": [{"name": "a", "value": "b"}]}},
                      "preStop": {"tcpSocket": {"port": 8080}}},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
        "readinessProbe": {"grpc": {"port": 9000}},
        "ports": [{"name": "http", "containerPort": 8080}],
        "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
        "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}, {"name": "tmp", "mountPath": "/tmp"},
                         {"name": "all", "mountPath": "/all"}, {"name": "data", "mountPath": "/data"},
                         {"name": "scratch", "mountPath": "/scratch"}],
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
    }
    pod = _pod(ns, containers=[container], dnsConfig={
        "nameservers": ["10.0.0.10"], "searches": ["svc.cluster.local"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}, volumes=[
        {"name": "cfg", "configMap": {"name": "cm", "items": [{"key": "k", "path": "p", "mode": 0o644}],
                                      "defaultMode": 0o444, "optional": True}},
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": 1048576}},
        {"name": "all", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
            {"downwardAPI": {"items": [{"path": "mem", "resourceFieldRef": {
                "containerName": "c", "resource": "limits.memory", "divisor": "1Mi"}}]}},
            {"secret": {"name": "s", "items": [{"key": "token", "path": "t"}], "optional": True}}]}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"metadata": {"labels": {"app": "x"}}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
    ])
    created = store.create(pod)
    assert created["spec"]["containers"][0]["lifecycle"]["postStart"]["httpGet"]["port"] == "http"
    assert created["spec"]["dnsConfig"]["options"][1] == {"name": "edns0"}
