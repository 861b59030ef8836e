"""One pending pod as the victim search sees it: where removing pods may help, and why not.

Upstream's DefaultPreemption (``pkg/scheduler/framework/preemption/preemption.go`` and
``plugins/defaultpreemption/default_preemption.go``) looks for victims only on the nodes the
filters rejected as ``Unschedulable`` (``findCandidates``: ``NodesForStatusCode``); a node
rejected as ``UnschedulableAndUnresolvable`` (node affinity or selector, taints, the pod's own
required pod affinity, a missing topology key, a claim allocated elsewhere) is no candidate,
whatever is removed. On a candidate, ``SelectVictimsOnNode`` removes victims from a copy of
the node, telling the filters through ``RunPreFilterExtensionRemovePod``, and filters again.

drasched's search (``search.py``) evicts in the session instead of in a copy: the inter-pod
filters stop counting the pods it releases (``plugins/podindex.py``). The filters that know
what a removal does to them (``framework.api.RemovalAware``: InterPodAffinity, PodTopologySpread) say
which nodes are unresolvable and which running pods lifting a rejection needs, so the search
picks those victims first and gives a node up once they are gone and the filter still rejects.

:class:`PostFilter` keeps, per node, why no victim set was found there, for upstream's
message (``FitError.Error()`` with the PostFilter's ``preemption: 0/N nodes are available: ...``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from drasched.scheduler.actions.task import task_needs
from drasched.scheduler.framework.api import PodState, RemovalAware
from drasched.scheduler.messages import Diagnosis
from drasched.scheduler.plugins.fit import fit_reasons
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.session import Session
from drasched.scheduler.victims import VictimGang

MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
"""Upstream's status of the nodes no candidate for preemption (``Preempt``)."""
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
"""Upstream's status of a candidate node without a pod preemption may remove (``SelectVictimsOnNode``)."""
MSG_NOT_ELIGIBLE = "not eligible due to preemptionPolicy=Never."
"""Upstream's status of a pod with ``preemptionPolicy: Never`` (``PodEligibleToPreemptOthers``)."""
MSG_PDB = "PodDisruptionBudget(s) keep the victims needed"
"""drasched's: a budget forbids an eviction the pod needs (upstream would evict, counting a violation)."""
MSG_NO_VICTIM_SET = "evicting the victims allowed does not make room"
"""drasched's: the pod fits by the filters once every victim is gone, yet not with those the rules
let go (the allocator's devices, the action's rule)."""
MSG_NOT_TRIED = "not tried this cycle (preemption.nodesPerTask, preemption.budget)"
"""drasched's: a candidate node the search did not simulate (upstream tries every candidate)."""


@dataclass
class Preemptor:
    """A pod the victim search places: the candidate nodes, and the filters rejecting it now."""

    state: PodState
    possible: np.ndarray
    """Nodes passing the static predicates (and the gang's domain, and its claims' pins)."""
    candidates: np.ndarray
    """Those where removing pods may help: no removal-aware filter rejects them as unresolvable."""
    aware: list[RemovalAware]
    rejecting: list[tuple[RemovalAware, np.ndarray]]
    """Each removal-aware filter with the candidate nodes it rejects before anything is evicted."""

    def rejected(self, j: int) -> bool:
        """Whether a removal-aware filter rejects node ``j`` (before anything is evicted)."""
        return any(bool(mask[j]) for _, mask in self.rejecting)

    def lifting(self, victims: list[VictimGang], j: int) -> list[VictimGang]:
        """The ``victims`` with a pod on node ``j`` whose removal may lift a filter rejecting ``j``."""
        filters = [f for f, mask in self.rejecting if mask[j]]
        return [v for v in victims
                if any(at == j and any(f.lifted_by_removing(self.state, p) for f in filters) for p, at in v.pods)]

    def hopeless(self, j: int) -> bool:
        """Whether evicting more victims cannot get node ``j`` past the removal-aware filters, as the
        session stands: one rejects it as unresolvable (the evictions took the pod's affinity match
        away: upstream gives the node up once its victims are removed), or one that rejected it
        before still does although the victims that could lift it are gone."""
        one = _one(self.state.session.snap.n_nodes, j)
        if any(f.unresolvable(self.state, one)[j] for f in self.aware):
            return True
        return self.rejected(j) and any(not f.filter(self.state, one)[j] for f in self.aware)

    def reasons(self, j: int) -> list[str]:
        """Upstream's status of node ``j`` as the session stands: the first failing of the vector
        fit and the dynamic filters, in profile order (``RunFilterPlugins`` stops there)."""
        s = self.state.session
        one = _one(s.snap.n_nodes, j)
        into: Counter[str] = Counter()
        if not fit_reasons(s.idle, s.profile.fit_rows(self.state.container), one, into).any():
            self.filter_reasons(one, into)
        return list(into)

    def filter_reasons(self, among: np.ndarray, into: Counter[str]) -> None:
        """Count each node of ``among`` under its first failing dynamic filter, as the session stands."""
        among = among.copy()
        for f in self.state.session.profile.filters:
            among &= ~f.reasons(self.state, among, into)


def preemptor(session: Session, t: PodInfo, domain: np.ndarray | None) -> Preemptor:
    """The search's view of pod ``t`` (within ``domain``, a gang's topology domain, if given)."""
    snap = session.snap
    container, classes = task_needs(session, t)
    claims = [c for c in snap.pod_claims.get(t.key, ()) if c.key]
    state = PodState(session, t, container, classes, snap.extended.pod(t), claims)
    possible = session.static(t).ok if domain is None else session.static(t).ok & domain
    for c in claims:
        assert c.key is not None
        pinned = session.allocation_nodes(c.key)  # a claim allocated elsewhere: upstream DRA's unresolvable
        if pinned is not None:
            possible = possible & pinned
    aware: list[RemovalAware] = [f for f in session.profile.filters if isinstance(f, RemovalAware)]
    among = possible
    for f in aware:
        among = among & ~f.unresolvable(state, among)
    rejecting = [(f, among & ~f.filter(state, among)) for f in aware]
    return Preemptor(state, possible, among, aware, [(f, m) for f, m in rejecting if m.any()])


@dataclass
class PostFilter:
    """Why the victim search found no victim set for one pod, node by node (upstream's
    ``DryRunPreemption`` statuses; nodes no candidate: ``Preemption is not helpful for scheduling``)."""

    candidates: np.ndarray
    has_victims: Callable[[int], bool]
    """Whether the action's rule admits a victim on a node (asked for candidates left without a status)."""
    counts: Counter[str] = field(default_factory=Counter)
    """Reason -> nodes, for the nodes with a status."""
    noted: np.ndarray = field(init=False)
    """Nodes with a status in :attr:`counts`. The others: not helpful if no candidate, else no
    victims or not tried (worked out on the failure path only, not for every node searched)."""
    deferred: np.ndarray = field(init=False)
    """Nodes whose status is what the filters say as the session stands (see :meth:`settle`)."""

    def __post_init__(self) -> None:
        self.noted = np.zeros_like(self.candidates)
        self.deferred = np.zeros_like(self.candidates)

    def note(self, j: int, *reasons: str) -> None:
        self.noted[j] = True
        for reason in reasons:
            self.counts[reason] += 1

    def defer(self, j: int) -> None:
        """Node ``j``'s status is the filters' first failure: removing the victims does not change it."""
        self.deferred[j] = True

    def settle(self, view: Preemptor) -> None:
        """Word the deferred nodes' statuses, all at once, as the session stands before the pod's
        victims are rolled back (one pass of each filter, not one per node)."""
        among = self.deferred & ~self.noted
        if among.any():
            view.filter_reasons(among, self.counts)
            self.noted |= among
        self.deferred[:] = False

    def message(self) -> str:
        """``preemption: 0/N nodes are available: ...``, as upstream's DefaultPreemption ``PostFilter``."""
        d = Diagnosis(len(self.candidates), counts=Counter(self.counts))
        plain = int((~self.candidates & ~self.noted).sum())
        if plain:
            d.counts[MSG_NOT_HELPFUL] += plain
        for pos in np.flatnonzero(self.candidates & ~self.noted):
            d.counts[MSG_NOT_TRIED if self.has_victims(int(pos)) else MSG_NO_VICTIMS] += 1
        return "preemption: " + d.message()


def _one(n: int, j: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[j] = True
    return mask
