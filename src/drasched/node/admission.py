"""The kubelet's admission of a pod bound to its node, as upstream's predicate admit handler.

Upstream ``pkg/kubelet/lifecycle/predicate.go`` (``predicateAdmitHandler.Admit``,
``generalFilter``) runs the scheduler's ``AdmissionCheck`` (pkg/scheduler/schedule_one.go:
NodeResourcesFit's ``Fits``, then the required node affinity / nodeSelector, ...) against the
pods the kubelet already admitted, then the NoExecute taints. The first failure rejects the
pod (``kubelet.rejectPod``): phase ``Failed``, ``status.reason`` and ``status.message`` =
``Pod was rejected: <message>``, and a Warning event with that reason.

* Resources: ``OutOf<name>`` (``OutOfcpu``, ``OutOfmemory``, ``OutOfpods``, ...), message
  ``Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000`` (cpu
  in millicores, other resources in base units, pods counted). Extended resources the node
  does not advertise are not checked (``removeMissingExtendedResources``), nor those the
  pod gets through DRA (KEP-5004, ``status.extendedResourceClaimStatus.requestMappings``).
* ``NodeAffinity``: ``Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector``.
* ``TaintToleration`` (an untolerated NoExecute taint): ``Predicate TaintToleration failed:
  node(s) had taints that the pod didn't tolerate``.

Only pods the scheduler did not place can fail here: the scheduler counts the same requests
(upstream ``PodRequests``: containers summed, init containers as a max, sidecars, pod-level
requests, overhead) against the same allocatable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from drasched.api.pod_requests import pod_requests as shared_pod_requests
from drasched.api.tolerations import tolerates
from drasched.dra.nodes import node_selector_matches
from drasched.quantity import Quantity, QuantityError

Obj = dict[str, Any]

DEFAULT_MAX_PODS = 110
_FIRST = ("cpu", "memory", "ephemeral-storage")
NODE_AFFINITY_MESSAGE = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
TAINT_MESSAGE = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"


@dataclass(frozen=True)
class Rejection:
    """Why the kubelet refuses a pod: ``status.reason`` and the message after ``Pod was rejected: ``."""

    reason: str
    message: str


def _units(name: str, q: Quantity) -> int:
    return q.milli_value() if name == "cpu" else q.value_int()


def _parse(name: str, raw: Any) -> int | None:
    try:
        return _units(name, Quantity.parse(raw))
    except (QuantityError, TypeError, ValueError):
        return None


def _is_extended(name: str) -> bool:
    """Upstream ``IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io/``."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _dra_backed(pod: Obj) -> set[str]:
    mappings = (((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("requestMappings")) or []
    return {str(m.get("resourceName")) for m in mappings if m.get("resourceName")}


def pod_requests(pod: Obj) -> dict[str, int]:
    """Upstream ``PodRequests`` in integral units (the scheduler's own count,
    :func:`drasched.api.pod_requests.pod_requests`), less the extended resources DRA provides."""
    try:
        requests = shared_pod_requests(pod.get("spec") or {})
    except QuantityError:  # the API server refuses such a pod: never seen here
        return {}
    dra = _dra_backed(pod)
    return {name: int(units) for name, units in requests.items() if name != "pods" and name not in dra}


def allocatable(node: Obj) -> dict[str, int]:
    """``status.allocatable`` (the API server defaults it to the capacity) in integral units. No
    ``pods`` in it allows no pod (``OutOfpods``), as the scheduler reads it (upstream's NodeInfo:
    ``AllowedPodNumber`` 0)."""
    status = node.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    return {name: units for name, value in raw.items() if (units := _parse(name, value)) is not None}


def _affinity_matches(pod: Obj, node: Obj) -> bool:
    """Upstream ``GetRequiredNodeAffinity(pod).Match(node)``: nodeSelector and the required terms."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    return required is None or node_selector_matches(required, node)


def admit(pod: Obj, node: Obj, admitted: Iterable[Obj]) -> Rejection | None:
    """None when the kubelet on ``node`` runs ``pod`` next to the ``admitted`` ones, else why not."""
    capacity = allocatable(node)
    rejection = _fits(pod, capacity, list(admitted)) if capacity else None
    if rejection is not None:
        return rejection
    if not _affinity_matches(pod, node):
        return Rejection("NodeAffinity", NODE_AFFINITY_MESSAGE)
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") == "NoExecute" and not any(tolerates(t, taint) for t in tolerations):
            return Rejection("TaintToleration", TAINT_MESSAGE)
    return None


def _fits(pod: Obj, capacity: dict[str, int], others: list[Obj]) -> Rejection | None:
    """NodeResourcesFit's ``Fits``: pods first, then cpu, memory, ephemeral-storage, the rest.
    (Not asked of a node that lists no allocatable nor capacity at all: a hand-written node
    without status, where a real kubelet would have reported what it has.)"""
    want = pod_requests(pod)
    allowed = capacity.get("pods", 0)
    if len(others) + 1 > allowed:
        return Rejection("OutOfpods", f"Node didn't have enough resource: pods, requested: 1, used: "
                                      f"{len(others)}, capacity: {allowed}")
    used: dict[str, int] = {}
    for other in others:
        for name, units in pod_requests(other).items():
            used[name] = used.get(name, 0) + units
    names = [n for n in _FIRST if want.get(n)] + sorted(
        n for n in want if n not in _FIRST and n != "pods" and not (_is_extended(n) and n not in capacity))
    for name in names:
        have = capacity.get(name, 0)
        if want[name] > have - used.get(name, 0):
            return Rejection(f"OutOf{name}", f"Node didn't have enough resource: {name}, requested: {want[name]}, "
                                             f"used: {used.get(name, 0)}, capacity: {have}")
    return None
