"""Benchmark workloads modelled on upstream's scheduler_perf DRA suite, as object generators.

Each workload yields the cluster (nodes, classes, slices, templates, queues), the pods
placed before measuring, and the measured pods. Nodes are plain Node objects with no
kubelet, as upstream's benchmarks use. Sizes scale with ``nodes``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
NAMESPACE = "bench"


@dataclass(frozen=True)
class SteadyState:
    """Upstream scheduler_perf's ``steadyState``: keep ``count`` measured pods in flight for
    ``duration`` seconds; each pod is deleted once bound and a new one takes its place."""

    count: int = 10
    duration: float = 30.0


@dataclass
class Workload:
    name: str
    description: str
    cluster: list[Obj]
    init_pods: list[Obj]
    measured_pods: list[Obj]
    drasched_only: bool = False  # uses drasched features upstream has no equivalent for
    steady: SteadyState | None = None
    """Set: ``measured_pods`` is a pool of pods to create ``steady.count`` at a time (see SteadyState)."""
    notes: list[str] = field(default_factory=list)

    @property
    def all_objects(self) -> list[Obj]:
        return self.cluster + self.init_pods + self.measured_pods


def node(name: str, labels: dict[str, str] | None = None, allocatable: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {
            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", **(allocatable or {})},
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", **(allocatable or {})},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def device_class(name: str = DRIVER, extended_resource_name: str | None = None) -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}
    if extended_resource_name:
        spec["extendedResourceName"] = extended_resource_name
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def gpu_slice(node_name: str, count: int, numa_groups: int = 1) -> Obj:
    devices = [
        {"name": f"gpu-{i}", "attributes": {"numa": {"int": i % numa_groups}, "model": {"string": "a100"}},
         "capacity": {"memory": {"value": "80Gi"}}}
        for i in range(count)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{DRIVER}"},
        "spec": {"driver": DRIVER, "nodeName": node_name,
                 "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}, "devices": devices},
    }


def partitionable_slices(node_name: str, gpus: int = 2, parts: int = 4) -> list[Obj]:
    """Each physical GPU offers itself whole or ``parts`` partitions, bounded by shared counters.

    Since Kubernetes 1.35 a slice carries either devices or shared counters, so the pool has
    two slices.
    """
    counters, devices = [], []
    for g in range(gpus):
        counters.append({"name": f"gpu-{g}-counters", "counters": {"memory": {"value": "80Gi"}}})
        devices.append({"name": f"gpu-{g}", "attributes": {"type": {"string": "full"}},
                        "consumesCounters": [{"counterSet": f"gpu-{g}-counters",
                                              "counters": {"memory": {"value": "80Gi"}}}]})
        for p in range(parts):
            devices.append({"name": f"gpu-{g}-part-{p}", "attributes": {"type": {"string": "partition"}},
                            "consumesCounters": [{"counterSet": f"gpu-{g}-counters",
                                                  "counters": {"memory": {"value": "20Gi"}}}]})
    pool = {"name": node_name, "generation": 1, "resourceSliceCount": 2}
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": {"name": f"{node_name}-{DRIVER}-counters"},
         "spec": {"driver": DRIVER, "nodeName": node_name, "sharedCounters": counters, "pool": pool}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": {"name": f"{node_name}-{DRIVER}-devices"},
         "spec": {"driver": DRIVER, "nodeName": node_name, "devices": devices, "pool": dict(pool)}},
    ]


def claim_template(name: str, count: int = 1, selector: str | None = None,
                   constraints: list[Obj] | None = None) -> Obj:
    exactly: Obj = {"deviceClassName": DRIVER, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    devices: Obj = {"requests": [{"name": "gpu", "exactly": exactly}]}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"spec": {"devices": devices}}}


def pod(name: str, *, template: str | None = None, requests: dict[str, str] | None = None,
        labels: dict[str, str] | None = None, scheduler: str = "drasched") -> Obj:
    container: Obj = {"name": "main", "image": "registry.k8s.io/pause:3.10",
                      "resources": {"requests": {"cpu": "100m", "memory": "100Mi", **(requests or {})}}}
    extended = {k: v for k, v in (requests or {}).items() if k not in ("cpu", "memory")}
    if extended:  # the API server requires limit == request for resources that cannot be overcommitted
        container["resources"]["limits"] = dict(extended)
    spec: Obj = {"schedulerName": scheduler, "containers": [container]}
    if template:
        container["resources"]["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels or {}}, "spec": spec}


def _namespace() -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


def claim_template_workload(nodes: int = 500) -> Workload:
    cluster = [_namespace(), device_class(), claim_template("one-gpu")]
    for i in range(nodes):
        cluster += [node(f"node-{i:05d}"), gpu_slice(f"node-{i:05d}", 10)]
    init = [pod(f"init-{i:06d}", template="one-gpu") for i in range(nodes * 5)]
    measured = [pod(f"measured-{i:06d}", template="one-gpu") for i in range(nodes * 5)]
    return Workload("claim-template", f"{nodes} nodes x 10 devices; {nodes * 5} placed, then {nodes * 5} measured "
                    "pods with one device each from a claim template", cluster, init, measured)


def claim_template_steady_workload(nodes: int = 500) -> Workload:
    """The claim-template cluster half full, then churn: 10 pods in flight, each deleted when bound."""
    base = claim_template_workload(nodes)
    steady = SteadyState(count=10, duration=30.0)
    # more pods than the run can use: a fast scheduler must never run out
    pool = [pod(f"steady-{i:06d}", template="one-gpu") for i in range(max(nodes * 20, 2000))]
    return Workload("claim-template-steady", f"{nodes} nodes x 10 devices, {nodes * 5} placed; then "
                    f"{steady.count} pods with a claim from a template kept in flight for {steady.duration:.0f} s, "
                    "each deleted once bound", base.cluster, base.init_pods, pool, steady=steady)


def match_attribute_workload(nodes: int = 500) -> Workload:
    cluster = [_namespace(), device_class(), claim_template(
        "two-same-numa", count=2, constraints=[{"requests": ["gpu"], "matchAttribute": f"{DRIVER}/numa"}])]
    for i in range(nodes):
        cluster += [node(f"node-{i:05d}"), gpu_slice(f"node-{i:05d}", 8, numa_groups=2)]
    measured = [pod(f"measured-{i:06d}", template="two-same-numa") for i in range(nodes * 2)]
    return Workload("match-attribute", f"{nodes} nodes x 8 devices in 2 NUMA groups; {nodes * 2} pods with 2 "
                    "devices that must share a numa attribute", cluster, [], measured)


def extended_resource_workload(nodes: int = 500) -> Workload:
    cluster = [_namespace(), device_class(extended_resource_name="example.com/gpu")]
    for i in range(nodes):
        cluster += [node(f"node-{i:05d}"), gpu_slice(f"node-{i:05d}", 10)]
    measured = [pod(f"measured-{i:06d}", requests={"example.com/gpu": "1"}) for i in range(nodes * 10)]
    return Workload("extended-resource", f"{nodes} nodes, DRA-backed example.com/gpu; {nodes * 10} pods asking "
                    "example.com/gpu: 1", cluster, [], measured)


def partitionable_workload(nodes: int = 100) -> Workload:
    cluster = [_namespace(), device_class(),
               claim_template("partition", selector=f'device.attributes["{DRIVER}"].type == "partition"')]
    for i in range(nodes):
        cluster += [node(f"node-{i:05d}"), *partitionable_slices(f"node-{i:05d}", gpus=5, parts=4)]
    measured = [pod(f"measured-{i:06d}", template="partition") for i in range(nodes * 20)]
    return Workload("partitionable", f"{nodes} nodes x 5 partitionable GPUs (4 partitions each); {nodes * 20} pods "
                    "asking one partition", cluster, [], measured)


def gangs_workload(nodes: int = 1000) -> Workload:
    queues = [{"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": f"q{i}"},
               "spec": {"resources": {"nvidia.com/gpu": {"quota": str(nodes * 8 // 10)}}}} for i in range(10)]
    cluster = [_namespace(), device_class(extended_resource_name="nvidia.com/gpu"), claim_template("one-gpu"),
               *queues]
    for i in range(nodes):
        cluster += [node(f"node-{i:05d}"), gpu_slice(f"node-{i:05d}", 8)]
    groups, measured = [], []
    for g in range(nodes):
        groups.append({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
                       "metadata": {"name": f"gang-{g:05d}", "namespace": NAMESPACE},
                       "spec": {"minMember": 8, "queue": f"q{g % 10}"}})
        measured += [pod(f"gang-{g:05d}-{m}", template="one-gpu",
                         labels={"drasched.io/pod-group": f"gang-{g:05d}"}) for m in range(8)]
    return Workload("gangs", f"{nodes} nodes x 8 devices; {nodes} gangs of 8 across 10 queues",
                    cluster + groups, [], measured, drasched_only=True)


WORKLOADS: dict[str, Callable[[int], Workload]] = {
    "claim-template": claim_template_workload,
    "claim-template-steady": claim_template_steady_workload,
    "match-attribute": match_attribute_workload,
    "extended-resource": extended_resource_workload,
    "partitionable": partitionable_workload,
    "gangs": gangs_workload,
}
DEFAULT_NODES = {"claim-template": 500, "claim-template-steady": 500, "match-attribute": 500, "extended-resource": 500,
                 "partitionable": 100, "gangs": 1000}
