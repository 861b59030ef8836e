"""Label and field selectors with the API server's syntax and matching rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from drasched.api.errors import BadRequest

_REQ = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9_./-]+)\s*"
    r"(?:(?P<op>==|=|!=|\s+in\s+|\s+notin\s+)\s*(?P<val>\([^)]*\)|[A-Za-z0-9_.-]*))?\s*$"
)


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists, !exists, =, !=, in, notin
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        # != and notin match objects without the key, as upstream does
        return not present or value not in self.values


def _split_top_level(selector: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


@lru_cache(maxsize=1024)
def parse_label_selector(selector: str) -> tuple[Requirement, ...]:
    """Parse ``a=b,c!=d,e in (x,y),!f,g`` into requirements; raises BadRequest on bad syntax."""
    reqs = []
    for part in _split_top_level(selector or ""):
        m = _REQ.match(part)
        if not m:
            raise BadRequest(f"unable to parse requirement: {part.strip()!r} in label selector {selector!r}")
        key, op, val = m.group("key"), (m.group("op") or "").strip(), m.group("val")
        if m.group("neg"):
            if op:
                raise BadRequest(f"unable to parse requirement: {part.strip()!r}")
            reqs.append(Requirement(key, "!exists"))
        elif not op:
            reqs.append(Requirement(key, "exists"))
        elif op in ("in", "notin"):
            if not val or not val.startswith("("):
                raise BadRequest(f"set-based requirement needs a parenthesised list: {part.strip()!r}")
            values = tuple(v.strip() for v in val[1:-1].split(",") if v.strip())
            reqs.append(Requirement(key, op, values))
        else:
            reqs.append(Requirement(key, "=" if op in ("=", "==") else "!=", (val or "",)))
    return tuple(reqs)


def label_selector_matches(selector: str | None, labels: dict[str, str] | None) -> bool:
    if not selector:
        return True
    labels = labels or {}
    return all(r.matches(labels) for r in parse_label_selector(selector))


def match_label_selector_object(sel: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """Match a structured ``LabelSelector`` (matchLabels + matchExpressions)."""
    if sel is None:
        return True
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in sel.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


_FIELD_GETTERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "metadata.name": lambda o: o.get("metadata", {}).get("name", ""),
    "metadata.namespace": lambda o: o.get("metadata", {}).get("namespace", ""),
    "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName", ""),
    "spec.schedulerName": lambda o: (o.get("spec") or {}).get("schedulerName", ""),
    "status.phase": lambda o: (o.get("status") or {}).get("phase", ""),
    "spec.driver": lambda o: (o.get("spec") or {}).get("driver", ""),
    "spec.pool.name": lambda o: ((o.get("spec") or {}).get("pool") or {}).get("name", ""),
}


def field_selector_matches(selector: str | None, obj: dict[str, Any]) -> bool:
    """Match the field selectors the API server supports for our kinds (``=``, ``==``, ``!=``)."""
    if not selector:
        return True
    for part in selector.split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            key, value, negate = *part.split("!=", 1), True
        elif "==" in part:
            key, value, negate = *part.split("==", 1), False
        elif "=" in part:
            key, value, negate = *part.split("=", 1), False
        else:
            raise BadRequest(f"invalid field selector: {part!r}")
        getter = _FIELD_GETTERS.get(key.strip())
        if getter is None:
            raise BadRequest(f'field label not supported: {key.strip()}')
        if (getter(obj) == value.strip()) == negate:
            return False
    return True
