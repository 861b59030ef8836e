"""DeviceTaintRules applied to devices, as upstream's allocator and eviction controller see them.

Upstream (``staging/src/k8s.io/dynamic-resource-allocation/resourceslice/tracker``) patches
the taint of every DeviceTaintRule into the devices it selects before the allocator sees
the slices, so a rule's taint acts exactly as if the driver had written it in the slice.
The selector matches on driver, pool and device name (``ruleMatchesDevice`` in
``pkg/controller/devicetainteviction``); every field that is set must be equal, an empty
selector matches every device and a rule without a selector matches none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from drasched.api.meta import parse_time
from drasched.api.resource import DeviceTaint, DeviceTaintRule, DeviceToleration, decode

Obj = dict[str, Any]

NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"


@dataclass(frozen=True)
class RuleTaint:
    """One rule's taint and the devices it selects (None: the rule has no selector)."""

    rule_name: str
    rule_uid: str
    driver: str | None
    pool: str | None
    device: str | None
    taint: DeviceTaint
    selects_nothing: bool = False

    def matches(self, driver: str, pool: str, device: str) -> bool:
        """Upstream ``ruleMatchesDevice``."""
        if self.selects_nothing:
            return False
        return ((self.driver is None or self.driver == driver)
                and (self.pool is None or self.pool == pool)
                and (self.device is None or self.device == device))


def parse_rules(rules: Iterable[Obj]) -> list[RuleTaint]:
    """The taints of ``rules`` (wire dicts), by rule name; rules that do not decode are skipped
    (the store validated them on write, so only a hand-edited snapshot can have one)."""
    out: list[RuleTaint] = []
    for raw in rules:
        try:
            rule = decode(raw, DeviceTaintRule)
        except msgspec.ValidationError:
            continue
        sel = rule.spec.device_selector
        out.append(RuleTaint(
            rule_name=rule.metadata.name or "", rule_uid=rule.metadata.uid or "",
            driver=sel.driver if sel else None, pool=sel.pool if sel else None,
            device=sel.device if sel else None, taint=rule.spec.taint, selects_nothing=sel is None))
    return sorted(out, key=lambda r: r.rule_name)


def taints_for(rules: list[RuleTaint], driver: str, pool: str, device: str) -> list[DeviceTaint]:
    """The rule taints ``(driver, pool, device)`` carries, in rule name order."""
    return [r.taint for r in rules if r.matches(driver, pool, device)]


SliceTaints = dict[tuple[str, str, str], list[DeviceTaint]]
"""The taints written in slices, by ``(driver, pool, device)``."""


@dataclass(frozen=True)
class Eviction:
    """When a claim's pods must go, and the taints that say so (``evictionAndReason``)."""

    when: datetime
    taints: tuple[str, ...]
    """Each evicting taint as ``key=value:effect``, with the rule (``rule NAME``) or device
    (``driver/pool/device``) it comes from."""
    rule_uids: frozenset[str]


def _tolerates(tol: DeviceToleration, taint: DeviceTaint) -> bool:
    """Upstream ``resourceclaim.ToleratesTaint``."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator == "Exists":
        return True
    return tol.operator in ("", "Equal") and tol.value == taint.value


def _taint_time(taint: DeviceTaint) -> datetime:
    """``timeAdded`` (the API server always sets it; a hand-written snapshot may not: at once)."""
    return parse_time(taint.time_added) if taint.time_added else datetime.min.replace(tzinfo=UTC)


def claim_eviction(allocation: Obj, slice_taints: SliceTaints, rules: list[RuleTaint]) -> Eviction | None:
    """Upstream ``claimEvictionTime``: the earliest time a NoExecute taint on an allocated device,
    not tolerated for good, evicts the claim's pods.

    Only tolerations of the allocation result with effect NoExecute count (as upstream): one
    without ``tolerationSeconds`` ignores the taint, else the smallest ``tolerationSeconds``
    (negative counts as 0) is added to the taint's ``timeAdded``.
    """
    when: datetime | None = None
    reasons: set[str] = set()
    rule_uids: set[str] = set()
    for result in (allocation.get("devices") or {}).get("results") or []:
        driver, pool, device = str(result.get("driver")), str(result.get("pool")), str(result.get("device"))
        tolerations = [decode(t, DeviceToleration) for t in result.get("tolerations") or []]
        evicting = [(t, f"{driver}/{pool}/{device}", "") for t in slice_taints.get((driver, pool, device), ())
                    if t.effect == NO_EXECUTE]
        evicting += [(r.taint, f"rule {r.rule_name}", r.rule_uid) for r in rules
                     if r.taint.effect == NO_EXECUTE and r.matches(driver, pool, device)]
        for taint, source, rule_uid in evicting:
            seconds: int | None = None
            forever = False
            for tol in tolerations:
                if tol.effect == NO_EXECUTE and _tolerates(tol, taint):
                    if tol.toleration_seconds is None:
                        forever = True
                        break
                    s = max(0, tol.toleration_seconds)
                    seconds = s if seconds is None else min(seconds, s)
            if forever:
                continue
            at = _taint_time(taint) + timedelta(seconds=seconds or 0)
            when = at if when is None or at < when else when
            reasons.add(f"{taint.key}={taint.value}:{taint.effect} ({source})")
            if rule_uid:
                rule_uids.add(rule_uid)
    if when is None:
        return None
    return Eviction(when, tuple(sorted(reasons)), frozenset(rule_uids))


def slice_taints(slices: Iterable[Obj]) -> SliceTaints:
    """Taints of every device in the newest generation of its pool (upstream's eviction
    controller reads devices from the pool's highest generation). Only taints are decoded:
    most slices have none, and this runs whenever a slice changes."""
    newest: dict[tuple[str, str], int] = {}
    tainted: list[tuple[tuple[str, str], int, str, list[Any]]] = []
    for raw in slices:
        spec = raw.get("spec") or {}
        pool = spec.get("pool") or {}
        pid, generation = (str(spec.get("driver", "")), str(pool.get("name", ""))), int(pool.get("generation") or 0)
        newest[pid] = max(newest.get(pid, generation), generation)
        for dev in spec.get("devices") or []:
            if isinstance(dev, dict) and dev.get("taints"):
                tainted.append((pid, generation, str(dev.get("name", "")), dev["taints"]))
    out: SliceTaints = {}
    for pid, generation, name, taints in tainted:
        if generation != newest[pid]:
            continue
        try:
            out.setdefault((*pid, name), []).extend(decode(t, DeviceTaint) for t in taints)
        except msgspec.ValidationError:
            continue
    return out
