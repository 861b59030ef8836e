"""``what-if``: simulate a cluster and a changed copy of it, and say what changed.

A change adds objects (replacing any of the same kind, namespace and name), removes
objects, or sets a queue's quota or limit. With a default duration, pods that do not say
how long they run (``drasched.io/sim-duration``) finish after it, so work left pending
behind them gets placed and the time until it is placed can be compared.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from drasched.node.sim_kubelet import SIM_DURATION_ANNOTATION
from drasched.plan.outcome import Outcome, object_key, outcome_of
from drasched.sim.runner import simulate

Obj = dict[str, Any]

_SET = re.compile(r"^queue/(?P<queue>[^.=]+)\.spec\.resources\.(?P<resource>.+)\.(?P<field>[A-Za-z]+)=(?P<value>.*)$")


class ChangeError(ValueError):
    """A change that does not apply to the base."""


@dataclass
class Change:
    adds: list[Obj] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    """``KIND/NAME`` or ``KIND/NAMESPACE/NAME``."""
    sets: list[str] = field(default_factory=list)
    """``queue/NAME.spec.resources.RESOURCE.FIELD=VALUE``."""


def _identity(obj: Obj) -> tuple[str, str]:
    return str(obj.get("kind")), object_key(obj)


def apply_change(base: Sequence[Obj], change: Change) -> list[Obj]:
    """A copy of ``base`` with ``change`` applied; every remove and set must name an object."""
    added = {_identity(o) for o in change.adds}
    objects = [copy.deepcopy(o) for o in base if _identity(o) not in added]
    objects += [copy.deepcopy(o) for o in change.adds]
    for ref in change.removes:
        kind, _, key = ref.partition("/")
        kept = [o for o in objects if _identity(o) != (kind, key)]
        if len(kept) == len(objects):
            raise ChangeError(f"--remove {ref}: no {kind} {key} in the input")
        objects = kept
    for assignment in change.sets:
        _set(objects, assignment)
    return objects


def _set(objects: list[Obj], assignment: str) -> None:
    m = _SET.match(assignment)
    if m is None:
        raise ChangeError(f"--set {assignment}: expected queue/NAME.spec.resources.RESOURCE.FIELD=VALUE")
    queue = next((o for o in objects if _identity(o) == ("Queue", m["queue"])), None)
    if queue is None:
        raise ChangeError(f"--set {assignment}: no Queue {m['queue']} in the input")
    resources = queue.setdefault("spec", {}).setdefault("resources", {})
    resources.setdefault(m["resource"], {})[m["field"]] = m["value"]


def with_default_duration(objects: Sequence[Obj], duration: str | None) -> list[Obj]:
    """Pods without a sim-duration annotation get ``duration`` (none given: unchanged)."""
    if not duration:
        return list(objects)
    out = []
    for o in objects:
        if o.get("kind") == "Pod":
            o = copy.deepcopy(o)
            annotations = o.setdefault("metadata", {}).setdefault("annotations", {}) or {}
            annotations.setdefault(SIM_DURATION_ANNOTATION, duration)
            o["metadata"]["annotations"] = annotations
        out.append(o)
    return out


@dataclass
class Comparison:
    base: Outcome
    changed: Outcome

    def newly_placed(self) -> list[str]:
        return sorted(k for k, node in self.changed.placements.items()
                      if node is not None and self.base.placements.get(k) is None)

    def newly_pending(self) -> list[str]:
        return sorted(k for k, node in self.changed.placements.items()
                      if node is None and self.base.placements.get(k) is not None)

    def moved(self) -> list[tuple[str, str, str]]:
        return sorted((k, str(self.base.placements[k]), str(node)) for k, node in self.changed.placements.items()
                      if node is not None and self.base.placements.get(k) not in (None, node))

    def queue_changes(self) -> list[tuple[str, str, tuple[str, str], tuple[str, str]]]:
        """(queue, resource, (allocated, fair share) before, after) where either differs."""
        out = []
        for q in sorted(set(self.base.queues) | set(self.changed.queues)):
            before, after = self.base.queues.get(q, {}), self.changed.queues.get(q, {})
            for r in sorted(set(before) | set(after)):
                b, a = before.get(r, ("0", "0")), after.get(r, ("0", "0"))
                if a != b:
                    out.append((q, r, b, a))
        return out

    def lines(self) -> list[str]:
        b, c = self.base, self.changed
        out = [f"pods placed: {len(b.placements) - len(b.pending)} -> {len(c.placements) - len(c.pending)}, "
               f"pending: {len(b.pending)} -> {len(c.pending)}"]
        out += [f"  placed now: {k} on {c.placements[k]}" for k in self.newly_placed()]
        out += [f"  pending now: {k} (was on {b.placements[k]})" for k in self.newly_pending()]
        out += [f"  moved: {k} {old} -> {new}" for k, old, new in self.moved()]
        out.append(f"GPU utilization: {b.devices_used}/{b.devices_total} ({b.utilization:.0%}) -> "
                   f"{c.devices_used}/{c.devices_total} ({c.utilization:.0%})")
        changes = self.queue_changes()
        out.append("queues: no change" if not changes else "queues (allocated, fair share):")
        out += [f"  {q} {r}: allocated {ba} -> {aa}, fair share {bs} -> {as_}"
                for q, r, (ba, bs), (aa, as_) in changes]
        out.append(f"time until pending work is placed: {_time(b)} -> {_time(c)}")
        return out


def _time(o: Outcome) -> str:
    if o.pending:
        return f"never ({len(o.pending)} pending)"
    return "0s" if o.last_placement_s is None else f"{o.last_placement_s:g}s"


def what_if(base: Sequence[Obj], change: Change, *, default_duration: str | None = None,
            max_rounds: int = 100_000) -> Comparison:
    """Simulate ``base`` and ``base`` changed by ``change``; compare their outcomes."""
    changed = apply_change(base, change)
    before = simulate(with_default_duration(base, default_duration), max_rounds=max_rounds)
    after = simulate(with_default_duration(changed, default_duration), max_rounds=max_rounds)
    return Comparison(outcome_of(before), outcome_of(after))
