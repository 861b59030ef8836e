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


def _bind_request(name: str, uid: str, phase: str | None = None) -> dict:
    br: dict = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
                "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": uid},
                "spec": {"podName": name, "selectedNode": "a"}}
    if phase:
        br["status"] = {"phase": phase}
    return br


def test_an_assumed_bindrequest_stands_over_the_servers_until_forgotten_even_across_a_relist() -> None:
    store = MemoryStore(auto_namespaces=True)
    store.create(pod("p"))
    failed = store.create(_bind_request("p", "", "Failed"))  # an earlier request of the pod, failed
    store.update_status({**failed, "status": {"phase": "Failed"}})
    cache = SchedulerCache([kinds.POD, kinds.BIND_REQUEST])
    cache.sync(store)
    assert cache.get(kinds.BIND_REQUEST, "default/p")["status"]["phase"] == "Failed"

    gen = cache.generation
    assumed = _bind_request("p", "in-memory")
    cache.assume(assumed)  # placed again, handed to the binder without a write
    assert cache.get(kinds.BIND_REQUEST, "default/p") is assumed
    assert cache.changed_since(kinds.BIND_REQUEST, gen) == {"default/p"}  # readers see the change

    store.delete(kinds.BIND_REQUEST, "p", "default")  # the stale one goes on the server
    cache.sync(store)
    assert cache.get(kinds.BIND_REQUEST, "default/p") is assumed  # its deletion does not end the assumption
    store.compact()
    store.create(pod("q"))
    cache.sync(store)  # a relist
    assert cache.get(kinds.BIND_REQUEST, "default/p") is assumed

    cache.forget_assumed("default/p")
    assert cache.get(kinds.BIND_REQUEST, "default/p") is None  # the server has none any more
    assert dict(cache.assumed()) == {}


def test_forgetting_an_assumed_bindrequest_shows_the_servers_again() -> None:
    store = MemoryStore(auto_namespaces=True)
    store.create(_bind_request("p", ""))
    cache = SchedulerCache([kinds.BIND_REQUEST])
    cache.sync(store)
    real = cache.get(kinds.BIND_REQUEST, "default/p")
    cache.assume(_bind_request("p", "in-memory"))
    cache.forget_assumed("default/p")
    assert cache.get(kinds.BIND_REQUEST, "default/p") is real
