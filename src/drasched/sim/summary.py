"""What ``drasched simulate`` prints first: where each pod went, as a kubectl-style table.

One row per pod (its workload, node, devices or device-plugin resources, phase, and why it
waits), then one line of totals. The objects themselves are one ``-o yaml`` away.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from drasched.sim.report import (
    PREPARE_FAILED,
    binding_waits,
    kubelet_wait,
    pending_reason,
    pod_devices,
    prepare_errors,
)
from drasched.sim.runner import SimResult

Obj = dict[str, Any]
HEADER = ("WORKLOAD", "POD", "NODE", "DEVICES", "PHASE", "WAITING")
REASON_WIDTH = 100
"""A waiting reason longer than this is cut (the whole message is in the pod's status)."""


def _key(o: Obj) -> str:
    md = o.get("metadata") or {}
    return f"{md['namespace']}/{md.get('name')}" if md.get("namespace") else str(md.get("name"))


def workload_of(pod: Obj) -> str:
    """``Kind/name`` of the pod's controller, else its PodGroup, else ``-``."""
    md = pod.get("metadata") or {}
    for ref in md.get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('name')}"
    group = (md.get("labels") or {}).get("drasched.io/pod-group")
    return f"PodGroup/{group}" if group else "-"


def _phase(pod: Obj, errors: dict[str, str]) -> str:
    """The pod's phase; ``Bound`` for one placed but not started yet, unless its kubelet failed to
    prepare its claims: that one is ``Pending`` (as upstream reports it), with the reason."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase == "Pending" and (pod.get("spec") or {}).get("nodeName") and kubelet_wait(pod, errors) is None:
        return "Bound"
    return str(phase)


def _cut(text: str, width: int, keep: int = 0) -> str:
    """``text`` on one line, at most ``width`` characters: its end cut, or its middle when ``keep``
    (the first ``keep`` characters stay, then ``...`` and the end: a driver's error ends with why)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    if keep:
        return text[:keep] + "..." + text[len(text) - (width - keep - 3):]
    return text[: width - 3] + "..."


def summary_table(result: SimResult) -> str:
    """The table, then the totals line; pods sorted by workload, then name."""
    claims = {_key(o): o for o in result.objects if o.get("kind") == "ResourceClaim"}
    pods = [o for o in result.objects if o.get("kind") == "Pod"]
    waits = binding_waits(result.objects)
    errors = prepare_errors(result.objects)
    rows = []
    for p in sorted(pods, key=lambda p: (workload_of(p), _key(p))):
        node = (p.get("spec") or {}).get("nodeName") or "-"
        if node == "-":
            waiting = _cut(pending_reason(p, waits), REASON_WIDTH)
        else:  # the kubelet's reason, then the end of the driver's error
            why = kubelet_wait(p, errors)
            waiting = "-" if why is None else _cut(why, REASON_WIDTH, keep=len(PREPARE_FAILED) + 2)
        # a pod holds devices once bound, or assumed (its bind waits, e.g. for binding conditions);
        # a pending pod's claim may be allocated for another pod or node: those are not its devices
        holds = node != "-" or _key(p) in waits
        devices = ",".join(pod_devices(p, claims)) if holds else ""
        rows.append((workload_of(p), _key(p), node, devices or "-", _phase(p, errors), waiting))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADER)] if rows else []
    lines = []
    if rows:
        for row in (HEADER, *rows):
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    phases = Counter(_phase(p, errors) for p in pods)
    allocated = sum(1 for c in claims.values() if (c.get("status") or {}).get("allocation"))
    totals = ", ".join(f"{n} {k}" for k, n in sorted(phases.items())) or "none"
    lines.append(f"{len(pods)} pods ({totals}); {allocated} of {len(claims)} ResourceClaims allocated; "
                 f"{result.rounds} rounds, {'quiescent' if result.quiescent else 'stopped at the round limit'}")
    return "\n".join(lines) + "\n"
