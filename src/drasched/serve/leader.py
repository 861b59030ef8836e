"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does.

Only the holder of an unexpired lease runs the control loops; every write goes through the
Lease's resourceVersion, so two candidates can never both believe they lead.
"""

from __future__ import annotations

import contextlib
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.store.base import ClusterStore


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
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this process holds the lease afterwards."""
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
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        renew = spec.get("renewTime")
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        expired = not renew or _parse(renew) + timedelta(seconds=duration) < now
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
            self.store.update(lease)  # resourceVersion precondition: one winner
            return True
        except (Conflict, NotFound):
            return False

    def release(self) -> None:
        """Give the lease up on shutdown so a standby takes over at once."""
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
