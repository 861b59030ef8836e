"""The cost of a cycle that places one new pod in a large, settled cluster.

Run: python -m tests.bench.bench_one_pod_cycle [--nodes 5000] [--pods 50000] [--gpus 8] [--repeat 3] [--serve]
     [--constrained]

Every node publishes ``--gpus`` devices in a ResourceSlice; ``--pods`` pods are already
bound, spread evenly over the nodes. The cache is filled and one cycle settles the cluster
(nothing to place). Then, ``--repeat`` times, one new pod is created and the next cycle is
measured: the cache taking the watch event, the snapshot, the cycle. Reported in CPU seconds
of this process (``time.process_time``), so other jobs on a shared machine do not count.

With ``--constrained`` the bound pods carry one of 50 ``app`` labels and each new pod has a
required pod anti-affinity and a DoNotSchedule topology spread constraint (per hostname and
per rack) over its own ``app`` label: the cycle then counts pods per node for its terms.

With ``--serve`` the cluster is a real kube-apiserver (started on loopback) and the cycle reads
it as ``drasched serve`` does: shared informers feed the cache, the scheduler's thread syncs
it, builds the snapshot and runs the cycle. Reported in CPU seconds of that thread
(``time.thread_time``); the informers decode each watch event in threads of their own.
"""

from __future__ import annotations

import argparse
import gc
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
from tests.bench.bench_scheduler import CLASS, _node, _slice

Obj = dict[str, Any]


def _pod(name: str, node: str | None, app: str | None = None, constrained: bool = False) -> Obj:
    spec: Obj = {"schedulerName": "drasched",
                 "containers": [{"name": "main", "image": "app",
                                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    if node is not None:
        spec["nodeName"] = node
    metadata: Obj = {"name": name, "namespace": "bench"}
    if app is not None:
        metadata["labels"] = {"app": app}
    if constrained:
        selector = {"matchLabels": {"app": app}}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}]}}
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
            for key in ("kubernetes.io/hostname", "rack")]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def build_store(nodes: int, pods: int, gpus: int, labelled: bool = False) -> MemoryStore:
    clock = VirtualClock()
    store = MemoryStore(clock=clock.now, auto_namespaces=True)
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{CLASS}"'}}]}})
    for i in range(nodes):
        store.create(_node(i))
        store.create(_slice(i, gpus))
    for p in range(pods):
        bound = store.create(_pod(f"bound-{p:06d}", f"node-{p % nodes:05d}", f"app-{p % 50}" if labelled else None))
        bound["status"]["phase"] = "Running"
        store.update_status(bound)
    return store


def measure(store: MemoryStore, cache: SchedulerCache, builder: SnapshotBuilder, config: SchedulerConfig,
            name: str, constrained: bool = False) -> tuple[float, float, float, int]:
    """Create one pod, then run the next cycle: CPU seconds of (cache sync, snapshot, cycle), placed."""
    store.create(_pod(name, None, "app-7" if constrained else None, constrained))
    now = format_time(store._clock())
    t0 = time.process_time()
    cache.sync(store)
    t1 = time.process_time()
    snap = builder.build(cache)
    t2 = time.process_time()
    result = run_cycle(snap, config, now)
    t3 = time.process_time()
    for br in result.bind_requests:
        store.create(br)
    return t1 - t0, t2 - t1, t3 - t2, len(result.placements)


def fill_server(store: Any, nodes: int, pods: int, gpus: int, labelled: bool = False) -> None:
    """The same cluster in a real API server, created ``WRITERS`` requests at a time."""
    from drasched.bench.cluster import _create_all, prepare_nodes
    from drasched.testing.apiserver import ensure_namespace

    ensure_namespace(store, "bench")
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{CLASS}"'}}]}})
    node_objs = [_node(i) for i in range(nodes)]
    _create_all(store, node_objs)
    prepare_nodes(store, node_objs)
    _create_all(store, [_slice(i, gpus) for i in range(nodes)])
    _create_all(store, [_pod(f"bound-{p:06d}", f"node-{p % nodes:05d}", f"app-{p % 50}" if labelled else None)
                        for p in range(pods)])


def main_serve(args: argparse.Namespace) -> int:
    """The serve path: a real API server, shared informers, the cycle in this thread."""
    from drasched.api import kinds
    from drasched.scheduler.cache import WATCHED
    from drasched.store.informer import SharedInformers
    from drasched.testing.apiserver import LocalCluster

    with LocalCluster() as cluster:
        store = cluster.store()
        t0 = time.monotonic()
        fill_server(store, args.nodes, args.pods, args.gpus, args.constrained)
        print(f"python {sys.version.split()[0]}; a real API server; {args.nodes} nodes x {args.gpus} GPUs (DRA), "
              f"{args.pods} bound pods (created in {time.monotonic() - t0:.0f} s)")
        informers = SharedInformers(store, watch_timeout=30.0)
        informers.start(WATCHED)
        if not informers.wait_for_sync(600):
            raise SystemExit("the informers did not finish their first list")
        config = SchedulerConfig.embedded()
        cache = SchedulerCache()
        builder = SnapshotBuilder(config)
        t0 = time.thread_time()
        cache.sync(store, informers)
        settle = run_cycle(builder.build(cache), config, cluster_now())
        print(f"settling cycle (first snapshot + cycle)  {(time.thread_time() - t0) * 1000:9.1f} ms CPU "
              f"(placed {len(settle.placements)})")
        feed = informers.feed(kinds.POD)
        for i in range(args.repeat):
            name = f"new-{i:03d}"
            store.create(_pod(name, None, "app-7" if args.constrained else None, args.constrained))
            while feed.get(name, "bench") is None:  # the watch event: decoded in the informer's thread
                time.sleep(0.001)
            t0 = time.thread_time()
            cache.sync(store, informers)
            t1 = time.thread_time()
            snap = builder.build(cache)
            t2 = time.thread_time()
            result = run_cycle(snap, config, cluster_now())
            t3 = time.thread_time()
            for br in result.bind_requests:
                store.create(br)
            print(f"one new pod #{i}: {(t3 - t0) * 1000:9.1f} ms CPU  (cache {(t1 - t0) * 1000:.1f}, snapshot "
                  f"{(t2 - t1) * 1000:.1f}, cycle {(t3 - t2) * 1000:.1f}; placed {len(result.placements)})")
            deadline = time.monotonic() + 60
            while informers.feed(kinds.BIND_REQUEST).get(name, "bench") is None and time.monotonic() < deadline:
                time.sleep(0.001)  # the next cycle sees its BindRequest, as serve's would
        informers.stop()
    return 0


def cluster_now() -> str:
    from datetime import UTC, datetime

    return format_time(datetime.now(UTC))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--serve", action="store_true", help="against a real API server, through shared informers")
    ap.add_argument("--constrained", action="store_true",
                    help="labelled pods; each new pod with required anti-affinity and topology spread")
    args = ap.parse_args(argv)
    if args.serve:
        return main_serve(args)
    store = build_store(args.nodes, args.pods, args.gpus, args.constrained)
    config = SchedulerConfig.embedded()
    cache = SchedulerCache()
    builder = SnapshotBuilder(config)
    cache.sync(store)
    gc.collect()
    gc.freeze()
    t0 = time.process_time()
    settle = run_cycle(builder.build(cache), config, format_time(store._clock()))
    t_settle = time.process_time() - t0
    print(f"python {sys.version.split()[0]}; {args.nodes} nodes x {args.gpus} GPUs (DRA), {args.pods} bound pods")
    print(f"settling cycle (first snapshot + cycle)  {t_settle * 1000:9.1f} ms CPU (placed {len(settle.placements)})")
    for i in range(args.repeat):
        sync, snap, cycle, placed = measure(store, cache, builder, config, f"new-{i:03d}", args.constrained)
        total = sync + snap + cycle
        print(f"one new pod #{i}: {total * 1000:9.1f} ms CPU  (cache {sync * 1000:.1f}, snapshot "
              f"{snap * 1000:.1f}, cycle {cycle * 1000:.1f}; placed {placed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
