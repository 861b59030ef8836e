"""Why a pod is unschedulable, as one message: ``0/N nodes are available: ...``.

Per-node reasons are counted as upstream does (a node can give several). DRA reasons go
through :func:`drasched.dra.explain.summarize_nodes`: each phrase counts the nodes it holds
for, and its numbers hold on each of them. The reasons of a single node stay one item
(``1 not enough ... ; constraint unmet: ...``). The ``"<count> <reason>"`` items are joined in
upstream's order: ``FitError.Error`` (``pkg/scheduler/framework/types.go``) sorts them with
``sort.Strings``, bytewise (``1 Insufficient cpu`` < ``1 Too many pods`` < ``1 node(s) ...``,
``10 x`` < ``2 y``). Reasons that are not about nodes (a queue over its limit, a gang's) are
appended after them, in the order they were added.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from drasched.dra.explain import Reason, summarize_nodes
from drasched.scheduler.resources import format_units

_NO_REASON = "resource claims cannot be allocated"


@dataclass
class Diagnosis:
    n_nodes: int
    counts: Counter[str] = field(default_factory=Counter)
    dra: list[tuple[int, list[Reason]]] = field(default_factory=list)
    """``(nodes, reasons)``: nodes where the pod's claims cannot be allocated, each for all of
    the reasons (a reason with ``nodes`` set stands for that many of them)."""
    extra: list[str] = field(default_factory=list)

    def add_dra(self, nodes: int, reasons: list[Reason]) -> None:
        if nodes > 0:
            self.dra.append((nodes, list(reasons)))

    @property
    def dra_nodes(self) -> int:
        """Nodes where the pod's claims cannot be allocated."""
        return sum(n for n, _ in self.dra)

    def dra_parts(self) -> list[tuple[int, str]]:
        """``(nodes, phrase)`` for the DRA reasons; one node's phrases stay together."""
        parts = summarize_nodes(self.dra)
        bare = sum(n for n, reasons in self.dra if not reasons)
        if bare:
            parts.append((bare, _NO_REASON))
        if self.dra_nodes == 1 and len(parts) > 1:
            return [(1, "; ".join(p for _, p in parts))]
        return parts

    def message(self) -> str:
        parts = [(n, text) for text, n in self.counts.items() if n]
        parts += self.dra_parts()
        # sort.Strings on "<count> <reason>": Go compares bytes, and code point order on str is the same
        items = sorted(f"{n} {text}" for n, text in parts) + self.extra
        if not items:
            items = ["no nodes in the cluster" if self.n_nodes == 0 else "no node was left to try"]
        return f"0/{self.n_nodes} nodes are available: {', '.join(items)}."


def queue_limit_message(n_nodes: int, queue: str, dim: str) -> str:
    return Diagnosis(n_nodes, extra=[f"queue {queue} over its limit for {dim}"]).message()


def beyond_limit_message(group: str | None, min_member: int, own_queue: str, queue: str, dim: str, limit: float,
                         need: float) -> str:
    """Why a gang (``group``: its key; None for a pod without a PodGroup) can never be placed: its
    ``minMember`` pods alone need more ``dim`` than ``queue``'s limit, not a wait for room."""
    where = f"queue {queue}" + (f" (a parent of queue {own_queue})" if queue != own_queue else "")
    beyond = f"more than the limit {format_units(dim, limit)} of {where}: it can never be scheduled there"
    if group is None:
        return f"the pod needs {format_units(dim, need)} {dim}, {beyond} (raise the limit or lower the request)"
    return (f"pod group {group}: its minMember {min_member} pods need {format_units(dim, need)} {dim} together, "
            f"{beyond} (raise the limit or lower minMember or the requests)")
