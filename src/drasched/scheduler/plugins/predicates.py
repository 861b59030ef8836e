"""Static predicates: node unschedulable, node selector, required node affinity, taints.

They depend on the pod's spec and the node's metadata only, never on what is allocated,
so one evaluation serves every pod with the same ``static_key`` for the whole cycle.
Messages are upstream's, so users recognise them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from drasched.api.resource import NodeSelector, decode
from drasched.dra.nodes import node_selector_matches
from drasched.scheduler.config import SchedulerConfig
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


def static_filter(nodes: Sequence[NodeInfo], pod: PodInfo, config: SchedulerConfig) -> StaticResult:
    """Evaluate the static predicates of ``pod`` on every node."""
    n = len(nodes)
    ok = np.ones(n, dtype=bool)
    reasons: list[str | None] = [None] * n
    affinity: NodeSelector | None = None
    bad_affinity = False
    if pod.required_affinity is not None and config.enabled("nodeAffinity"):
        try:
            affinity = decode(pod.required_affinity, NodeSelector)
        except msgspec.ValidationError:
            bad_affinity = True
    tolerate_unschedulable = any(tolerates(t, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
                                 for t in pod.tolerations)
    check_unsched = config.enabled("nodeUnschedulable")
    check_selector = config.enabled("nodeSelector") and bool(pod.node_selector)
    check_taints = config.enabled("taintToleration")
    for i, node in enumerate(nodes):
        reason: str | None = None
        if check_unsched and node.unschedulable and not tolerate_unschedulable:
            reason = MSG_UNSCHEDULABLE
        elif bad_affinity:
            reason = MSG_BAD_AFFINITY
        elif (check_selector and not _selector_matches(node, pod.node_selector)) or (
                affinity is not None and not node_selector_matches(affinity, node.obj)):
            reason = MSG_AFFINITY
        elif check_taints and node.taints:
            t = untolerated_taint(node.taints, pod.tolerations)
            if t is not None:
                reason = taint_message(t)
        if reason is not None:
            ok[i] = False
            reasons[i] = reason
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
        view = decode(selector, NodeSelector)
    except msgspec.ValidationError:
        return out
    for n in nodes:
        out[n.index] = node_selector_matches(view, n.obj)
    return out
