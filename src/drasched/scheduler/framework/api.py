"""The extension points a scheduling plugin may implement, in the shape of kube-scheduler's framework.

A plugin is an object with a ``name`` and the methods of the points it implements; the
:class:`~drasched.scheduler.framework.profile.Profile` binds the enabled ones into one
list per point, once per configuration, so a cycle's hot path calls plain lists.

* :class:`StaticFilter` (upstream Filter on node metadata): depends only on the node and on
  the fields of the pod its ``signature`` returns. Pods with equal signatures share one
  evaluation per cycle (the pod's ``static_key`` is built from the enabled signatures).
* :class:`Filter` (upstream Filter on cluster state): which nodes the pod fits on now, given
  what the session has already placed; ``reasons`` explains the nodes it rejects.
* :class:`Scorer` (upstream Score + NormalizeScore): a raw score per candidate node, higher
  is better; ``normalize`` maps them to 0..100 before the weights are applied. Two optional
  methods: ``skips(state, candidates)`` (upstream PreScore returning Skip) says the scorer
  would give every candidate the same score, so the profile leaves it out for that pod;
  ``score_signature(pod)`` gives the pod fields the score reads that ``signature`` does not
  cover (a plugin that is also a static filter), for the pod's ``eq_key``.
* :class:`QueueOrder` (KAI's QueueOrderFn): which queue offers its next gang first;
  :class:`GangOrder` (KAI's JobOrderFn): which of a queue's gangs goes first.
* :class:`ClaimAllocation` (upstream DynamicResources Reserve): allocates a pod's
  ResourceClaims on one node.
* :class:`VictimFilter` (KAI's PreemptableFn / ReclaimableFn): may protect a running gang
  from reclaim, preemption and consolidation.
* ``events()`` (upstream EventsToRegister): the cluster events after which a pod this
  plugin rejected may fit; the queue uses them to requeue only the pods that may now fit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from drasched.scheduler.podinfo import NodeInfo, PodInfo

if TYPE_CHECKING:
    from drasched.dra.allocator import AllocationOutcome
    from drasched.scheduler.claims import PodClaim
    from drasched.scheduler.extended import PodExtended
    from drasched.scheduler.plugins.fit import RowNeed
    from drasched.scheduler.session import Session
    from drasched.scheduler.snapshot import GroupInfo
    from drasched.scheduler.victims import VictimGang

Obj = dict[str, Any]

ADD, UPDATE, DELETE = "Add", "Update", "Delete"


@dataclass(frozen=True, slots=True, order=True)
class ClusterEvent:
    """A kind of object and what happened to it (upstream ``framework.ClusterEvent``)."""

    kind: str
    """The object's kind: ``Node``, ``Pod``, ``ResourceSlice``, ``ResourceClaim``, ``Queue`` ..."""
    action: str
    """``Add``, ``Update`` or ``Delete``."""


NodeCheck = Callable[[NodeInfo], "str | None"]
"""One pod's static check of one node: ``None`` where the node passes, else why not."""


@dataclass(slots=True)
class PodState:
    """What a dynamic filter or a scorer needs about the pod being placed, computed once per attempt."""

    session: Session
    pod: PodInfo
    container: list[RowNeed]
    """Container requests by row (the ``pods`` row included)."""
    classes: list[tuple[str, RowNeed]]
    """Per DeviceClass, the devices the pod's unallocated claims surely need."""
    extended: PodExtended | None
    """Extended resources a DeviceClass may serve (KEP-5004), if the pod requests any."""
    claims: list[PodClaim]


@runtime_checkable
class Plugin(Protocol):
    """What every plugin has: its configured name and the events that may make a rejected pod fit."""

    name: str

    def events(self) -> tuple[ClusterEvent, ...]: ...


@runtime_checkable
class StaticFilter(Plugin, Protocol):
    """A filter whose verdict depends on the pod's ``signature`` and the node's name, labels,
    taints, ``spec.unschedulable`` and allocatable only: verdicts are kept per pod shape for as
    long as those stay (a node's heartbeat keeps them; any other change rebuilds the world)."""

    def signature(self, pod: PodInfo) -> Any:
        """The JSON-serialisable pod fields the verdict depends on (``None``: none)."""
        ...

    def prepare(self, pod: PodInfo) -> NodeCheck | None:
        """The per-node check for ``pod`` (``None``: every node passes)."""
        ...


@runtime_checkable
class Filter(Plugin, Protocol):
    """A dynamic filter. Optional, looked up by name: ``messages``, the texts its ``reasons``
    count; a gang that failed with one of them is retried once an event of its ``events()``
    arrives, as well as when resources are freed (upstream's queueing hints; see the
    scheduler controller's parking)."""

    def filter(self, state: PodState, among: np.ndarray) -> np.ndarray:
        """The nodes of ``among`` (a boolean mask) where the pod fits now."""
        ...

    def reasons(self, state: PodState, among: np.ndarray, into: Counter[str]) -> np.ndarray:
        """Count in ``into``, per message, the nodes of ``among`` rejected; return them as a mask."""
        ...


@runtime_checkable
class Scorer(Plugin, Protocol):
    """A scorer; ``weight`` 0 leaves it out of the node order (a filter of the same plugin still runs).

    Optional, looked up by name (:class:`ScorerBase` has both):

    * ``skips(state, candidates) -> bool``: True when every candidate would get the same score
      for this pod (upstream PreScore returning Skip); the profile then leaves the scorer out,
      and a lone remaining scorer orders the nodes by its raw scores (the cheap path). Called
      for every pod placed: it must cost next to nothing when the scorer has nothing to say.
    * ``score_signature(pod) -> Any``: the JSON-serialisable pod fields the score reads that
      ``signature`` (a static filter's, already in the pod's memo keys) does not cover; they
      enter the pod's ``eq_key`` (``None``: none), not its ``static_key``.
    """

    weight: float

    def score(self, state: PodState, candidates: np.ndarray) -> np.ndarray:
        """A raw score per candidate node index (higher is better)."""
        ...

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """Scores mapped to 0..100 (see :func:`min_max`, :func:`default_normalize`)."""
        ...


@runtime_checkable
class QueueOrder(Plugin, Protocol):
    def ratio(self, allocated: Mapping[str, float], share: Mapping[str, Fraction]) -> float:
        """How far a queue is into its share; the lowest offers its next gang first."""
        ...


@runtime_checkable
class GangOrder(Plugin, Protocol):
    def gang_key(self, group: GroupInfo) -> tuple[Any, ...]:
        """Sort key of a queue's gangs: the lowest is tried first (ties: creation, then name)."""
        ...


@runtime_checkable
class ClaimAllocation(Plugin, Protocol):
    def allocate(self, session: Session, node: int, claims: list[Obj], namespace: str) -> AllocationOutcome:
        """Allocate ``claims`` (the pod's, then its special claim) on node ``node``."""
        ...


@runtime_checkable
class VictimFilter(Plugin, Protocol):
    def protects(self, session: Session, victim: VictimGang) -> str | None:
        """Why ``victim`` must not be evicted this cycle (``None``: it may be)."""
        ...


def min_max(scores: np.ndarray) -> np.ndarray:
    """Upstream's usual NormalizeScore: the lowest maps to 0, the highest to 100 (all equal: 0)."""
    if scores.size == 0:
        return scores
    lo, hi = float(scores.min()), float(scores.max())
    if hi <= lo:
        return np.zeros_like(scores, dtype=float)
    return (scores - lo) * (100.0 / (hi - lo))


MAX_NODE_SCORE = 100
"""Upstream ``framework.MaxNodeScore``."""


def default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Upstream ``helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)`` for non-negative
    integer scores: ``100 * score // max`` (integer division, as upstream's int64), then
    ``100 - that`` if ``reverse``; all zero: 0 (reverse: 100)."""
    if scores.size == 0:
        return np.zeros(0)
    hi = int(scores.max())
    if hi <= 0:
        return np.full(scores.shape, float(MAX_NODE_SCORE) if reverse else 0.0)
    out = (MAX_NODE_SCORE * scores.astype(np.int64)) // hi
    if reverse:
        out = MAX_NODE_SCORE - out
    return out.astype(float)


class ScorerBase:
    """Defaults for scorers: ``normalize`` by :func:`min_max` (order-preserving, so a lone
    scorer's raw scores order the nodes), and ``skips`` never."""

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return min_max(scores)

    def skips(self, state: PodState, candidates: np.ndarray) -> bool:
        return False


@runtime_checkable
class RowFilter(Plugin, Protocol):
    """A filter on the vector of node rows (container requests): which rows it compares.

    The rows of every enabled row filter are compared in one pass, so a node short of
    several resources is reported once per resource, as upstream's NodeResourcesFit does.
    """

    def checks(self, need: RowNeed) -> bool: ...


@runtime_checkable
class RemovalAware(Protocol):
    """A dynamic filter that knows what removing a running pod does to it (upstream PreFilter
    extensions, ``RemovePod``)."""

    def filter(self, state: PodState, among: np.ndarray) -> np.ndarray: ...

    def unresolvable(self, state: PodState, among: np.ndarray) -> np.ndarray:
        """The nodes of ``among`` it rejects whatever is removed (``UnschedulableAndUnresolvable``)."""
        ...

    def lifted_by_removing(self, state: PodState, running: PodInfo) -> bool:
        """Whether removing ``running`` may lift its rejection of ``state.pod``."""
        ...
