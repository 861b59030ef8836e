"""Queues (``scheduling.drasched.io/v1alpha1`` Queue): hierarchy, per-dimension settings, bad input.

Bad input never stops scheduling: a missing parent or a cycle makes the queue top-level,
a negative or malformed quota/limit is ignored, a dimension set twice through aliases keeps
the first setting; each problem becomes a message for the queue's ``Valid`` condition.
A ``default`` queue exists even when no object defines it.

A queue written as a KAI-Scheduler ``scheduling.run.ai/v2`` Queue (translated, :attr:`QueueInfo.kai`)
keeps KAI's rules where they differ: a parent KAI queue takes no workloads (:func:`not_a_leaf`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from drasched.api.duration import parse_go_duration
from drasched.api.foreign import is_kai_queue
from drasched.quantity import QuantityError
from drasched.scheduler.constants import DEFAULT_QUEUE
from drasched.scheduler.resources import exact_units

Obj = dict[str, Any]


UNLIMITED = "unlimited"
"""``quota: unlimited``: the queue deserves all it asks (KAI-Scheduler's quota ``-1``)."""


@dataclass(frozen=True, slots=True)
class DimSettings:
    """quota / limit in vector units (``None``: not set) and the over-quota weight.

    ``unlimited``: the quota is ``unlimited`` (``quota`` is then ``None``): the queue deserves
    all it asks, up to its limit, before anything is split over quota."""

    quota: Fraction | None = None
    limit: Fraction | None = None
    weight: Fraction = Fraction(1)
    unlimited: bool = False

    def deserved(self, cap: Fraction) -> Fraction:
        """What the queue deserves of ``cap`` (its demand within its limit): ``min(quota, cap)``."""
        if self.unlimited:
            return cap
        return min(self.quota or Fraction(0), cap)


@dataclass(slots=True)
class QueueInfo:
    name: str
    parent: str | None
    priority: int
    resources: dict[str, DimSettings]
    obj: Obj | None
    problems: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    min_runtime: float | None = None
    """``spec.minRuntime`` in seconds: its pods that ran less are not reclaim or preemption victims."""
    kai: bool = False
    """Written as a KAI ``scheduling.run.ai/v2`` Queue: KAI's rules hold in it (docs/design.md, "Other
    schedulers' objects")."""

    def settings(self, dim: str) -> DimSettings:
        return self.resources.get(dim) or _NO_SETTINGS


def not_a_leaf(info: QueueInfo) -> str | None:
    """Why a KAI queue with child queues takes no workload, or None: KAI schedules the jobs of
    leaf queues only (pkg/scheduler/actions/utils/jobs_order_by_queues.go, "Skip jobs whose queue
    is not a leaf queue"; docs/queues/README.md, "Only leaf queues ... can be used for scheduling
    jobs"). drasched's own parent queues take pods beside their children's (their own share)."""
    if not info.kai or not info.children:
        return None
    return (f'queue "{info.name}" is not a leaf queue (its child queues: {", ".join(info.children)}): a KAI '
            "queue with child queues takes no workloads, only its leaf queues do; label the pod with one of them")


_NO_SETTINGS = DimSettings()


def _fraction(dim: str, raw: Any, what: str, key: str, problems: list[str]) -> Fraction | None:
    if raw is None:
        return None
    try:
        value = exact_units(dim, raw if isinstance(raw, str | int | float) else str(raw))
    except (QuantityError, TypeError):
        problems.append(f"resources[{key}].{what}: {raw!r} is not a quantity")
        return None
    if value < 0:
        problems.append(f"resources[{key}].{what}: must not be negative, got {raw}; ignored")
        return None
    return value


def _parse_resources(spec: Obj, dim_of: Callable[[str], str], problems: list[str]) -> dict[str, DimSettings]:
    out: dict[str, DimSettings] = {}
    source: dict[str, str] = {}
    raw_resources = spec.get("resources") or {}
    if not isinstance(raw_resources, dict):
        problems.append("resources: must be a map from resource name to settings")
        return out
    for key, raw in raw_resources.items():
        key = str(key)
        dim = dim_of(key)
        if dim in out:
            problems.append(f"resources[{key}] sets dimension {dim} again (already set by {source[dim]}); "
                            f"the first ({source[dim]}) is used")
            continue
        if not isinstance(raw, dict):
            problems.append(f"resources[{key}]: must be a map with quota, limit, overQuotaWeight")
            continue
        unlimited = raw.get("quota") == UNLIMITED
        quota = None if unlimited else _fraction(dim, raw.get("quota"), "quota", key, problems)
        limit = _fraction(dim, raw.get("limit"), "limit", key, problems)
        weight = Fraction(1)
        if "overQuotaWeight" in raw:
            w = raw["overQuotaWeight"]
            if isinstance(w, bool) or not isinstance(w, int | float) or w < 0:
                problems.append(f"resources[{key}].overQuotaWeight: must be a number >= 0, got {w!r}; 1 is used")
            else:
                weight = Fraction(w)
        if quota is not None and limit is not None and quota > limit:
            problems.append(f"resources[{key}]: quota {raw.get('quota')} exceeds limit {raw.get('limit')}")
        out[dim] = DimSettings(quota, limit, weight, unlimited)
        source[dim] = key
    return out


@dataclass
class QueueTree:
    """Every queue by name, with effective parents (after bad input is set aside)."""

    queues: dict[str, QueueInfo]
    roots: list[str]

    def ancestors(self, name: str) -> list[str]:
        """``name`` and its ancestors, leaf first."""
        out: list[str] = []
        cur: str | None = name
        while cur is not None and cur in self.queues:
            out.append(cur)
            cur = self.queues[cur].parent
        return out

    def subtree(self, name: str) -> list[str]:
        """``name`` and every queue below it, parents before children (iterative: a chain of
        thousands of queues must not exhaust Python's stack)."""
        out: list[str] = []
        stack = [name]
        while stack:
            cur = stack.pop()
            out.append(cur)
            stack.extend(reversed(self.queues[cur].children))
        return out

    def __contains__(self, name: object) -> bool:
        return name in self.queues


def build_queue_tree(objs: Iterable[Obj], dim_of: Callable[[str], str]) -> QueueTree:
    queues: dict[str, QueueInfo] = {}
    for obj in objs:
        name = str((obj.get("metadata") or {}).get("name", ""))
        spec = obj.get("spec") or {}
        problems: list[str] = []
        prio = spec.get("priority", 100)
        if isinstance(prio, bool) or not isinstance(prio, int):
            problems.append(f"priority: must be an integer, got {prio!r}; 100 is used")
            prio = 100
        parent = spec.get("parentQueue") or None
        queues[name] = QueueInfo(name, str(parent) if parent else None, prio,
                                 _parse_resources(spec, dim_of, problems), obj, problems,
                                 min_runtime=_min_runtime(spec.get("minRuntime"), problems), kai=is_kai_queue(obj))
    if DEFAULT_QUEUE not in queues:
        queues[DEFAULT_QUEUE] = QueueInfo(DEFAULT_QUEUE, None, 100, {}, None)
    for q in queues.values():
        if q.parent is not None and q.parent not in queues:
            q.problems.append(f"parent queue {q.parent} does not exist; scheduled as a top-level queue")
            q.parent = None
        elif q.parent == q.name:
            q.problems.append("queue is its own parent; scheduled as a top-level queue")
            q.parent = None
    _break_cycles(queues)
    for name in sorted(queues):
        p = queues[name].parent
        if p is not None:
            queues[p].children.append(name)
    _bound_depth(queues)
    roots = sorted(n for n, q in queues.items() if q.parent is None)
    return QueueTree(queues, roots)


MAX_QUEUE_DEPTH = 64
"""Levels of parent queues honoured below a top-level queue; a deeper queue is cut off and
scheduled as a top-level queue (with a condition), so that no tree walk runs away."""


def _bound_depth(queues: dict[str, QueueInfo]) -> None:
    """Cut every queue deeper than MAX_QUEUE_DEPTH off its parent (breadth first, in name order)."""
    frontier = [(n, 0) for n in sorted(queues) if queues[n].parent is None]
    while frontier:
        name, depth = frontier.pop()
        q = queues[name]
        for child in list(q.children):
            if depth + 1 > MAX_QUEUE_DEPTH:
                q.children.remove(child)
                queues[child].parent = None
                queues[child].problems.append(f"more than {MAX_QUEUE_DEPTH} levels of parent queues above it; "
                                              "scheduled as a top-level queue")
                frontier.append((child, 0))
            else:
                frontier.append((child, depth + 1))


def _min_runtime(raw: Any, problems: list[str]) -> float | None:
    if raw is None:
        return None
    try:
        seconds = parse_go_duration(str(raw)).total_seconds()
    except ValueError as exc:
        problems.append(f"minRuntime: {raw!r} is not a duration (e.g. 10m, 1h30m): {exc}; ignored")
        return None
    if seconds < 0:
        problems.append(f"minRuntime: must not be negative, got {raw}; ignored")
        return None
    return seconds


def _break_cycles(queues: dict[str, QueueInfo]) -> None:
    """Every queue on a parent cycle becomes top-level, with a condition naming the cycle."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(queues):
        path: list[str] = []
        cur: str | None = start
        while cur is not None and state.get(cur, 0) == 0:
            state[cur] = 1
            path.append(cur)
            cur = queues[cur].parent
        if cur is not None and state.get(cur) == 1:
            cycle = path[path.index(cur):]
            text = " -> ".join([*cycle, cycle[0]])
            for n in cycle:
                queues[n].problems.append(f"parent queues form a cycle ({text}); scheduled as a top-level queue")
                queues[n].parent = None
        for n in path:
            state[n] = 2
