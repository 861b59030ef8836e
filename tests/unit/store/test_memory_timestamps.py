"""The memory store stamps creationTimestamp from its clock, as metav1.Time text (second
precision, UTC, a Z), however many writes share a second and whenever the clock moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from drasched.store.memory import MemoryStore


def test_creation_timestamps_follow_the_clock_second_by_second() -> None:
    now = [datetime(2026, 12, 2, 5, 0, 0, 900_000, tzinfo=UTC)]
    store = MemoryStore(clock=lambda: now[0], auto_namespaces=True)

    def stamp(name: str) -> str:
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}
        return str(store.create(obj)["metadata"]["creationTimestamp"])

    assert stamp("a") == stamp("b") == "2026-12-02T05:00:00Z"
    now[0] += timedelta(milliseconds=200)
    assert stamp("c") == "2026-12-02T05:00:01Z"
    now[0] = datetime(2026, 12, 2, 7, 0, 1, tzinfo=timezone(timedelta(hours=2)))  # the same instant
    assert stamp("d") == "2026-12-02T05:00:01Z"
    now[0] -= timedelta(hours=1)  # a clock set back is followed too
    assert stamp("e") == "2026-12-02T04:00:01Z"
