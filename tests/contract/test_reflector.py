"""The Reflector over both stores: initial list, watch deltas, relist on Gone, error recovery."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.kinds import ResourceType
from drasched.store.base import ClusterStore, Obj, WatchEvent
from drasched.store.reflector import Reflector

from .conftest import Backend


def configmap(ns: str, name: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


class Recorder:
    """Handler callbacks that write down what they were told, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, str]]] = []

    def add(self, obj: Obj) -> None:
        self.calls.append(("add", obj["metadata"]["name"], obj.get("data") or {}))

    def update(self, old: Obj, new: Obj) -> None:
        assert old["metadata"]["name"] == new["metadata"]["name"]
        self.calls.append(("update", new["metadata"]["name"], new.get("data") or {}))

    def delete(self, obj: Obj) -> None:
        self.calls.append(("delete", obj["metadata"]["name"], obj.get("data") or {}))

    def take(self) -> list[tuple[str, str, dict[str, str]]]:
        calls, self.calls = self.calls, []
        return calls


def reflector(store: ClusterStore, ns: str, rec: Recorder) -> Reflector:
    return Reflector(
        store,
        kinds.CONFIG_MAP,
        ns,
        on_add=rec.add,
        on_update=rec.update,
        on_delete=rec.delete,
        watch_timeout=1,
    )


def test_first_step_lists_then_steps_apply_watch_events(store: ClusterStore, ns: str) -> None:
    a = store.create(configmap(ns, "a", v="1"))
    store.create(configmap(ns, "b"))
    rec = Recorder()
    r = reflector(store, ns, rec)
    assert r.step() == 1
    assert rec.take() == [("add", "a", {"v": "1"}), ("add", "b", {})]
    assert sorted(r.cache) == [(ns, "a"), (ns, "b")] and r.lists == 1

    store.update({**a, "data": {"v": "2"}})
    store.delete(kinds.CONFIG_MAP, "b", ns)
    last = store.create(configmap(ns, "c"))
    assert r.step() == 3
    assert rec.take() == [("update", "a", {"v": "2"}), ("delete", "b", {}), ("add", "c", {})]
    assert [o["metadata"]["name"] for o in r.items()] == ["a", "c"]
    assert r.get("a", ns) is not None and r.get("a", ns)["data"] == {"v": "2"}  # type: ignore[index]
    assert int(r.resource_version or 0) >= int(last["metadata"]["resourceVersion"])

    # Resumed from the last version: nothing is delivered twice.
    assert r.step() == 0
    assert rec.take() == []
    assert r.lists == 1


def test_gone_relists_and_synthesizes_deletes_for_what_was_missed(backend: Backend, ns: str) -> None:
    store = backend.store
    a = store.create(configmap(ns, "a", v="1"))
    store.create(configmap(ns, "b"))
    rec = Recorder()
    r = reflector(store, ns, rec)
    r.step()
    rec.take()

    # Changes the reflector does not watch, then their history is compacted away.
    store.delete(kinds.CONFIG_MAP, "b", ns)
    store.update({**a, "data": {"v": "2"}})
    store.create(configmap(ns, "c"))
    backend.compact()

    assert r.step() == 1
    assert r.lists == 2
    assert rec.take() == [("delete", "b", {}), ("update", "a", {"v": "2"}), ("add", "c", {})]
    assert sorted(r.cache) == [(ns, "a"), (ns, "c")]

    # And it watches on from the new list.
    store.create(configmap(ns, "d"))
    r.step()
    assert rec.take() == [("add", "d", {})]


def test_a_failing_handler_does_not_stop_the_cache(
    store: ClusterStore, ns: str, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    def on_add(obj: Obj) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            raise ValueError("handler bug")

    r = Reflector(store, kinds.CONFIG_MAP, ns, on_add=on_add, watch_timeout=1)
    r.step()
    store.create(configmap(ns, "bad"))
    store.create(configmap(ns, "good"))
    with caplog.at_level(logging.ERROR):
        assert r.step() == 2
    assert seen == ["bad", "good"]
    assert sorted(r.cache) == [(ns, "bad"), (ns, "good")]
    assert "handler bug" in caplog.text


class FlakyWatch:
    """A store whose next ``failures`` watches fail with a connection error."""

    def __init__(self, store: ClusterStore, failures: int) -> None:
        self.store = store
        self.failures = failures
        self.watches = 0

    def watch(
        self, rt: ResourceType, resource_version: str, namespace: str | None = None, timeout_seconds: float = 1.0
    ) -> Iterator[WatchEvent]:
        self.watches += 1
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection reset by peer")
        return self.store.watch(rt, resource_version, namespace, timeout_seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_run_retries_failed_watches_and_resumes(store: ClusterStore, ns: str) -> None:
    flaky = FlakyWatch(store, failures=2)
    stop = threading.Event()
    added: list[str] = []

    def on_add(obj: Obj) -> None:
        added.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "x":
            stop.set()

    r = Reflector(flaky, kinds.CONFIG_MAP, ns, on_add=on_add, watch_timeout=1)
    r.step()  # initial (empty) list
    store.create(configmap(ns, "x"))
    r.run(stop, max_backoff=0.5)
    assert added == ["x"]
    assert flaky.watches == 3
    assert r.lists == 1  # two failures in a row: resumed from the saved version, no relist
