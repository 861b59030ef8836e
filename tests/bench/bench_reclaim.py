"""Reclaim at scale, embedded: a full cluster gives back half of itself to a second queue.

Run: python -m tests.bench.bench_reclaim [--nodes 500] [--gpus 8] [--a-pods 4000] [--b-pods 2000]
     [--gpu-route dra|device-plugin] [--stop 10s]

``--nodes`` nodes with ``--gpus`` GPUs each (DRA: a ResourceSlice per node and a GPU
DeviceClass; device plugin: ``nvidia.com/gpu`` in the node's allocatable). Queue A runs
``--a-pods`` one-GPU pods (DRA: a claim from a template each) until the cluster is full;
then queue B, with the same (default) share settings, submits ``--b-pods``. The whole
embedded control plane runs (claim controller, scheduler, binder, simulated kubelets);
evicted pods take ``--stop`` of virtual time to stop (``drasched.io/sim-termination``).

Reported for the second phase: wall time and virtual time until B holds its fair share
(all of B's pods Running), scheduler cycles and the longest one, evictions, and the peak
resident memory of the process (both phases).
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from collections import Counter
from typing import Any

from drasched.api import kinds
from drasched.scheduler.controller import SchedulerController
from drasched.sim.runner import Simulation

Obj = dict[str, Any]
CLASS = "gpu.example.com"
NS = "bench"


def cluster(nodes: int, gpus: int, route: str) -> list[Obj]:
    objs: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    if route == "dra":
        objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
                     "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{CLASS}"'}}],
                              "extendedResourceName": "nvidia.com/gpu"}})
        objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": "one-gpu", "namespace": NS},
                     "spec": {"spec": {"devices": {"requests": [
                         {"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}}})
    for i in range(nodes):
        name = f"node-{i:04d}"
        alloc = {"cpu": "128", "memory": "1Ti", "pods": "110"}
        if route == "device-plugin":
            alloc["nvidia.com/gpu"] = str(gpus)
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name}}, "status": {"allocatable": alloc}})
        if route == "dra":
            objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                         "metadata": {"name": f"{name}-gpus"},
                         "spec": {"driver": CLASS, "nodeName": name,
                                  "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                                  "devices": [{"name": f"gpu-{d}"} for d in range(gpus)]}})
    for q in ("queue-a", "queue-b"):
        objs.append({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": q},
                     "spec": {}})
    return objs


def pods(prefix: str, queue: str, count: int, route: str, stop: str) -> list[Obj]:
    out = []
    for k in range(count):
        container: Obj = {"name": "main", "image": "trainer", "resources": {"requests": {"cpu": "1"}}}
        spec: Obj = {"schedulerName": "drasched", "containers": [container], "terminationGracePeriodSeconds": 30}
        if route == "dra":
            container["resources"]["claims"] = [{"name": "gpu"}]
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        else:
            container["resources"]["requests"]["nvidia.com/gpu"] = "1"
            container["resources"]["limits"] = {"nvidia.com/gpu": "1"}
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"{prefix}-{k:05d}", "namespace": NS, "labels": {"drasched.io/queue": queue},
                                 "annotations": {"drasched.io/sim-termination": stop}},
                    "spec": spec})
    return out


def running(sim: Simulation, prefix: str) -> int:
    return sum(1 for p in sim.store.iter_kind(kinds.POD)
               if p["metadata"]["name"].startswith(prefix) and (p.get("status") or {}).get("phase") == "Running")


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--a-pods", type=int, default=4000)
    ap.add_argument("--b-pods", type=int, default=2000)
    ap.add_argument("--gpu-route", choices=("dra", "device-plugin"), default="dra")
    ap.add_argument("--stop", default="10s", help="how long an evicted pod takes to stop (virtual time)")
    args = ap.parse_args(argv)

    sim = Simulation()
    t0 = time.perf_counter()
    sim.load(cluster(args.nodes, args.gpus, args.gpu_route)
             + pods("a", "queue-a", args.a_pods, args.gpu_route, args.stop))
    sim.run()
    t_fill = time.perf_counter() - t0
    a_running = running(sim, "a-")
    rss_fill = _rss_mib()
    gc.collect()
    gc.freeze()

    scheduler = next(c for c in sim.controllers if isinstance(c, SchedulerController))
    start_virtual = sim.clock.now()
    start_cycles = scheduler.cycles
    start_decisions = len(sim.ctx.decisions)
    t0 = time.perf_counter()
    sim.load(pods("b", "queue-b", args.b_pods, args.gpu_route, args.stop))
    target = args.b_pods  # B's fair share: half of the GPUs with equal shares, which is all it asks
    reached: tuple[float, float, int] | None = None
    longest = 0.0
    for _ in range(100_000):
        before = scheduler.cycles
        progressed = False
        for c in sim.controllers:
            progressed |= c.reconcile(sim.ctx)
        if scheduler.cycles > before and scheduler.last is not None:
            longest = max(longest, scheduler.last.seconds)
        if reached is None and running(sim, "b-") >= target:
            reached = (time.perf_counter() - t0, (sim.clock.now() - start_virtual).total_seconds(), sim.rounds)
        sim.rounds += 1
        if progressed:
            continue
        wake = sim.ctx.next_wakeup()
        if wake is None:
            break
        sim.clock.advance_to(wake)
    t_total = time.perf_counter() - t0
    actions = Counter(d.action for d in sim.ctx.decisions[start_decisions:] if d.controller == "scheduler")
    print(f"python {sys.version.split()[0]}; {args.nodes} nodes x {args.gpus} GPUs ({args.gpu_route}); queue A runs "
          f"{a_running} one-GPU pods, then queue B (equal share) submits {args.b_pods}; "
          f"evicted pods stop in {args.stop}")
    print(f"fill the cluster with A          {t_fill:8.2f} s wall   (not measured below)")
    if reached is None:
        print(f"B never reached its fair share: {running(sim, 'b-')} of {target} running")
    else:
        print(f"B holds its fair share after     {reached[0]:8.2f} s wall   {reached[1]:6.1f} s virtual")
    virtual = (sim.clock.now() - start_virtual).total_seconds()
    print(f"until quiescent                  {t_total:8.2f} s wall   {virtual:6.1f} s virtual")
    print(f"scheduler cycles                 {scheduler.cycles - start_cycles:8d}     longest {longest:.2f} s")
    print(f"evictions                        {actions['evict']:8d}     nominations {actions['nominate']}")
    print(f"pods running at the end          A {running(sim, 'a-')}, B {running(sim, 'b-')}")
    print(f"peak RSS                         {_rss_mib():8.0f} MiB   (after filling: {rss_fill:.0f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
