"""Replace namespace, node, pod and claim names in a snapshot, consistently.

Names are numbered in the sorted order of the originals (``pod-0003`` sorts where its
original did), so that the scheduler, which breaks ties between pods of the same age by
name, orders the anonymized cluster as it ordered the real one. Every reference follows
its object: ``spec.nodeName``, owner references, ``reservedFor``, the claim names in a pod's
spec and status, node selectors of allocations, pool names that are node names.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

KEPT_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
HOSTNAME_LABEL = "kubernetes.io/hostname"


def _numbered(prefix: str, names: Iterable[str]) -> dict[str, str]:
    ordered = sorted(set(names))
    width = max(4, len(str(len(ordered))))
    return {n: f"{prefix}-{i:0{width}d}" for i, n in enumerate(ordered)}


def _swap(value: Any, mapping: dict[str, str]) -> Any:
    """``value`` with every string that is a key of ``mapping`` replaced (nested lists and dicts)."""
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, list):
        return [_swap(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _swap(v, mapping) for k, v in value.items()}
    return value


@dataclass
class Renames:
    """Old name -> new name, per kind of name."""

    namespaces: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, str] = field(default_factory=dict)
    pods: dict[str, str] = field(default_factory=dict)
    claims: dict[str, str] = field(default_factory=dict)
    slices: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_objects(cls, objects: Sequence[Obj]) -> Renames:
        def names(kind: str) -> list[str]:
            return [str(o["metadata"]["name"]) for o in objects if o.get("kind") == kind]

        namespaces = {str(o["metadata"]["namespace"]) for o in objects if o["metadata"].get("namespace")}
        namespaces |= set(names("Namespace"))
        return cls(_numbered("ns", namespaces - KEPT_NAMESPACES), _numbered("node", names("Node")),
                   _numbered("pod", names("Pod")), _numbered("claim", names("ResourceClaim")),
                   _numbered("slice", names("ResourceSlice")))


def anonymize(objects: Sequence[Obj]) -> list[Obj]:
    """Copies of ``objects`` with namespace, node, pod, claim and slice names replaced."""
    renames = Renames.for_objects(objects)
    return [_anonymize_one(copy.deepcopy(o), renames) for o in objects]


def _anonymize_one(obj: Obj, r: Renames) -> Obj:
    md = obj["metadata"]
    kind = obj.get("kind")
    if md.get("namespace"):
        md["namespace"] = r.namespaces.get(md["namespace"], md["namespace"])
    own = {"Namespace": r.namespaces, "Node": r.nodes, "Pod": r.pods, "ResourceClaim": r.claims,
           "ResourceSlice": r.slices, "BindRequest": r.pods}.get(str(kind))  # a BindRequest is named as its pod
    if own is not None:
        md["name"] = own.get(md["name"], md["name"])
    md.pop("generateName", None)
    for ref in md.get("ownerReferences") or []:
        if ref.get("kind") == "Pod":
            ref["name"] = r.pods.get(ref.get("name"), ref.get("name"))
    labels = md.get("labels") or {}
    if HOSTNAME_LABEL in labels:
        labels[HOSTNAME_LABEL] = r.nodes.get(labels[HOSTNAME_LABEL], labels[HOSTNAME_LABEL])
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if kind == "Pod":
        _pod(spec, status, r)
    elif kind == "Node":
        status.pop("addresses", None)  # host names and IPs
    elif kind == "ResourceSlice":
        if spec.get("nodeName"):
            spec["nodeName"] = r.nodes.get(spec["nodeName"], spec["nodeName"])
        pool = spec.get("pool") or {}
        if pool.get("name") in r.nodes:
            pool["name"] = r.nodes[pool["name"]]
    elif kind == "ResourceClaim":
        _claim(status, r)
    elif kind == "Event":
        _involved(obj.get("involvedObject") or {}, r)
    elif kind == "BindRequest":
        if spec.get("podName"):
            spec["podName"] = r.pods.get(spec["podName"], spec["podName"])
        if spec.get("selectedNode"):
            spec["selectedNode"] = r.nodes.get(spec["selectedNode"], spec["selectedNode"])
        for key, value in list(spec.items()):
            if key not in ("podName", "selectedNode", "podUID"):
                spec[key] = _swap(_swap(_swap(value, r.claims), r.nodes), r.pods)
    return obj


def _involved(ref: Obj, r: Renames) -> None:
    names = {"Pod": r.pods, "Node": r.nodes, "ResourceClaim": r.claims, "Namespace": r.namespaces}.get(
        str(ref.get("kind")), {})
    if ref.get("name") in names:
        ref["name"] = names[ref["name"]]
    if ref.get("namespace") in r.namespaces:
        ref["namespace"] = r.namespaces[ref["namespace"]]


def _pod(spec: Obj, status: Obj, r: Renames) -> None:
    if spec.get("nodeName"):
        spec["nodeName"] = r.nodes.get(spec["nodeName"], spec["nodeName"])
    if spec.get("affinity"):
        spec["affinity"] = _swap(spec["affinity"], r.nodes)
    if spec.get("nodeSelector"):
        spec["nodeSelector"] = _swap(spec["nodeSelector"], r.nodes)
    for entry in spec.get("resourceClaims") or []:
        if entry.get("resourceClaimName"):
            entry["resourceClaimName"] = r.claims.get(entry["resourceClaimName"], entry["resourceClaimName"])
    if status.get("nominatedNodeName"):
        status["nominatedNodeName"] = r.nodes.get(status["nominatedNodeName"], status["nominatedNodeName"])
    for entry in status.get("resourceClaimStatuses") or []:
        if entry.get("resourceClaimName"):
            entry["resourceClaimName"] = r.claims.get(entry["resourceClaimName"], entry["resourceClaimName"])
    extended = status.get("extendedResourceClaimStatus") or {}
    if extended.get("resourceClaimName"):
        extended["resourceClaimName"] = r.claims.get(extended["resourceClaimName"], extended["resourceClaimName"])
    for key in ("hostIP", "podIP"):
        status.pop(key, None)
    status.pop("hostIPs", None)
    status.pop("podIPs", None)


def _claim(status: Obj, r: Renames) -> None:
    for entry in status.get("reservedFor") or []:
        if entry.get("resource") == "pods":
            entry["name"] = r.pods.get(entry.get("name"), entry.get("name"))
    allocation = status.get("allocation") or {}
    if allocation.get("nodeSelector"):
        allocation["nodeSelector"] = _swap(allocation["nodeSelector"], r.nodes)
    for result in (allocation.get("devices") or {}).get("results") or []:
        if result.get("pool") in r.nodes:
            result["pool"] = r.nodes[result["pool"]]
    for device in status.get("devices") or []:
        if device.get("pool") in r.nodes:
            device["pool"] = r.nodes[device["pool"]]
