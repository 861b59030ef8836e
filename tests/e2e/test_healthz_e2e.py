"""``/healthz`` of ``drasched serve`` against a real kube-apiserver: a kind whose CRD is not
installed fails it, naming the kind, until the CRD is installed (tests/unit/serve/test_healthz_kinds.py
runs the same over the memory store, 403s included)."""

from __future__ import annotations

import contextlib
import time
import urllib.error
import urllib.request

import pytest

from drasched.api import kinds
from drasched.api.errors import NotFound
from drasched.api.kinds import ResourceType
from drasched.serve.main import _Health, start_http
from drasched.serve.metrics import Metrics
from drasched.store.informer import SharedInformers
from drasched.testing.apiserver import CRD_PATH, LocalCluster

pytestmark = pytest.mark.e2e

GROUP = "healthz.e2e.drasched.io"
WIDGET = ResourceType(GROUP, "v1", "Widget", "widgets", True)
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def _get(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _until(port: int, code: int, timeout: float) -> tuple[int, str]:
    deadline = time.monotonic() + timeout
    got = _get(port)
    while got[0] != code and time.monotonic() < deadline:
        time.sleep(0.1)
        got = _get(port)
    return got


def test_healthz_fails_while_a_crd_is_missing_and_recovers_once_installed(local_cluster: LocalCluster) -> None:
    store = local_cluster.store()
    informers = SharedInformers(store, watch_timeout=2.0)
    server = start_http(0, Metrics(), _Health(informers), host="127.0.0.1")
    port = server.server_address[1]
    try:
        informers.start([kinds.NODE, WIDGET])
        code, body = _until(port, 500, 30)
        assert code == 500, body
        assert body.startswith(f"cannot list Widget ({GROUP}/v1 widgets): "), body
        assert "not served by this API server" in body
        assert "Node" not in body

        store.request("POST", CRD_PATH, CRD)
        assert _until(port, 200, 60) == (200, "ok")  # the feed's retries (5 s apart at most) list it now
        assert informers.feed(WIDGET).synced
    finally:
        server.shutdown()
        informers.stop(join_timeout=0)
        with contextlib.suppress(NotFound):
            store.request("DELETE", f"{CRD_PATH}/widgets.{GROUP}")
