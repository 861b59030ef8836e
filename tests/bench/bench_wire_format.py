"""What the API server's CPU owes to the wire format: JSON against protobuf, measured.

Run: python -m tests.bench.bench_wire_format [PODS] [ROUNDS]   (default 1000 pods, 3 rounds)

Starts a LocalCluster and, in each round, drives the same write load through it once per
setting, the settings in turn so that a slow minute of the machine hits them all: per pod a
create, three merge patches and a delete (the shape of a pod's writes under churn), from 8
threads. The settings differ only in what the server encodes:

* ``no watch``: nobody watches;
* ``watch json`` / ``watch protobuf``: two watches (pods, events) read in that encoding,
  the bytes counted and dropped;
* ``answers protobuf``: no watch, every write's answer asked as protobuf.

Prints the API server's and etcd's CPU per pod (``/proc``) for each setting and round, then
the median. Why: the issue asks for protobuf for built-in kinds, and decoding protobuf into
the wire-form dicts the scheduler reads would cost drasched's own CPU (no C codec does it);
the change is only worth that if the server's side falls. The writes' bodies stay JSON (a
merge patch has no protobuf form); the strict field validation that drasched asks on every
write is measured against none (``ignore validation``), since it is the part of decoding
a JSON body that protobuf would skip.
"""

from __future__ import annotations

import json
import ssl
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import urllib3

from drasched.bench.cluster import _proc_stats
from drasched.testing.apiserver import LocalCluster, ensure_namespace

NS = "bench-wire"
JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@dataclass(frozen=True)
class Setting:
    name: str
    watch: str | None
    """Accept header of the two watches, or None for no watch."""
    answers: str = JSON
    validation: str = "Strict"


SETTINGS = (
    Setting("no watch", None),
    Setting("watch json", JSON),
    Setting("watch protobuf", PROTOBUF + ";stream=watch"),
    Setting("answers protobuf", None, answers=PROTOBUF),
    Setting("ignore validation", None, validation="Ignore"),
)


def _pod(name: str) -> dict[str, object]:
    """A pod of the claim-template workload's shape (never scheduled: no scheduler runs)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": {"app": "bench", "team": "a"}},
            "spec": {"schedulerName": "nobody",
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                                   "claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]}}


class Load:
    """The writes of one setting, and the watches it asks for."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.url = cluster.url
        ctx = ssl.create_default_context(cafile=cluster.ca_file)
        self.http = urllib3.PoolManager(maxsize=16, ssl_context=ctx)
        self.auth = {"Authorization": f"Bearer {cluster.token}"}
        self.watched = 0

    def _watch(self, path: str, accept: str, stop: threading.Event) -> None:
        while not stop.is_set():
            resp = self.http.request("GET", f"{self.url}{path}?watch=1&timeoutSeconds=5",
                                     headers={**self.auth, "Accept": accept}, preload_content=False)
            for chunk in resp.stream(65536):
                self.watched += len(chunk)
                if stop.is_set():
                    break
            resp.release_conn()

    def _one(self, name: str, setting: Setting) -> None:
        hdr = {**self.auth, "Accept": setting.answers}
        query = f"?fieldValidation={setting.validation}"
        base = f"{self.url}/api/v1/namespaces/{NS}/pods"
        resp = self.http.request("POST", base + query, body=json.dumps(_pod(name)).encode(),
                                 headers={**hdr, "Content-Type": JSON})
        assert resp.status == 201, resp.data[:300]
        for k in range(3):
            patch = json.dumps({"metadata": {"annotations": {f"step-{k}": "x" * 40}}}).encode()
            resp = self.http.request("PATCH", f"{base}/{name}{query}", body=patch,
                                     headers={**hdr, "Content-Type": "application/merge-patch+json"})
            assert resp.status == 200, resp.data[:300]
        resp = self.http.request("DELETE", f"{base}/{name}?gracePeriodSeconds=0", headers=hdr)
        assert resp.status == 200, resp.data[:300]

    def run(self, setting: Setting, names: list[str]) -> None:
        stop = threading.Event()
        watchers = [threading.Thread(target=self._watch, args=(path, setting.watch, stop), daemon=True)
                    for path in ("/api/v1/pods", "/api/v1/events") if setting.watch]
        for t in watchers:
            t.start()
        time.sleep(0.5)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: self._one(n, setting), names))
        time.sleep(0.5)  # the last events reach the watches
        stop.set()
        for t in watchers:
            t.join()


def main(argv: list[str]) -> None:
    pods = int(argv[0]) if argv else 1000
    rounds = int(argv[1]) if len(argv) > 1 else 3
    per_pod: dict[str, list[float]] = {s.name: [] for s in SETTINGS}
    with LocalCluster() as cluster:
        ensure_namespace(cluster.store(), NS)
        etcd_pid, apiserver_pid = cluster.pids()
        load = Load(cluster)
        load.run(SETTINGS[0], [f"warm-{i}" for i in range(200)])
        for r in range(rounds):
            for setting in SETTINGS:
                before = _proc_stats(apiserver_pid)[0], _proc_stats(etcd_pid)[0]
                load.watched = 0
                load.run(setting, [f"r{r}-{setting.name.replace(' ', '-')}-{i}" for i in range(pods)])
                api = _proc_stats(apiserver_pid)[0] - before[0]
                etcd = _proc_stats(etcd_pid)[0] - before[1]
                per_pod[setting.name].append(1000 * api / pods)
                print(f"round {r + 1} {setting.name:<18} kube-apiserver {1000 * api / pods:6.2f} ms/pod  "
                      f"etcd {1000 * etcd / pods:5.2f} ms/pod  watched {load.watched / 1e6:5.1f} MB", flush=True)
    print("median kube-apiserver CPU per pod (5 writes):")
    for name, values in per_pod.items():
        print(f"  {name:<18} {statistics.median(values):6.2f} ms  ({', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main(sys.argv[1:])
