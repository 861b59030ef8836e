"""The claim controller's work queue behaves as client-go's ``workqueue`` (dedup, FIFO,
one worker per key) with its ``DefaultControllerRateLimiter`` (per-key exponential backoff,
``ItemExponentialFailureRateLimiter`` 5 ms..1000 s, and an overall ``BucketRateLimiter`` of
10 retries a second in bursts of 100; staging/src/k8s.io/client-go/util/workqueue/
default_rate_limiters.go)."""

from __future__ import annotations

from drasched.controllers.workqueue import ExponentialBackoff, TokenBucket, WorkQueue


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


def test_the_bucket_lets_a_burst_of_100_retries_through_then_10_a_second() -> None:
    bucket = TokenBucket()
    assert [bucket.delay(50.0) for _ in range(100)] == [0.0] * 100
    assert [round(bucket.delay(50.0), 6) for _ in range(3)] == [0.1, 0.2, 0.3]  # lined up behind each other
    # 1 s later 10 tokens came back, 3 of them owed to the retries already lined up
    assert [bucket.delay(51.0) for _ in range(7)] == [0.0] * 7 and round(bucket.delay(51.0), 6) == 0.1
    assert bucket.delay(200.0) == 0.0  # a long quiet spell refills the bucket (never beyond the burst)


def test_many_keys_failing_at_once_come_back_spread_out_not_all_in_one_instant() -> None:
    """The server away: every key fails in the same instant. Each is a first failure (5 ms
    of backoff), but past the burst the overall bucket spaces the retries 100 ms apart."""
    q: WorkQueue[str] = WorkQueue()
    ready = [q.add_rate_limited(f"k{i}", now=10.0) for i in range(120)]
    assert ready[:100] == [10.005] * 100
    assert [round(r, 6) for r in ready[100:103]] == [10.1, 10.2, 10.3]
    assert round(ready[-1], 6) == 12.0


def test_a_retry_waits_for_the_longer_of_its_own_backoff_and_the_bucket() -> None:
    q: WorkQueue[str] = WorkQueue(ExponentialBackoff(base=1.0, cap=1000.0), TokenBucket(qps=10.0, burst=1))
    assert q.add_rate_limited("k", now=0.0) == 1.0  # its backoff: the bucket had a token
    assert round(q.add_rate_limited("other", now=0.0), 6) == 1.0  # first failure, but the bucket is empty: 0.1 s
    assert q.add_rate_limited("k", now=0.0) == 2.0  # its backoff (2 s) outlasts the bucket's 0.2 s
