"""Node order: bin-pack (fill the fullest node that fits first) or spread (the emptiest first).

The score of a node is the weighted mean, over the rows a pod needs, of the fraction of
the row that would be in use after placing it. Ties keep node name order, so results repeat.
:class:`NodeOrder` is the scorer plugin; ``order_nodes`` the same order as one function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from drasched.scheduler.constants import PODS
from drasched.scheduler.framework.api import ClusterEvent, PodState, ScorerBase
from drasched.scheduler.plugins.fit import RowNeed


def order_nodes(alloc: np.ndarray, used: np.ndarray, needs: Sequence[RowNeed], candidates: np.ndarray,
                strategy: str, weights: Mapping[str, float]) -> np.ndarray:
    """``candidates`` (node indices, ascending) in the order to try them."""
    if len(candidates) <= 1:
        return candidates
    score = used_fraction(alloc, used, needs, candidates, weights)
    if score is None:
        return candidates
    key = -score if strategy == "binpack" else score
    return candidates[np.argsort(key, kind="stable")]


def used_fraction(alloc: np.ndarray, used: np.ndarray, needs: Sequence[RowNeed], candidates: np.ndarray,
                  weights: Mapping[str, float]) -> np.ndarray | None:
    """Per candidate, the weighted mean fraction in use after placing the pod (``None``: nothing weighs)."""
    score = np.zeros(len(candidates))
    total = 0.0
    scored = [n for n in needs if n.name != PODS and n.value > 0] or [n for n in needs if n.name == PODS]
    for n in scored:
        w = weights.get(n.name, 1.0) if n.name != PODS else 1.0
        if w <= 0:
            continue
        a = alloc[n.row, candidates]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(a > 0, (used[n.row, candidates] + n.value) / a, 1.0)
        score += w * frac
        total += w
    if total == 0:
        return None
    return score


class NodeOrder(ScorerBase):
    """Bin-pack or spread (the top-level ``nodeOrder``), weighted per resource (``resourceWeights``).

    Disabled: nodes are tried in name order (unless another scorer is enabled).
    """

    name = "nodeOrder"

    def __init__(self, strategy: str, weight: float = 1.0) -> None:
        self.strategy = strategy
        self.weight = weight

    def events(self) -> tuple[ClusterEvent, ...]:
        return ()  # a score never makes a pod unschedulable

    def score(self, state: PodState, candidates: np.ndarray) -> np.ndarray:
        s = state.session
        needs = [*state.container, *(n for _, n in state.classes)]
        score = used_fraction(s.snap.allocatable, s.used, needs, candidates, s.weights)
        if score is None:
            return np.zeros(len(candidates))
        return score if self.strategy == "binpack" else -score
