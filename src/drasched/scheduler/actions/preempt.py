"""Preempt: within one queue, a higher-priority gang evicts lower-priority ones.

Gangs still pending after ``allocate`` and ``reclaim`` go in priority order (then age);
victims are gangs of the same queue (or an elastic gang's surplus pods, ``victims.py``) whose
priority is strictly lower (upstream DefaultPreemption's ``isPreemptionAllowed``). Queue shares
do not move (both sides are one queue). Victims are found by simulation (``search.py``): room
in the node's resources, and room under inter-pod anti-affinity and topology spread constraints (a pod its own required
anti-affinity forbids, or whose anti-affinity forbids the preemptor, or one too many in a
crowded spread domain), never the preemptor's own required affinity.

A pod without a PodGroup that stays pending with a FitError (``0/N nodes are available: ...``)
gets upstream's PostFilter messages after the filters' (``FitError.Error()``): DynamicResources'
status, then DefaultPreemption's, e.g. ``0/3 nodes are available: 3 Insufficient cpu. no new
claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for
incoming pod.`` Where the search ran, ``preemptor.py`` words each node's status; where no gang of
the pod's queue could be a victim, :func:`no_victims_status` does; a pod with ``preemptionPolicy:
Never`` gets ``preemption: not eligible due to preemptionPolicy=Never.``
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from drasched.scheduler.actions.preemptor import MSG_NO_VICTIMS, MSG_NOT_ELIGIBLE, MSG_NOT_HELPFUL, preemptor
from drasched.scheduler.actions.search import Rule, VictimSearch, never_preempts, wanting_room
from drasched.scheduler.actions.task import task_needs
from drasched.scheduler.eviction import PREEMPT
from drasched.scheduler.messages import Diagnosis
from drasched.scheduler.plugins.fit import fit_mask
from drasched.scheduler.plugins.implicitgang import held_because
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.session import Session
from drasched.scheduler.snapshot import GroupInfo
from drasched.scheduler.victims import VictimGang


def preempt(session: Session, shares: dict[str, dict[str, Fraction]]) -> None:
    snap = session.snap
    pending: list[tuple[GroupInfo, list[PodInfo]]] = []
    for g in snap.pending_groups:
        tasks = wanting_room(session, g)
        if tasks is None:
            continue
        if not never_preempts(session, g, tasks):
            pending.append((g, tasks))
        elif _fit_error(session, g):  # upstream PodEligibleToPreemptOthers
            _explain(session, g, f"preemption: {MSG_NOT_ELIGIBLE}")
    if not pending:
        return
    search = VictimSearch(session)
    statuses: dict[tuple[str, ...], str] = {}
    for g, tasks in sorted(pending, key=lambda item: (-item[0].priority, item[0].created, item[0].key)):
        rule = _rule(g)
        if not search.any_candidate(rule):  # nothing to simulate: no budget spent
            if _fit_error(session, g):
                _explain(session, g, no_victims_status(session, tasks[0], statuses))
            continue
        if session.disruption.budget <= 0:
            continue
        if not search.place(g, tasks, rule) and search.postfilter is not None and _fit_error(session, g):
            _explain(session, g, search.postfilter.message())


def _fit_error(session: Session, g: GroupInfo) -> bool:
    """Whether ``g`` is a pod without a PodGroup whose message is a FitError (``0/N nodes are
    available: ...``, N > 0): upstream's scheduler runs the PostFilter plugins for those alone
    and appends their statuses (``schedule_one.go``); a cluster without nodes is no FitError."""
    if not g.implicit or session.snap.n_nodes == 0:
        return False
    message = session.unschedulable.get(g.pending[0].key)
    if message is None or not message.startswith("0/"):
        return False
    held = held_because(g.pending[0])  # held for its implicit PodGroup: not tried (upstream: a scheduling gate)
    return held is None or held not in message


def no_victims_status(session: Session, t: PodInfo, memo: dict[tuple[str, ...], str]) -> str:
    """DefaultPreemption's status for pod ``t`` where no gang of its queue could be a victim, so
    the search never runs. Upstream's dry run still tries each node whose filter status is
    ``Unschedulable``, one removing pods may resolve (``findCandidates``, ``DryRunPreemption``:
    kubernetes pkg/scheduler/framework/preemption/preemption.go), and finds no pod to remove
    there (``SelectVictimsOnNode``: pkg/scheduler/framework/plugins/defaultpreemption/
    default_preemption.go, "No preemption victims found for incoming pod"); the nodes it does not
    try are "Preemption is not helpful for scheduling" (``Preempt``: ``SetAbsentNodesStatus``).

    The nodes tried: :func:`preemptor`'s candidates, and the nodes the static predicates allow
    whose resources the pod lacks (NodeResourcesFit rejects them first, before a removal-aware
    filter or a claim allocated elsewhere could call them unresolvable). Every failing lone pod
    asks this each cycle: the status is memoised per pod shape (its ``eq_key``, with the claims
    whose allocation pins it to some nodes) for the action.
    """
    snap = session.snap
    pins = tuple(c.key for c in snap.pod_claims.get(t.key, ()) if c.key and session.allocation_nodes(c.key) is not None)
    key = (t.eq_key, *pins)
    hit = memo.get(key)
    if hit is None:
        tried = preemptor(session, t, None).candidates
        short = session.static(t).ok & ~tried
        if short.any():
            container, classes = task_needs(session, t)
            tried = tried | (short & ~fit_mask(session.idle, container + [n for _, n in classes], short))
        n = int(tried.sum())
        counts = Counter({MSG_NO_VICTIMS: n, MSG_NOT_HELPFUL: snap.n_nodes - n})
        hit = "preemption: " + Diagnosis(snap.n_nodes, counts=counts).message()
        memo[key] = hit
    return hit


def _explain(session: Session, g: GroupInfo, postfilter: str) -> None:
    """Append the PostFilter messages to the pod's filter message (``0/N nodes are available:
    ...``): DynamicResources' status first (it runs before DefaultPreemption), then preemption's,
    joined by ", " as ``RunPostFilterPlugins`` joins the rejecting plugins' reasons."""
    for p in g.pending:
        message = session.unschedulable.get(p.key)
        if message is not None and message.startswith("0/"):
            dra = dra_postfilter_status(session, p.key)
            session.unschedulable[p.key] = f"{message} {dra}, {postfilter}" if dra else f"{message} {postfilter}"


def dra_postfilter_status(session: Session, pod_key: str) -> str | None:
    """What upstream's DynamicResources PostFilter says when it deallocates nothing: "no new
    claims to deallocate" for a pod without claims, "still not schedulable" for one with
    (dynamicresources.go ``PostFilter``); None with the plugin disabled. A claim it does
    deallocate replaces this with ``cycle.DEALLOCATED``."""
    if session.profile.claim_allocation is None:
        return None
    return STILL_UNSCHEDULABLE if pod_key in session.dra_pods else NO_CLAIMS_TO_DEALLOCATE


NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
STILL_UNSCHEDULABLE = "still not schedulable"


def _rule(g: GroupInfo) -> Rule:
    def candidate(v: VictimGang) -> bool:
        return v.queue == g.queue and v.priority < g.priority

    def reason(v: VictimGang) -> str:
        return f"preemption: priority {g.priority} is above the victim's {v.priority} in queue {g.queue}"

    return Rule(PREEMPT, (PREEMPT, g.queue, g.priority), candidate, candidate, reason)
