"""The watch-fed cache the controllers read from."""

from __future__ import annotations

from drasched.api import kinds
from drasched.store.informer import Informer
from drasched.store.memory import MemoryStore


def _cm(name: str, value: str = "1") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"v": value}}


def test_informer_follows_creates_updates_and_deletes() -> None:
    store = MemoryStore(auto_namespaces=True)
    store.create(_cm("a"))
    inf = Informer(store, kinds.CONFIG_MAP)
    assert inf.sync() is True
    assert inf.sync() is False
    store.create(_cm("b"))
    store.patch(kinds.CONFIG_MAP, "a", "default", {"data": {"v": "2"}})
    assert inf.sync() is True
    assert inf.get("a", "default")["data"] == {"v": "2"}  # type: ignore[index]
    store.delete(kinds.CONFIG_MAP, "b", "default")
    assert inf.sync() is True
    assert [o["metadata"]["name"] for o in inf.values()] == ["a"]


def test_informer_relists_when_history_is_compacted() -> None:
    store = MemoryStore(auto_namespaces=True)
    inf = Informer(store, kinds.CONFIG_MAP)
    inf.sync()
    store.create(_cm("a"))
    store.compact()  # the watch now answers Gone
    assert inf.sync() is True
    assert inf.get("a", "default") is not None


def test_own_write_recorded_with_put_is_not_a_change() -> None:
    store = MemoryStore(auto_namespaces=True)
    inf = Informer(store, kinds.CONFIG_MAP)
    inf.sync()
    inf.put(store.create(_cm("a")))
    assert inf.sync() is False
