"""Builders for the disruptive actions' tests: running pods, their claims, priority classes."""

from __future__ import annotations

from typing import Any

from tests.unit.scheduler.helpers import CLASS, allocation, pod

Obj = dict[str, Any]
NOW = "2026-01-01T00:00:00Z"


def minutes_ago(m: int) -> str:
    h, mm = divmod(24 * 60 - m, 60)
    return f"2025-12-31T{h:02d}:{mm:02d}:00Z"


def running(name: str, node_name: str, *, started: str = "2025-12-31T23:00:00Z", owned: bool = False,
            labels: dict[str, str] | None = None, **kw: Any) -> Obj:
    """A bound, Running and Ready pod (uid ``uid-<name>``); ``owned``: a Job controls it."""
    p = pod(name, node_name=node_name, **kw)
    p["metadata"]["uid"] = f"uid-{name}"
    p["metadata"]["creationTimestamp"] = started
    p["metadata"]["labels"].update(labels or {})
    if owned:
        p["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "uid-job",
                                             "controller": True}]
    p["status"] = {"phase": "Running", "startTime": started,
                   "conditions": [{"type": "Ready", "status": "True"}]}
    return p


def held_claim(name: str, node_name: str, *devices: str, consumers: tuple[Obj, ...] = (), count: int | None = None,
               cls: str = CLASS) -> Obj:
    """A claim allocated ``devices`` on ``node_name`` and reserved for ``consumers`` (``ref`` results)."""
    out: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": cls,
                                                                            "count": count or len(devices)}}]}}}
    out["status"] = {"allocation": allocation(node_name, *devices), "reservedFor": list(consumers)}
    return out


def ref(pod_name: str) -> Obj:
    return {"resource": "pods", "name": pod_name, "uid": f"uid-{pod_name}"}


def uses(claim_name: str) -> list[Obj]:
    return [{"name": "gpu", "resourceClaimName": claim_name}]


def priority_class(name: str, value: int, *, labels: dict[str, str] | None = None,
                   annotations: dict[str, str] | None = None, policy: str | None = None) -> Obj:
    md: Obj = {"name": name}
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    out: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": md, "value": value}
    if policy:
        out["preemptionPolicy"] = policy
    return out
