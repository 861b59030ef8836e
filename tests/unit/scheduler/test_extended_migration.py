"""A rolling migration, step by step.

Nodes switch from the device plugin to DRA one at a time while pods run and new ones
arrive. After every step: nothing bound moves, every new pod lands, on either kind of node,
and no node holds more GPUs than it has (pods bound before the switch keep counting).
"""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.sim.runner import Simulation

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
CLASS = "gpu.nvidia.com"
NODES = ("n0", "n1", "n2")


def dp_node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110", GPU: "4"}}}


def gpu_pod(name: str, gpus: int = 1) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "cuda",
                                     "resources": {"limits": {GPU: str(gpus)}}}]}}


def switch_to_dra(sim: Simulation, name: str) -> None:
    """What an operator does: the device plugin goes (allocatable loses the GPUs), the DRA driver publishes."""
    n = sim.store.get(kinds.NODE, name)
    n["status"]["allocatable"].pop(GPU)
    sim.store.update_status(n)
    sim.store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                      "metadata": {"name": f"{name}-gpus"},
                      "spec": {"driver": CLASS, "nodeName": name,
                               "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                               "devices": [{"name": f"gpu-{i}"} for i in range(4)]}})


def bindings(sim: Simulation) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "")
            for p in sim.store.list(kinds.POD, "default").items}


def extended_claims(sim: Simulation) -> dict[str, Obj]:
    """Pod name -> its extended-resource claim."""
    out = {}
    for c in sim.store.list(kinds.RESOURCE_CLAIM, "default").items:
        if (c["metadata"].get("annotations") or {}).get("resource.kubernetes.io/extended-resource-claim") == "true":
            out[c["metadata"]["ownerReferences"][0]["name"]] = c
    return out


def gpus_per_node(sim: Simulation) -> dict[str, int]:
    out = dict.fromkeys(NODES, 0)
    for p in sim.store.list(kinds.POD, "default").items:
        node = p["spec"].get("nodeName")
        if node:
            out[node] += int(p["spec"]["containers"][0]["resources"]["limits"][GPU])
    return out


def test_nodes_switch_one_by_one_while_pods_run() -> None:
    sim = Simulation()
    sim.load([*(dp_node(n) for n in NODES),
              {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
               "spec": {"extendedResourceName": GPU,
                        "selectors": [{"cel": {"expression": f'device.driver == "{CLASS}"'}}]}},
              *(gpu_pod(f"old-{i}") for i in range(3))])
    assert sim.run()
    before = bindings(sim)
    assert all(before.values()) and not extended_claims(sim)

    for step, name in enumerate(NODES):
        switch_to_dra(sim, name)
        sim.store.create(gpu_pod(f"new-{step}"))
        assert sim.run()
        now = bindings(sim)
        assert {p: now[p] for p in before} == before, "a bound pod moved"
        assert now[f"new-{step}"], f"new-{step} did not land after switching {name}"
        assert all(v <= 4 for v in gpus_per_node(sim).values())
        claims = extended_claims(sim)
        # The route is the node's kind when the pod landed: a claim on a DRA node, none on a device-plugin one.
        assert (f"new-{step}" in claims) == (NODES.index(now[f"new-{step}"]) <= step)
        assert not any(p.startswith("old-") for p in claims)
        before = now

    # Every node is DRA now: 3 old + 3 new GPUs in use, 6 left for new pods, all through claims.
    for i in range(7):
        sim.store.create(gpu_pod(f"fill-{i}"))
    assert sim.run()
    now = bindings(sim)
    assert {p: now[p] for p in before} == before
    assert [p for p in now if not now[p]] == ["fill-6"]
    assert all(f"fill-{i}" in extended_claims(sim) for i in range(6))
    assert gpus_per_node(sim) == dict.fromkeys(NODES, 4)
