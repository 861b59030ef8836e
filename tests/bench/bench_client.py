"""Client-library measurement: list N pods from a real kube-apiserver, decode them, and hold them.

Run: python -m tests.bench.bench_client [N]   (default 5000; needs lightkube for its row:
``pip install lightkube``; the row is left out without it)
Starts a LocalCluster (etcd + kube-apiserver on loopback), creates N realistic pods, then
lists them (pages of 500) with: drasched's KubeStore (httpx + json), httpx + msgspec into
dicts, and lightkube's typed client. Prints seconds, pods/s and memory per pod held.

Run: python -m tests.bench.bench_client --requests [N]   (default 2000)
The client's CPU per request (``time.process_time`` of this process: the API server's work is
not in it) for N creates, N gets and N merge patches of realistic pods, one request after
another, then the same creates from 8 threads, for each transport and JSON codec: what
drasched's writers and reflectors pay per round trip.
"""

from __future__ import annotations

import gc
import json
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


class _Urllib3Client:
    """The bare minimum of a REST client over urllib3: one pool, keep-alive, a codec."""

    def __init__(self, cluster: LocalCluster, codec: str) -> None:
        import urllib3

        self.pool = urllib3.HTTPSConnectionPool(cluster.url.split("://", 1)[1].split(":")[0],
                                                int(cluster.url.rsplit(":", 1)[1]), maxsize=16,
                                                ca_certs=cluster.ca_file, cert_reqs="CERT_REQUIRED")
        self.headers = {"Authorization": f"Bearer {cluster.token}", "Accept": "application/json",
                        "Content-Type": "application/json"}
        self.encode, self.decode = ((msgspec.json.encode, msgspec.json.decode) if codec == "msgspec"
                                    else (lambda o: json.dumps(o).encode(), json.loads))

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        headers = {**self.headers, "Content-Type": content_type}
        resp = self.pool.request(method, path, body=None if body is None else self.encode(body), headers=headers)
        assert resp.status < 300, resp.data[:200]
        return self.decode(resp.data)


class _HttpxClient:
    def __init__(self, cluster: LocalCluster, codec: str) -> None:
        self.client = httpx.Client(base_url=cluster.url, verify=cluster.ca_file,
                                   headers={"Authorization": f"Bearer {cluster.token}"})
        self.encode, self.decode = ((msgspec.json.encode, msgspec.json.decode) if codec == "msgspec"
                                    else (lambda o: json.dumps(o).encode(), json.loads))

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        resp = self.client.request(method, path, content=None if body is None else self.encode(body),
                                   headers={"Content-Type": content_type})
        assert resp.status_code < 300, resp.text[:200]
        return self.decode(resp.content)


class _StoreClient:
    """drasched's KubeStore as it is (whatever transport and codec it uses), or over urllib3 alone."""

    def __init__(self, cluster: LocalCluster, urllib3_only: bool = False) -> None:
        if urllib3_only:
            import ssl

            from drasched.store.kube import KubeStore
            from drasched.store.transport import Urllib3Transport

            transport = Urllib3Transport(cluster.url, ssl.create_default_context(cafile=cluster.ca_file))
            self.store = KubeStore(cluster.url, token=cluster.token, ca_file=cluster.ca_file, transport=transport)
        else:
            self.store = cluster.store()

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        return self.store.request(method, path, body) if content_type == "application/json" else \
            self.store._request(method, path, None, body, content_type).json()


def _timed(fn: Callable[[int], Any], n: int, threads: int = 1) -> str:
    """Client CPU ms per request (wall ms per request in brackets)."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    if threads == 1:
        for i in range(n):
            fn(i)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(fn, range(n)))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return f"{1000 * cpu / n:6.3f} ({1000 * wall / n:5.2f})"


def _cost_row(label: str, client: Any, n: int, prefix: str) -> str:
    base = f"/api/v1/namespaces/{NS}/pods"
    pods, more = [_pod(i) for i in range(n)], [_pod(i) for i in range(n)]
    for p in pods:
        p["metadata"]["name"] = prefix + p["metadata"]["name"]
    for p in more:
        p["metadata"]["name"] = f"{prefix}x-{p['metadata']['name']}"
    names = [p["metadata"]["name"] for p in pods]
    create = _timed(lambda i: client.call("POST", base, pods[i]), n)
    get = _timed(lambda i: client.call("GET", f"{base}/{names[i]}"), n)
    patch = _timed(lambda i: client.call("PATCH", f"{base}/{names[i]}", {"metadata": {"labels": {"seen": "yes"}}},
                                         "application/merge-patch+json"), n)
    threaded = _timed(lambda i: client.call("POST", base, more[i]), n, threads=8)
    return f"{label:<22} {create:>14} {get:>14} {patch:>14} {threaded:>20}"


def request_cost(n: int = 2000) -> None:
    with LocalCluster() as cluster:
        ensure_namespace(cluster.store(), NS)
        clients: list[tuple[str, Callable[[], Any]]] = [
            ("KubeStore (as it is)", lambda: _StoreClient(cluster)),
            ("KubeStore over urllib3", lambda: _StoreClient(cluster, urllib3_only=True)),
            ("httpx + json", lambda: _HttpxClient(cluster, "json")),
            ("httpx + msgspec", lambda: _HttpxClient(cluster, "msgspec")),
            ("urllib3 + json", lambda: _Urllib3Client(cluster, "json")),
            ("urllib3 + msgspec", lambda: _Urllib3Client(cluster, "msgspec")),
        ]
        print(f"client CPU per request, {n} requests each, realistic pods (ms; wall ms in brackets)")
        print(f"{'client':<22} {'create':>14} {'get':>14} {'patch':>14} {'create x8 threads':>20}")
        for round_no, (label, make) in enumerate(clients):
            print(_cost_row(label, make(), n, f"r{round_no}-"), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--requests":
        request_cost(int(sys.argv[2]) if len(sys.argv) > 2 else 2000)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
