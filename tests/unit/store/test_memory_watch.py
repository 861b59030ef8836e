"""The memory store's watch: per-kind history, one shared object per event, and the check
that no watcher changes what every other watcher sees."""

from __future__ import annotations

import pytest

from drasched.api import kinds
from drasched.api.errors import Gone
from drasched.store.memory import MemoryStore
from drasched.store.watchlog import CHECK_ENV, SharedObjectMutated


def _cm(name: str, value: str = "a") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": value}}


def _store(**kwargs: int) -> MemoryStore:
    store = MemoryStore(auto_namespaces=True, **kwargs)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return store


def test_watchers_of_one_kind_see_only_that_kind_in_order() -> None:
    store = _store()
    start = store.resource_version
    store.create(_cm("one"))
    store.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s", "namespace": "default"}})
    store.update({**store.get(kinds.CONFIG_MAP, "one", "default"), "data": {"k": "b"}})
    events = list(store.watch(kinds.CONFIG_MAP, start))
    assert [(e.type, e.object["data"]["k"]) for e in events] == [("ADDED", "a"), ("MODIFIED", "b")]
    assert [e.type for e in store.watch(kinds.SERVICE_ACCOUNT, start)] == ["ADDED"]
    after_first = events[0].object["metadata"]["resourceVersion"]
    assert [e.object["data"]["k"] for e in store.watch(kinds.CONFIG_MAP, after_first)] == ["b"]


def test_every_watcher_gets_the_same_event_object_and_a_write_never_changes_it() -> None:
    store = _store()
    start = store.resource_version
    store.create(_cm("one"))
    first = next(iter(store.watch(kinds.CONFIG_MAP, start))).object
    second = next(iter(store.watch(kinds.CONFIG_MAP, start))).object
    assert first is second
    store.patch(kinds.CONFIG_MAP, "one", "default", {"data": {"k": "b"}})
    store.delete(kinds.CONFIG_MAP, "one", "default")
    assert first["data"] == {"k": "a"}  # the ADDED event still shows what was added
    assert [e.object["data"]["k"] for e in store.watch(kinds.CONFIG_MAP, start)] == ["a", "b", "b"]


def test_a_watcher_that_changes_a_shared_object_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHECK_ENV, "1")
    store = _store()
    start = store.resource_version
    store.create(_cm("one"))
    obj = next(iter(store.watch(kinds.CONFIG_MAP, start))).object
    obj["data"]["k"] = "changed by a careless watcher"
    with pytest.raises(SharedObjectMutated, match="ConfigMap default/one"):
        list(store.watch(kinds.CONFIG_MAP, start))


def test_a_changed_stored_object_is_caught_when_it_is_next_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHECK_ENV, "1")
    store = _store()
    store.create(_cm("one"))
    stored = store.peek(kinds.CONFIG_MAP, "one", "default")
    assert stored is not None
    stored["data"]["k"] = "changed in place"
    with pytest.raises(SharedObjectMutated, match="changed in place after it was stored"):
        store.patch(kinds.CONFIG_MAP, "one", "default", {"data": {"k": "b"}})


def test_history_limit_counts_every_kind_and_older_watches_get_gone() -> None:
    store = _store(history_limit=3)
    start = store.resource_version
    store.create(_cm("one"))
    after_one = store.resource_version
    store.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s", "namespace": "default"}})
    store.create(_cm("two"))
    store.create(_cm("three"))  # four events kept to three: the first ConfigMap's goes
    with pytest.raises(Gone):
        list(store.watch(kinds.CONFIG_MAP, start))
    assert [e.object["metadata"]["name"] for e in store.watch(kinds.CONFIG_MAP, after_one)] == ["two", "three"]
    assert [e.type for e in store.watch(kinds.SERVICE_ACCOUNT, after_one)] == ["ADDED"]


def test_compaction_forgets_every_kind() -> None:
    store = _store()
    start = store.resource_version
    store.create(_cm("one"))
    store.compact()
    with pytest.raises(Gone):
        list(store.watch(kinds.CONFIG_MAP, start))
    assert list(store.watch(kinds.CONFIG_MAP, store.resource_version)) == []
