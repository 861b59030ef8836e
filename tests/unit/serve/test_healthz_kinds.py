"""``/healthz`` fails, naming the kinds, while a kind serve needs cannot be listed (drasched's
CRDs not installed, RBAC missing), and is ok again once every kind lists.

kube-scheduler's ``/readyz`` likewise holds readiness back until its informers have synced
(``sched-handler-sync``); the chart's liveness and readiness probes both ask ``/healthz``
(deploy/helm/drasched/templates/deployment.yaml), so this is where a missing CRD shows.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from drasched.api import kinds
from drasched.api.errors import ApiError, Forbidden, NotFound
from drasched.api.kinds import ResourceType
from drasched.serve.main import _Health, start_http
from drasched.serve.metrics import Metrics
from drasched.store.base import ListResult
from drasched.store.informer import SharedInformers
from tests.unit.serve.blocking_store import BlockingStore


class MissingKinds(BlockingStore):
    """Lists of ``missing`` kinds answer 404, as a server without the CRD; ``forbidden`` ones 403."""

    def __init__(self) -> None:
        super().__init__()
        self.missing: set[ResourceType] = set()
        self.forbidden: set[ResourceType] = set()

    def list(self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> ListResult:
        if rt in self.missing:
            raise NotFound("the server could not find the requested resource")
        if rt in self.forbidden:
            raise Forbidden(f'{rt.plural}.{rt.group} is forbidden: User "drasched" cannot list resource')
        return super().list(rt, namespace, label_selector, field_selector)


def _get(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _until(port: int, code: int, timeout: float = 10.0) -> tuple[int, str]:
    deadline = time.monotonic() + timeout
    got = _get(port)
    while got[0] != code and time.monotonic() < deadline:
        time.sleep(0.05)
        got = _get(port)
    return got


def test_healthz_names_the_kinds_that_cannot_be_listed_until_they_can() -> None:
    store = MissingKinds()
    store.missing = {kinds.QUEUE, kinds.POD_GROUP}
    store.forbidden = {kinds.BIND_REQUEST}
    informers = SharedInformers(store, watch_timeout=0.2)  # type: ignore[arg-type]
    health = _Health(informers)
    server = start_http(0, Metrics(), health, host="127.0.0.1")
    try:
        port = server.server_address[1]
        informers.start([kinds.NODE, kinds.QUEUE, kinds.POD_GROUP, kinds.BIND_REQUEST])
        code, body = _until(port, 500)
        assert code == 500
        deadline = time.monotonic() + 10
        while body.count("cannot list") < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
            body = _get(port)[1]
        lines = body.splitlines()
        assert [line.split(" (")[0] for line in lines] == [
            "cannot list Queue", "cannot list PodGroup", "cannot list BindRequest"], body
        assert "install drasched's CRDs" in lines[0] and "scheduling.drasched.io/v1alpha1 queues" in lines[0]
        assert "forbidden" in lines[2]
        assert "Node" not in body  # served: no problem

        store.missing = set()  # the CRDs are installed now: the informers' retries list them
        code, body = _until(port, 500)
        deadline = time.monotonic() + 10
        while "PodGroup" in body and time.monotonic() < deadline:
            time.sleep(0.05)
            body = _get(port)[1]
        assert body.splitlines() == [line for line in body.splitlines() if "BindRequest" in line], body

        store.forbidden = set()  # and the ServiceAccount may list BindRequests
        assert _until(port, 200) == (200, "ok")
    finally:
        server.shutdown()
        informers.stop(join_timeout=2)


def test_a_server_that_does_not_answer_is_no_list_error() -> None:
    """Only what an operator must mend fails the probe: a 404 or a 403, not a timeout (a
    restart would not help, and the reflector waits the server out on its own)."""
    store = MissingKinds()
    informers = SharedInformers(store, watch_timeout=0.2)  # type: ignore[arg-type]
    feed = informers.feed(kinds.NODE)
    try:
        assert feed.wait_synced(5)
        feed.reflector.list_error = ApiError("connection refused", 0, "ServiceUnavailable")
        assert informers.list_errors() == []
        feed.reflector.list_error = NotFound("the server could not find the requested resource")
        assert informers.list_errors() and informers.list_errors()[0].startswith("Node (v1 nodes)")
    finally:
        informers.stop(join_timeout=2)
