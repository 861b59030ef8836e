"""Scheduler throughput: one cycle over a cluster full of pending DRA gangs.

Run: python -m tests.bench.bench_scheduler [--nodes 1000] [--gpus 8] [--gangs 1000] [--gang-size 10] [--queues 10]

Every node publishes ``--gpus`` devices of class gpu.example.com in a ResourceSlice; every
pod has a claim from a template (the claims exist, as the claim controller would have made
them) and belongs to a gang (PodGroup, minMember = gang size) of one of ``--queues``
queues. Reported: cache fill, snapshot build, the cycle (fair share, allocate, allocator),
BindRequest writes to the in-memory store, the next cycle (which sees those writes and has
only unschedulable pods left), pods placed per second over snapshot + cycle, and peak
resident memory of the process.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from typing import Any

from drasched.api.meta import format_time
from drasched.scheduler.cache import SchedulerCache
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.cycle import run_cycle
from drasched.scheduler.snapshot import SnapshotBuilder
from drasched.sim.clock import VirtualClock
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]
CLASS = "gpu.example.com"


def _node(i: int) -> Obj:
    name = f"node-{i:05d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "rack": f"rack-{i // 16:03d}"}},
            "status": {"allocatable": {"cpu": "128", "memory": "1Ti", "pods": "110"}}}


def _slice(i: int, gpus: int) -> Obj:
    name = f"node-{i:05d}"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"},
            "spec": {"driver": CLASS, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{d}", "attributes": {"model": {"string": "h100"}},
                                  "capacity": {"memory": {"value": "80Gi"}}} for d in range(gpus)]}}


def build_store(nodes: int, gpus: int, gangs: int, gang_size: int, queues: int) -> MemoryStore:
    clock = VirtualClock()
    store = MemoryStore(clock=clock.now, auto_namespaces=True)
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{CLASS}"'}}]}})
    for i in range(nodes):
        store.create(_node(i))
        store.create(_slice(i, gpus))
    quota = {f"deviceclass.resource.kubernetes.io/{CLASS}": {"quota": str(nodes * gpus // queues)}}
    for q in range(queues):
        store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": f"q{q}"},
                      "spec": {"resources": quota}})
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "one-gpu", "namespace": "bench"},
                  "spec": {"spec": {"devices": {"requests": [
                      {"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}}})
    for g in range(gangs):
        gname = f"gang-{g:05d}"
        store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
                      "metadata": {"name": gname, "namespace": "bench"},
                      "spec": {"minMember": gang_size, "queue": f"q{g % queues}"}})
        for k in range(gang_size):
            pname = f"{gname}-{k:02d}"
            pod = store.create({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pname, "namespace": "bench", "labels": {"drasched.io/pod-group": gname}},
                "spec": {"schedulerName": "drasched",
                         "containers": [{"name": "main", "image": "trainer",
                                         "resources": {"requests": {"cpu": "4", "memory": "32Gi"},
                                                       "claims": [{"name": "gpu"}]}}],
                         "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}})
            claim = store.create({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": f"{pname}-gpu", "namespace": "bench",
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pname,
                                                  "uid": pod["metadata"]["uid"], "controller": True}]},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}})
            pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
            store.update_status(pod)
    return store


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--gangs", type=int, default=1000)
    ap.add_argument("--gang-size", type=int, default=10)
    ap.add_argument("--queues", type=int, default=10)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    store = build_store(args.nodes, args.gpus, args.gangs, args.gang_size, args.queues)
    t_build = time.perf_counter() - t0
    rss_store = _rss_mib()
    config = SchedulerConfig.embedded()
    cache = SchedulerCache()
    t0 = time.perf_counter()
    cache.sync(store)
    t_cache = time.perf_counter() - t0
    gc.collect()
    gc.freeze()  # long-lived cache objects need not be scanned again by the collector
    t0 = time.perf_counter()
    builder = SnapshotBuilder(config)
    snap = builder.build(cache)
    t_snap = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = run_cycle(snap, config, format_time(store._clock()))
    t_cycle = time.perf_counter() - t0
    t0 = time.perf_counter()
    for br in result.bind_requests:
        store.create(br)
    t_write = time.perf_counter() - t0
    t0 = time.perf_counter()
    cache.sync(store)
    snap2 = builder.build(cache)
    again = run_cycle(snap2, config, format_time(store._clock()))
    t_again = time.perf_counter() - t0
    placed = len(result.placements)
    pods = args.gangs * args.gang_size
    stats = snap.allocator.stats
    print(f"python {sys.version.split()[0]}; {args.nodes} nodes x {args.gpus} GPUs (DRA), {pods} pending pods in "
          f"{args.gangs} gangs of {args.gang_size}, {args.queues} queues, one claim per pod")
    print(f"store filled                 {t_build:8.2f} s   (not measured below)")
    print(f"cache fill (list)            {t_cache:8.2f} s")
    print(f"snapshot                     {t_snap:8.2f} s")
    print(f"cycle (fair share, allocate) {t_cycle:8.2f} s   allocator calls {stats['allocate_calls']}")
    print(f"BindRequest writes           {t_write:8.2f} s   ({placed} objects)")
    print(f"placed {placed}/{pods} pods ({placed // max(args.gang_size, 1)} gangs), unschedulable "
          f"{len(result.pod_conditions)}")
    print(f"next cycle (writes seen)     {t_again:8.2f} s   (watch, incremental snapshot, cycle; placed "
          f"{len(again.placements)})")
    print(f"pods placed per second       {placed / (t_snap + t_cycle):8.0f}   (snapshot + cycle)")
    print(f"peak RSS                     {_rss_mib():8.0f} MiB (store and objects alone: {rss_store:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
