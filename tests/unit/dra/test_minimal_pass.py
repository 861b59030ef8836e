"""The minimal DRA scheduling pass, run alone over the memory store."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.dra.minimal_pass import MinimalDraScheduler
from drasched.sim.runner import simulate
from tests.unit.dra.dra_builders import claim, device_class, exact, gpus, node

Obj = dict[str, Any]


def pod(name: str, *claims: str, templates: dict[str, str] | None = None, **spec: Any) -> Obj:
    rcs = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    rcs += [{"name": k, "resourceClaimTemplateName": v} for k, v in (templates or {}).items()]
    p: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
              "spec": {"schedulerName": "drasched", "containers": [{"name": "c", "image": "x"}], **spec}}
    if rcs:
        p["spec"]["resourceClaims"] = rcs
    return p


def run(objects: list[Obj]) -> dict[str, Obj]:
    for o in objects:
        if o["kind"] == "ResourceClaim":
            o["metadata"].pop("uid", None)
    result = simulate(objects, [MinimalDraScheduler()])
    assert result.quiescent
    return {f"{o['kind']}:{o['metadata'].get('name')}": o for o in result.objects}


def message(p: Obj) -> str:
    return next(c["message"] for c in p["status"]["conditions"] if c["type"] == "PodScheduled")


def test_binds_and_writes_claim_status() -> None:
    out = run([node("node-1"), device_class(), gpus("node-1", 1), claim("c", exact("gpu")), pod("p", "c")])
    assert out["Pod:p"]["spec"]["nodeName"] == "node-1"
    c = out["ResourceClaim:c"]
    assert c["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": out["Pod:p"]["metadata"]["uid"]}]
    assert c["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert "allocationTimestamp" in c["status"]["allocation"]


def test_unschedulable_message_and_quiescence() -> None:
    out = run([node("node-1"), node("node-2", unschedulable=True), device_class(), gpus("node-1", 1),
               claim("c", exact("gpu", count=2)), pod("p", "c")])
    p = out["Pod:p"]
    assert "nodeName" not in p["spec"]
    cond = next(c for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert cond["message"] == ("0/2 nodes are available: 1 node(s) were unschedulable; 1 node(s) cannot allocate "
                               "all claims: not enough gpu.example.com devices: 1 free, need 2.")


def test_waits_for_claim_from_template() -> None:
    out = run([node("node-1"), device_class(), gpus("node-1", 1), pod("p", templates={"gpu": "tmpl"})])
    assert 'template "tmpl"' in message(out["Pod:p"])


def test_template_claim_resolved_through_pod_status() -> None:
    p = pod("p", templates={"gpu": "tmpl"})
    p["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]}
    out = run([node("node-1"), device_class(), gpus("node-1", 1), claim("p-gpu-abcde"), p])
    assert out["Pod:p"]["spec"]["nodeName"] == "node-1"


def test_waits_for_missing_claim() -> None:
    out = run([node("node-1"), device_class(), pod("p", "nope")])
    assert message(out["Pod:p"]) == 'waiting for ResourceClaim "default/nope" to be created'


def test_shared_claim_reserved_for_both_pods() -> None:
    out = run([node("node-1"), device_class(), gpus("node-1", 1), claim("c"), pod("a", "c"), pod("b", "c")])
    names = sorted(r["name"] for r in out["ResourceClaim:c"]["status"]["reservedFor"])
    assert names == ["a", "b"]


def test_node_selector_and_taints() -> None:
    out = run([node("node-1", {"zone": "a"}), node("node-2", {"zone": "b"}, taints=[
        {"key": "k", "value": "v", "effect": "NoSchedule"}]), pod("p", nodeSelector={"zone": "b"})])
    assert "didn't match" in message(out["Pod:p"]) and "untolerated taint {k: v}" in message(out["Pod:p"])
    out = run([node("node-2", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
               pod("p", tolerations=[{"key": "k", "operator": "Exists"}])])
    assert out["Pod:p"]["spec"]["nodeName"] == "node-2"


def test_other_schedulers_pods_are_left_alone() -> None:
    p = pod("p")
    p["spec"]["schedulerName"] = "default-scheduler"
    out = run([node("node-1"), p])
    assert "nodeName" not in out["Pod:p"]["spec"]


def test_controller_is_registered_name() -> None:
    assert MinimalDraScheduler.name == "dra-minimal-scheduler"
    assert kinds.POD.kind == "Pod"
