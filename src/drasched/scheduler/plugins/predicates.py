"""Static predicates: node unschedulable, taints, required node affinity, node selector (the
order they run in, upstream's: :data:`~drasched.scheduler.framework.registry.BUILTINS`);
and the preferences two of them score.

Each is a :class:`~drasched.scheduler.framework.api.StaticFilter` plugin. They depend on
the pod's spec and the node's metadata only, never on what is allocated, so one evaluation
serves every pod with the same ``static_key`` for the whole cycle.
Messages are upstream's, so users recognise them.

:class:`NodeAffinity` and :class:`TaintToleration` also score, as upstream's plugins of those
names do (``nodeaffinity/node_affinity.go``, ``tainttoleration/taint_toleration.go``): the
weights of the pod's preferred node-affinity terms a node matches, and the node's
``PreferNoSchedule`` taints the pod does not tolerate. Both scores depend on node metadata
and pod fields only, so each is a vector over all nodes worked out once per pod signature
and kept while the snapshot's node list stays the same (:class:`NodeVectors`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from drasched.api.resource import NodeSelector as NodeSelectorView
from drasched.api.resource import NodeSelectorTerm, decode
from drasched.api.tolerations import tolerates
from drasched.dra.nodes import node_selector_matches, term_matches
from drasched.scheduler.framework.api import (
    ADD,
    UPDATE,
    ClusterEvent,
    NodeCheck,
    PodState,
    StaticFilter,
    default_normalize,
)
from drasched.scheduler.podinfo import NodeInfo, PodInfo

Obj = dict[str, Any]

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
MSG_UNSCHEDULABLE = "node(s) were unschedulable"
MSG_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
MSG_BAD_AFFINITY = "pod has an invalid required node affinity"


@dataclass(frozen=True)
class StaticResult:
    """Which nodes pass, and for each failing node the reason (``None`` where it passes)."""

    ok: np.ndarray
    reasons: list[str | None]


def untolerated_taint(taints: Sequence[Obj], tolerations: Sequence[Obj]) -> Obj | None:
    """The first NoSchedule/NoExecute taint no toleration matches (PreferNoSchedule is a preference)."""
    for t in taints:
        if t.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(tol, t) for tol in tolerations):
            return t
    return None


def taint_message(taint: Obj) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"


def _selector_matches(node: NodeInfo, selector: dict[str, str]) -> bool:
    labels = node.labels
    return all(labels.get(k) == v for k, v in selector.items())


_NODE_CHANGED = (ClusterEvent("Node", ADD), ClusterEvent("Node", UPDATE))


class NodeUnschedulable:
    """Upstream NodeUnschedulable: cordoned nodes only for pods tolerating the unschedulable taint.

    Disabled: cordoned nodes take new pods like any other.
    """

    name = "nodeUnschedulable"

    def events(self) -> tuple[ClusterEvent, ...]:
        return _NODE_CHANGED

    def signature(self, pod: PodInfo) -> Any:
        return _tolerates_unschedulable(pod)

    def prepare(self, pod: PodInfo) -> NodeCheck | None:
        if _tolerates_unschedulable(pod):
            return None
        return lambda node: MSG_UNSCHEDULABLE if node.unschedulable else None


def _tolerates_unschedulable(pod: PodInfo) -> bool:
    return any(tolerates(t, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}) for t in pod.tolerations)


class NodeVectors:
    """Per-node integer vectors over one list of nodes, by pod signature, with a summary of the list.

    The snapshot builder keeps one list of :class:`NodeInfo` (``Snapshot.nodes``) for as long
    as no node is added, removed, relabelled or retainted: a change that only a heartbeat
    makes replaces entries in place with the same labels and taints (``_patch_nodes``), and
    any other makes a new list. So what is computed here from labels and taints outlives a
    cycle, and a new list starts afresh. Safe to share between threads: each reads the
    current entry once and a race only computes a vector twice.
    """

    MAX_KEYS = 256
    """Signatures kept per node list (then they start over)."""

    def __init__(self, summarize: Callable[[Sequence[NodeInfo]], Any] = lambda nodes: None) -> None:
        self._summarize = summarize
        self._current: tuple[Sequence[NodeInfo], int, Any, dict[str, tuple[np.ndarray, bool]]] | None = None

    def _entry(self, nodes: Sequence[NodeInfo]) -> tuple[Sequence[NodeInfo], int, Any,
                                                          dict[str, tuple[np.ndarray, bool]]]:
        cur = self._current
        if cur is None or cur[0] is not nodes or cur[1] != len(nodes):
            cur = (nodes, len(nodes), self._summarize(nodes), {})
            self._current = cur
        return cur

    def summary(self, nodes: Sequence[NodeInfo]) -> Any:
        """What ``summarize`` says of ``nodes`` (computed once per list)."""
        return self._entry(nodes)[2]

    def vector(self, nodes: Sequence[NodeInfo], key: str,
               build: Callable[[Sequence[NodeInfo], Any], np.ndarray]) -> tuple[np.ndarray, bool]:
        """``build(nodes, summary)`` for signature ``key`` (read-only), and whether any entry is non-zero."""
        _, _, summary, memo = self._entry(nodes)
        hit = memo.get(key)
        if hit is None:
            vec = build(nodes, summary)
            vec.flags.writeable = False
            if len(memo) >= self.MAX_KEYS:
                memo.clear()
            hit = memo[key] = (vec, bool(vec.any()))
        return hit


def _alike(vec: np.ndarray, nonzero: bool, candidates: np.ndarray) -> bool:
    """Whether every candidate has the same entry in ``vec``: its score then orders nothing."""
    if not nonzero:
        return True
    v = vec[candidates]
    return bool(v.min() == v.max())


def preferred_terms(pod: PodInfo) -> list[Obj]:
    """The pod's ``preferredDuringSchedulingIgnoredDuringExecution`` node-affinity terms that can
    score: weight above 0 and a non-empty preference (upstream ``NewPreferredSchedulingTerms``
    skips the others)."""
    affinity = (pod.obj.get("spec") or {}).get("affinity")
    if not affinity:
        return []
    raw = (affinity.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
    if not raw:
        return []
    out = []
    for t in raw:
        if not isinstance(t, dict) or _term_weight(t) <= 0:
            continue
        pref = t.get("preference")
        if isinstance(pref, dict) and (pref.get("matchExpressions") or pref.get("matchFields")):
            out.append(t)
    return out


def _term_weight(term: Obj) -> int:
    w = term.get("weight")
    return w if isinstance(w, int) and not isinstance(w, bool) else 0


def preferred_affinity_scores(nodes: Sequence[NodeInfo], terms: Sequence[Obj]) -> np.ndarray:
    """Upstream NodeAffinity's Score on every node: the sum of the weights of the terms it
    matches (``PreferredSchedulingTerms.Score``). Terms match as the required filter's do
    (:func:`~drasched.dra.nodes.term_matches`); a term that does not decode matches nothing
    (the API server refuses such terms; upstream would fail the pod)."""
    out = np.zeros(len(nodes), dtype=np.int64)
    for t in terms:
        try:
            term = decode(t["preference"], NodeSelectorTerm)
        except msgspec.ValidationError:
            continue
        out[term_mask(term, nodes)] += _term_weight(t)
    return out


def term_mask(term: NodeSelectorTerm, nodes: Sequence[NodeInfo]) -> np.ndarray:
    """Which nodes match ``term``: evaluated once per distinct value tuple of the label keys it
    reads (nodes mostly share them), per node only when it reads the node's name."""
    if term.match_fields:
        return np.fromiter((term_matches(term, n.obj) for n in nodes), dtype=bool, count=len(nodes))
    keys = sorted({r.key for r in term.match_expressions})
    values: list[Any]
    if len(keys) == 1:
        key = keys[0]
        values = [n.labels.get(key) for n in nodes]
    else:
        values = [tuple(map(n.labels.get, keys)) for n in nodes]

    def matches(v: Any) -> bool:
        shown = zip(keys, v, strict=True) if len(keys) > 1 else [(keys[0], v)]
        return term_matches(term, {"metadata": {"labels": {k: x for k, x in shown if x is not None}}})

    verdict = {v: matches(v) for v in set(values)}
    return np.fromiter(map(verdict.__getitem__, values), dtype=bool, count=len(nodes))


class _VectorScore:
    """The scoring half shared by :class:`NodeAffinity` and :class:`TaintToleration`: a raw
    score per node, one vector per pod signature (``_vector``: the vector and whether any
    entry is non-zero, ``None`` when the pod has nothing to score); ``skips`` (upstream PreScore's
    Skip) when it is absent or alike on every candidate, and hands its vector to ``score``."""

    _last: tuple[PodState, np.ndarray] | None = None

    def _vector(self, state: PodState) -> tuple[np.ndarray, bool] | None:
        raise NotImplementedError

    def skips(self, state: PodState, candidates: np.ndarray) -> bool:
        hit = self._vector(state)
        if hit is None or _alike(*hit, candidates):
            return True
        self._last = (state, hit[0])
        return False

    def score(self, state: PodState, candidates: np.ndarray) -> np.ndarray:
        last, self._last = self._last, None  # (not kept: it holds the session)
        if last is not None and last[0] is state:
            return last[1][candidates]
        hit = self._vector(state)
        return np.zeros(len(candidates), dtype=np.int64) if hit is None else hit[0][candidates]


class NodeAffinity(_VectorScore):
    """Upstream NodeAffinity: required terms filter, preferred terms score.

    Disabled: node affinity is ignored, required and preferred. Weight 0: preferred terms are
    ignored, required ones still filter.
    """

    name = "nodeAffinity"

    def __init__(self, weight: float = 2.0) -> None:
        self.weight = weight
        self._vectors = NodeVectors()

    def events(self) -> tuple[ClusterEvent, ...]:
        return _NODE_CHANGED

    def signature(self, pod: PodInfo) -> Any:
        return pod.required_affinity

    def prepare(self, pod: PodInfo) -> NodeCheck | None:
        if pod.required_affinity is None:
            return None
        try:
            affinity = decode(pod.required_affinity, NodeSelectorView)
        except msgspec.ValidationError:
            return lambda node: MSG_BAD_AFFINITY
        return lambda node: None if node_selector_matches(affinity, node.obj) else MSG_AFFINITY

    # ------------------------------------------------------------------ score

    def score_signature(self, pod: PodInfo) -> Any:
        return preferred_terms(pod) or None

    def _vector(self, state: PodState) -> tuple[np.ndarray, bool] | None:
        terms = preferred_terms(state.pod)
        if not terms:
            return None
        key = json.dumps(terms, sort_keys=True, separators=(",", ":"))
        return self._vectors.vector(state.session.snap.nodes, key,
                                    lambda nodes, _: preferred_affinity_scores(nodes, terms))

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores)


class NodeSelector:
    """``spec.nodeSelector`` (upstream NodeAffinity's other half). Disabled: ``nodeSelector`` is ignored."""

    name = "nodeSelector"

    def events(self) -> tuple[ClusterEvent, ...]:
        return _NODE_CHANGED

    def signature(self, pod: PodInfo) -> Any:
        return pod.node_selector or None

    def prepare(self, pod: PodInfo) -> NodeCheck | None:
        selector = pod.node_selector
        if not selector:
            return None
        return lambda node: None if _selector_matches(node, selector) else MSG_AFFINITY


PREFER_NO_SCHEDULE = "PreferNoSchedule"


def prefer_no_schedule_taints(nodes: Sequence[NodeInfo]) -> tuple[tuple[int, tuple[Obj, ...]], ...]:
    """The nodes with ``PreferNoSchedule`` taints: (node index, those taints)."""
    out = []
    for j, n in enumerate(nodes):
        if n.taints:
            prefer = tuple(t for t in n.taints if t.get("effect") == PREFER_NO_SCHEDULE)
            if prefer:
                out.append((j, prefer))
    return tuple(out)


def prefer_no_schedule_tolerations(tolerations: Sequence[Obj]) -> list[Obj]:
    """Upstream ``getAllTolerationPreferNoSchedule``: effect PreferNoSchedule, or none (every effect)."""
    return [t for t in tolerations if (t.get("effect") or "") in ("", PREFER_NO_SCHEDULE)]


def intolerable_counts(n_nodes: int, tainted: Sequence[tuple[int, tuple[Obj, ...]]],
                       tolerations: Sequence[Obj]) -> np.ndarray:
    """Upstream TaintToleration's Score on every node (``countIntolerableTaintsPreferNoSchedule``):
    the node's PreferNoSchedule taints that none of ``tolerations`` tolerates."""
    out = np.zeros(n_nodes, dtype=np.int64)
    for j, taints in tainted:
        out[j] = sum(1 for t in taints if not any(tolerates(tol, t) for tol in tolerations))
    return out


class TaintToleration(_VectorScore):
    """Upstream TaintToleration: NoSchedule and NoExecute taints filter, PreferNoSchedule ones score.

    Disabled: taints are ignored, all three effects. Weight 0: PreferNoSchedule taints are
    ignored, the others still filter.
    """

    name = "taintToleration"

    def __init__(self, weight: float = 3.0) -> None:
        self.weight = weight
        self._vectors = NodeVectors(prefer_no_schedule_taints)

    def events(self) -> tuple[ClusterEvent, ...]:
        return _NODE_CHANGED

    def signature(self, pod: PodInfo) -> Any:
        return pod.tolerations

    def prepare(self, pod: PodInfo) -> NodeCheck | None:
        tolerations = pod.tolerations

        def check(node: NodeInfo) -> str | None:
            if not node.taints:
                return None
            t = untolerated_taint(node.taints, tolerations)
            return None if t is None else taint_message(t)

        return check

    # ------------------------------------------------------------------ score
    # The tolerations it reads are in the filter's signature, so already in the pod's memo keys.

    def _vector(self, state: PodState) -> tuple[np.ndarray, bool] | None:
        nodes = state.session.snap.nodes
        tainted = self._vectors.summary(nodes)
        if not tainted:
            return None
        tolerations = prefer_no_schedule_tolerations(state.pod.tolerations)
        key = json.dumps(tolerations, sort_keys=True, separators=(",", ":")) if tolerations else ""
        return self._vectors.vector(nodes, key, lambda ns, t: intolerable_counts(len(ns), t, tolerations))

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=True)  # fewer intolerable taints is better


def static_filter(nodes: Sequence[NodeInfo], pod: PodInfo, filters: Sequence[StaticFilter]) -> StaticResult:
    """Evaluate the static filters on every node; a node's reason is the first filter's that rejects it."""
    n = len(nodes)
    ok = np.ones(n, dtype=bool)
    reasons: list[str | None] = [None] * n
    checks = [c for f in filters if (c := f.prepare(pod)) is not None]
    if not checks:
        return StaticResult(ok, reasons)
    for i, node in enumerate(nodes):
        for check in checks:
            reason = check(node)
            if reason is not None:
                ok[i] = False
                reasons[i] = reason
                break
    return StaticResult(ok, reasons)


def node_selector_mask(nodes: Sequence[NodeInfo], selector: Obj) -> np.ndarray:
    """Nodes matching a NodeSelector (an allocation's); node-local ones (``metadata.name In``) in O(1) each."""
    out = np.zeros(len(nodes), dtype=bool)
    terms = selector.get("nodeSelectorTerms") or []
    if len(terms) == 1 and not terms[0].get("matchExpressions"):
        fields = terms[0].get("matchFields") or []
        if len(fields) == 1 and fields[0].get("key") == "metadata.name" and fields[0].get("operator") == "In":
            wanted = set(fields[0].get("values") or ())
            for n in nodes:
                if n.name in wanted:
                    out[n.index] = True
            return out
    try:
        view = decode(selector, NodeSelectorView)
    except msgspec.ValidationError:
        return out
    for n in nodes:
        out[n.index] = node_selector_matches(view, n.obj)
    return out
