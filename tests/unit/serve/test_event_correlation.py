"""Repeated Events are counted on one Event, as client-go's EventCorrelator counts them."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.serve.eventcorrelator import EventCorrelator
from drasched.serve.live import EventWriter
from drasched.store.memory import MemoryStore


def _event(message: str, ts: str, name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": f"{name}.", "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": "default", "uid": "u1"},
            "type": "Warning", "reason": "FailedScheduling", "message": message,
            "source": {"component": "drasched"}, "firstTimestamp": ts, "lastTimestamp": ts, "count": 1}


def _store() -> MemoryStore:
    s = MemoryStore()
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return s


def test_the_same_event_again_counts_on_the_first_one() -> None:
    store = _store()
    w = EventWriter(store)
    for i in range(3):
        w.put(_event("0/2 nodes are available: 2 Insufficient cpu.", f"2026-01-01T00:00:0{i}Z"))
        w.flush()
    w.put(_event("0/2 nodes are available: 1 Insufficient cpu.", "2026-01-01T00:00:05Z"))
    w.close()
    events = sorted(store.list(kinds.EVENT, "default").items, key=lambda e: e["message"])
    assert [(e["message"][:27], e["count"]) for e in events] == [("0/2 nodes are available: 1 ", 1),
                                                                  ("0/2 nodes are available: 2 ", 3)]
    counted = events[1]
    assert (counted["firstTimestamp"], counted["lastTimestamp"]) == ("2026-01-01T00:00:00Z", "2026-01-01T00:00:02Z")


def test_an_event_gone_from_the_server_is_written_anew() -> None:
    store = _store()
    w = EventWriter(store)
    w.put(_event("m", "2026-01-01T00:00:00Z"))
    w.flush()
    (ev,) = store.list(kinds.EVENT, "default").items
    store.delete(kinds.EVENT, ev["metadata"]["name"], "default")  # the server's event TTL
    w.put(_event("m", "2026-01-01T01:00:00Z"))
    w.close()
    (again,) = store.list(kinds.EVENT, "default").items
    assert again["count"] == 1 and again["metadata"]["name"] != ev["metadata"]["name"]


def test_the_cache_keeps_the_most_recent_keys() -> None:
    c = EventCorrelator(max_keys=2)
    for name in ("a", "b", "c"):
        ev = _event("m", "t", name)
        c.created(ev, {"metadata": {"namespace": "default", "name": f"{name}.1"}, "count": 1})
    assert c.correlate(_event("m", "t", "a")).patch is None  # evicted: created anew
    again = c.correlate(_event("m", "t2", "c"))
    assert (again.name, again.patch) == ("c.1", {"count": 2, "lastTimestamp": "t2"})


def test_an_event_about_a_pod_with_a_253_character_name_has_a_legal_name() -> None:
    """upstream's recorder names Events <object>.<hex time>; for a name near the 253-character
    limit that would be refused, so the object part is shortened (with a hash)."""
    from drasched.serve.live import LiveContext
    from drasched.serve.metrics import Metrics

    store = _store()
    name = "p" * 253
    LiveContext(store, Metrics()).event({"apiVersion": "v1", "kind": "Pod",
                                         "metadata": {"name": name, "namespace": "default", "uid": "u"}},
                                        "Warning", "FailedScheduling", "no room")
    (ev,) = store.list(kinds.EVENT, "default").items
    assert len(ev["metadata"]["name"]) <= 253 and ev["involvedObject"]["name"] == name


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _sync_writer(store: MemoryStore, clock: _Clock) -> EventWriter:
    return EventWriter(store, writers=0, correlator=EventCorrelator(clock=clock))


def test_similar_events_are_combined_from_the_tenth_distinct_message_in_ten_minutes() -> None:
    """client-go events_cache.go: defaultAggregateMaxEvents 10 in defaultAggregateIntervalInSeconds 600,
    message "(combined from similar events): " + the message, counted under the group's key."""
    store, clock = _store(), _Clock()
    w = _sync_writer(store, clock)
    for i in range(12):
        w.put(_event(f"0/{i} nodes are available", "2026-01-01T00:00:00Z"))
        clock.now += 1
    events = store.list(kinds.EVENT, "default").items
    plain = [e for e in events if not e["message"].startswith("(combined")]
    (combined,) = [e for e in events if e["message"].startswith("(combined from similar events): ")]
    assert len(plain) == 9 and combined["count"] == 3  # the 10th, 11th and 12th
    assert combined["message"] == "(combined from similar events): 0/9 nodes are available"

    clock.now += 601  # the group was quiet for longer than the interval: messages count afresh
    w.put(_event("0/99 nodes are available", "2026-01-01T00:20:00Z"))
    assert len(store.list(kinds.EVENT, "default").items) == 11


def test_a_source_writes_at_most_25_events_about_one_object_then_one_per_5_minutes() -> None:
    """client-go events_cache.go: defaultSpamBurst 25, defaultSpamQPS 1/300 per source + object."""
    store, clock = _store(), _Clock()
    w = _sync_writer(store, clock)
    for _ in range(40):
        w.put(_event("m", "2026-01-01T00:00:00Z"))
    (ev,) = store.list(kinds.EVENT, "default").items
    assert ev["count"] == 25  # one create and 24 patches; the other 15 were dropped
    w.put(_event("m", "2026-01-01T00:00:00Z", name="other"))  # another object has its own budget
    assert len(store.list(kinds.EVENT, "default").items) == 2
    clock.now += 300
    w.put(_event("m", "2026-01-01T00:05:00Z"))
    assert store.get(kinds.EVENT, ev["metadata"]["name"], "default")["count"] == 41  # counted while dropped


def test_the_single_threaded_serve_loop_counts_repeated_events_too() -> None:
    from drasched.serve.live import LiveContext
    from drasched.serve.metrics import Metrics

    store = _store()
    ctx = LiveContext(store, Metrics())  # no EventWriter given: Events are written on this thread
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u"}}
    for _ in range(3):
        ctx.event(pod, "Warning", "FailedScheduling", "no room")
    (ev,) = store.list(kinds.EVENT, "default").items
    assert ev["count"] == 3


def test_repeats_written_while_the_first_create_is_in_flight_count_on_one_event() -> None:
    """client-go writes a recorder's Events from one goroutine; with several writer threads the
    Events about one object still go one after another, so a repeat never creates a twin."""
    import time

    class SlowCreates(MemoryStore):
        def create(self, obj: dict[str, Any]) -> dict[str, Any]:
            time.sleep(0.2)  # the first Event is still on its way when the repeats are taken
            return super().create(obj)

    store = SlowCreates()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    w = EventWriter(store, writers=4)
    for i in range(4):
        w.put(_event("no room", f"2026-01-01T00:00:0{i}Z"))
    w.close()
    (ev,) = store.list(kinds.EVENT, "default").items
    assert ev["count"] == 4
