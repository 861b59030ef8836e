"""Nominated preemptors first: placed once their victims are gone, holding their room until then.

A pod with ``status.nominatedNodeName`` had victims evicted for it. Each cycle, before any
other gang, its gang is tried on the nominated nodes:

* if it fits now (the victims are gone, their claims released), it is placed and bound;
* otherwise, if it fits once the pods still terminating on those nodes are gone (devices of
  terminating pods count as *releasing*), it holds that room: the session places it there
  and then takes the releasing resources back for everyone else, so no other pod gets the
  room freed so far nor the room still releasing; no BindRequest is written yet;
* otherwise (a victim's eviction was refused, or the cluster changed) it is left to the
  other actions, which may nominate it again; a nomination nobody renews is cleared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from drasched.scheduler.accounting import ALLOCATED
from drasched.scheduler.actions.task import place_task
from drasched.scheduler.claims import ClaimInfo
from drasched.scheduler.eviction import nominated_message
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.release import ClaimRelease, Release, release, release_claim, reoccupy
from drasched.scheduler.session import Session, Statement
from drasched.scheduler.snapshot import GroupInfo, Snapshot

Terminating = dict[int, list[tuple[PodInfo, str]]]
"""Node -> (pod being deleted there, its queue)."""


def nominated_node(pod: PodInfo) -> str | None:
    return (pod.obj.get("status") or {}).get("nominatedNodeName") or None


def place_nominated(session: Session) -> set[str]:
    """Place or hold every gang with nominated pods; return the keys of the gangs placed or held."""
    snap = session.snap
    gangs = sorted((g for g in snap.pending_groups
                    if g.pending and g.blocked is None and g.queue in snap.queues
                    and any(nominated_node(p) for p in g.pending)), key=lambda g: (-g.priority, g.created, g.key))
    handled: set[str] = set()
    waiting: dict[tuple[int, ...], list[GroupInfo]] = {}
    for g in gangs:
        stmt = session.statement()
        if _place(session, stmt, g, hold_room=False):
            stmt.commit()
            handled.add(g.key)
        else:
            waiting.setdefault(_nodes(session, g), []).append(g)
    if not waiting:
        return handled
    terminating = _terminating(session)
    stale = _stale_claims(session)
    for nodes, group in waiting.items():
        # The pods terminating on these nodes are released once for every gang nominated there,
        # and so are the claims of victims already gone that the claim controller has not yet
        # deallocated (a moment's work): both are room on its way to the gang.
        released: list[Release | ClaimRelease] = [
            release(session, p, j, queue) for j in nodes for p, queue in terminating.get(j, ())]
        released += [release_claim(session, key) for j in nodes for key in stale.get(j, ())]
        if not released:
            continue
        for g in group:
            stmt = session.statement()
            if _place(session, stmt, g, hold_room=True):
                stmt.commit()
                handled.add(g.key)
        for rel in reversed(released):
            reoccupy(session, rel)
    return handled


def _terminating(session: Session) -> Terminating:
    snap = session.snap
    out: Terminating = {}
    for p in sorted(snap.deleting.values(), key=lambda p: p.key):
        if p.deleting and not p.terminal and p.node_name in snap.node_pos and p.key in snap.group_of:
            queue = snap.groups[snap.group_of[p.key]].queue
            if queue in snap.queues:
                out.setdefault(snap.node_pos[p.node_name], []).append((p, queue))
    return out


def _stale_claims(session: Session) -> dict[int, list[str]]:
    """Node -> claims holding devices there whose pods are gone: allocated, reserved for no pod
    that still exists (or for none, and generated for a pod that is gone, or being deleted).
    The claim controller releases and deallocates them right after the pods go."""
    snap = session.snap
    out: dict[int, list[str]] = {}
    for c in snap.claims.values():
        if c.allocation is None or c.assumed:
            continue
        node = allocation_node(c.allocation) or _device_node(snap, c.allocation)
        if node not in snap.node_pos:
            continue
        if c.reserved_for:
            if any(_alive(snap, c, r) for r in c.reserved_for):
                continue
        elif not (c.deleting or _owner_pod_gone(snap, c)):
            continue  # allocated ahead of its pods (or for a group): not being released
        out.setdefault(snap.node_pos[node], []).append(c.key)
    return out


def _alive(snap: Snapshot, claim: ClaimInfo, consumer: dict[str, object]) -> bool:
    if consumer.get("resource") != "pods":
        return True  # a PodGroup's reservation: its group decides
    pod = snap.pods.get(f"{claim.key.split('/', 1)[0]}/{consumer.get('name')}")
    return pod is not None and pod.uid == consumer.get("uid") and not pod.terminal


def _owner_pod_gone(snap: Snapshot, claim: ClaimInfo) -> bool:
    owner = next((r for r in (claim.obj.get("metadata") or {}).get("ownerReferences") or []
                  if r.get("controller") and r.get("kind") == "Pod"), None)
    if owner is None:
        return False
    pod = snap.pods.get(f"{claim.key.split('/', 1)[0]}/{owner.get('name')}")
    return pod is None or pod.uid != owner.get("uid") or pod.terminal


def allocation_node(allocation: dict[str, Any]) -> str | None:
    """The one node an allocation's ``nodeSelector`` pins it to (``metadata.name In [node]``), if any."""
    selector = allocation.get("nodeSelector")
    terms = selector.get("nodeSelectorTerms") if isinstance(selector, dict) else None
    if not isinstance(terms, list) or len(terms) != 1 or not isinstance(terms[0], dict):
        return None
    fields = terms[0].get("matchFields") or []
    names = [v for f in fields if isinstance(f, dict) and f.get("key") == "metadata.name" and f.get("operator") == "In"
             for v in f.get("values") or []]
    return str(names[0]) if len(names) == 1 else None


def _device_node(snap: Snapshot, allocation: dict[str, Any]) -> str | None:
    """The node of the slice that publishes an allocation's first device (node-local devices)."""
    for r in ((allocation.get("devices") or {}).get("results") or []):
        entry = snap.accounting.devices.get((r.get("driver"), r.get("pool"), r.get("device")))
        if entry is not None:
            return entry.node_name
    return None


def _tasks(g: GroupInfo) -> list[PodInfo]:
    nominated = [p for p in g.pending if nominated_node(p)]
    return nominated if len(nominated) >= g.min_member - g.placed else g.pending


def _nodes(session: Session, g: GroupInfo) -> tuple[int, ...]:
    pos = session.snap.node_pos
    return tuple(sorted({pos[n] for t in _tasks(g) if (n := nominated_node(t)) in pos}))


def _place(session: Session, stmt: Statement, g: GroupInfo, hold_room: bool) -> bool:
    """Place ``g`` on its nominated nodes; ``hold_room``: as a hold (no BindRequest), on releasing room."""
    mark = stmt.checkpoint()
    tasks = _tasks(g)
    placed = [t for t in tasks if place_task(session, stmt, g, t, _mask(session, t)) is None]
    if len(placed) < max(g.min_member - g.placed, 1):
        stmt.rollback(mark)
        return False
    if hold_room:
        hold(session, g, placed)
    return True


def _mask(session: Session, t: PodInfo) -> np.ndarray | None:
    snap = session.snap
    node = nominated_node(t)
    if node not in snap.node_pos:
        return None
    mask = np.zeros(snap.n_nodes, dtype=bool)
    mask[snap.node_pos[node]] = True
    return mask


def hold(session: Session, g: GroupInfo, tasks: list[PodInfo]) -> None:
    """Mark the gang's placements as nominated (no BindRequest yet), journaled.

    What they add to the queue's usage is left out of its reported status until they are bound.
    """
    snap = session.snap
    held = {t.key: snap.nodes[session.placements[t.key].node].name for t in tasks}
    session.apply(Nominated(session, g.queue, held, placed_demand(session, tasks)))


@dataclass(slots=True, eq=False)
class Nominated:
    """Preemptors held on the nodes their victims free: nominated, out of their queue's reported status."""

    session: Session
    queue: str
    held: dict[str, str]
    """Pod key -> node name."""
    demand: dict[str, float]
    old: dict[str, str | None] = field(default_factory=dict)

    def apply(self) -> None:
        s = self.session
        state = s.disruption
        state.nominated.update(self.held)
        state.status_delta.add(ALLOCATED, self.queue, self.demand, -1.0)
        self.old = {k: s.unschedulable.get(k) for k in self.held}
        for k, node in self.held.items():
            s.unschedulable[k] = nominated_message(node)

    def revert(self) -> None:
        s = self.session
        for k, m in self.old.items():
            s.disruption.nominated.pop(k, None)
            if m is None:
                s.unschedulable.pop(k, None)
            else:
                s.unschedulable[k] = m
        s.disruption.status_delta.add(ALLOCATED, self.queue, self.demand)


def placed_demand(session: Session, pods: list[PodInfo]) -> dict[str, float]:
    """What the session's placements of ``pods`` added to their queue's usage."""
    out: dict[str, float] = {}
    for p in pods:
        for d, v in session.placements[p.key].demand.items():
            out[d] = out.get(d, 0.0) + v
    return out


def nominations(session: Session) -> list[tuple[PodInfo, str | None]]:
    """``status.nominatedNodeName`` changes: new nominations, and stale ones to clear."""
    state = session.disruption
    out: list[tuple[PodInfo, str | None]] = []
    for key, node in state.nominated.items():
        pod = session.snap.pods[key]
        if nominated_node(pod) != node:
            out.append((pod, node))
    for g in session.snap.pending_groups:
        for p in g.pending:
            if nominated_node(p) and p.key not in state.nominated and p.key not in session.placements:
                out.append((p, None))
    return out
