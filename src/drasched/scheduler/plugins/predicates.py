"""Static predicates: node unschedulable, node selector, required node affinity, taints.

Each is a :class:`~drasched.scheduler.framework.api.StaticFilter` plugin. They depend on
the pod's spec and the node's metadata only, never on what is allocated, so one evaluation
serves every pod with the same ``static_key`` for the whole cycle.
Messages are upstream's, so users recognise them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from drasched.api.resource import NodeSelector as NodeSelectorView
from drasched.api.resource import decode
from drasched.dra.nodes import node_selector_matches
from drasched.scheduler.framework.api import ADD, UPDATE, ClusterEvent, NodeCheck, StaticFilter
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


def tolerates(tol: Obj, taint: Obj) -> bool:
    """Upstream ``Toleration.ToleratesTaint``."""
    effect = tol.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = tol.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return False


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


class NodeAffinity:
    """Upstream NodeAffinity (required terms). Disabled: ``requiredDuringScheduling`` affinity is ignored."""

    name = "nodeAffinity"

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


class TaintToleration:
    """Upstream TaintToleration (NoSchedule, NoExecute). Disabled: taints are ignored."""

    name = "taintToleration"

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
