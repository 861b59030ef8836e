"""PodDisruptionBudgets as the eviction API will judge them, spent as a cycle chooses victims.

The numbers come from ``drasched.api.disruption`` (the memory store's eviction subresource
uses the same), so a victim the scheduler picks is one the eviction API accepts. Choosing
two victims under one budget spends it twice; a rollback gives it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drasched.api import disruption
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.session import Session

if TYPE_CHECKING:
    from drasched.scheduler.victims import VictimGang

Obj = dict[str, Any]


class Budgets:
    """Every budget of the snapshot, with what each still allows in this session."""

    def __init__(self, session: Session) -> None:
        snap = session.snap
        self.session = session
        self.pdbs = [snap.disruption_budgets[k] for k in sorted(snap.disruption_budgets)]
        by_ns: dict[str, list[Obj]] = {}
        for p in snap.pods.values() if self.pdbs else ():
            by_ns.setdefault(p.namespace, []).append(p.obj)
        self.budgets = [disruption.budget(b, by_ns.get((b.get("metadata") or {}).get("namespace") or "default", []))
                        for b in self.pdbs]

    def covering(self, pod: PodInfo) -> list[int]:
        return [i for i, b in enumerate(self.pdbs) if disruption.selects(b, pod.obj)]

    def permits(self, v: VictimGang) -> bool:
        for i, (healthy, unhealthy) in v.budgets.items():
            b = self.budgets[i]
            if healthy and b.allowed < healthy:
                return False
            if unhealthy and not healthy and not b.permits(False):
                return False
        return True

    def spend(self, v: VictimGang) -> None:
        """Count ``v``'s healthy pods as disrupted (journaled: a rollback gives them back)."""
        spent = tuple((i, h) for i, (h, _) in v.budgets.items() if h)
        if spent:
            self.session.apply(BudgetSpent(self, spent))


@dataclass(frozen=True, slots=True)
class BudgetSpent:
    """Healthy pods of budgets counted as disrupted: (budget index, pods)."""

    budgets: Budgets
    spent: tuple[tuple[int, int], ...]

    def apply(self) -> None:
        for i, h in self.spent:
            self.budgets.budgets[i].healthy -= h

    def revert(self) -> None:
        for i, h in self.spent:
            self.budgets.budgets[i].healthy += h
