"""What changed while a shared informer's watch was down reaches its consumers, and a relist
hands them every object again, as client-go's reflector does: the relist's ``Replace`` on the
DeltaFIFO yields Deleted for what is gone and an update for every listed object, changed or
not (staging/src/k8s.io/client-go/tools/cache/delta_fifo.go), so a controller re-examines
every key after the API server comes back, not only those whose version moved.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.api.kinds import ResourceType
from drasched.store.base import ListResult, Obj, WatchEvent
from drasched.store.informer import InformedStore, Informer, SharedInformers
from tests.unit.serve.blocking_store import BlockingStore


def cm(name: str, value: str = "1") -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"v": value}}


def wait_until(cond: Any, timeout: float = 60.0) -> None:
    """Poll until ``cond()``; ``timeout`` is a hang guard, not a speed limit."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


class RestartingServer(BlockingStore):
    """A store whose API server can be taken away: while ``down`` every list and watch fails
    as :class:`~drasched.store.kube.KubeStore` reports a refused connection (503), and an
    open watch breaks at its next event. Writes by the test go to the data underneath (a
    second writer whose requests reached the server)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.refused = 0

    def _refuse(self, what: str) -> None:
        if self.down:
            self.refused += 1
            raise ApiError(f"{what}: no answer from the API server", code=503, reason="ServiceUnavailable")

    def list(self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> ListResult:
        self._refuse(f"list {rt.plural}")
        return super().list(rt, namespace, label_selector, field_selector)

    def watch(self, rt: ResourceType, resource_version: str, namespace: str | None = None,
              timeout_seconds: float = 1.0) -> Iterator[WatchEvent]:
        self._refuse(f"watch {rt.plural}")
        for event in super().watch(rt, resource_version, namespace, timeout_seconds):
            self._refuse(f"watch {rt.plural}")
            yield event

    def restart(self) -> None:
        """Back up, with a history that no longer covers the versions clients hold: a resumed
        watch gets 410 Gone, as from a restarted kube-apiserver's fresh watch cache."""
        self.inner.compact()
        self.down = False


@pytest.fixture
def server() -> RestartingServer:
    return RestartingServer()


@pytest.fixture
def informed(server: RestartingServer) -> Iterator[InformedStore]:
    store = InformedStore(server, SharedInformers(server, watch_timeout=0.2))
    yield store
    store.informers.stop(join_timeout=2.0)


def _names(inf: Informer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["data"]["v"] for o in inf.values()}


def test_what_changed_while_the_watch_was_down_reaches_the_consumer(server: RestartingServer,
                                                                    informed: InformedStore) -> None:
    for name in ("gone", "edited", "same"):
        server.create(cm(name))
    inf = Informer(informed, kinds.CONFIG_MAP)
    feed = informed.informers.feed(kinds.CONFIG_MAP)
    assert informed.informers.wait_for_sync(5)
    inf.sync()
    inf.take_changed()
    server.down = True
    server.delete(kinds.CONFIG_MAP, "gone", "default")
    server.patch(kinds.CONFIG_MAP, "edited", "default", {"data": {"v": "2"}})
    server.create(cm("new"))
    wait_until(lambda: server.refused >= 1)  # the open watch broke on events it did not deliver
    assert _names(inf) == {"gone": "1", "edited": "1", "same": "1"}
    server.restart()
    wait_until(lambda: feed.relists >= 1)
    inf.sync()
    assert _names(inf) == {"edited": "2", "same": "1", "new": "1"}


def test_a_relist_hands_every_object_to_every_consumer_again(server: RestartingServer,
                                                             informed: InformedStore) -> None:
    """The consumer starts over: its next poll is the whole kind, unchanged objects too, and
    an Informer reports "everything may have changed" (None), so a controller re-examines
    each key (one whose retry waits in a long backoff is synced now, not minutes later)."""
    server.create(cm("same"))
    inf = Informer(informed, kinds.CONFIG_MAP)
    feed = informed.informers.feed(kinds.CONFIG_MAP)
    assert informed.informers.wait_for_sync(5)
    first = feed.poll(None)
    assert first is not None
    inf.sync()
    assert inf.take_changed() is None  # the first list
    assert inf.take_changed() == set()
    server.down = True
    wait_until(lambda: server.refused >= 1)
    # Another kind changed meanwhile: the revision is cluster-wide, so the version this
    # watch holds is older than the restarted server's history too.
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "elsewhere"}})
    server.restart()
    wait_until(lambda: feed.relists >= 1)
    delta = feed.poll(first.cursor)
    assert delta is not None and delta.full is not None and list(delta.full) == [("default", "same")]
    inf.sync()
    assert inf.take_changed() is None
    again = feed.poll(delta.cursor)
    assert again is not None and again.full is None and again.changed == {}  # once, not on every poll
