"""The cache: list once, then follow watch events; relist only when the watch is Gone."""

from __future__ import annotations

from drasched.api import kinds
from drasched.scheduler.cache import SchedulerCache
from drasched.store.memory import MemoryStore
from tests.unit.scheduler.helpers import node, pod


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__(auto_namespaces=True)
        self.lists = 0

    def list(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.lists += 1
        return super().list(*args, **kwargs)

    def list_shared(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.lists += 1
        return super().list_shared(*args, **kwargs)


def test_incremental_after_the_first_list() -> None:
    store = CountingStore()
    store.create(node("a"))
    cache = SchedulerCache()
    assert cache.sync(store)
    first_lists = store.lists
    assert first_lists == len(cache.watched)
    assert not cache.sync(store)  # nothing happened
    store.create(pod("p"))
    gen = cache.generation
    assert cache.sync(store)
    assert store.lists == first_lists  # no relist: the watch delivered it
    assert "default/p" in cache.objects(kinds.POD)
    assert cache.kind_generation(kinds.POD) > gen and cache.kind_generation(kinds.NODE) <= gen
    store.delete(kinds.POD, "p", "default")
    assert cache.sync(store)
    assert "default/p" not in cache.objects(kinds.POD)


def test_relists_when_the_watch_history_is_gone() -> None:
    store = CountingStore()
    cache = SchedulerCache([kinds.NODE])
    cache.sync(store)
    store.create(node("a"))
    store.compact()
    assert cache.sync(store)
    assert store.lists == 2
    assert set(cache.objects(kinds.NODE)) == {"a"}


def test_the_first_list_shares_the_stores_objects_and_a_delete_does_not_edit_them() -> None:
    store = MemoryStore(auto_namespaces=True)
    created = store.create(pod("p", node_name="a"))
    store.update_status({**created, "status": {"phase": "Running"}})
    cache = SchedulerCache([kinds.POD])
    cache.sync(store)
    held = cache.get(kinds.POD, "default/p")
    assert held is store.peek(kinds.POD, "p", "default")  # no copy per object on the first list
    rv = held["metadata"]["resourceVersion"]
    store.delete(kinds.POD, "p", "default")  # graceful: marked as deleting, a new version
    assert "deletionTimestamp" not in held["metadata"] and held["metadata"]["resourceVersion"] == rv
    assert cache.sync(store)
    assert cache.get(kinds.POD, "default/p")["metadata"].get("deletionTimestamp")
