"""Client-library measurement: list N pods from a real kube-apiserver, decode them, and hold them.

Run: python -m tests.bench.bench_client [N]   (default 5000; needs lightkube for its row:
``pip install lightkube``; the row is left out without it)
Starts a LocalCluster (etcd + kube-apiserver on loopback), creates N realistic pods, then
lists them (pages of 500) with: drasched's KubeStore (httpx + json), httpx + msgspec into
dicts, and lightkube's typed client. Prints seconds, pods/s and memory per pod held.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import msgspec

from drasched.api import kinds
from drasched.testing.apiserver import LocalCluster, ensure_namespace
from tests.bench.bench_models import realistic_pod

NS = "bench-client"


def _pod(i: int) -> dict[str, Any]:
    p = realistic_pod(i)
    md = p["metadata"]
    md["namespace"] = NS
    for k in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences"):
        md.pop(k, None)
    p.pop("status", None)
    p["spec"].pop("priorityClassName", None)
    return p


def _measure(label: str, fn: Callable[[], list[Any]], n: int) -> None:
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    items = fn()
    dt = time.perf_counter() - t0
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(items) == n, (label, len(items))
    print(f"{label:<44} {dt:6.2f} s {n / dt:>9,.0f} pods/s {held / n:7.0f} bytes/pod held")


def main(n: int = 5000) -> None:
    with LocalCluster() as cluster:
        store = cluster.store()
        ensure_namespace(store, NS)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: store.create(_pod(i)), range(n)))
        print(f"{n:,} pods in a real kube-apiserver; list in pages of 500")
        _measure("drasched KubeStore.list (httpx + json)", lambda: store.list(kinds.POD, NS).items, n)

        decoder = msgspec.json.Decoder()
        client = httpx.Client(base_url=cluster.url, verify=cluster.ca_file,
                              headers={"Authorization": f"Bearer {cluster.token}"})

        def raw() -> list[Any]:
            items: list[Any] = []
            cont = ""
            while True:
                params = {"limit": "500", **({"continue": cont} if cont else {})}
                body = decoder.decode(client.get(f"/api/v1/namespaces/{NS}/pods", params=params).content)
                items += body["items"]
                cont = body["metadata"].get("continue", "")
                if not cont:
                    return items

        _measure("httpx + msgspec -> dicts", raw, n)
        try:
            import lightkube
            from lightkube.resources.core_v1 import Pod
        except ImportError:
            print("lightkube not installed: its row is left out")
            return
        lk = lightkube.Client(lightkube.KubeConfig.from_file(cluster.kubeconfig_path), field_manager="bench")
        _measure("lightkube typed list (lightkube-models)",
                 lambda: list(lk.list(Pod, namespace=NS, chunk_size=500)), n)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
