"""Shared informers: one background watch per kind, polled by every controller of serve mode."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import Conflict
from drasched.scheduler.cache import SchedulerCache
from drasched.serve.main import run
from drasched.store.base import Obj, WatchEvent
from drasched.store.informer import CachedReads, InformedStore, Informer, SharedInformers
from drasched.store.reflector import Reflector
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


@pytest.fixture
def store() -> BlockingStore:
    return BlockingStore()


@pytest.fixture
def informers(store: BlockingStore) -> Iterator[SharedInformers]:
    inf = SharedInformers(store, watch_timeout=0.2)
    yield inf
    inf.stop(join_timeout=2.0)


def test_first_poll_is_the_whole_kind_then_only_what_changed(store: BlockingStore,
                                                             informers: SharedInformers) -> None:
    store.create(cm("a"))
    store.create(cm("b"))
    feed = informers.feed(kinds.CONFIG_MAP)
    assert informers.wait_for_sync(5)
    first = feed.poll(None)
    assert first is not None and first.full is not None
    assert sorted(first.full) == [("default", "a"), ("default", "b")]
    store.patch(kinds.CONFIG_MAP, "a", "default", {"data": {"v": "2"}})
    store.delete(kinds.CONFIG_MAP, "b", "default")
    store.create(cm("c"))
    wait_until(lambda: feed.get("c", "default") is not None)
    delta = feed.poll(first.cursor)
    assert delta is not None and delta.full is None
    assert delta.changed[("default", "a")]["data"] == {"v": "2"}  # type: ignore[index]
    assert delta.changed[("default", "b")] is None
    assert ("default", "c") in delta.changed
    again = feed.poll(delta.cursor)
    assert again is not None and again.changed == {}


def test_wait_returns_as_soon_as_a_watch_event_arrives(store: BlockingStore, informers: SharedInformers) -> None:
    informers.feed(kinds.CONFIG_MAP)
    assert informers.wait_for_sync(5)
    seen = informers.version
    woke_at: list[int] = []
    waiter = threading.Thread(target=lambda: woke_at.append(informers.wait(seen, timeout=3600.0)), daemon=True)
    waiter.start()
    store.create(cm("late"))
    waiter.join(60)  # a hang guard: only the event can end an hour-long wait this soon
    assert not waiter.is_alive(), "the wait was not woken by the watch event"
    assert woke_at[0] > seen


def test_a_wait_for_some_kinds_sleeps_through_changes_to_others(store: BlockingStore,
                                                                informers: SharedInformers) -> None:
    """A lane that reads BindRequests is not woken by every pod or ConfigMap of the cluster."""
    informers.start([kinds.CONFIG_MAP, kinds.PRIORITY_CLASS])
    assert informers.wait_for_sync(5)
    seen = informers.version
    woke_at: list[int] = []
    waiter = threading.Thread(target=lambda: woke_at.append(
        informers.wait(seen, timeout=3600.0, kinds=[kinds.PRIORITY_CLASS])), daemon=True)
    waiter.start()
    store.create(cm("other"))
    wait_until(lambda: informers.feed(kinds.CONFIG_MAP).get("other", "default") is not None)
    time.sleep(0.2)  # time for a wrong wake-up to happen
    assert waiter.is_alive(), "a ConfigMap change woke a wait for PriorityClasses"
    store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                  "value": 1000})
    waiter.join(60)  # a hang guard
    assert not waiter.is_alive(), "the PriorityClass change did not end the wait"
    assert woke_at[0] > seen


def test_a_consumer_whose_cursor_fell_off_the_log_starts_over(store: BlockingStore) -> None:
    informers = SharedInformers(store, watch_timeout=0.2, max_log=4)
    try:
        feed = informers.feed(kinds.CONFIG_MAP)
        assert informers.wait_for_sync(5)
        first = feed.poll(None)
        assert first is not None
        for i in range(10):
            store.create(cm(f"x{i}"))
        wait_until(lambda: feed.get("x9", "default") is not None)
        delta = feed.poll(first.cursor)
        assert delta is not None and delta.full is not None and len(delta.full) == 10
    finally:
        informers.stop(join_timeout=2.0)


def test_own_writes_are_in_the_cache_before_their_watch_event(store: BlockingStore,
                                                              informers: SharedInformers) -> None:
    informed = InformedStore(store, informers)
    feed = informers.feed(kinds.CONFIG_MAP)
    assert informers.wait_for_sync(5)
    cursor = feed.poll(None).cursor  # type: ignore[union-attr]
    store.paused = True  # the watch delivers nothing for now
    created = informed.create(cm("mine"))
    created["data"] = {"v": "changed by the caller"}  # the cache holds its own copy
    delta = feed.poll(cursor)
    assert delta is not None
    assert delta.changed[("default", "mine")]["data"] == {"v": "1"}  # type: ignore[index]
    store.resume()
    wait_until(lambda: feed.reflector.resource_version == created["metadata"]["resourceVersion"])
    after = feed.poll(delta.cursor)
    assert after is not None and after.changed == {}  # the watch event of that version changed nothing


def test_a_late_event_older_than_our_write_does_not_undo_it() -> None:
    """Our update (rv 12) was observed; the watch then delivers an earlier change (rv 11)."""

    class Scripted:
        def __init__(self) -> None:
            self.events: list[WatchEvent] = []

        def list(self, *args: Any, **kwargs: Any) -> Any:
            from drasched.store.base import ListResult
            return ListResult([{**cm("a"), "metadata": {"name": "a", "namespace": "default",
                                                         "resourceVersion": "10"}}], "10")

        def watch(self, *args: Any, **kwargs: Any) -> Iterator[WatchEvent]:
            events, self.events = self.events, []
            yield from events

    store = Scripted()
    r = Reflector(store, kinds.CONFIG_MAP)  # type: ignore[arg-type]
    r.step()
    r.observe({**cm("a", "ours"), "metadata": {"name": "a", "namespace": "default", "resourceVersion": "12"}})
    store.events = [WatchEvent("MODIFIED", {**cm("a", "older"), "metadata": {
        "name": "a", "namespace": "default", "resourceVersion": "11"}})]
    r.step()
    assert r.get("a", "default")["data"] == {"v": "ours"}  # type: ignore[index]
    # A write the watch has already passed is not applied: the cache may hold a deletion.
    store.events = [WatchEvent("DELETED", {**cm("a"), "metadata": {
        "name": "a", "namespace": "default", "resourceVersion": "13"}})]
    r.step()
    r.observe({**cm("a", "stale"), "metadata": {"name": "a", "namespace": "default", "resourceVersion": "12"}})
    assert r.get("a", "default") is None


def test_informer_and_scheduler_cache_read_the_shared_feed(store: BlockingStore,
                                                           informers: SharedInformers) -> None:
    informed = InformedStore(store, informers)
    informed.create(cm("a"))
    inf = Informer(informed, kinds.CONFIG_MAP)
    cache = SchedulerCache([kinds.CONFIG_MAP])
    assert informers.wait_for_sync(5)
    wait_until(inf.sync)
    assert cache.sync(informed) is True
    assert [o["metadata"]["name"] for o in inf.values()] == ["a"]
    assert list(cache.objects(kinds.CONFIG_MAP)) == ["default/a"]
    assert inf.sync() is False and cache.sync(informed) is False
    informed.delete(kinds.CONFIG_MAP, "a", "default")
    wait_until(inf.sync)
    assert cache.sync(informed) is True
    assert len(inf) == 0 and not cache.objects(kinds.CONFIG_MAP)


def test_cached_reads_answer_from_the_cache_until_a_write_conflicts(store: BlockingStore,
                                                                     informers: SharedInformers) -> None:
    informed = InformedStore(store, informers)
    informed.create(cm("a"))
    informers.feed(kinds.CONFIG_MAP)
    assert informers.wait_for_sync(5)
    view = CachedReads(informed, [kinds.CONFIG_MAP])
    before = store.gets
    obj = view.get(kinds.CONFIG_MAP, "a", "default")
    assert store.gets == before  # no round trip
    store.patch(kinds.CONFIG_MAP, "a", "default", {"data": {"v": "2"}})  # someone else's write
    store.paused = True  # ... that our cache has not seen yet
    obj["data"] = {"v": "3"}
    with pytest.raises(Conflict):
        view.update(obj)
    fresh = view.get(kinds.CONFIG_MAP, "a", "default")  # after a conflict: from the server
    assert store.gets == before + 1 and fresh["data"] == {"v": "2"}
    fresh["data"] = {"v": "3"}
    assert view.update(fresh)["data"] == {"v": "3"}


def test_serve_loop_reacts_to_a_change_without_waiting_for_its_period(store: BlockingStore) -> None:
    """Each controller in its own thread, woken by the shared watch: never by its one-hour period."""
    reacted: set[str] = set()

    class Watcher:
        name = "watcher"

        def __init__(self) -> None:
            self.inf: Informer | None = None

        def reconcile(self, ctx: Any) -> bool:
            if self.inf is None:
                self.inf = Informer(ctx.store, kinds.CONFIG_MAP)
            self.inf.sync()
            reacted.update(o["metadata"]["name"] for o in self.inf.values())
            return False

    stop = threading.Event()
    t = threading.Thread(target=run, args=(store, [Watcher()]),
                         kwargs=dict(stop=stop, period=3600.0, shared_informers=True, watch_timeout=0.5), daemon=True)
    t.start()
    try:
        time.sleep(0.3)  # informers listed, the watcher idle
        for name in ("one", "two"):
            store.create(cm(name))
            wait_until(lambda name=name: name in reacted, timeout=60.0)  # type: ignore[misc]  # a hang guard
    finally:
        stop.set()
        t.join(10)
    assert not t.is_alive()
    assert reacted == {"one", "two"}


def test_implicit_gangs_share_the_schedulers_thread_and_run_first_the_claim_controllers_apart() -> None:
    from drasched.serve.main import _lanes, build_controllers

    lanes = _lanes(build_controllers(enable_claim_controller=True))
    assert [[c.name for c in lane] for lane in lanes] == [
        ["resourceclaim-controller"], ["resourceclaim-cleanup"], ["device-taint-eviction-controller"],
        ["implicit-gangs", "scheduler"], ["binder"]]
    assert [[c.name for c in lane] for lane in _lanes(build_controllers())] == [
        ["implicit-gangs", "scheduler"], ["binder"]]


def test_claims_controlled_by_a_pod_come_from_the_cache_not_a_list(store: BlockingStore,
                                                                    informers: SharedInformers) -> None:
    informed = InformedStore(store, informers)

    def claim(name: str, owner: str) -> Obj:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "default", "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-{owner}", "controller": True}]},
                "spec": {"devices": {"requests": []}}}

    informed.create(claim("a-1", "a"))
    informed.create(claim("b-1", "b"))
    informers.feed(kinds.RESOURCE_CLAIM)
    assert informers.wait_for_sync(5)
    view = CachedReads(informed, [kinds.RESOURCE_CLAIM])
    calls: list[Any] = []
    store_list = store.list
    store.list = lambda *a, **k: calls.append(a) or store_list(*a, **k)  # type: ignore[method-assign]
    found = view.controlled_by(kinds.RESOURCE_CLAIM, "default", "uid-a")
    assert [c["metadata"]["name"] for c in found] == ["a-1"] and calls == []
    found[0]["metadata"]["name"] = "changed"  # a copy: the cache keeps its own
    assert informers.feed(kinds.RESOURCE_CLAIM).get("a-1", "default") is not None
    informed.create(claim("a-2", "a"))  # the index catches up with the feed on the next lookup
    informed.delete(kinds.RESOURCE_CLAIM, "a-1", "default")
    wait_until(lambda: informers.feed(kinds.RESOURCE_CLAIM).get("a-1", "default") is None)
    assert [c["metadata"]["name"] for c in view.controlled_by(kinds.RESOURCE_CLAIM, "default", "uid-a")] == ["a-2"]
    assert calls == []
