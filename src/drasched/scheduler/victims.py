"""Who may be evicted: running gangs and their surplus pods, in a stable order, and what protects them.

A victim is a gang: every running pod of a PodGroup (or one pod without one). Evicting part
of a gang would leave it below minMember, useless, so it goes whole or not at all, with one
exception: an *elastic* gang, one running more pods than its minMember, may lose its surplus
pod by pod. Each running pod of such a gang is also a victim of its own (a surplus unit, a
:class:`VictimGang` over that one pod), and at most (running - minMember) of them are taken,
so the gang keeps minMember pods and keeps running (nothing re-places the others; the pod's
controller makes a new pending pod, placed later as any). A gang's surplus units come before
the gang itself (one pod each), so the whole gang is taken only when its surplus is not
enough; taking it whole then takes what is left of it. The surplus goes in KAI's and
Volcano's order (the reverse of their task order: ``GetTasksToEvict`` and the preempt/reclaim
victim queues): lowest pod priority first, then the youngest (latest created), then the
highest Job completion index, then the pod's key (KAI's Kubeflow plugin keeps a master or
launcher pod, ``training.kubeflow.org/job-role``, for last). Never a victim:

* a pod whose PriorityClass (or its PodGroup's) carries ``drasched.io/preemptible: "false"``
  as a label or an annotation;
* a pod that ran less than its queue's ``minRuntime`` (the nearest queue up the tree that
  sets it); the time it becomes a candidate is noted so the scheduler looks again then. As
  KAI's minruntime plugin (elastic jobs pass its filter; its scenario validator only keeps
  the job at minAvailable), this keeps a gang from going below minMember, not its surplus:
  surplus units are taken whatever they ran;
* a gang with a pod whose binding is still in flight (a pending BindRequest), surplus
  units included;
* a surplus unit of a PodGroup annotated ``drasched.io/evict-whole: "true"`` (upstream's
  ``disruptionMode: {all: {}}`` is translated to it): such a gang goes whole or not at all;
* a pod that two PodDisruptionBudgets cover (the eviction API refuses it), or whose budget
  has no disruption left: budgets are spent as victims are chosen, so two victims under
  one budget are counted together (``budgets.py``).

``preemptionPolicy: Never`` keeps upstream's meaning: it marks pods that never *cause*
evictions (they wait), not pods that cannot be evicted (see ``actions/search.py``).

Order, the same every cycle: fewest pods, then lowest priority, then youngest (latest
start; a surplus unit: latest created), then the gang's key (a surplus unit: the order
above).
"""

from __future__ import annotations

import math
from collections.abc import Callable
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


def _evicts_whole(g: GroupInfo) -> bool:
    """Whether PodGroup ``g`` asks to be evicted whole only (``drasched.io/evict-whole``; upstream's
    ``disruptionMode: {all: {}}``): no surplus units."""
    md = (g.obj or {}).get("metadata") or {}
    return (md.get("annotations") or {}).get(disruption.EVICT_WHOLE) == "true"


def _epoch(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return parse_time(text).timestamp()
    except ValueError:
        return None


JOB_INDEX = "batch.kubernetes.io/job-completion-index"
KUBEFLOW_ROLE = "training.kubeflow.org/job-role"
LEADER_ROLES = frozenset({"master", "launcher"})
"""KAI's Kubeflow plugin orders these pods first, so they are evicted last (``kubeflow.go`` ``TaskOrderFn``)."""


def surplus_order(p: PodInfo) -> tuple[bool, int, float, int, str]:
    """Where pod ``p`` goes among its gang's surplus, first taken first: KAI's and Volcano's
    task order reversed (``GetTasksToEvict``; Volcano's victim queues): a Kubeflow master or
    launcher last, then lowest priority, youngest (latest created), highest completion index,
    and the key (their UID, which names nothing stable)."""
    md = p.obj.get("metadata") or {}
    leader = ((md.get("labels") or {}).get(KUBEFLOW_ROLE) or "") in LEADER_ROLES
    try:
        index = int((md.get("annotations") or {}).get(JOB_INDEX) or (md.get("labels") or {}).get(JOB_INDEX) or -1)
    except ValueError:
        index = -1
    return (leader, p.priority, -(_epoch(p.created) or 0.0), -index, p.key)


class VictimGang:
    """A running gang that may be evicted, with what evicting it frees; or, with ``whole``
    given, one surplus pod of the elastic gang ``whole`` (a *surplus unit*).

    Built lazily, part by part: an action first asks a gang only what its rule's ``candidate``
    reads (its queue and priority, mostly), and most gangs of a large cluster are never asked
    more in a cycle (working out every gang's holdings was a quarter of a full cycle).

    A whole gang's :attr:`pods` are its running pods less its surplus units evicted in the
    session (taking it whole after some of its surplus takes the rest); what it holds and frees
    follows them.
    """

    __slots__ = ("_demand", "_frees", "_index", "_movable", "_pod_budgets", "_pods", "_seen", "_started",
                 "group", "order", "surplus", "taken", "whole")

    def __init__(self, group: GroupInfo, index: VictimIndex, pods: list[tuple[PodInfo, int]],
                 whole: VictimGang | None = None) -> None:
        self.group = group
        self._index = index
        self._pods = pods
        self.whole = whole
        """The gang a surplus unit belongs to (``None``: this is a whole gang)."""
        self.surplus: list[VictimGang] = []
        """A whole gang's surplus units, in the order they are taken (empty: not elastic)."""
        self.order: tuple[bool, int, float, int, str] | None = surplus_order(pods[0][0]) if whole is not None else None
        self._demand: dict[str, float] | None = None
        self._frees: dict[int, dict[int, float]] | None = None
        self._seen = -1
        """How many of its surplus units were evicted when :attr:`demand` and :attr:`frees` were worked out."""
        self._started: float | None = None
        self._movable: bool | None = None
        self._pod_budgets: dict[str, list[tuple[int, bool]]] = {}
        """Pod key -> (PDB index, healthy) of each budget covering it."""
        self.taken = 0
        """How many of its surplus units are evicted in the session (``search.GangEvicted``, journaled)."""

    def _fresh(self) -> None:
        taken = self.taken
        if taken != self._seen:
            self._seen, self._demand, self._frees = taken, None, None

    @property
    def pods(self) -> list[tuple[PodInfo, int]]:
        """Running pods and their node indexes (a whole gang's: less its surplus units evicted)."""
        if not self.surplus or not self.taken:
            return self._pods
        gone = self._index.session.disruption.evicted_gangs
        out = {u._pods[0][0].key for u in self.surplus if u.key in gone}
        return [(p, j) for p, j in self._pods if p.key not in out]

    @property
    def demand(self) -> dict[str, float]:
        """Accounting dimensions it holds: its pods' requests and the claims only its pods hold."""
        self._fresh()
        if self._demand is None:
            self._demand = holdings(self._index.session, [p for p, _ in self.pods])
        return self._demand

    @property
    def frees(self) -> dict[int, dict[int, float]]:
        """Node -> row -> what evicting it frees there (container requests and DeviceClass rows)."""
        self._fresh()
        if self._frees is None:
            self._frees = self._index.frees(self.pods)
        return self._frees

    @property
    def budgets(self) -> dict[int, tuple[int, int]]:
        """PDB index -> (healthy, unhealthy) pods it would disrupt under that budget."""
        out: dict[int, tuple[int, int]] = {}
        if not self._pod_budgets:
            return out
        for p, _ in self.pods:
            for i, healthy in self._pod_budgets.get(p.key, ()):
                h, u = out.get(i, (0, 0))
                out[i] = (h + 1, u) if healthy else (h, u + 1)
        return out

    @property
    def surplus_left(self) -> int:
        """A whole gang's running pods beyond minMember not evicted yet in the session: how many
        more of its surplus units may go."""
        return len(self._pods) - self.taken - max(self.group.min_member, 1)

    @property
    def started(self) -> float:
        """When its last pod started (its start time, else its creation); a surplus unit: its creation."""
        if self._started is None:
            if self.order is not None:
                self._started = -self.order[2]
            else:
                self._started = max(_epoch((p.obj.get("status") or {}).get("startTime")) or _epoch(p.created) or 0.0
                                    for p, _ in self._pods)
        return self._started

    @property
    def movable(self) -> bool:
        """Every pod has a controller owner that recreates it: consolidation may move it."""
        if self._movable is None:
            self._movable = self.group.movable
        return self._movable

    @property
    def key(self) -> str:
        """The gang's key; a surplus unit's: the gang's, ``#``, its pod's name."""
        return self.group.key if self.whole is None else f"{self.group.key}#{self._pods[0][0].name}"

    @property
    def queue(self) -> str:
        return self.group.queue

    @property
    def priority(self) -> int:
        return self.group.priority

    @property
    def rank(self) -> tuple[int, int, bool, int, float, int, str]:
        """Fewest pods, lowest priority, youngest first (a surplus unit: in :func:`surplus_order`, its
        pod's priority and creation); the key keeps the order stable."""
        if self.order is not None:
            leader, priority, created, index, _ = self.order
            return (1, self.priority, leader, priority, created, index, self.key)
        return (len(self._pods), self.priority, False, self.priority, -self.started, 0, self.key)


class VictimIndex:
    """The possible victims of this cycle (gangs and surplus units), by node, in victim order.

    Worked out on demand: a gang when a rule asks about it, a node's victims when a search
    looks at that node. Only gangs whose queue has a ``minRuntime`` are all looked at up front,
    so the scheduler still learns when each protection ends (it looks again then).
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.budgets = Budgets(session)
        self._protected: dict[str, str] = {}
        self._now = _epoch(session.now)
        self._heads: dict[str, VictimGang | None] = {}
        """Group key -> the gang (``None``: not running, or its queue is gone)."""
        self._valid: dict[str, bool] = {}
        """Group key -> whether the gang may be evicted (protections checked)."""
        self._units: dict[str, list[VictimGang]] = {}
        """Group key -> its victims: its surplus units that may be evicted, then the gang if it may be."""
        self._node_victims: dict[int, list[VictimGang]] = {}
        self._all: list[VictimGang] | None = None
        self._kinds: dict[tuple[str, int, bool], list[GroupInfo]] | None = None
        """Gangs whose queue exists, by queue, priority and movability (what :meth:`any_victim` asks about)."""
        snap = session.snap
        timed = {q for q in snap.queues.queues if effective_min_runtime(session, q) is not None}
        if timed:
            for g in snap.groups.values():
                if g.queue in timed:
                    self.victim(g)

    # ------------------------------------------------------------------ one gang

    def _head(self, g: GroupInfo) -> VictimGang | None:
        """The gang as a possible victim, its protections not checked yet."""
        if g.key in self._heads:
            return self._heads[g.key]
        head = None
        snap = self.session.snap
        if g.queue in snap.queues:
            node_pos = snap.node_pos
            pods = [(p, node_pos.get(p.node_name, -1)) for p in g.pods
                    if p.node_name and not p.terminal and not p.deleting]
            if pods:
                head = VictimGang(g, self, pods)
                if len(pods) > max(g.min_member, 1) and not _evicts_whole(g):
                    head.surplus = sorted((VictimGang(g, self, [pj], whole=head) for pj in pods),
                                          key=lambda u: u.order or ())
        self._heads[g.key] = head
        return head

    def victim(self, g: GroupInfo) -> VictimGang | None:
        """Group ``g`` as a victim, or ``None`` when it is not running or something protects it."""
        v = self._head(g)
        if v is None:
            return None
        ok = self._valid.get(g.key)
        if ok is None:
            ok = self._valid[g.key] = self._check(v)
        return v if ok else None

    def units(self, g: GroupInfo) -> list[VictimGang]:
        """Group ``g``'s victims, in victim order: its surplus units that may be evicted, then
        the gang itself if it may be (either may be missing)."""
        hit = self._units.get(g.key)
        if hit is None:
            head = self._head(g)
            hit = []
            if head is not None and not any(p.key in self.session.snap.assumed for p in g.pods):
                hit = [u for u in head.surplus if self._check(u)]
            whole = self.victim(g)
            if whole is not None:
                hit.append(whole)
            self._units[g.key] = hit
        return hit

    def available(self, v: VictimGang) -> bool:
        """Whether ``v`` may still be evicted as the session stands: not evicted yet; a surplus
        unit also while its gang is not evicted whole and keeps more than minMember pods."""
        gone = self.session.disruption.evicted_gangs
        if v.key in gone:
            return False
        w = v.whole
        if w is None:
            return True
        return w.key not in gone and w.surplus_left > 0

    def _check(self, v: VictimGang) -> bool:
        """Whether ``v`` may be evicted; a protection found is noted in :attr:`protected`."""
        g = v.group
        snap = self.session.snap
        running = [p for p, _ in v.pods]
        if any(p.key in snap.assumed for p in g.pods):
            return False
        if any(p.uid in self.session.disruption.avoid for p in running):
            self._protected[v.key] = "its eviction was refused lately"
            return False
        why = self._protection(g, running, self._now if v.whole is None else None)
        if why is not None:
            self._protected[v.key] = why
            return False
        if any(j < 0 for _, j in v.pods):
            return False
        if self.budgets.pdbs:
            for p in running:
                cover = self.budgets.covering(p)
                if len(cover) > 1:
                    self._protected[v.key] = f"pod {p.key} is covered by more than one PodDisruptionBudget"
                    return False
                healthy = disruption.is_healthy(p.obj)
                v._pod_budgets[p.key] = [(i, healthy) for i in cover]
        for f in self.session.profile.victim_filters:
            why = f.protects(self.session, v)
            if why is not None:
                self._protected[v.key] = why
                return False
        return True

    def _protection(self, g: GroupInfo, running: list[PodInfo], now: float | None) -> str | None:
        """Why ``running`` may not be evicted (``now`` ``None``: minRuntime not checked, as for a surplus unit)."""
        snap = self.session.snap
        pcs = snap.priority_classes
        spec = (g.obj or {}).get("spec") or {}
        if pcs:
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

    def frees(self, pods: list[tuple[PodInfo, int]]) -> dict[int, dict[int, float]]:
        """What evicting ``pods`` frees per node and row."""
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
        return frees

    # ------------------------------------------------------------------ many gangs

    def any_victim(self, candidate: Callable[[VictimGang], bool]) -> bool:
        """Whether some gang is a victim ``candidate`` admits. ``candidate`` reads a gang's
        queue, priority and movability alone (``search.Rule``), so it is asked about a stand-in
        per kind of gang (those three), and protections are checked only for gangs it admits:
        a rule that moves only movable gangs reads none of a cluster of bare pods."""
        if self._kinds is None:
            self._kinds = {}
            queues = self.session.snap.queues
            for g in self.session.snap.groups.values():
                if g.queue in queues:
                    self._kinds.setdefault((g.queue, g.priority, g.movable), []).append(g)
        for (_, _, movable), same in self._kinds.items():
            stand_in = VictimGang(same[0], self, [])
            stand_in._movable = movable
            if candidate(stand_in) and any(self.units(g) for g in same):
                return True
        return False

    @property
    def gangs(self) -> list[VictimGang]:
        """Every victim of the cycle (gangs and surplus units), in victim order."""
        if self._all is None:
            out = [v for g in self.session.snap.groups.values() for v in self.units(g)]
            out.sort(key=lambda v: v.rank)
            self._all = out
        return self._all

    @property
    def protected(self) -> dict[str, str]:
        """Victim key (a gang's, or a surplus unit's) -> why it may not be evicted, for every gang of the cycle."""
        self.gangs  # noqa: B018 - every gang checked
        return self._protected

    @property
    def by_node(self) -> dict[int, list[VictimGang]]:
        """Node -> the victims with a pod there, in victim order (every node)."""
        out: dict[int, list[VictimGang]] = {}
        for v in self.gangs:
            for j in sorted({j for _, j in v._pods}):
                out.setdefault(j, []).append(v)
        return out

    def _on(self, j: int) -> list[VictimGang]:
        """The victims with a pod on node ``j``, in victim order, worked out on first use."""
        hit = self._node_victims.get(j)
        if hit is None:
            snap = self.session.snap
            keys = {snap.group_of[k] for k in snap.on_node.get(j, ()) if k in snap.group_of}
            hit = [v for k in keys if (g := snap.groups.get(k)) is not None for v in self.units(g)
                   if any(at == j for _, at in v._pods)]
            hit.sort(key=lambda v: v.rank)
            self._node_victims[j] = hit
        return hit

    def has_victims(self, j: int) -> bool:
        """Whether any victim of the cycle, evicted already or not, has a pod on node ``j``."""
        return bool(self._on(j))

    def on_node(self, j: int, allowed: Callable[[VictimGang], bool]) -> list[VictimGang]:
        """Victims with a pod on node ``j`` still to be had (:meth:`available`) that ``allowed`` accepts."""
        return [v for v in self._on(j) if self.available(v) and allowed(v)]


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
