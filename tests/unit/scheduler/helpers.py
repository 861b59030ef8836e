"""Small builders for scheduler unit tests: wire-form objects and a snapshot from them."""

from __future__ import annotations

from typing import Any

from drasched.api.meta import format_time
from drasched.scheduler.cache import SchedulerCache
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.cycle import CycleResult, run_cycle
from drasched.scheduler.session import Session
from drasched.scheduler.snapshot import Snapshot, SnapshotBuilder
from drasched.sim.clock import VirtualClock
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]
CLASS = "gpu.example.com"


def node(name: str, labels: dict[str, str] | None = None, gpu: int | None = None, cpu: str = "32",
         memory: str = "64Gi", pods: str | None = "110", taints: list[Obj] | None = None,
         unschedulable: bool = False) -> Obj:
    alloc: dict[str, str] = {"cpu": cpu, "memory": memory}
    if pods is not None:
        alloc["pods"] = pods
    if gpu is not None:
        alloc["nvidia.com/gpu"] = str(gpu)
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec, "status": {"allocatable": alloc}}


def pod(name: str, *, ns: str = "default", cpu: str | None = None, gpu: int | None = None, queue: str | None = None,
        group: str | None = None, node_name: str | None = None, claims: list[Obj] | None = None,
        priority: int | None = None, created: str | None = None, phase: str | None = None, **spec: Any) -> Obj:
    labels: dict[str, str] = {}
    if queue:
        labels["drasched.io/queue"] = queue
    if group:
        labels["drasched.io/pod-group"] = group
    req: dict[str, str] = {}
    if cpu:
        req["cpu"] = cpu
    if gpu:
        req["nvidia.com/gpu"] = str(gpu)
    # An extended resource's request must equal its limit (the API server refuses a request alone).
    resources: Obj = {"requests": req, **({"limits": {"nvidia.com/gpu": str(gpu)}} if gpu else {})}
    md: Obj = {"name": name, "namespace": ns, "labels": labels}
    if created:
        md["creationTimestamp"] = created
    body: Obj = {"schedulerName": "drasched",
                 "containers": [{"name": "c", "image": "busybox", "resources": resources}], **spec}
    if node_name:
        body["nodeName"] = node_name
    if claims:
        body["resourceClaims"] = claims
    if priority is not None:
        # The API server computes spec.priority from a class (World creates the class).
        body["priorityClassName"] = priority_class_name(priority)
    out: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": body}
    if phase:
        out["status"] = {"phase": phase}
    return out


def priority_class_name(value: int) -> str:
    return f"priority-{value}"


def priority_class(value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": priority_class_name(value)}, "value": value}


def queue(name: str, parent: str | None = None, resources: Obj | None = None, priority: int | None = None) -> Obj:
    spec: Obj = {}
    if parent:
        spec["parentQueue"] = parent
    if resources:
        spec["resources"] = resources
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def podgroup(name: str, min_member: int, *, ns: str = "default", created: str | None = None, **spec: Any) -> Obj:
    md: Obj = {"name": name, "namespace": ns}
    if created:
        md["creationTimestamp"] = created
    return {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup", "metadata": md,
            "spec": {"minMember": min_member, **spec}}


def device_class(name: str = CLASS, driver: str = CLASS, ext: str | None = None) -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if ext:
        spec["extendedResourceName"] = ext
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def resource_slice(node_name: str, devices: int, driver: str = CLASS) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-{driver}"},
            "spec": {"driver": driver, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"dev-{i}"} for i in range(devices)]}}


def claim(name: str, count: int = 1, cls: str = CLASS, ns: str = "default", allocation: Obj | None = None) -> Obj:
    out: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": cls, "count": count}}]}}}
    if allocation is not None:
        out["status"] = {"allocation": allocation}
    return out


def allocation(node_name: str, *devices: str, driver: str = CLASS) -> Obj:
    return {"devices": {"results": [{"request": "r", "driver": driver, "pool": node_name, "device": d}
                                    for d in devices]}}


class World:
    """A memory store holding ``objs``, with a cache that follows it."""

    def __init__(self, objs: list[Obj], config: SchedulerConfig | None = None) -> None:
        self.clock = VirtualClock()
        self.store = MemoryStore(clock=self.clock.now, auto_namespaces=True)
        classes = {o["spec"]["priorityClassName"] for o in objs
                   if o.get("kind") == "Pod" and str(o["spec"].get("priorityClassName", "")).startswith("priority-")}
        for name in sorted(classes):
            self.store.create(priority_class(int(name.removeprefix("priority-"))))
        for o in objs:
            created = self.store.create({k: v for k, v in o.items() if k != "status"})
            if "status" in o:
                created["status"] = {**(created.get("status") or {}), **o["status"]}
                self.store.update_status(created)
        self.config = config or SchedulerConfig.embedded()
        self.cache = SchedulerCache()
        self.builder = SnapshotBuilder(self.config)

    def snapshot(self) -> Snapshot:
        self.cache.sync(self.store)
        return self.builder.build(self.cache)

    def session(self) -> Session:
        return Session(self.snapshot(), self.config)

    def cycle(self) -> CycleResult:
        return run_cycle(self.snapshot(), self.config, format_time(self.clock.now()))


def placed_nodes(result: CycleResult) -> dict[str, str]:
    """Pod name -> node name of every placement in a cycle."""
    return {br["spec"]["podName"]: br["spec"]["selectedNode"] for br in result.bind_requests}


def messages(result: CycleResult) -> dict[str, str]:
    """Pod name -> PodScheduled=False message written by a cycle."""
    return {p.name: c["message"] for p, c in result.pod_conditions}


def no_victims(fit_error: str, tried: int, nodes: int, dra: str | None = "no new claims to deallocate") -> str:
    """``fit_error`` (``0/N nodes are available: ...``) with upstream's PostFilter statuses after it
    (``FitError.Error()``) for a pod without a PodGroup that no pod could make room for:
    DynamicResources' ``dra`` (None: the plugin disabled), then DefaultPreemption's dry run, which
    found no victim on the ``tried`` nodes and did not try the others."""
    items = [f"{n} {text}" for n, text in ((tried, "No preemption victims found for incoming pod"),
                                           (nodes - tried, "Preemption is not helpful for scheduling")) if n]
    preemption = f"preemption: 0/{nodes} nodes are available: {', '.join(sorted(items))}."
    return f"{fit_error} {dra}, {preemption}" if dra else f"{fit_error} {preemption}"
