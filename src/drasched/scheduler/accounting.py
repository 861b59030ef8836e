"""Pods' demand in accounting dimensions, with their claims (queue usage: :mod:`~drasched.scheduler.usage`)."""

from __future__ import annotations

from collections.abc import Iterable

from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.snapshot import Snapshot
from drasched.scheduler.usage import ALLOCATED, REQUESTED, QueueUsage

__all__ = ["ALLOCATED", "REQUESTED", "QueueUsage", "demand_with_claims", "pod_claim_keys"]


def demand_with_claims(snap: Snapshot, pod: PodInfo, claim_keys: Iterable[str]) -> dict[str, float]:
    """A pod's demand plus the devices of the given claims, in accounting dimensions."""
    out = snap.pod_demand(pod)
    for k in claim_keys:
        info = snap.claims.get(k)
        if info is None:
            continue
        for d, v in info.demand.items():
            out[d] = out.get(d, 0.0) + v
    return out


def pod_claim_keys(snap: Snapshot, pod: PodInfo) -> list[str]:
    return [c.key for c in snap.pod_claims.get(pod.key, []) if c.key]
