"""Builders for the claim-controller and kubelet tests: wire-form objects and a settle loop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drasched.api import kinds
from drasched.controllers.claimutil import DELETE_PROTECTION_FINALIZER, POD_GROUP_LABEL
from drasched.sim.clock import VirtualClock
from drasched.sim.context import Controller, Decision, SimContext
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]
NS = "default"
DRIVER = "gpu.example.com"


def new_ctx() -> SimContext:
    clock = VirtualClock()
    return SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)


def settle(ctx: SimContext, controllers: Sequence[Controller], max_rounds: int = 200) -> int:
    """Run the controllers as ``simulate`` does (rounds, then virtual time); fail if they never stop.

    Pods bound by hand to a node no test wrote get that node (roomy), as the kubelet runs only
    on a node that exists (a pod bound to a missing one stays Pending, as upstream)."""
    ensure_nodes(ctx)
    for rounds in range(1, max_rounds + 1):
        if any([c.reconcile(ctx) for c in controllers]):
            continue
        wake = ctx.next_wakeup()
        if wake is None:
            return rounds
        ctx.clock.advance_to(wake)
    raise AssertionError(f"controllers still busy after {max_rounds} rounds")


def ensure_nodes(ctx: SimContext) -> None:
    """A roomy Node for every ``spec.nodeName`` of a pod that names a node not in the store."""
    have = {n["metadata"]["name"] for n in ctx.store.iter_kind(kinds.NODE)}
    for p in list(ctx.store.iter_kind(kinds.POD)):
        name = (p.get("spec") or {}).get("nodeName")
        if name and name not in have:
            have.add(name)
            ctx.store.restore({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                               "status": {"allocatable": {"cpu": "1000", "memory": "1Ti", "pods": "100000"}}})


def template(name: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
             device_class: str = "gpu.example.com") -> Obj:
    meta: Obj = {}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"metadata": meta, "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": device_class}}]}}},
    }


def pod(name: str, claims: Sequence[Obj] = (), *, node: str | None = None, group: str | None = None,
        containers: int = 1, annotations: dict[str, str] | None = None, uid: str | None = None) -> Obj:
    """A pod; ``claims`` are its ``spec.resourceClaims``; container i uses entry i (or all, if one)."""
    entries = [c["name"] for c in claims]
    spec: Obj = {
        "containers": [
            {"name": f"c{i}", "image": "busybox",
             **({"resources": {"claims": [{"name": entries[min(i, len(entries) - 1)]}]}} if entries else {})}
            for i in range(containers)
        ],
        "resourceClaims": list(claims),
    }
    if node:
        spec["nodeName"] = node
    meta: Obj = {"name": name, "namespace": NS}
    if group:
        meta["labels"] = {POD_GROUP_LABEL: group}
    if annotations:
        meta["annotations"] = annotations
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def from_template(entry: str, tmpl: str) -> Obj:
    return {"name": entry, "resourceClaimTemplateName": tmpl}


def by_name(entry: str, claim_name: str) -> Obj:
    return {"name": entry, "resourceClaimName": claim_name}


def allocation(device: str = "gpu-0", node: str = "node-a") -> Obj:
    return {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": device}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
    }


def claim(name: str, *, reserved: Sequence[Obj] = (), allocated: bool = True, finalizer: bool = True,
          owner: Obj | None = None, annotations: dict[str, str] | None = None, device: str = "gpu-0") -> Obj:
    meta: Obj = {"name": name, "namespace": NS}
    if finalizer:
        meta["finalizers"] = [DELETE_PROTECTION_FINALIZER]
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                    "controller": True, "blockOwnerDeletion": True}]
    if annotations:
        meta["annotations"] = annotations
    status: Obj = {}
    if allocated:
        status["allocation"] = allocation(device)
    if reserved:
        status["reservedFor"] = list(reserved)
    obj: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}
    if status:
        obj["status"] = status
    return obj


def pod_ref(p: Obj) -> Obj:
    return {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}


def group_ref(g: Obj) -> Obj:
    return {"apiGroup": "scheduling.drasched.io", "resource": "podgroups",
            "name": g["metadata"]["name"], "uid": g["metadata"]["uid"]}


def podgroup(name: str, claims: Sequence[Obj] = (), min_member: int = 1) -> Obj:
    spec: Obj = {"minMember": min_member}
    if claims:
        spec["resourceClaims"] = list(claims)
    return {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


def claims_in(ctx: SimContext) -> list[Obj]:
    return ctx.store.list(kinds.RESOURCE_CLAIM, NS).items


def events(ctx: SimContext, reason: str | None = None, name: str | None = None) -> list[Obj]:
    return [e for e in ctx.store.list(kinds.EVENT, NS).items
            if (reason is None or e["reason"] == reason)
            and (name is None or e["involvedObject"]["name"] == name)]


def decisions(ctx: SimContext, action: str, name: str | None = None) -> list[Decision]:
    """The decision record's entries for ``action`` (about an object called ``name``)."""
    return [d for d in ctx.decisions if d.action == action and (name is None or d.object.endswith(f"/{name}"))]


def normal_events(ctx: SimContext) -> list[Obj]:
    return [e for e in ctx.store.list(kinds.EVENT, NS).items if e["type"] == "Normal"]


def get_pod(ctx: SimContext, name: str) -> Obj:
    return ctx.store.get(kinds.POD, name, NS)


def get_claim(ctx: SimContext, name: str) -> Obj | None:
    return ctx.store.peek(kinds.RESOURCE_CLAIM, name, NS)


def must_claim(ctx: SimContext, name: str) -> Obj:
    c = get_claim(ctx, name)
    assert c is not None, f"claim {name} is gone"
    return c
