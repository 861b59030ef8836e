"""Backoff for pods whose bind failed: they wait before they are placed again.

A pod whose BindRequest ends ``Failed`` was placed from a view the binder found stale (a
claim allocated meanwhile, a node gone). Placing it again at once, from the same view,
fails the same way; against a real API server that was a tight loop of placements and
FailedScheduling events. Upstream's scheduling queue sends a pod whose scheduling cycle
ended in an error to its backoff queue: 1 s after the first attempt, doubling per attempt,
at most 10 s (``DefaultPodInitialBackoffDuration`` / ``DefaultPodMaxBackoffDuration`` and
``calculateBackoffDuration`` in kubernetes ``pkg/scheduler/backend/queue/scheduling_queue.go``).

Times come from the caller (the context's clock), so a simulation backs off in virtual
time and stays deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

INITIAL_BACKOFF = timedelta(seconds=1)
"""Upstream's podInitialBackoffSeconds default."""
MAX_BACKOFF = timedelta(seconds=10)
"""Upstream's podMaxBackoffSeconds default."""

Obj = dict[str, Any]


def backoff_duration(attempts: int) -> timedelta:
    """The wait after ``attempts`` failed binds: 1 s, 2 s, 4 s, 8 s, then 10 s."""
    duration = INITIAL_BACKOFF
    for _ in range(1, attempts):
        duration *= 2
        if duration > MAX_BACKOFF:
            return MAX_BACKOFF
    return duration


@dataclass
class _Failures:
    pod_key: str
    attempts: int
    last_request: str
    """The uid of the last failed BindRequest counted (each retry creates a new one)."""
    until: datetime


class BindBackoff:
    """Failed binds per pod uid, and until when each such pod waits."""

    def __init__(self) -> None:
        self._by_pod: dict[str, _Failures] = {}

    def observe(self, failed: Iterable[tuple[str, str, Obj]], now: datetime) -> None:
        """Count each failed BindRequest once; ``failed``: (pod key, pod uid, failed BindRequest)."""
        for pod_key, pod_uid, br in failed:
            br_uid = str((br.get("metadata") or {}).get("uid", ""))
            seen = self._by_pod.get(pod_uid)
            if seen is not None and seen.last_request == br_uid:
                continue
            attempts = 1 if seen is None else seen.attempts + 1
            self._by_pod[pod_uid] = _Failures(pod_key, attempts, br_uid, now + backoff_duration(attempts))

    def forget(self, keep: Callable[[str, str], bool]) -> None:
        """Drop pods no longer waiting to be placed; ``keep(pod uid, pod key)`` says which stay.

        Only pods with a failed bind are looked at, so this costs nothing in a healthy cluster.
        """
        self._by_pod = {uid: f for uid, f in self._by_pod.items() if keep(uid, f.pod_key)}

    def waiting(self, now: datetime) -> list[tuple[str, str, datetime]]:
        """(pod key, pod uid, end of its backoff) for pods still backing off at ``now``."""
        return [(f.pod_key, uid, f.until) for uid, f in self._by_pod.items() if f.until > now]

    def attempts(self, pod_uid: str) -> int:
        seen = self._by_pod.get(pod_uid)
        return 0 if seen is None else seen.attempts
