"""A keyed work queue with per-key rate-limited retries, as client-go's ``workqueue``.

Event handlers ``add`` keys; a worker takes one with ``get``, syncs it and calls ``done``.
A key is queued at most once however often it is added (dedup), keys come out in the
order they were first added (FIFO, so an embedded run is deterministic), and a key added
while a worker holds it is queued again once that worker is done (never two workers on
one key). A failed sync re-adds its key with ``add_rate_limited``, delayed as client-go's
``DefaultControllerRateLimiter`` does: the longer of a per-key exponential backoff
(``ItemExponentialFailureRateLimiter``: 5 ms doubling up to 1000 s, reset by ``forget``
after a success) and an overall token bucket (``BucketRateLimiter``: 10 retries a second,
bursts of 100), so that many keys failing at once (the API server away) come back spread
out rather than in one instant.

Non-blocking and clock-free: callers pass ``now`` (seconds on their clock, virtual in
``drasched simulate``), ``promote`` moves retries that are due into the queue, and
``next_ready_at`` says when the next one is, so a controller can ask to be woken then.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

BASE_DELAY = 0.005
"""Seconds before the first retry of a key (client-go ``DefaultControllerRateLimiter``)."""

MAX_DELAY = 1000.0
"""The longest backoff of a key that keeps failing (client-go's cap)."""

RETRY_QPS = 10.0
"""Retries per second over all keys (client-go ``DefaultControllerRateLimiter``'s bucket)."""

RETRY_BURST = 100
"""Retries the bucket lets through at once before ``RETRY_QPS`` applies."""


class ExponentialBackoff(Generic[K]):
    """Per-key delays ``base * 2**failures``, capped; ``forget`` starts a key over."""

    def __init__(self, base: float = BASE_DELAY, cap: float = MAX_DELAY) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        """The delay before the next retry of ``key``; counts one more failure."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return min(self.cap, self.base * 2.0 ** failures)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)


class TokenBucket:
    """Overall retry pacing: ``qps`` tokens a second, at most ``burst`` saved up.

    As ``golang.org/x/time/rate``'s ``Reserve().Delay()``: each retry takes a token now
    or, when none is left, waits until its token will have accrued (the count goes
    negative, so retries line up behind each other). Clock-free: callers pass ``now``.
    """

    def __init__(self, qps: float = RETRY_QPS, burst: int = RETRY_BURST) -> None:
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last: float | None = None

    def delay(self, now: float) -> float:
        """Seconds until this retry's token is there (0 while the burst lasts); takes it."""
        if self._last is None:
            self._last = now
        elif now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps


class WorkQueue(Generic[K]):
    """Dedup, FIFO, one worker per key, delayed re-adds (see the module docstring)."""

    def __init__(self, backoff: ExponentialBackoff[K] | None = None, bucket: TokenBucket | None = None) -> None:
        self.backoff: ExponentialBackoff[K] = backoff or ExponentialBackoff()
        self.bucket = bucket or TokenBucket()
        self._lock = threading.Lock()
        self._queue: OrderedDict[K, None] = OrderedDict()
        self._dirty: set[K] = set()
        """Keys waiting for a worker: queued, or added again while one holds them."""
        self._processing: set[K] = set()
        self._waiting: list[tuple[float, int, K]] = []
        self._seq = itertools.count()

    def add(self, key: K) -> None:
        with self._lock:
            self._add(key)

    def _add(self, key: K) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue[key] = None

    def add_after(self, key: K, ready_at: float) -> None:
        """Queue ``key`` once ``promote`` is called with ``now >= ready_at``."""
        with self._lock:
            heapq.heappush(self._waiting, (ready_at, next(self._seq), key))

    def add_rate_limited(self, key: K, now: float) -> float:
        """Retry ``key`` after the longer of its backoff and the bucket's delay; returns when
        it becomes ready."""
        with self._lock:
            delay = max(self.backoff.when(key), self.bucket.delay(now))
        ready_at = now + delay
        self.add_after(key, ready_at)
        return ready_at

    def forget(self, key: K) -> None:
        """The key synced: its next failure starts from the shortest delay again."""
        self.backoff.forget(key)

    def promote(self, now: float) -> None:
        """Queue every delayed key whose time has come, earliest first."""
        with self._lock:
            while self._waiting and self._waiting[0][0] <= now:
                _, _, key = heapq.heappop(self._waiting)
                self._add(key)

    def next_ready_at(self) -> float | None:
        with self._lock:
            return self._waiting[0][0] if self._waiting else None

    def get(self) -> K | None:
        """The oldest queued key, now held by the caller until ``done``; None when empty."""
        with self._lock:
            if not self._queue:
                return None
            key, _ = self._queue.popitem(last=False)
            self._dirty.discard(key)
            self._processing.add(key)
            return key

    def done(self, key: K) -> None:
        """The caller finished ``key``; queued again if it was added meanwhile."""
        with self._lock:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue[key] = None

    def pending(self, key: K) -> bool:
        """Whether ``key`` waits for a worker (queued, or added again while held)."""
        with self._lock:
            return key in self._dirty

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)
