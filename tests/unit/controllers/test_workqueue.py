"""The claim controller's work queue behaves as client-go's ``workqueue`` (dedup, FIFO,
one worker per key, per-key exponential backoff: ``ItemExponentialFailureRateLimiter``)."""

from __future__ import annotations

from drasched.controllers.workqueue import ExponentialBackoff, WorkQueue


def _drain(q: WorkQueue[str]) -> list[str]:
    out = []
    while (k := q.get()) is not None:
        out.append(k)
        q.done(k)
    return out


def test_keys_come_out_once_in_the_order_first_added() -> None:
    q: WorkQueue[str] = WorkQueue()
    for k in ["b", "a", "b", "c", "a"]:
        q.add(k)
    assert len(q) == 3
    assert _drain(q) == ["b", "a", "c"]
    assert q.get() is None


def test_a_key_added_while_held_is_queued_again_only_after_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("k")
    assert q.get() == "k"
    q.add("k")  # changed while a worker syncs it: never handed to a second worker
    assert q.get() is None and q.pending("k")
    q.done("k")
    assert q.get() == "k"
    q.done("k")
    assert not q.pending("k") and q.get() is None


def test_retries_back_off_exponentially_per_key_and_forget_resets() -> None:
    q: WorkQueue[str] = WorkQueue(ExponentialBackoff(base=0.005, cap=1000.0))
    assert q.add_rate_limited("k", now=100.0) == 100.005
    assert q.add_rate_limited("k", now=100.0) == 100.01
    assert q.add_rate_limited("k", now=100.0) == 100.02
    assert q.add_rate_limited("other", now=100.0) == 100.005  # per key
    q.forget("k")
    assert q.add_rate_limited("k", now=200.0) == 200.005


def test_backoff_is_capped() -> None:
    backoff: ExponentialBackoff[str] = ExponentialBackoff(base=1.0, cap=8.0)
    assert [backoff.when("k") for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_delayed_keys_wait_for_their_time_then_join_the_queue_once() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add_after("late", 10.0)
    q.add_after("early", 5.0)
    q.add_after("early", 7.0)
    assert q.next_ready_at() == 5.0
    q.promote(4.9)
    assert q.get() is None
    q.promote(7.0)
    assert _drain(q) == ["early"]  # the second add of a queued key is deduplicated
    assert q.next_ready_at() == 10.0
    q.promote(10.0)
    assert _drain(q) == ["late"] and q.next_ready_at() is None
