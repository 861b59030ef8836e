"""Resource fit on vectors: one pod against every node, one comparison per requested resource.

Container requests are compared on the rows they name (``pods`` is the pod-count
predicate). Claims add a necessary condition per DeviceClass row: a node with fewer
matching free devices than a claim's ExactCount requests cannot satisfy it, so the
allocator is never asked there. Rows of classes whose devices allow multiple allocations
are skipped (their in-use count does not bound what is left).

Comparisons allow ``EPSILON``: the GPU row may hold fractions of a GPU (``0.1`` ten times
must fill one GPU, although binary floats make it 0.9999999999999999).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from drasched.dra import explain as ex
from drasched.dra.explain import Reason
from drasched.scheduler.constants import PODS
from drasched.scheduler.framework.api import ADD, DELETE, UPDATE, ClusterEvent

MSG_TOO_MANY_PODS = "Too many pods"
"""Upstream NodeResourcesFit's reason on ``pods`` (``noderesources/fit.go``, ``fitsRequest``)."""
EPSILON = 1e-9
"""Tolerance of every fit comparison; far below the smallest unit (a milli-GPU)."""


@dataclass(frozen=True, slots=True)
class RowNeed:
    """``value`` units of row ``row`` (named ``name``) on one node."""

    row: int
    name: str
    value: float


def insufficient(name: str) -> str:
    """Upstream NodeResourcesFit's reason for a resource a node lacks, word for word
    (``noderesources/fit.go``: ``"Too many pods"``, ``"Insufficient cpu"``,
    ``fmt.Sprintf("Insufficient %v", rName)``)."""
    return MSG_TOO_MANY_PODS if name == PODS else f"Insufficient {name}"


def fit_mask(idle: np.ndarray, needs: Sequence[RowNeed], base: np.ndarray) -> np.ndarray:
    """Nodes in ``base`` where every need fits in ``idle``."""
    mask = base.copy()
    for n in needs:
        mask &= idle[n.row] >= n.value - EPSILON
    return mask


def fit_reasons(idle: np.ndarray, needs: Sequence[RowNeed], among: np.ndarray, into: Counter[str]) -> np.ndarray:
    """Count, per reason, the nodes of ``among`` where a need does not fit; return the failing nodes."""
    failing = np.zeros_like(among)
    for n in needs:
        bad = among & (idle[n.row] < n.value - EPSILON)
        k = int(bad.sum())
        if k:
            into[insufficient(n.name)] += k
            failing |= bad
    return failing


def class_reasons(idle: np.ndarray, used: np.ndarray, needs: Sequence[tuple[str, RowNeed]],
                  among: np.ndarray) -> tuple[int, list[Reason]]:
    """Nodes of ``among`` without enough free devices of a class, and the reasons in the allocator's words.

    Per class, one reason for each distinct (in use, free) pair, standing for the nodes that
    have it (``Reason.nodes``): the numbers are each node's, never a sum over nodes.
    """
    failing = np.zeros_like(among)
    reasons: list[Reason] = []
    for cls, n in needs:
        bad = among & (idle[n.row] < n.value - EPSILON)
        if not bad.any():
            continue
        reasons += device_reasons(cls, int(n.value), used[n.row][bad], idle[n.row][bad])
        failing |= bad
    return int(failing.sum()), reasons


def device_reasons(cls: str, needed: int, used: np.ndarray, idle: np.ndarray) -> list[Reason]:
    """Reasons for nodes short of devices of ``cls`` (their ``used`` and ``idle`` devices): one for
    each distinct (in use, free) pair, standing for the nodes that have it."""
    pairs = np.floor(np.stack([used, np.maximum(idle, 0)]) + EPSILON).astype(np.int64)
    values, nodes = np.unique(pairs, axis=1, return_counts=True)
    return [Reason(ex.INSUFFICIENT, class_name=cls, needed=needed, counts={ex.IN_USE: in_use} if in_use else {},
                   free=free, nodes=k)
            for (in_use, free), k in zip(values.T.tolist(), nodes.tolist())]


_FREED = (ClusterEvent("Pod", DELETE), ClusterEvent("Pod", UPDATE), ClusterEvent("Node", ADD),
          ClusterEvent("Node", UPDATE))


class PodCount:
    """Upstream NodeResourcesFit on ``pods``: a node holds at most ``status.allocatable.pods`` pods.

    Disabled: a node takes pods beyond its pod count.
    """

    name = "podCount"

    def events(self) -> tuple[ClusterEvent, ...]:
        return _FREED

    def checks(self, need: RowNeed) -> bool:
        return need.name == PODS


class ResourceFit:
    """Upstream NodeResourcesFit on container requests (cpu, memory, GPUs, other extended resources).

    Disabled: container requests are not compared with what nodes have left (nodes are
    overcommitted); they are still counted in queue usage and node order.
    """

    name = "resourceFit"

    def events(self) -> tuple[ClusterEvent, ...]:
        return _FREED

    def checks(self, need: RowNeed) -> bool:
        return need.name != PODS
