"""Node order: bin-pack (fill the fullest node that fits first) or spread (the emptiest first).

The score of a node is the weighted mean, over the rows a pod needs, of the fraction of
the row that would be in use after placing it. Ties keep node name order, so results repeat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from drasched.scheduler.constants import PODS
from drasched.scheduler.plugins.fit import RowNeed


def order_nodes(alloc: np.ndarray, used: np.ndarray, needs: Sequence[RowNeed], candidates: np.ndarray,
                strategy: str, weights: Mapping[str, float]) -> np.ndarray:
    """``candidates`` (node indices, ascending) in the order to try them."""
    if len(candidates) <= 1:
        return candidates
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
        return candidates
    key = -score if strategy == "binpack" else score
    return candidates[np.argsort(key, kind="stable")]
