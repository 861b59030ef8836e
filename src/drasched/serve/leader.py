"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does.

Only the holder of an unexpired lease runs the control loops; every write of the Lease goes
through its resourceVersion, so two candidates can never both take it at once.

Timing follows client-go. A candidate counts another holder's lease as expired only when
the record (holder, renewTime) has not changed for ``lease_duration`` *as measured on the
candidate's own monotonic clock* since it first saw that record, so clock skew between
replicas does not matter. The leader renews every ``retry_period``; it may write only
within ``renew_deadline`` (shorter than ``lease_duration``) of the start of its last
successful renewal (:meth:`LeaderElector.may_write`): a leader paused past that deadline
(SIGSTOP, a long GC, a stalled node) finds its writes fenced when it resumes, before any
other replica can have taken the lease over.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from drasched.api import kinds
from drasched.api.errors import ApiError, NotFound
from drasched.store.base import ClusterStore

log = logging.getLogger(__name__)


def _micro(dt: datetime) -> str:
    """metav1.MicroTime as the API server writes it."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass
class LeaderElector:
    store: ClusterStore
    name: str = "drasched"
    namespace: str = "kube-system"
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4()}")
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    """How long after the start of its last successful renewal the leader may still write."""
    retry_period: float = 2.0
    """How often candidates try to acquire and the leader renews."""
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    """Wall clock, for the timestamps written into the Lease."""
    monotonic: Callable[[], float] | None = None
    """Clock for expiry and fencing (``time.monotonic`` in serve); default: ``clock``'s seconds."""
    _observed: tuple[object, object] | None = field(default=None, init=False)
    _observed_at: float = field(default=0.0, init=False)
    _renewed_at: float | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("leader election needs 0 < retry period < renew deadline < lease duration "
                             f"(got {self.retry_period}, {self.renew_deadline}, {self.lease_duration})")

    def _now(self) -> float:
        return self.monotonic() if self.monotonic is not None else self.clock().timestamp()

    def may_write(self) -> bool:
        """Whether this process leads and its last renewal is recent enough to write safely."""
        with self._lock:
            renewed = self._renewed_at
        return renewed is not None and self._now() < renewed + self.renew_deadline

    @property
    def is_leader(self) -> bool:
        """Held the lease at the last attempt (it may since have passed the renew deadline)."""
        return self._renewed_at is not None

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this process holds the lease afterwards."""
        started = self._now()
        ok = self._attempt(started)
        with self._lock:
            was_leader = self._renewed_at is not None
            if ok:
                self._renewed_at = started
            elif self._renewed_at is not None and started >= self._renewed_at + self.renew_deadline:
                self._renewed_at = None  # could not renew in time: leadership is lost
            is_leader = self._renewed_at is not None
        if is_leader != was_leader:  # as client-go's "successfully acquired lease" / "failed to renew"
            if is_leader:
                log.info("acquired Lease %s/%s as %s: this replica leads", self.namespace, self.name, self.identity)
            else:
                log.warning("could not renew Lease %s/%s in time: this replica no longer leads",
                            self.namespace, self.name)
        return ok

    def _observe(self, spec: dict[str, object], at: float) -> float:
        """When this candidate first saw the lease's current record (client-go's observedTime)."""
        record = (spec.get("holderIdentity"), spec.get("renewTime"))
        if record != self._observed:
            self._observed, self._observed_at = record, at
        return self._observed_at

    def _attempt(self, started: float) -> bool:
        now = self.clock()
        try:
            lease = self.store.get(kinds.LEASE, self.name, self.namespace)
        except NotFound:
            try:
                self.store.create({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                             "acquireTime": _micro(now), "renewTime": _micro(now), "leaseTransitions": 0},
                })
                return True
            except ApiError:
                return False
        except ApiError:
            return False
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        observed_at = self._observe(spec, started)
        expired = not spec.get("renewTime") or observed_at + duration <= started
        if holder and holder != self.identity and not expired:
            return False
        if holder != self.identity:
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            spec["acquireTime"] = _micro(now)
        spec["holderIdentity"] = self.identity
        spec["renewTime"] = _micro(now)
        spec["leaseDurationSeconds"] = int(self.lease_duration)
        lease["spec"] = spec
        try:
            updated = self.store.update(lease)  # resourceVersion precondition: one winner
        except ApiError:
            return False
        self._observe(updated.get("spec") or {}, started)
        return True

    def release(self) -> None:
        """Give the lease up on shutdown so a standby takes over at once."""
        with self._lock:
            self._renewed_at = None
        try:
            lease = self.store.get(kinds.LEASE, self.name, self.namespace)
        except NotFound:
            return
        if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        lease["spec"]["holderIdentity"] = None
        lease["spec"]["leaseDurationSeconds"] = 1
        with contextlib.suppress(ApiError):
            self.store.update(lease)
