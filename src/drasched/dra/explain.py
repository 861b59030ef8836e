"""Structured reasons why the allocator could not place a pod's claims on a node.

Upstream's allocator only answers "no" (or an error); users then read scheduler logs at
high verbosity. drasched keeps counts per request so that the ``PodScheduled=False``
message says what did not fit: ``0/3 nodes are available: ... not enough gpu.example.com
devices: 4 failed class selector, 2 in use, 0 free, need 1``.

Every number is true of each node it is counted for. On one node, the requests of one
class that failed look at the same devices (the subrequests of a ``firstAvailable`` request,
or several requests of one class), so one of them speaks for all: the one closest to fitting,
and each device is counted once. Across nodes, each phrase gets the number of nodes it holds
for (as upstream counts nodes per reason), and device counts that differ between those nodes
are given as the most on any one of them (``on each node at most 4 free, need 5``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

__all__ = [
    "ADMIN_ACCESS_DENIED",
    "CLAIM_ELSEWHERE",
    "CLAIM_TAINTED",
    "CLASS_MISSING",
    "COMBINATION",
    "CONSTRAINT",
    "COUNT_ORDER",
    "INSUFFICIENT",
    "POOL_INCOMPLETE",
    "POOL_INVALID",
    "TIMED_OUT",
    "TOO_MANY_RESULTS",
    "Reason",
    "summarize",
    "summarize_nodes",
]

CLASS_MISSING = "class-missing"
ADMIN_ACCESS_DENIED = "admin-access-denied"
INSUFFICIENT = "insufficient"
POOL_INCOMPLETE = "pool-incomplete"
POOL_INVALID = "pool-invalid"
CONSTRAINT = "constraint"
COMBINATION = "combination"
TOO_MANY_RESULTS = "too-many-results"
TIMED_OUT = "timed-out"
CLAIM_ELSEWHERE = "claim-elsewhere"
CLAIM_TAINTED = "claim-tainted"

# Per-device outcomes, in the order a device is checked (and the order they are printed).
FAILED_CLASS_SELECTOR = "failed class selector"
FAILED_REQUEST_SELECTOR = "failed request selector"
UNSUPPORTED = "need a disabled feature"
TAINTED = "tainted"
LACKS_CAPACITY = "lack a requested capacity"
POLICY_REFUSED = "refused by requestPolicy"
"""KEP-5075: the capacity's ``requestPolicy`` (``validRange``, ``validValues``) refuses the amount
asked for, whatever room the device has; the details name the capacity and the limit."""
INSUFFICIENT_CAPACITY = "too small"
IN_USE = "in use"
COUNTERS_EXHAUSTED = "counters exhausted"
CAPACITY_EXHAUSTED = "capacity exhausted"
COUNT_ORDER = (
    FAILED_CLASS_SELECTOR,
    FAILED_REQUEST_SELECTOR,
    UNSUPPORTED,
    TAINTED,
    LACKS_CAPACITY,
    POLICY_REFUSED,
    INSUFFICIENT_CAPACITY,
    IN_USE,
    COUNTERS_EXHAUSTED,
    CAPACITY_EXHAUSTED,
)


@dataclass(frozen=True)
class Reason:
    """One reason a claim's request could not be satisfied on one node.

    ``counts`` maps a device outcome (see ``COUNT_ORDER``) to how many devices ended there;
    ``details`` names the things involved: pools, taints, counter sets, attributes.
    ``nodes``: how many of the nodes it is reported with it stands for, each with these same
    numbers (0: all of them); a reason computed for many nodes at once groups them by value.
    """

    kind: str
    claim: str = ""
    request: str = ""
    class_name: str = ""
    needed: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    details: tuple[str, ...] = ()
    free: int = 0
    nodes: int = 0

    @property
    def message(self) -> str:
        return _phrase(self.kind, self.class_name, self.claim, self.request, self.counts, self.details,
                       self.needed, self.free)


def _counts_text(counts: dict[str, int]) -> str:
    parts = [f"{counts[k]} {k}" for k in COUNT_ORDER if counts.get(k)]
    parts += [f"{n} {k}" for k, n in sorted(counts.items()) if k not in COUNT_ORDER and n]
    return ", ".join(parts)


def _phrase(kind: str, cls: str, claim: str, request: str, counts: dict[str, int],
            details: tuple[str, ...], needed: int, free: int = 0) -> str:
    extra = f" ({', '.join(details)})" if details else ""
    if kind == INSUFFICIENT:
        text = _counts_text(counts)
        tail = f"{free} free, need {needed}"
        return f"not enough {cls} devices: {text + ', ' if text else ''}{tail}{extra}"
    if kind == CLASS_MISSING:
        return f"device class {cls} does not exist"
    if kind == ADMIN_ACCESS_DENIED:
        return (f"claim {claim} asks for admin access, which needs the namespace label "
                f"resource.kubernetes.io/admin-access=true")
    if kind == POOL_INCOMPLETE:
        pools = ", resource pool ".join(details)
        return f"a request for all devices needs complete, valid pools: resource pool {pools}"
    if kind == POOL_INVALID:
        return f"resource pool invalid: {', '.join(details)}"
    if kind == CONSTRAINT:
        return f"constraint unmet: {', '.join(details)}"
    if kind == COMBINATION:
        return f"not enough devices for all requests together ({', '.join(details) or claim})"
    if kind == TOO_MANY_RESULTS:
        return f"claim {claim} needs more than 32 devices"
    if kind == TIMED_OUT:
        return f"allocation search gave up{extra}"
    if kind == CLAIM_ELSEWHERE:
        # upstream DynamicResources Filter: "resourceclaim not available on the node"; the claim named after it
        return f"resourceclaim not available on the node (claim {claim})"
    if kind == CLAIM_TAINTED:
        return f"claim {claim} has devices with untolerated taints{extra}"
    return f"{kind}{extra}"


# Kinds whose phrase names the claim: reasons of different claims read differently.
_NAMES_CLAIM = frozenset({ADMIN_ACCESS_DENIED, COMBINATION, TOO_MANY_RESULTS, CLAIM_ELSEWHERE, CLAIM_TAINTED})


def _key(r: Reason) -> tuple[str, str, str]:
    return r.kind, r.class_name, r.claim if r.kind in _NAMES_CLAIM else ""


def _one_node(reasons: Iterable[Reason]) -> list[Reason]:
    """The reasons of one node, one per kind and class (and claim, where the phrase names it).

    Failed requests of one class were counted over the same devices: the one closest to
    fitting (most free for what it needs; the first on a tie) speaks for them, so a device is
    counted once, not once per request or ``firstAvailable`` subrequest. Other kinds merge
    their details.
    """
    merged: dict[tuple[str, str, str], Reason] = {}
    for r in reasons:
        k = _key(r)
        seen = merged.get(k)
        if seen is None:
            merged[k] = r
        elif r.kind == INSUFFICIENT:
            if r.free - r.needed > seen.free - seen.needed:
                merged[k] = r
        else:
            details = seen.details + tuple(d for d in r.details if d not in seen.details)
            if details != seen.details:
                merged[k] = replace(seen, details=details)
    return list(merged.values())


def summarize(reasons: Iterable[Reason]) -> str:
    """One readable phrase for the reasons of one node, joined by ``"; "`` in first-seen order.

    Requests of one class merge as :func:`_one_node` says; the numbers are that node's.
    """
    phrases: list[str] = []
    for r in _one_node(reasons):
        p = r.message
        if p not in phrases:
            phrases.append(p)
    return "; ".join(phrases)


def summarize_nodes(groups: Iterable[tuple[int, Sequence[Reason]]]) -> list[tuple[int, str]]:
    """``(nodes, phrase)`` for the reasons of many nodes, in first-seen order.

    Each group is ``(n, reasons)``: ``n`` nodes, each failing for all of ``reasons`` (a reason
    with ``nodes`` set stands for that many of them instead). A phrase counts the nodes it
    holds for; its numbers hold on each of them: a device count that differs between them
    is the most on any one (``up to``, ``at most``).
    """
    merged: dict[tuple[str, str, str], list[tuple[int, Reason]]] = {}
    for n, reasons in groups:
        for r in _one_node(r for r in reasons if not r.nodes):
            merged.setdefault(_key(r), []).append((n, r))
        for r in reasons:
            if r.nodes:
                merged.setdefault(_key(r), []).append((r.nodes, r))
    out: dict[str, int] = {}
    for entries in merged.values():
        nodes = sum(n for n, _ in entries)
        if nodes <= 0:
            continue
        if len(entries) == 1 and nodes == 1:
            p = entries[0][1].message
        elif entries[0][1].kind == INSUFFICIENT:
            p = _insufficient_on_each(entries)
        else:
            first = entries[0][1]
            details: list[str] = []
            for _, r in entries:
                details += [d for d in r.details if d not in details]
            p = _phrase(first.kind, first.class_name, first.claim, first.request, first.counts,
                        tuple(details), first.needed, first.free)
        out[p] = out.get(p, 0) + nodes
    return [(n, p) for p, n in out.items()]


def _insufficient_on_each(entries: list[tuple[int, Reason]]) -> str:
    """``not enough X devices: on each node ...`` for several nodes: a number that is the same
    on all of them is given as it is, one that differs as the most on any of them."""
    reasons = [r for _, r in entries]

    def value(text: str, values: list[int], differs: str) -> str:
        hi = max(values)
        return f"{hi} {text}" if min(values) == hi else f"{differs} {hi} {text}"

    keys = [k for k in COUNT_ORDER if any(r.counts.get(k) for r in reasons)]
    keys += sorted({k for r in reasons for k, n in r.counts.items() if n and k not in COUNT_ORDER})
    parts = [value(k, [r.counts.get(k, 0) for r in reasons], "up to") for k in keys]
    parts.append(value("free", [r.free for r in reasons], "at most"))
    lo, hi = min(r.needed for r in reasons), max(r.needed for r in reasons)
    parts.append(f"need {hi}" if lo == hi else f"need {lo} to {hi}")
    details: list[str] = []
    for r in reasons:
        details += [d for d in r.details if d not in details]
    extra = f" ({', '.join(details)})" if details else ""
    return f"not enough {reasons[0].class_name} devices: on each node {', '.join(parts)}{extra}"


def rename_claims(reasons: list[Reason], old: list[str], new: list[str]) -> list[Reason]:
    """Memoised reasons with the claim names of the current call: reasons found for one pod's
    claims (``old``) reused for another pod of the same shape (``new``)."""
    if old == new:
        return list(reasons)
    names = dict(zip(old, new))
    out = []
    for r in reasons:
        claim = names.get(r.claim)
        if claim is None and r.kind == COMBINATION:
            claim = ", ".join(names.get(k, k) for k in r.claim.split(", "))
        if claim is not None:
            r = copy.copy(r)
            object.__setattr__(r, "claim", claim)  # a fresh copy of a frozen value object
        out.append(r)
    return out
