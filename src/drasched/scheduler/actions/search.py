"""Victims for one pending gang, found by simulation: evict in the session, try the gang, keep what works.

For each pod the gang needs to reach minMember (a gang at minMember already: its next pod):

1. try it as is (victims evicted for earlier pods may have made room);
2. estimate, on every node where removing pods may help (upstream's candidates: not rejected
   as ``UnschedulableAndUnresolvable`` by the static predicates, the pod's required pod
   affinity, a missing spread key: ``preemptor.py``), the victims (in victim order, among those
   the rule admits) whose requests free enough there, row by row, and, where inter-pod
   anti-affinity or a topology spread constraint rejects the pod, those with a pod whose
   removal may lift that (upstream ``RemovePod``); nodes are ordered by the estimated cost:
   fewest pods, then the lowest highest priority, then the youngest oldest victim, then the node;
3. simulate, best estimate first and at most ``nodesPerTask`` nodes: evict the estimated
   victims in the session (node vectors, claims, allocator state: devices in use, shared
   counters, consumed capacity; the inter-pod filters' counts) and place the pod there with
   the same filter and allocator as ``allocate``; when DRA needs more than vectors show
   (particular devices, partitions sharing counters), the node's next victims are added one at
   a time, unless an inter-pod filter still rejects the node (no other victim can lift it);
   victims the pod turns out not to need are spared, most valuable first (upstream's reprieve);
4. the first node that confirms its estimate is kept; otherwise the cheapest confirmed one.

When a gang fails, :attr:`VictimSearch.postfilter` says why, node by node, for its last pod tried.

Every simulation spends one unit of the cycle's budget; when it runs out the gang is
rolled back and waits for the next cycle. A gang is kept only if all its needed pods are
placed; its pods are then *nominated*: they hold their room in the session and get no
BindRequest until their victims are gone (``actions/nominated.py``). So is a gang that
needed no victim of its own but fits only in room evicted this cycle: that room is still
in use until its pods are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drasched.scheduler.accounting import ALLOCATED, demand_with_claims
from drasched.scheduler.actions.nominated import hold
from drasched.scheduler.actions.preemptor import (
    MSG_NO_VICTIM_SET,
    MSG_NO_VICTIMS,
    MSG_NOT_TRIED,
    MSG_PDB,
    PostFilter,
    Preemptor,
    preemptor,
)
from drasched.scheduler.actions.task import place_task, task_needs
from drasched.scheduler.eviction import Eviction
from drasched.scheduler.plugins.fit import RowNeed, insufficient
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.release import release
from drasched.scheduler.session import Session, Statement
from drasched.scheduler.snapshot import GroupInfo
from drasched.scheduler.victims import VictimGang, VictimIndex, victim_index

EPS = 1e-9
MAX_REPRIEVE = 8
"""Victim sets up to this size get the "spare what is not needed" pass."""


@dataclass(slots=True, eq=False)
class EvictionsChosen:
    """Victims chosen for a gang: evictions queued, the gang's unschedulable message cleared."""

    session: Session
    group: str
    evictions: tuple[Eviction, ...]
    old_message: str | None = None

    def apply(self) -> None:
        self.session.disruption.evictions.extend(self.evictions)
        self.old_message = self.session.group_messages.pop(self.group, None)

    def revert(self) -> None:
        evictions = self.session.disruption.evictions
        del evictions[len(evictions) - len(self.evictions):]
        if self.old_message is not None:
            self.session.group_messages[self.group] = self.old_message


@dataclass(frozen=True, slots=True)
class GangEvicted:
    """A victim marked evicted (not chosen twice); a surplus unit also counts against its gang's surplus."""

    gone: set[str]
    key: str
    whole: VictimGang | None = None
    """The gang of a surplus unit."""

    def apply(self) -> None:
        self.gone.add(self.key)
        if self.whole is not None:
            self.whole.taken += 1

    def revert(self) -> None:
        self.gone.discard(self.key)
        if self.whole is not None:
            self.whole.taken -= 1
Cost = tuple[int, int, float, int]


@dataclass
class Rule:
    """What one action may do: which victims it admits, and why it evicts them."""

    action: str
    key: tuple[object, ...]
    """Identifies ``candidate``: estimates are shared by gangs with the same key."""
    candidate: Callable[[VictimGang], bool]
    """Cheap, fixed for the cycle: may this gang be a victim at all? It reads the gang's queue,
    priority and movability only (gangs alike in those are asked once: ``VictimIndex.any_victim``)."""
    allowed: Callable[[VictimGang], bool]
    """Checked right before each simulated eviction (queue shares move as victims go)."""
    reason: Callable[[VictimGang], str]
    """Why, for the victim's Event; asked right before the eviction, while the rule still holds."""
    after_evict: Callable[[Statement, VictimGang, int], bool] | None = None
    """Consolidation: re-place the victim's pods away from the node first; False: keep it."""


def needed_tasks(session: Session, g: GroupInfo) -> list[PodInfo] | None:
    """The pods that would bring ``g`` to minMember, if evicting could help it at all."""
    tasks = wanting_room(session, g)
    return None if tasks is None or never_preempts(session, g, tasks) else tasks


def wanting_room(session: Session, g: GroupInfo) -> list[PodInfo] | None:
    """The pods that would bring ``g`` to minMember, if room is all it waits for (not its group,
    claims to be created, a queue limit its minMember pods alone exceed; not placed this cycle),
    whatever its preemptionPolicy. A gang at minMember already (an elastic one growing) wants
    one pod at a time, as KAI's ``getNumOfTasksToAllocate``."""
    if not g.pending or g.blocked is not None or g.key in session.beyond_limit:
        return None
    need = max(g.min_member - g.placed, 1)
    if any(p.key in session.placements for p in g.pending):
        return None
    snap = session.snap
    tasks = [t for t in g.pending
             if not t.error and not any(c.waiting for c in snap.pod_claims.get(t.key, ()))][:need]
    return tasks if len(tasks) >= need else None


def never_preempts(session: Session, g: GroupInfo, tasks: list[PodInfo]) -> bool:
    """Upstream's ``preemptionPolicy: Never`` on a pod or its gang's PriorityClass: such pods
    wait rather than evict anyone (the class read once per gang: this runs for every pending
    gang in each disruptive action)."""
    pcs = session.snap.priority_classes
    if pcs and g.obj is not None:
        pclass = str((g.obj.get("spec") or {}).get("priorityClassName") or "")
        if (pcs.get(pclass) or {}).get("preemptionPolicy") == "Never":
            return True
    for t in tasks:  # noqa: SIM110 - a loop, not any(generator): asked of every pending gang
        if (t.obj.get("spec") or {}).get("preemptionPolicy") == "Never":
            return True
    return False


def gang_demand(session: Session, g: GroupInfo, tasks: list[PodInfo]) -> dict[str, float]:
    """What placing ``tasks`` adds to the queue, in accounting dimensions (claims counted once)."""
    snap = session.snap
    out: dict[str, float] = {}
    seen: set[str] = set()
    for t in tasks:
        keys = [c.key for c in snap.pod_claims.get(t.key, ()) if c.key and c.key not in seen]
        fresh = session.usage.new_claims(ALLOCATED, g.queue, keys)
        seen.update(keys)
        for d, v in demand_with_claims(snap, t, fresh).items():
            out[d] = out.get(d, 0.0) + v
    return out


class VictimSearch:
    """One action's search; estimates are memoised per pod template and node while the node is unchanged."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.index: VictimIndex = victim_index(session)
        self._estimates: dict[tuple[object, ...],
                              dict[int, tuple[int, list[VictimGang] | None, tuple[str, ...]]]] = {}
        self._reasons: dict[str, str] = {}
        """Victim gang key -> why, as the rule saw it right before the (last simulated) eviction."""
        self._has_candidates: dict[tuple[object, ...], bool] = {}
        self.postfilter: PostFilter | None = None
        """After :meth:`place` failed with victims to look at: why, per node, for the last pod tried."""

    # ------------------------------------------------------------------ the gang

    def place(self, g: GroupInfo, tasks: list[PodInfo], rule: Rule) -> bool:
        """Evict what ``tasks`` need and hold their room; False (and no trace) when they cannot all fit."""
        s = self.session
        self.postfilter = None
        if not self.any_candidate(rule):
            return False
        stmt = s.statement()
        chosen: list[tuple[VictimGang, PodInfo]] = []
        domain: np.ndarray | None = None
        for t in tasks:
            victims = self._task(stmt, g, t, rule, domain)
            if victims is None:
                stmt.rollback()
                return False
            chosen += [(v, t) for v in victims]
            if g.required_key is not None and domain is None:
                domain = self._domain(g.required_key, s.placements[t.key].node)
        if s.disruption.evicted_gangs:  # room evicted this cycle is still in use until its pods are gone
            self._record(g, tasks, chosen, rule)
        stmt.commit()
        return True

    def any_candidate(self, rule: Rule) -> bool:
        """Whether the rule admits any victim at all (memoised: candidates never appear mid-cycle)."""
        hit = self._has_candidates.get(rule.key)
        if hit is None:
            hit = self.index.any_victim(rule.candidate)
            self._has_candidates[rule.key] = hit
        return hit

    def _domain(self, key: str, node: int) -> np.ndarray:
        nodes = self.session.snap.nodes
        value = nodes[node].labels.get(key)
        return np.array([n.labels.get(key) == value for n in nodes], dtype=bool)

    def _record(self, g: GroupInfo, tasks: list[PodInfo], chosen: list[tuple[VictimGang, PodInfo]], rule: Rule) -> None:
        s = self.session
        snap = s.snap
        evictions = [Eviction(p, snap.nodes[j].name, t, rule.action, self._reasons.get(v.key, rule.action))
                     for v, t in chosen for p, j in v.pods]
        s.apply(EvictionsChosen(s, g.key, tuple(evictions)))
        hold(s, g, tasks)

    # ------------------------------------------------------------------ one pod

    def _spend(self) -> bool:
        state = self.session.disruption
        if state.budget <= 0:
            return False
        state.budget -= 1
        return True

    def try_place(self, stmt: Statement, g: GroupInfo, t: PodInfo, mask: np.ndarray | None) -> bool:
        """One simulation: place ``t`` (within ``mask``) if the cycle's budget allows."""
        return self._spend() and place_task(self.session, stmt, g, t, mask) is None

    def _task(self, stmt: Statement, g: GroupInfo, t: PodInfo, rule: Rule,
              domain: np.ndarray | None) -> list[VictimGang] | None:
        """Place ``t``, evicting as little as the rule allows; the victims, or None."""
        if self.try_place(stmt, g, t, domain):
            return []
        s = self.session
        view = preemptor(s, t, domain)
        self.postfilter = PostFilter(view.candidates, lambda j: bool(self.index.on_node(j, rule.candidate)))
        ranked = self._ranked(t, rule, view)
        best: tuple[Cost, int, list[VictimGang]] | None = None
        for estimate, j, guess in ranked[:s.config.preemption_nodes_per_task]:
            if best is not None and estimate >= best[0]:
                break
            mark = stmt.checkpoint()
            found = self._on_node(stmt, g, t, j, guess, rule, view)
            if found is None:
                stmt.rollback(mark)
                continue
            cost = _cost(found, j)
            if cost == estimate and best is None:
                return found  # the best estimate, confirmed: keep it as it stands
            stmt.rollback(mark)
            if best is None or cost < best[0]:
                best = (cost, j, found)
        if best is None:
            self.postfilter.settle(view)
            return None
        _, j, victims = best
        if self._redo(stmt, g, t, j, victims, rule):
            return victims
        self.postfilter.settle(view)
        return None

    def _redo(self, stmt: Statement, g: GroupInfo, t: PodInfo, j: int, victims: list[VictimGang], rule: Rule) -> bool:
        """Apply a victim set already simulated (no budget spent: the outcome is known); False leaves no trace."""
        mark = stmt.checkpoint()
        if all(self._evict(stmt, v, j, rule) for v in victims) and \
                place_task(self.session, stmt, g, t, _one(self.session.snap.n_nodes, j)) is None:
            return True
        stmt.rollback(mark)
        return False

    def _on_node(self, stmt: Statement, g: GroupInfo, t: PodInfo, j: int, guess: list[VictimGang],
                 rule: Rule, view: Preemptor) -> list[VictimGang] | None:
        """Evict ``guess`` (then more of the node's victims) until ``t`` fits on node ``j``."""
        mask = _one(self.session.snap.n_nodes, j)
        base = stmt.checkpoint()
        chosen = [v for v in guess if self._evict(stmt, v, j, rule)]
        fits = bool(chosen) and self.try_place(stmt, g, t, mask)
        if not fits and view.hopeless(j):
            self._give_up(j, rule, view)
            return None
        if not fits:
            for v in self.index.on_node(j, rule.candidate):
                if self.session.disruption.budget <= 0:
                    break
                if v in chosen or not self._evict(stmt, v, j, rule):
                    continue
                chosen.append(v)
                if self.try_place(stmt, g, t, mask):
                    fits = True
                    break
        if not fits:
            self._give_up(j, rule, view)
            return None
        return self._spare(stmt, g, t, j, chosen, rule, base) if 1 < len(chosen) <= MAX_REPRIEVE else chosen

    def _give_up(self, j: int, rule: Rule, view: Preemptor) -> None:
        """Note why node ``j`` has no victim set, as the session stands (its victims evicted)."""
        assert self.postfilter is not None
        if self.session.disruption.budget <= 0:
            self.postfilter.note(j, MSG_NOT_TRIED)
        elif not all(self.index.budgets.permits(v) for v in self.index.on_node(j, rule.candidate)):
            self.postfilter.note(j, MSG_PDB)
        else:
            self.postfilter.note(j, *(view.reasons(j) or [MSG_NO_VICTIM_SET]))

    def _spare(self, stmt: Statement, g: GroupInfo, t: PodInfo, j: int, chosen: list[VictimGang],
               rule: Rule, base: int) -> list[VictimGang] | None:
        """Drop victims ``t`` does not need on node ``j``, most valuable (last in victim order) first."""
        mask = _one(self.session.snap.n_nodes, j)
        keep = list(chosen)
        for v in reversed(chosen):
            trial = [x for x in keep if x is not v]
            stmt.rollback(base)
            if all(self._evict(stmt, x, j, rule) for x in trial) and self.try_place(stmt, g, t, mask):
                keep = trial
        stmt.rollback(base)
        return keep if self._redo(stmt, g, t, j, keep, rule) else None

    def _evict(self, stmt: Statement, v: VictimGang, j: int, rule: Rule) -> bool:
        """Evict victim ``v`` in the session (all its pods left; a surplus unit's one pod), if it is still
        available (``VictimIndex.available``) and the rule and budgets still allow it."""
        s = self.session
        if not self.index.available(v) or not rule.allowed(v) or not self.index.budgets.permits(v):
            return False
        self._reasons[v.key] = rule.reason(v)
        mark = stmt.checkpoint()
        for p, node in v.pods:
            release(s, p, node, v.queue)
        self.index.budgets.spend(v)
        s.apply(GangEvicted(s.disruption.evicted_gangs, v.key, v.whole))
        if rule.after_evict is not None and not rule.after_evict(stmt, v, j):
            stmt.rollback(mark)
            return False
        return True

    # ------------------------------------------------------------------ estimates

    def _ranked(self, t: PodInfo, rule: Rule, view: Preemptor) -> list[tuple[Cost, int, list[VictimGang]]]:
        """The candidate nodes with a victim set estimated, cheapest first (the others noted in :attr:`postfilter`)."""
        s = self.session
        assert self.postfilter is not None
        container, classes = task_needs(s, t)
        needs = container + [n for _, n in classes]
        memo = self._estimates.setdefault((t.eq_key, *rule.key), {})
        out: list[tuple[Cost, int, list[VictimGang]]] = []
        for pos in np.flatnonzero(view.possible):
            j = int(pos)
            if not view.candidates[j] and self._fits(j, needs):
                continue  # its first failure is unresolvable: not helpful (upstream never dry-runs it)
            victims = self.index.on_node(j, rule.candidate) if self.index.has_victims(j) else []
            if not victims:
                if not view.candidates[j]:
                    self.postfilter.note(j, MSG_NO_VICTIMS)  # a candidate's is worked out if asked
                continue
            version = int(s.node_version[j])
            hit = memo.get(j)
            if hit is None or hit[0] != version or (hit[1] and not all(self.index.available(v) for v in hit[1])):
                # (a surplus unit no longer to be had: its gang lost its surplus on another node)
                hit = (version, *self._estimate(j, needs, victims))
                memo[j] = hit
            freeing, short = hit[1], hit[2]
            if freeing is None:
                self.postfilter.note(j, *(insufficient(name) for name in short))
                continue
            if not view.candidates[j]:  # short of resources first: upstream's dry run ends on the filter
                self.postfilter.defer(j)
                continue
            guess = self._guess(view, j, victims, freeing)
            if guess:
                out.append((_cost(guess, j), j, guess))
        out.sort(key=lambda e: e[0])
        return out

    def _guess(self, view: Preemptor, j: int, victims: list[VictimGang], freeing: list[VictimGang]) -> list[VictimGang]:
        """The victims to try first on node ``j``: those freeing the rows the pod lacks, plus, where an
        inter-pod filter rejects it, those lifting that; else the first victim (DRA may need more
        than vectors show). Empty: the node cannot be helped."""
        if view.rejected(j):
            lifting = view.lifting(victims, j)
            if not lifting:
                assert self.postfilter is not None
                self.postfilter.defer(j)  # removing every victim leaves the filter's verdict as it is
                return []
            chosen = {id(v) for v in (*freeing, *lifting)}
            return [v for v in victims if id(v) in chosen]
        return freeing or victims[:1]

    def _fits(self, j: int, needs: list[RowNeed]) -> bool:
        """Whether ``needs`` fit in node ``j``'s idle rows as they stand."""
        idle = self.session.idle
        return all(n.value <= float(idle[n.row, j]) + EPS for n in needs)

    def _estimate(self, j: int, needs: list[RowNeed],
                  victims: list[VictimGang]) -> tuple[list[VictimGang] | None, tuple[str, ...]]:
        """The ``victims`` (on node ``j``, in victim order) that free enough there for ``needs``,
        vector-wise (DRA may need more; ``[]``: nothing is short); ``None`` with the rows still
        short once all of them are gone."""
        idle = self.session.idle
        short = {n.row: n.value - float(idle[n.row, j]) for n in needs if n.value > float(idle[n.row, j]) + EPS}
        if not short:
            return [], ()
        chosen: list[VictimGang] = []
        surplus: dict[str, int] = {}
        """Gang key -> its surplus units chosen (no more than it may lose; its whole gang: none)."""
        for v in victims:
            freed = v.frees.get(j, {})
            if not any(freed.get(row, 0.0) > 0 for row in short):
                continue  # frees nothing this pod lacks here
            w = v.whole
            if w is not None:
                n = surplus.get(w.key, 0)
                if w.surplus_left <= n:
                    continue  # the gang keeps minMember pods
                surplus[w.key] = n + 1
            elif surplus.get(v.key):  # taken whole: its surplus units chosen go with it, counted once
                for u in [c for c in chosen if c.whole is v]:
                    chosen.remove(u)
                    for row in short:
                        short[row] += u.frees.get(j, {}).get(row, 0.0)
            chosen.append(v)
            for row in short:
                short[row] -= freed.get(row, 0.0)
            if all(x <= EPS for x in short.values()):
                return chosen, ()
        names = {n.row: n.name for n in needs}
        return None, tuple(names[row] for row, x in short.items() if x > EPS)


def _cost(victims: list[VictimGang], j: int) -> Cost:
    return (sum(len(v.pods) for v in victims), max(v.priority for v in victims),
            -min(v.started for v in victims), j)


def _one(n: int, j: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[j] = True
    return mask
