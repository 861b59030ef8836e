"""The allocate action: queues by fair-share deficit, gangs by priority then age, then tasks.

A gang is placed inside one Statement: its first ``minMember - placed`` pods all fit or the
statement rolls back (docs/design.md, "Gangs"); pods beyond that are placed as far as they fit.
With a topology constraint the gang is tried domain by domain (smallest and tightest first).

A gang equivalent to one that already failed this cycle, with nothing placed since, is not
tried again: it would fail the same way (upstream kube-scheduler's equivalence classes; KAI
does the same within a session). Its pods get the failed gang's message, with their own names.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from drasched.scheduler.actions.nominated import place_nominated
from drasched.scheduler.actions.ordering import QueuePicker
from drasched.scheduler.actions.task import beyond_limit, place_task, task_needs
from drasched.scheduler.messages import beyond_limit_message
from drasched.scheduler.plugins.topology import Domain, domains, order_domains
from drasched.scheduler.preemptibility import quota_bound
from drasched.scheduler.session import Session, Statement
from drasched.scheduler.snapshot import GroupInfo


def allocate(session: Session, shares: dict[str, dict[str, Fraction]]) -> None:
    snap = session.snap
    handled = place_nominated(session)  # preemptors whose victims were evicted for them go first
    by_queue: dict[str, list[GroupInfo]] = {}
    for g in sorted(snap.pending_groups, key=session.profile.gang_key):
        if not g.pending or g.key in handled:
            continue
        if g.blocked is not None:
            _fail_all(session, g, g.blocked)
            continue
        beyond = beyond_limit(session, g)
        if beyond is not None:  # not a wait for room: it never fits its queue's limit
            session.beyond_limit.add(g.key)
            _fail_all(session, g, beyond_limit_message(None if g.implicit else g.key, g.min_member, g.queue, *beyond))
            continue
        by_queue.setdefault(g.queue, []).append(g)
    order = session.profile.queue_order
    picker = QueuePicker(snap.queues, session.usage, shares, {q: len(gs) for q, gs in by_queue.items()},
                         order.ratio if order is not None else None)
    failed = FailedGangs() if FailedGangs.applies(session) else None
    while (q := picker.next()) is not None:
        g = by_queue[q].pop(0)
        picker.taken(q)
        if failed is not None and failed.fail_like(session, g):
            continue
        if place_group(session, g, failed) and failed is not None:
            failed.clear()  # what was placed changes every later answer


@dataclass(frozen=True, slots=True)
class GangFailure:
    """How a gang fell short: enough to tell an equivalent gang's pods the same thing."""

    placed: int
    """Pods that fitted before the attempt was rolled back."""
    first: tuple[int, str] | None
    """The first pod that did not fit (its index among the pending pods) and why."""
    tried: int
    """How many of the pending pods were tried (the attempt stops once minMember is out of reach)."""


class FailedGangs:
    """Gangs that failed since the last placement, by shape: queue, minMember, pods placed and
    pending, and the ``eq_key`` of each pending pod the attempt tried, in order.

    Two gangs of one shape meet the same session state pod for pod, so the second fails as the
    first did (the pods after the tried ones were never looked at). A pod counts in a shape only
    when nothing else it is checked against is its own: no claims, no extended resource DRA
    serves (a special claim of its own), no stale BindRequest and no parse error; a gang has a
    shape only without a topology constraint, and only while every filter and scorer reads the
    pod through what its ``eq_key`` covers (the built-ins, or plugins that give a signature).
    In a KAI queue the shape holds whether the gang is held to its quota (non-preemptible).
    """

    def __init__(self) -> None:
        self._failures: dict[tuple[Any, ...], list[tuple[tuple[str, ...], GangFailure]]] = {}

    @staticmethod
    def applies(session: Session) -> bool:
        profile = session.profile
        return all(p.name in _POD_BLIND or hasattr(p, "signature") for p in [*profile.filters, *profile.scorers])

    def clear(self) -> None:
        self._failures.clear()

    @staticmethod
    def _head(session: Session, g: GroupInfo) -> tuple[Any, ...] | None:
        if g.required_key is not None or g.preferred_key is not None:
            return None
        return (g.queue, g.implicit, g.min_member, g.placed, len(g.pending), quota_bound(session, g))

    @staticmethod
    def _keys(session: Session, g: GroupInfo, n: int) -> tuple[str, ...] | None:
        """The ``eq_key`` of the first ``n`` pending pods; ``None`` if one of them has no shape."""
        snap = session.snap
        ext = snap.extended
        keys = []
        for t in g.pending[:n]:
            if t.error or snap.pod_claims.get(t.key) or t.key in ext.stale:
                return None
            px = ext.pod(t)
            if px is not None and px.mapped:  # DRA serves its extended resources: a claim of its own
                return None
            keys.append(t.eq_key)
        return tuple(keys)

    def note(self, session: Session, g: GroupInfo, failure: GangFailure) -> None:
        head = self._head(session, g)
        keys = self._keys(session, g, failure.tried) if head is not None else None
        if head is not None and keys is not None:
            self._failures.setdefault(head, []).append((keys, failure))

    def fail_like(self, session: Session, g: GroupInfo) -> bool:
        """Give ``g``'s pods the message of an equivalent gang that failed; False: none did."""
        head = self._head(session, g) if self._failures else None
        seen = self._failures.get(head, ()) if head is not None else ()
        for keys, hit in seen:
            if self._keys(session, g, len(keys)) != keys:
                continue
            first = (g.pending[hit.first[0]].name, hit.first[1]) if hit.first is not None else None
            _fail_all(session, g, _failure_message(g, max(0, g.min_member - g.placed), hit.placed, first))
            return True
        return False


_POD_BLIND = frozenset({"nodeOrder"})
"""Built-in filters and scorers without a signature that read a pod only through its requests
and claims (both in its ``eq_key``)."""


def _fail_all(session: Session, g: GroupInfo, message: str) -> None:
    for p in g.pending:
        session.unschedulable[p.key] = message
    if not g.implicit:
        session.group_messages[g.key] = message


def _gang_message(g: GroupInfo, need: int, fitted: int, first_failure: str) -> str:
    if g.implicit:
        return first_failure
    if need == 0:  # pods beyond a minMember already reached: none is needed, they wait for room
        return (f"pod group {g.key}: minMember {g.min_member} is reached ({g.placed} placed); the pods beyond it "
                f"wait: {first_failure}")
    return (f"pod group {g.key}: {fitted} of the {need} pods needed to reach minMember {g.min_member} fit "
            f"together; {first_failure}")


def _failure_message(g: GroupInfo, need: int, placed: int, first: tuple[str, str] | None) -> str:
    """What every pending pod of a gang that fell short is told; ``first``: the first pod that
    did not fit, and why."""
    if g.implicit and first is not None:
        return first[1]
    return _gang_message(g, need, placed, f"{first[0]}: {first[1]}" if first else "not every pod was tried")


def place_group(session: Session, g: GroupInfo, failed: FailedGangs | None = None) -> bool:
    """Place a gang all-or-nothing (then its extra pods as far as they fit); return whether it
    was placed (``failed`` notes how it failed, for equivalent gangs)."""
    stmt = session.statement()
    placed = _place(session, stmt, g, max(0, g.min_member - g.placed), failed)
    if placed:
        stmt.commit()
    return placed


def _place(session: Session, stmt: Statement, g: GroupInfo, need: int, failed: FailedGangs | None = None) -> bool:
    key = g.required_key or g.preferred_key
    if key is None:
        return _attempt(session, stmt, g, need, None, final=True, failed=failed) is None
    doms = _candidate_domains(session, g, key, need)
    last: str | None = None
    for d in doms:
        mark = stmt.checkpoint()
        failure = _attempt(session, stmt, g, need, d, final=False)
        if failure is None:
            return True
        stmt.rollback(mark)
        last = last or failure
    if g.required_key is None:  # a preference only: anywhere will do
        return _attempt(session, stmt, g, need, None, final=True) is None
    n_all = len(domains(session.snap.nodes, key))
    fixed = sorted(v for v in _fixed_domains(session, g, key) if v is not None)
    if fixed and not doms:  # its placed pods hold the group to their domain, which has no room left
        reason = f"no room left in the pod group's {key} domain {', '.join(fixed)}, where its placed pods run"
    else:
        reason = (f"no {key} domain can hold the pod group ({len(doms)} of {n_all} domains have room for it"
                  + (f"; in the first: {last}" if last else "") + ")")
    _fail_all(session, g, _gang_message(g, need, 0, reason))
    return False


def _candidate_domains(session: Session, g: GroupInfo, key: str, need: int) -> list[Domain]:
    snap = session.snap
    doms = domains(snap.nodes, key)
    if g.required_key is not None:
        fixed = _fixed_domains(session, g, key)
        if fixed:
            doms = [d for d in doms if d.value in fixed]
    total: dict[int, float] = {}
    for t in g.pending[:max(need, 1)]:
        container, classes = task_needs(session, t)
        for n in [*container, *(c for _, c in classes)]:
            total[n.row] = total.get(n.row, 0.0) + n.value
    return order_domains(doms, session.idle, snap.allocatable, total)


def _fixed_domains(session: Session, g: GroupInfo, key: str) -> set[str | None]:
    """The ``key`` domains of the gang's placed pods: they fix the domain for the rest of a
    gang whose topology is required."""
    snap = session.snap
    return {snap.nodes[snap.node_pos[n]].labels.get(key) for n in _placed_nodes(session, g) if n in snap.node_pos}


def _placed_nodes(session: Session, g: GroupInfo) -> set[str]:
    snap = session.snap
    out = set()
    for p in g.pods:
        if p.terminal:
            continue
        node = p.node_name or snap.assumed.get(p.key)
        if node:
            out.add(node)
    return out


def _attempt(session: Session, stmt: Statement, g: GroupInfo, need: int, domain: Domain | None,
             final: bool, failed: FailedGangs | None = None) -> str | None:
    """Try the gang's pending pods (within ``domain``); ``None`` when minMember is reached.

    With ``final`` the outcome is recorded: messages for pods that did not fit, and a roll
    back of the whole attempt when the gang falls short (noted in ``failed``).
    """
    mark = stmt.checkpoint()
    mask = domain.mask if domain is not None else None
    placed = 0
    failures: dict[str, str] = {}
    first: tuple[int, str] | None = None
    tasks = g.pending
    tried = 0
    for i, t in enumerate(tasks):
        tried = i + 1
        failure = place_task(session, stmt, g, t, mask)
        if failure is None:
            placed += 1
            continue
        failures[t.key] = failure
        if first is None:
            first = (i, failure)
        if placed + (len(tasks) - i - 1) < need:
            break
    if placed >= need:
        for key, msg in failures.items():
            session.unschedulable[key] = msg
        if not g.implicit:
            session.group_messages.pop(g.key, None)
        return None
    stmt.rollback(mark)
    first_failure = f"{tasks[first[0]].name}: {first[1]}" if first is not None else None
    message = _gang_message(g, need, placed, first_failure or "not every pod was tried")
    if final:
        message = _failure_message(g, need, placed, (tasks[first[0]].name, first[1]) if first else None)
        _fail_all(session, g, message)
        if failed is not None:
            failed.note(session, g, GangFailure(placed, first, tried))
    return message
