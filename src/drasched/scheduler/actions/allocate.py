"""The allocate action: queues by fair-share deficit, gangs by priority then age, then tasks.

A gang is placed inside one Statement: its first ``minMember - placed`` pods all fit or the
statement rolls back (docs/design.md, "Gangs"); pods beyond that are placed as far as they fit.
With a topology constraint the gang is tried domain by domain (smallest and tightest first).
"""

from __future__ import annotations

from fractions import Fraction

from drasched.scheduler.actions.nominated import place_nominated
from drasched.scheduler.actions.ordering import QueuePicker
from drasched.scheduler.actions.task import place_task, task_needs
from drasched.scheduler.plugins.topology import Domain, domains, order_domains
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
        by_queue.setdefault(g.queue, []).append(g)
    order = session.profile.queue_order
    picker = QueuePicker(snap.queues, session.usage, shares, {q: len(gs) for q, gs in by_queue.items()},
                         order.ratio if order is not None else None)
    while (q := picker.next()) is not None:
        g = by_queue[q].pop(0)
        picker.taken(q)
        place_group(session, g)


def _fail_all(session: Session, g: GroupInfo, message: str) -> None:
    for p in g.pending:
        session.unschedulable[p.key] = message
    if not g.implicit:
        session.group_messages[g.key] = message


def _gang_message(g: GroupInfo, need: int, fitted: int, first_failure: str) -> str:
    if g.implicit:
        return first_failure
    return (f"pod group {g.key}: {fitted} of the {need} pods needed to reach minMember {g.min_member} fit "
            f"together; {first_failure}")


def place_group(session: Session, g: GroupInfo) -> bool:
    """Place a gang all-or-nothing (then its extra pods as far as they fit); return whether it was placed."""
    stmt = session.statement()
    placed = _place(session, stmt, g, max(0, g.min_member - g.placed))
    if placed:
        stmt.commit()
    return placed


def _place(session: Session, stmt: Statement, g: GroupInfo, need: int) -> bool:
    key = g.required_key or g.preferred_key
    if key is None:
        return _attempt(session, stmt, g, need, None, final=True) is None
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
    reason = (f"no {key} domain can hold the pod group ({len(doms)} of {n_all} domains have room for it"
              + (f"; in the first: {last}" if last else "") + ")")
    _fail_all(session, g, _gang_message(g, need, 0, reason))
    return False


def _candidate_domains(session: Session, g: GroupInfo, key: str, need: int) -> list[Domain]:
    snap = session.snap
    doms = domains(snap.nodes, key)
    if g.required_key is not None:
        # Pods already placed fix the domain for the rest of the gang.
        fixed = {snap.nodes[snap.node_pos[n]].labels.get(key) for n in _placed_nodes(session, g) if n in snap.node_pos}
        if fixed:
            doms = [d for d in doms if d.value in fixed]
    total: dict[int, float] = {}
    for t in g.pending[:max(need, 1)]:
        container, classes = task_needs(session, t)
        for n in [*container, *(c for _, c in classes)]:
            total[n.row] = total.get(n.row, 0.0) + n.value
    return order_domains(doms, session.idle, snap.allocatable, total)


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
             final: bool) -> str | None:
    """Try the gang's pending pods (within ``domain``); ``None`` when minMember is reached.

    With ``final`` the outcome is recorded: messages for pods that did not fit, and a roll
    back of the whole attempt when the gang falls short.
    """
    mark = stmt.checkpoint()
    mask = domain.mask if domain is not None else None
    placed = 0
    failures: dict[str, str] = {}
    first_failure: str | None = None
    tasks = g.pending
    for i, t in enumerate(tasks):
        failure = place_task(session, stmt, g, t, mask)
        if failure is None:
            placed += 1
            continue
        failures[t.key] = failure
        first_failure = first_failure or f"{t.name}: {failure}"
        if placed + (len(tasks) - i - 1) < need:
            break
    if placed >= need:
        for key, msg in failures.items():
            session.unschedulable[key] = msg
        if not g.implicit:
            session.group_messages.pop(g.key, None)
        return None
    stmt.rollback(mark)
    message = _gang_message(g, need, placed, first_failure or "not every pod was tried")
    if final:
        if g.implicit and failures:
            message = next(iter(failures.values()))
        _fail_all(session, g, message)
    return message
