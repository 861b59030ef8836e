"""Structured reasons why the allocator could not place a pod's claims on a node.

Upstream's allocator only answers "no" (or an error); users then read scheduler logs at
high verbosity. drasched keeps counts per request so that the ``PodScheduled=False``
message says what did not fit: ``0/3 nodes are available: ... not enough gpu.example.com
devices: 4 failed class selector, 2 in use``. Reasons from many nodes merge by summing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

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
INSUFFICIENT_CAPACITY = "too small"
IN_USE = "in use"
COUNTERS_EXHAUSTED = "counters exhausted"
CAPACITY_EXHAUSTED = "capacity exhausted"
COUNT_ORDER = (
    FAILED_CLASS_SELECTOR,
    FAILED_REQUEST_SELECTOR,
    UNSUPPORTED,
    TAINTED,
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
    """

    kind: str
    claim: str = ""
    request: str = ""
    class_name: str = ""
    needed: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    details: tuple[str, ...] = ()
    free: int = 0

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
        return f"claim {claim} is allocated for other nodes"
    if kind == CLAIM_TAINTED:
        return f"claim {claim} has devices with untolerated taints{extra}"
    return f"{kind}{extra}"


def summarize(reasons: Iterable[Reason]) -> str:
    """One readable phrase for many reasons: same kind and class merge, counts add up.

    Phrases are joined by ``"; "`` in first-seen order, so the scheduler can prefix them
    with ``0/N nodes are available:``.
    """
    merged: dict[tuple[str, str, str], list[Any]] = {}
    for r in reasons:
        key = (r.kind, r.class_name, "" if r.kind == INSUFFICIENT else r.claim)
        if key not in merged:
            merged[key] = [{}, [], r.claim, r.request, 0, 0]
        m = merged[key]
        counts, details = m[0], m[1]
        for k, n in r.counts.items():
            counts[k] = counts.get(k, 0) + n
        for d in r.details:
            if d not in details:
                details.append(d)
        m[4] = max(m[4], r.needed)
        m[5] += r.free
    phrases: list[str] = []
    for (kind, cls, _), (counts, details, claim, request, needed, free) in merged.items():
        p = _phrase(kind, cls, claim, request, counts, tuple(details), needed, free)
        if p not in phrases:
            phrases.append(p)
    return "; ".join(phrases)


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
