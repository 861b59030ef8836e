"""Freeing a running pod's resources inside a session, journaled like every other change.

A released pod (a victim being evicted, or a terminating pod whose room a nominated
preemptor may use) gives back on its node: its place in the inter-pod filters' counts
(``EvictionState.released``); its container requests in the node vectors;
its reservation in each of its claims; and every claim whose last consumer it was (claims
from templates, extended-resource claims, shared claims no one else holds): allocation out
of the allocator state, DeviceClass rows freed. A claim still reserved for someone else
(another pod, or its PodGroup: group claims) stays allocated. The queue's allocated usage
drops by what was freed. :func:`reoccupy` puts a release back as a new change, so a
preemptor can be placed on room that is only releasing and that room stays taken for
everyone else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drasched.scheduler.accounting import ALLOCATED, demand_with_claims
from drasched.scheduler.extended import request_row
from drasched.scheduler.journal import Inverse
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.session import Session

Obj = dict[str, Any]
EXTENDED_STATUS = "extendedResourceClaimStatus"


def claim_keys(session: Session, pod: PodInfo) -> list[str]:
    """The pod's claims: its ``spec.resourceClaims`` and its extended-resource claim (KEP-5004)."""
    snap = session.snap
    keys = [c.key for c in snap.pod_claims.get(pod.key, ()) if c.key]
    name = ((pod.obj.get("status") or {}).get(EXTENDED_STATUS) or {}).get("resourceClaimName")
    if name and f"{pod.namespace}/{name}" in snap.claims:
        keys.append(f"{pod.namespace}/{name}")
    return keys


def holdings(session: Session, pods: list[PodInfo]) -> dict[str, float]:
    """What ``pods`` hold in accounting dimensions: their requests and the claims no one else holds."""
    snap = session.snap
    uids = {p.uid for p in pods}
    out: dict[str, float] = {}
    seen: set[str] = set()
    for p in pods:
        for d, v in snap.pod_demand(p).items():
            out[d] = out.get(d, 0.0) + v
        for key in claim_keys(session, p):
            info = snap.claims[key]
            if key in seen or not info.allocation or any(r.get("uid") not in uids for r in info.reserved_for):
                continue
            seen.add(key)
            for d, v in info.demand.items():
                out[d] = out.get(d, 0.0) + v
    return out


@dataclass(eq=False)
class Release:
    """One pod's resources given back; ``apply``/``revert`` are exact inverses."""

    session: Session
    pod: PodInfo
    node: int
    queue: str
    freed: list[tuple[str, Obj, Obj | None]] = field(default_factory=list)
    """(claim key, allocation removed, session allocation it replaced) per deallocated claim."""
    unreserved: list[str] = field(default_factory=list)
    demand: dict[str, float] = field(default_factory=dict)
    counted: list[str] = field(default_factory=list)
    """Freed claims the queue's usage had counted (their devices leave it too)."""

    def apply(self) -> None:
        s, pod, j = self.session, self.pod, self.node
        for row, v in self.rows:
            s.used[row, j] -= v
            s.idle[row, j] += v
        s.node_version[j] += 1
        released = s.disruption.released
        released[pod.key] = released.get(pod.key, 0) + 1
        s.disruption.released_version += 1
        self.freed, self.unreserved = [], []
        for key in claim_keys(s, pod):
            if all(r.get("uid") != pod.uid for r in s.reservations(key)):
                continue  # reserved for its PodGroup (a group claim) or not at all: not ours to free
            s.released.setdefault(key, set()).add(pod.uid)
            self.unreserved.append(key)
            alloc = s.claim_allocation(key)
            if alloc is None or s.reservations(key):
                continue
            s.state.remove(alloc)
            s.take_devices(alloc, +1.0, gpu_row=not s.snap.claims[key].extended)
            self.freed.append((key, alloc, s.claim_alloc.pop(key, None)))
            s.deallocated.add(key)
        counted = s.usage.claims[ALLOCATED].get(self.queue, set())
        self.counted = [k for k, _, _ in self.freed if k in counted]
        self.demand = demand_with_claims(s.snap, pod, self.counted)
        s.usage.add(ALLOCATED, self.queue, self.demand, -1.0)
        s.usage.mark(ALLOCATED, self.queue, self.counted, counted=False)
        s.disruption.status_delta.add(ALLOCATED, self.queue, self.demand)

    def revert(self) -> None:
        s, pod, j = self.session, self.pod, self.node
        s.disruption.status_delta.add(ALLOCATED, self.queue, self.demand, -1.0)
        s.usage.mark(ALLOCATED, self.queue, self.counted)
        s.usage.add(ALLOCATED, self.queue, self.demand)
        for key, alloc, prev in reversed(self.freed):
            s.deallocated.discard(key)
            if prev is not None:
                s.claim_alloc[key] = prev
            s.take_devices(alloc, -1.0, gpu_row=not s.snap.claims[key].extended)
            s.state.add(alloc)
        for key in self.unreserved:
            s.released[key].discard(pod.uid)
        released = s.disruption.released
        if released[pod.key] == 1:
            del released[pod.key]
        else:
            released[pod.key] -= 1
        s.disruption.released_version += 1
        for row, v in self.rows:
            s.used[row, j] += v
            s.idle[row, j] -= v
        s.node_version[j] += 1

    @property
    def rows(self) -> list[tuple[int, float]]:
        """The rows the pod's requests count in on its node, as the snapshot counted them."""
        snap = self.session.snap
        node = snap.nodes[self.node]
        out: list[tuple[int, float]] = []
        for r, v in self.pod.requests.items():
            name = request_row(r, node, snap.accounting)
            if name is not None:
                out.append((snap.index.pos[name], v))
        return out


@dataclass(eq=False)
class ClaimRelease:
    """The devices of a claim whose pods are gone, given back in the session: the claim
    controller deallocates it a moment after its last pod goes, and a nominated preemptor may
    count on that room as on a terminating victim's (``apply``/``revert`` are exact inverses)."""

    session: Session
    key: str
    freed: tuple[Obj, Obj | None] | None = None
    """(allocation removed, session allocation it replaced), None when there was none."""

    def apply(self) -> None:
        s = self.session
        alloc = s.claim_allocation(self.key)
        self.freed = None
        if alloc is None:
            return
        s.state.remove(alloc)
        s.take_devices(alloc, +1.0, gpu_row=not s.snap.claims[self.key].extended)
        self.freed = (alloc, s.claim_alloc.pop(self.key, None))
        s.deallocated.add(self.key)

    def revert(self) -> None:
        if self.freed is None:
            return
        s = self.session
        alloc, prev = self.freed
        s.deallocated.discard(self.key)
        if prev is not None:
            s.claim_alloc[self.key] = prev
        s.take_devices(alloc, -1.0, gpu_row=not s.snap.claims[self.key].extended)
        s.state.add(alloc)


def release_claim(session: Session, key: str) -> ClaimRelease:
    """Free claim ``key``'s devices in the session (undone by a Statement rollback)."""
    rel = ClaimRelease(session, key)
    session.apply(rel)
    return rel


def release(session: Session, pod: PodInfo, node: int, queue: str) -> Release:
    """Free ``pod``'s resources in the session (undone by a Statement rollback)."""
    rel = Release(session, pod, node, queue)
    session.apply(rel)
    return rel


def reoccupy(session: Session, rel: Release | ClaimRelease) -> None:
    """Take a release's resources again, as a new change (a rollback frees them again)."""
    session.apply(Inverse(rel))
