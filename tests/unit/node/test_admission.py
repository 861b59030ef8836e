"""The simulated kubelet's admission, as upstream pkg/kubelet/lifecycle/predicate.go (generalFilter)."""

from __future__ import annotations

from typing import Any

from drasched.node.admission import Rejection, admit, pod_requests

Obj = dict[str, Any]


def node(taints: list[Obj] | None = None, **allocatable: str) -> Obj:
    """A node allowing 110 pods unless ``pods`` says otherwise (``pods=""``: none listed)."""
    allocatable.setdefault("pods", "110")
    if not allocatable["pods"]:
        del allocatable["pods"]
    return {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "spec": {"taints": taints or []}, "status": {"allocatable": allocatable}}


def pod(requests: Obj | None = None, **spec: Any) -> Obj:
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": requests or {}}}],
                     **spec}}


def test_untolerated_no_execute_taint_is_refused_and_no_schedule_is_not() -> None:
    # generalFilter: "Kubelet is only interested in the NoExecute taint" (tainttoleration.ErrReasonNotMatch).
    tainted = node([{"key": "k", "value": "v", "effect": "NoExecute"}], cpu="1")
    assert admit(pod(), tainted, []) == Rejection(
        "TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate")
    assert admit(pod(tolerations=[{"key": "k", "operator": "Exists"}]), tainted, []) is None
    assert admit(pod(), node([{"key": "k", "effect": "NoSchedule"}], cpu="1"), []) is None


def test_resources_come_before_affinity_and_pods_first() -> None:
    full = node(cpu="1", pods="1")
    other = pod({"cpu": "100m"})
    assert admit(pod({"cpu": "2"}, nodeSelector={"x": "y"}), full, [other]) == Rejection(
        "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1")
    assert admit(pod({"memory": "2Gi"}, nodeSelector={"x": "y"}), node(cpu="1", memory="1Gi"), []) == Rejection(
        "OutOfmemory", "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824")


def test_allocatable_without_pods_allows_no_pod() -> None:
    """Upstream NodeInfo: AllowedPodNumber is allocatable["pods"], 0 when missing (a kubelet always reports it)."""
    assert admit(pod(), node(cpu="1", pods=""), []) == Rejection(
        "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 0, capacity: 0")
    assert admit(pod(), {"metadata": {"name": "n1"}, "spec": {}, "status": {}}, []) is None  # no status: not asked


def test_extended_resources_the_node_lacks_or_dra_provides_are_not_checked() -> None:
    # removeMissingExtendedResources: unknown extended resources, and those backed by DRA (KEP-5004).
    assert admit(pod({"example.com/gpu": "2"}), node(cpu="1"), []) is None
    advertised = node(cpu="1", **{"example.com/gpu": "1"})
    assert admit(pod({"example.com/gpu": "2"}), advertised, []) == Rejection(
        "OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1")
    dra = pod({"example.com/gpu": "2"})
    dra["status"] = {"extendedResourceClaimStatus": {"resourceClaimName": "p-extended-resources-x", "requestMappings": [
        {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}]}}
    assert admit(dra, advertised, []) is None
    assert "example.com/gpu" not in pod_requests(dra)


def test_required_node_affinity() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}}
    assert admit(pod(affinity=affinity), node(cpu="1"), []) == Rejection(
        "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")
