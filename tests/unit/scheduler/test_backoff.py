"""Bind-failure backoff: upstream's schedule (kubernetes pkg/scheduler/backend/queue/scheduling_queue.go,
calculateBackoffDuration with the 1 s / 10 s defaults), each failed BindRequest counted once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from drasched.scheduler.backoff import BindBackoff, backoff_duration

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _failed(uid: str) -> dict:
    return {"metadata": {"uid": uid}, "status": {"phase": "Failed"}}


def test_backoff_doubles_from_one_second_up_to_ten() -> None:
    assert [backoff_duration(n).total_seconds() for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_the_same_failed_bind_request_is_counted_once() -> None:
    b = BindBackoff()
    for _ in range(3):  # seen by three cycles
        b.observe([("default/p", "pod-1", _failed("br-1"))], T0)
    assert b.attempts("pod-1") == 1
    assert b.waiting(T0) == [("default/p", "pod-1", T0 + timedelta(seconds=1))]
    assert b.waiting(T0 + timedelta(seconds=1)) == []


def test_a_new_failed_bind_request_doubles_the_wait() -> None:
    b = BindBackoff()
    b.observe([("default/p", "pod-1", _failed("br-1"))], T0)
    b.observe([("default/p", "pod-1", _failed("br-2"))], T0 + timedelta(seconds=5))
    assert b.waiting(T0 + timedelta(seconds=5)) == [("default/p", "pod-1", T0 + timedelta(seconds=7))]


def test_a_pod_that_is_bound_or_gone_is_forgotten() -> None:
    b = BindBackoff()
    b.observe([("default/p", "pod-1", _failed("br-1")), ("default/q", "pod-2", _failed("br-2"))], T0)
    b.forget(lambda uid, key: uid == "pod-2")
    assert b.attempts("pod-1") == 0
    assert b.attempts("pod-2") == 1
