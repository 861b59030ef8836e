"""Who may be evicted: running gangs as whole victims, in a stable order, and what protects them.

A victim is a gang: every running pod of a PodGroup (or one pod without one). Evicting part
of a gang would leave it below minMember, useless, so it goes whole or not at all. Never a
victim:

* a pod whose PriorityClass (or its PodGroup's) carries ``drasched.io/preemptible: "false"``
  as a label or an annotation;
* a pod that ran less than its queue's ``minRuntime`` (the nearest queue up the tree that
  sets it); the time it becomes a candidate is noted so the scheduler looks again then;
* a gang with a pod whose binding is still in flight (a pending BindRequest);
* a pod that two PodDisruptionBudgets cover (the eviction API refuses it), or whose budget
  has no disruption left: budgets are spent as victims are chosen, so two victims under
  one budget are counted together (``budgets.py``).

``preemptionPolicy: Never`` keeps upstream's meaning: it marks pods that never *cause*
evictions (they wait), not pods that cannot be evicted (see ``actions/search.py``).

Order, the same every cycle: fewest pods, then lowest priority, then youngest (latest
start), then the gang's key.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from drasched.api import disruption
from drasched.api.meta import parse_time
from drasched.scheduler.budgets import Budgets
from drasched.scheduler.constants import GPU
from drasched.scheduler.extended import request_row
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.release import claim_keys, holdings
from drasched.scheduler.session import Session
from drasched.scheduler.snapshot import GroupInfo

Obj = dict[str, Any]
PREEMPTIBLE_KEY = "drasched.io/preemptible"


def _class_protects(pc: Obj | None) -> bool:
    md = (pc or {}).get("metadata") or {}
    marks = ((md.get("labels") or {}).get(PREEMPTIBLE_KEY), (md.get("annotations") or {}).get(PREEMPTIBLE_KEY))
    return "false" in marks


def _epoch(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return parse_time(text).timestamp()
    except ValueError:
        return None


@dataclass(eq=False)
class VictimGang:
    """A running gang that may be evicted, with what evicting it frees."""

    group: GroupInfo
    pods: list[tuple[PodInfo, int]]
    """Running pods and their node indexes."""
    demand: dict[str, float]
    """Accounting dimensions it holds: its pods' requests and the claims only its pods hold."""
    frees: dict[int, dict[int, float]]
    """Node -> row -> what evicting it frees there (container requests and DeviceClass rows)."""
    started: float
    movable: bool
    """Every pod has a controller owner that recreates it: consolidation may move it."""
    budgets: dict[int, tuple[int, int]] = field(default_factory=dict)
    """PDB index -> (healthy, unhealthy) pods of the gang it covers."""

    @property
    def key(self) -> str:
        return self.group.key

    @property
    def queue(self) -> str:
        return self.group.queue

    @property
    def priority(self) -> int:
        return self.group.priority

    @property
    def rank(self) -> tuple[int, int, float, str]:
        """Fewest pods, lowest priority, youngest first; the key keeps the order stable."""
        return (len(self.pods), self.priority, -self.started, self.key)


class VictimIndex:
    """Every possible victim gang of this cycle, by node, in victim order."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.budgets = Budgets(session)
        self.protected: dict[str, str] = {}
        self.gangs: list[VictimGang] = []
        now = _epoch(session.now)
        for g in session.snap.groups.values():
            v = self._victim(g, now)
            if v is not None:
                self.gangs.append(v)
        self.gangs.sort(key=lambda v: v.rank)
        self.by_node: dict[int, list[VictimGang]] = {}
        for v in self.gangs:
            for j in sorted({j for _, j in v.pods}):
                self.by_node.setdefault(j, []).append(v)

    def _victim(self, g: GroupInfo, now: float | None) -> VictimGang | None:
        snap = self.session.snap
        if g.queue not in snap.queues:
            return None
        running = [p for p in g.pods if p.node_name and not p.terminal and not p.deleting]
        if not running or any(p.key in snap.assumed for p in g.pods):
            return None
        if any(p.uid in self.session.disruption.avoid for p in running):
            self.protected[g.key] = "its eviction was refused lately"
            return None
        why = self._protection(g, running, now)
        if why is not None:
            self.protected[g.key] = why
            return None
        pods = [(p, snap.node_pos[p.node_name]) for p in running if p.node_name in snap.node_pos]
        if len(pods) != len(running):
            return None
        budgets: dict[int, tuple[int, int]] = {}
        for p, _ in pods:
            cover = self.budgets.covering(p)
            if len(cover) > 1:
                self.protected[g.key] = f"pod {p.key} is covered by more than one PodDisruptionBudget"
                return None
            for i in cover:
                h, u = budgets.get(i, (0, 0))
                budgets[i] = (h + 1, u) if disruption.is_healthy(p.obj) else (h, u + 1)
        starts = [_epoch((p.obj.get("status") or {}).get("startTime")) or _epoch(p.created) or 0.0 for p, _ in pods]
        demand, frees = self._frees(pods)
        movable = all(_controller(p.obj) for p, _ in pods)
        victim = VictimGang(g, pods, demand, frees, max(starts), movable, budgets)
        for f in self.session.profile.victim_filters:
            why = f.protects(self.session, victim)
            if why is not None:
                self.protected[g.key] = why
                return None
        return victim

    def _protection(self, g: GroupInfo, running: list[PodInfo], now: float | None) -> str | None:
        snap = self.session.snap
        pcs = snap.priority_classes
        spec = (g.obj or {}).get("spec") or {}
        if _class_protects(pcs.get(spec.get("priorityClassName") or "")):
            return f"PriorityClass {spec['priorityClassName']} is not preemptible ({PREEMPTIBLE_KEY})"
        for p in running:
            name = (p.obj.get("spec") or {}).get("priorityClassName") or ""
            if _class_protects(pcs.get(name)):
                return f"PriorityClass {name} of pod {p.key} is not preemptible ({PREEMPTIBLE_KEY})"
        min_runtime = effective_min_runtime(self.session, g.queue)
        if min_runtime and now is not None:
            for p in running:
                started = _epoch((p.obj.get("status") or {}).get("startTime"))
                ran = now - started if started is not None else 0.0
                if ran < min_runtime:
                    self.session.disruption.note_wake(parse_time(self.session.now)
                                                      + timedelta(seconds=math.ceil(min_runtime - ran)))
                    return f"pod {p.key} ran less than the minRuntime of queue {g.queue}"
        return None

    def _frees(self, pods: list[tuple[PodInfo, int]]) -> tuple[dict[str, float], dict[int, dict[int, float]]]:
        """What the gang holds in accounting dimensions, and what evicting it frees per node and row."""
        s = self.session
        snap = s.snap
        uids = {p.uid for p, _ in pods}
        frees: dict[int, dict[int, float]] = {}
        seen: set[str] = set()
        for p, j in pods:
            rows = frees.setdefault(j, {})
            for r, v in p.requests.items():
                name = request_row(r, snap.nodes[j], snap.accounting)
                if name is not None:
                    rows[snap.index.pos[name]] = rows.get(snap.index.pos[name], 0.0) + v
            for key in claim_keys(s, p):
                info = snap.claims[key]
                if key in seen or not info.allocation or any(r.get("uid") not in uids for r in info.reserved_for):
                    continue
                seen.add(key)
                if not info.extended:  # as Session.take_devices: its GPUs count in the GPU row too
                    gpu_row = snap.index.pos[GPU]
                    for dev, units in snap.gpus.allocation_units(info.allocation):
                        for n in snap.gpus.device_nodes.get(dev, ()):
                            at = frees.setdefault(n, {})
                            at[gpu_row] = at.get(gpu_row, 0.0) + float(units)
                for r in (info.allocation.get("devices") or {}).get("results") or []:
                    dev = (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
                    if r.get("adminAccess") or r.get("shareID"):
                        continue
                    for n in snap.device_nodes.get(dev, ()):
                        at = frees.setdefault(n, {})
                        for cls in snap.device_classes.get(dev, ()):
                            row = snap.class_rows[cls]
                            at[row] = at.get(row, 0.0) + 1.0
        return holdings(s, [p for p, _ in pods]), frees

    def on_node(self, j: int, allowed: Callable[[VictimGang], bool]) -> list[VictimGang]:
        """Victims with a pod on node ``j`` that are not evicted yet and that ``allowed`` accepts."""
        gone = self.session.disruption.evicted_gangs
        return [v for v in self.by_node.get(j, ()) if v.key not in gone and allowed(v)]


def _controller(pod: Obj) -> bool:
    return any(r.get("controller") for r in (pod.get("metadata") or {}).get("ownerReferences") or [])


def effective_min_runtime(session: Session, queue: str) -> float | None:
    """The minRuntime of the nearest queue up from ``queue`` that sets one."""
    tree = session.snap.queues
    for q in tree.ancestors(queue):
        if tree.queues[q].min_runtime is not None:
            return tree.queues[q].min_runtime
    return None


def victim_index(session: Session) -> VictimIndex:
    """The cycle's victim index, built on first use."""
    state = session.disruption
    if state.victims is None:
        state.victims = VictimIndex(session)
    assert isinstance(state.victims, VictimIndex)
    return state.victims
