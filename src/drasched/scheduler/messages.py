"""Why a pod is unschedulable, as one message: ``0/N nodes are available: ...``.

Per-node reasons are counted as upstream does (a node can give several), DRA reasons from
all nodes merge into one phrase through :func:`drasched.dra.explain.summarize`, and reasons
that are not about nodes (a queue over its limit) are appended.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from drasched.dra.explain import Reason, summarize


@dataclass
class Diagnosis:
    n_nodes: int
    counts: Counter[str] = field(default_factory=Counter)
    dra_nodes: int = 0
    """Nodes where the pod's claims cannot be allocated."""
    dra_reasons: list[Reason] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    def add_dra(self, nodes: int, reasons: list[Reason]) -> None:
        self.dra_nodes += nodes
        self.dra_reasons.extend(reasons)

    def message(self) -> str:
        parts = [(n, text) for text, n in self.counts.items() if n]
        if self.dra_nodes:
            merged = summarize(self.dra_reasons)
            parts.append((self.dra_nodes, merged or "resource claims cannot be allocated"))
        parts.sort(key=lambda t: (-t[0], t[1]))
        items = [f"{n} {text}" for n, text in parts] + self.extra
        if not items:
            items = ["no nodes in the cluster" if self.n_nodes == 0 else "no node was left to try"]
        return f"0/{self.n_nodes} nodes are available: {', '.join(items)}."


def queue_limit_message(n_nodes: int, queue: str, dim: str) -> str:
    return Diagnosis(n_nodes, extra=[f"queue {queue} over its limit for {dim}"]).message()
