"""core/v1 NodeSelector matching, as upstream ``nodeaffinity.NewNodeSelector(...).Match``.

ResourceSlices, per-device node selection and allocation results all use a NodeSelector;
the allocator and the scheduling pass need the same answer the kube-scheduler would give.
"""

from __future__ import annotations

from typing import Any

from drasched.api.resource import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, decode

Obj = dict[str, Any]


def _labels(node: Obj) -> dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _name(node: Obj) -> str:
    return (node.get("metadata") or {}).get("name", "")


def _requirement_matches(req: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    op = req.operator
    present = req.key in labels
    if op == "In":
        return present and labels[req.key] in req.values
    if op == "NotIn":
        return not present or labels[req.key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(req.values) != 1:
            return False
        try:
            have, want = int(labels[req.key]), int(req.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False  # unknown operator: upstream rejects the selector, which matches nothing


def _field_matches(req: NodeSelectorRequirement, node: Obj) -> bool:
    # Only metadata.name is a supported field (upstream validation).
    if req.key != "metadata.name":
        return False
    name = _name(node)
    if req.operator == "In":
        return name in req.values
    if req.operator == "NotIn":
        return name not in req.values
    return False


def term_matches(term: NodeSelectorTerm, node: Obj) -> bool:
    """All requirements of one term (an empty term matches no node, as upstream)."""
    if not term.match_expressions and not term.match_fields:
        return False
    labels = _labels(node)
    return all(_requirement_matches(r, labels) for r in term.match_expressions) and all(
        _field_matches(r, node) for r in term.match_fields
    )


def node_selector_matches(selector: NodeSelector | Obj | None, node: Obj) -> bool:
    """Whether ``node`` satisfies ``selector`` (terms are ORed); ``None`` matches every node."""
    if selector is None:
        return True
    if isinstance(selector, dict):
        selector = decode(selector, NodeSelector)
    return any(term_matches(t, node) for t in selector.node_selector_terms)


def node_matches(node: Obj, node_name: str | None, all_nodes: bool | None,
                 selector: NodeSelector | None) -> bool:
    """Upstream ``NodeMatches``: nodeName, then allNodes, then the selector; none set: no match."""
    if node_name:
        return _name(node) == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node)
    return False
