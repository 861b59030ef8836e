"""Consolidation is on by default with ``nodeOrder: spread``, and it is what places the big pod.

A spread node order leaves every node partly used; only consolidation (moving pods their
controller recreates) makes room for a pod that needs a whole node. The run below lets the
scheduler itself spread eight one-GPU pods over two 8-GPU nodes, then adds an 8-GPU pod:
with the default actions it is placed after four pods move; with consolidation dropped
from ``actions`` it waits, saying why, and nothing is evicted. The two outcomes differ, so
the test fails if consolidation stops running by default or stops making room.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import yaml

from drasched.api import kinds
from drasched.sim.runner import Simulation

Obj = dict[str, Any]
JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "workers", "uid": "4c0bc342-dd7d-5824-87bb-60e584ae7b14",
       "controller": True, "blockOwnerDeletion": True}


def _config(text: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "drasched-scheduler", "namespace": "kube-system"}, "data": {"config.yaml": text}}


def _node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}}}


def _pod(name: str, gpus: int, owner: Obj | None) -> Obj:
    md: Obj = {"name": name, "namespace": "default", "labels": {"drasched.io/queue": "q"}}
    if owner:
        md["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"schedulerName": "drasched", "containers": [{
                "name": "main", "image": "busybox",
                "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
                              "limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def _run(config: str) -> tuple[Counter[str], Simulation]:
    """Spread eight Job pods, then add ``big``; the placement after the first wave, and the run."""
    sim = Simulation()
    queue = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {}}
    sim.load([_config(config), _node("n1"), _node("n2"), queue,
              *(_pod(f"w-{i}", 1, JOB) for i in range(1, 9))])
    assert sim.run()
    first_wave = Counter(p["spec"].get("nodeName") for p in sim.store.list(kinds.POD).items)
    sim.load([_pod("big", 8, None)])
    assert sim.run()
    return first_wave, sim


def _pods(sim: Simulation) -> dict[str, Obj]:
    return {p["metadata"]["name"]: p for p in sim.store.list(kinds.POD).items}


def _consolidated(sim: Simulation) -> list[str]:
    return sorted(e["involvedObject"]["name"] for e in sim.store.list(kinds.EVENT).items
                  if e.get("reason") == "Consolidated")


def test_spread_leaves_both_nodes_half_used_and_consolidation_places_the_big_pod() -> None:
    first_wave, sim = _run(yaml.safe_dump({"nodeOrder": "spread"}))
    assert first_wave == Counter({"n1": 4, "n2": 4})  # spread did fragment: 8 GPUs free, none whole
    pods = _pods(sim)
    big_node = pods["big"]["spec"].get("nodeName")
    assert big_node in ("n1", "n2")
    assert pods["big"]["status"]["phase"] == "Running"
    moved = _consolidated(sim)
    assert len(moved) == 4
    workers = {n: p["spec"]["nodeName"] for n, p in pods.items() if n != "big"}
    assert sorted(workers) == sorted(set(f"w-{i}" for i in range(1, 9)) - set(moved))  # moved: evicted, not back
    assert set(workers.values()) == {"n2" if big_node == "n1" else "n1"}


def test_without_consolidation_the_big_pod_waits_and_nothing_moves() -> None:
    first_wave, sim = _run(yaml.safe_dump({"nodeOrder": "spread", "actions": ["allocate", "reclaim", "preempt"]}))
    assert first_wave == Counter({"n1": 4, "n2": 4})
    pods = _pods(sim)
    assert not pods["big"]["spec"].get("nodeName")
    cond = next(c for c in pods["big"]["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == ("0/2 nodes are available: 2 Insufficient nvidia.com/gpu. no new claims to deallocate, "
                               "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")
    assert _consolidated(sim) == []
    assert sorted(n for n, p in pods.items() if p["status"].get("phase") == "Running") == [
        f"w-{i}" for i in range(1, 9)]
