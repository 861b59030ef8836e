"""The device taint eviction controller: pods on devices tainted NoExecute are deleted.

A port of upstream's ``pkg/controller/devicetainteviction`` (kube-controller-manager's
``device-taint-eviction-controller``). A bound pod whose allocated claim has a device
carrying a NoExecute taint (written in its ResourceSlice or added by a DeviceTaintRule)
that the allocation's tolerations do not tolerate for good is deleted at the taint's
``timeAdded`` plus the smallest matching ``tolerationSeconds`` (at once without one). As
upstream it first emits a Normal ``DeviceTaintManagerEviction`` Event ("Marking for
deletion") and adds the pod condition ``DisruptionTarget`` (reason
``DeletionByDeviceTaintManager``), then deletes the pod with its uid as precondition. The
claim controller then releases and deallocates the claim as for any finished pod. A pod
waiting for its eviction that no longer needs one (the taint went, a toleration came) gets
the same Event reason with "Cancelling deletion".

Each DeviceTaintRule gets an ``EvictionInProgress`` status condition (``maybeUpdateRuleStatus``):
True with reason ``PodsPendingEviction`` while pods wait for eviction, else
``Completed``/``NotStarted`` for NoExecute, ``NoEffect`` (what NoExecute would do) for
``None``, ``OtherEffect`` for NoSchedule; rewritten at most every 10 s for one generation.

Time is the context's clock: ``drasched simulate`` wakes at the next eviction time. A claim
reserved for a PodGroup (KEP-5729) evicts every pod of the group that uses it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.kinds import ResourceType
from drasched.api.meta import format_time, get_condition, parse_time
from drasched.api.resource import DeviceTaint
from drasched.control import ControllerContext
from drasched.controllers.claimutil import is_group_ref
from drasched.dra.claimrules import ClaimNotCreated, is_reserved_for, pod_claim_name, pod_group_name, reserved_for
from drasched.dra.taintrules import (
    NO_EXECUTE,
    Eviction,
    RuleTaint,
    SliceTaints,
    claim_eviction,
    parse_rules,
    slice_taints,
)
from drasched.store.informer import Informer

Obj = dict[str, Any]

NAME = "device-taint-eviction-controller"
EVICTION_CONDITION = "EvictionInProgress"
RULE_STATUS_PERIOD = timedelta(seconds=10)
"""Upstream ``ruleStatusPeriod``: the shortest time between status updates of one rule generation."""


@dataclass(frozen=True)
class PendingPod:
    pod: Obj
    eviction: Eviction


def pod_eviction(pod: Obj, claims: dict[tuple[str, str], Obj], taints: SliceTaints,
                 rules: list[RuleTaint]) -> Eviction | None:
    """Upstream ``podEvictionTime``: the earliest eviction among the pod's claims that are
    allocated and reserved for this very pod; None for a pod not bound yet."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return None
    md = pod.get("metadata") or {}
    namespace, uid = str(md.get("namespace", "")), md.get("uid")
    best: Eviction | None = None
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        try:
            name, _ = pod_claim_name(pod, entry)
        except ClaimNotCreated:
            continue
        claim = claims.get((namespace, name)) if name else None
        allocation = ((claim or {}).get("status") or {}).get("allocation")
        if claim is None or not allocation or not _reserved_for_pod(claim, uid, pod_group_name(pod)):
            continue
        ev = claim_eviction(allocation, taints, rules)
        if ev is None:
            continue
        # the earliest time wins; the reasons of every claim are kept (upstream merges them)
        best = ev if best is None else Eviction(min(best.when, ev.when), tuple(sorted({*best.taints, *ev.taints})),
                                                best.rule_uids | ev.rule_uids)
    return best


def _reserved_for_pod(claim: Obj, uid: str | None, group: str | None) -> bool:
    """Upstream ``IsReservedForPod`` with workload claims: reserved for this pod, or for the
    PodGroup the pod joins (KEP-5729: a pod does not know its group's uid, the name counts),
    drasched's or upstream's (``scheduling.k8s.io`` ``podgroups``, as ``drasched serve``
    reserves an upstream group's claims)."""
    return is_reserved_for(claim, uid) or (group is not None and any(
        (is_group_ref(r) or (r.get("apiGroup"), r.get("resource")) == ("scheduling.k8s.io", "podgroups"))
        and r.get("name") == group for r in reserved_for(claim)))


def rule_condition(rule: Obj, pending: list[PendingPod], evicted: int, would_evict: list[PendingPod],
                   devices: tuple[int, int]) -> Obj:
    """The ``EvictionInProgress`` condition upstream's ``maybeUpdateRuleStatus`` computes
    (without ``lastTransitionTime``)."""
    md, spec = rule.get("metadata") or {}, rule.get("spec") or {}
    effect = str((spec.get("taint") or {}).get("effect", ""))
    cond: Obj = {"type": EVICTION_CONDITION, "status": "False", "reason": f"Effect{effect}", "message": "",
                 "observedGeneration": int(md.get("generation") or 0)}
    if effect == NO_EXECUTE:
        namespaces = len({(p.pod.get("metadata") or {}).get("namespace") for p in pending})
        if pending:
            cond["status"] = "True"
            cond["reason"] = "PodsPendingEviction"
            cond["message"] = ("1 pod needs" if len(pending) == 1 else f"{len(pending)} pods need") + \
                " to be evicted in " + ("1 namespace." if namespaces == 1 else f"{namespaces} different namespaces.")
        else:
            cond["reason"] = "Completed" if evicted else "NotStarted"
    elif effect == "None":
        namespaces = len({(p.pod.get("metadata") or {}).get("namespace") for p in would_evict})
        published, allocated = devices
        cond["reason"] = "NoEffect"
        cond["message"] = (
            ("1 published device selected. " if published == 1 else f"{published} published devices selected. ")
            + ("1 allocated device selected. " if allocated == 1 else f"{allocated} allocated devices selected. ")
            + ("1 pod" if len(would_evict) == 1 else f"{len(would_evict)} pods") + " would be evicted in "
            + ("1 namespace " if namespaces == 1 else f"{namespaces} different namespaces ")
            + "if the effect was NoExecute. This information will not be updated again. "
              "Recreate the DeviceTaintRule to trigger an update.")
    else:
        cond["reason"] = "OtherEffect"
        cond["message"] = "Eviction only happens for the NoExecute effect."
    if evicted:
        cond["message"] += (" " if cond["message"] else "") + \
            ("1 pod " if evicted == 1 else f"{evicted} pods ") + "evicted since starting the controller."
    return cond


class DeviceTaintEvictionController:
    """``device-taint-eviction-controller`` in the embedded control plane (and in serve with
    ``--enable-claim-controller``, as kube-controller-manager runs upstream's)."""

    name = NAME

    def __init__(self, rules_kind: ResourceType | None = kinds.DEVICE_TAINT_RULE) -> None:
        self.rules_kind = rules_kind
        """Where DeviceTaintRules are read (serve: the version the API server serves, or None)."""
        self._reads_pods = False
        """Whether it follows pods and claims: only while some device is tainted NoExecute, a
        rule exists, or an eviction waits (else no pod can be evicted, and every pod change
        would be a round for nothing)."""
        self._store: object | None = None
        self._evicted: dict[str, int] = {}
        """Rule uid -> pods this controller evicted because of it (upstream ``taintRuleStats``)."""
        self._done: set[str] = set()
        """Pod uids already evicted (upstream ``evictedPods``)."""
        self._due: datetime | None = None
        self._taints: SliceTaints | None = None
        """Slice taints, re-read when a slice changes."""
        self._rules: list[RuleTaint] | None = None
        self._rule_objs: list[Obj] = []
        """The rules by name, parsed when one changes."""
        self._pending: dict[str, tuple[str, str]] = {}
        """Pod uid -> (namespace, name) of the pods that waited for their eviction last pass."""

    @property
    def watches(self) -> tuple[ResourceType, ...]:
        """What wakes it in serve: the kinds it reads now."""
        rules = (self.rules_kind,) if self.rules_kind is not None else ()
        return (kinds.RESOURCE_SLICE, *rules, *((kinds.POD, kinds.RESOURCE_CLAIM) if self._reads_pods else ()))

    def _attach(self, ctx: ControllerContext) -> None:
        if self._store is ctx.store:
            return
        self._store = ctx.store
        self._reads_pods = False
        self.slices = Informer(ctx.store, kinds.RESOURCE_SLICE)
        self.rules = Informer(ctx.store, self.rules_kind) if self.rules_kind is not None else None
        self._evicted.clear()
        self._done.clear()
        self._due = None
        self._taints = None
        self._rules = None
        self._pending.clear()

    def reconcile(self, ctx: ControllerContext) -> bool:
        self._attach(ctx)
        changed = False
        if self.slices.sync() or self._taints is None:
            self._taints = slice_taints(self.slices.values())
            changed = True
        if (self.rules is not None and self.rules.sync()) or self._rules is None:
            self._rule_objs = sorted(self.rules.values() if self.rules is not None else [],
                                     key=lambda r: (r.get("metadata") or {}).get("name", ""))
            self._rules = parse_rules(self._rule_objs)
            changed = True
        rule_objs, rules, taints = self._rule_objs, self._rules, self._taints
        can_evict = (any(r.taint.effect == NO_EXECUTE for r in rules)
                     or any(t.effect == NO_EXECUTE for ts in taints.values() for t in ts))
        if not can_evict and not rule_objs and not self._pending:
            self._reads_pods = False  # the common case: no taint anywhere, nothing to read
            return False
        if not self._reads_pods:  # from the whole kinds again: pods came and went unseen meanwhile
            self.pods = Informer(ctx.store, kinds.POD)
            self.claims = Informer(ctx.store, kinds.RESOURCE_CLAIM)
            self._reads_pods = True
        changed = any([self.pods.sync(), self.claims.sync()]) or changed
        due = self._due is not None and self._due <= ctx.now()
        if not changed and not due:
            return False
        self._due = None
        now = ctx.now()
        progress = False
        pending: list[PendingPod] = []
        if not can_evict and not rule_objs:  # the taints went: only waiting evictions to cancel
            return self._cancel(ctx, pending)
        claims = {(str((c.get("metadata") or {}).get("namespace", "")), str((c.get("metadata") or {}).get("name"))): c
                  for c in self.claims.values()}
        for pod in sorted(self.pods.values(), key=_pod_key) if can_evict else ():  # else no need to look
            md = pod.get("metadata") or {}
            if md.get("deletionTimestamp") or md.get("uid") in self._done:
                continue
            ev = pod_eviction(pod, claims, taints, rules)
            if ev is None:
                continue
            if ev.when > now:
                pending.append(PendingPod(pod, ev))
                self._wake(ctx, ev.when)
                continue
            progress |= self._evict(ctx, pod, ev)
        progress |= self._cancel(ctx, pending)
        progress |= self._update_rule_statuses(ctx, rule_objs, rules, pending, claims, taints)
        return progress

    def _cancel(self, ctx: ControllerContext, pending: list[PendingPod]) -> bool:
        """Upstream ``cancelWorkWithEvent``: a pod that was waiting for its eviction and no longer
        needs one (the taint went, or a toleration came) gets "Cancelling deletion"."""
        now_pending = {str((p.pod.get("metadata") or {}).get("uid")) for p in pending}
        cancelled = False
        for uid, (namespace, name) in sorted(self._pending.items(), key=lambda kv: kv[1]):
            if uid in now_pending or uid in self._done:
                continue
            pod = self.pods.get(name, namespace)
            if pod is not None and (pod.get("metadata") or {}).get("uid") == uid:
                ctx.event(pod, "Normal", "DeviceTaintManagerEviction", "Cancelling deletion", component=self.name)
                cancelled = True
        self._pending = {str((p.pod.get("metadata") or {}).get("uid")): _pod_key(p.pod) for p in pending}
        return cancelled

    def _wake(self, ctx: ControllerContext, when: datetime) -> None:
        if self._due is None or when < self._due:
            self._due = when
        ctx.wake_at(when)

    def _evict(self, ctx: ControllerContext, pod: Obj, ev: Eviction) -> bool:
        """Upstream ``addConditionAndDeletePod``: Event, DisruptionTarget condition, delete."""
        uid = (pod.get("metadata") or {}).get("uid")
        ctx.event(pod, "Normal", "DeviceTaintManagerEviction", "Marking for deletion", component=self.name)
        try:
            add_condition_and_delete(ctx, pod, "DeletionByDeviceTaintManager",
                                     "Device Taint manager: deleting due to NoExecute taint")
        except NotFound:
            self._done.add(str(uid))
            return True
        except Conflict:
            return True  # the pod changed: the next round re-reads it
        except ApiError as exc:
            ctx.decide(self.name, "evict-failed", pod, exc.message)
            self._wake(ctx, ctx.now() + timedelta(seconds=1))
            return False
        self._done.add(str(uid))
        for rule_uid in ev.rule_uids:
            self._evicted[rule_uid] = self._evicted.get(rule_uid, 0) + 1
        ctx.decide(self.name, "evict", pod, "deleted: untolerated NoExecute device taint " + ", ".join(ev.taints))
        return True

    def _update_rule_statuses(self, ctx: ControllerContext, rule_objs: list[Obj], rules: list[RuleTaint],
                              pending: list[PendingPod], claims: dict[tuple[str, str], Obj],
                              taints: SliceTaints) -> bool:
        wrote = False
        now = ctx.now()
        by_uid = {r.rule_uid: r for r in rules}
        for raw in rule_objs:
            rule = by_uid.get((raw.get("metadata") or {}).get("uid", ""))
            if rule is None:
                continue
            mine = [p for p in pending if rule.rule_uid in p.eviction.rule_uids]
            would: list[PendingPod] = []
            devices = (0, 0)
            if rule.taint.effect == "None":
                as_no_execute = [RuleTaint(rule.rule_name, rule.rule_uid, rule.driver, rule.pool, rule.device,
                                           _with_effect(rule), rule.selects_nothing)]
                would = [PendingPod(p, ev) for p in self.pods.values()
                         if not (p.get("metadata") or {}).get("deletionTimestamp")
                         and (ev := pod_eviction(p, claims, {}, as_no_execute)) is not None]
                devices = _count_devices(rule, self.slices.values(), claims.values())
            cond = rule_condition(raw, mine, self._evicted.get(rule.rule_uid, 0), would, devices)
            old = get_condition(raw, EVICTION_CONDITION)
            if old is not None and all(old.get(k) == cond[k] for k in cond):
                continue
            if old is not None and old.get("observedGeneration") == cond["observedGeneration"]:
                since = now - parse_time(str(old.get("lastTransitionTime")))
                if since < RULE_STATUS_PERIOD:
                    self._wake(ctx, now + (RULE_STATUS_PERIOD - since))
                    continue
            updated = copy.deepcopy(raw)
            status = updated.setdefault("status", {})
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != EVICTION_CONDITION]
            status["conditions"].append({**cond, "lastTransitionTime": format_time(now)})
            try:
                ctx.store.update_status(updated)
            except (Conflict, NotFound):
                continue
            wrote = True
        return wrote


def add_condition_and_delete(ctx: ControllerContext, pod: Obj, reason: str, message: str) -> None:
    """Upstream ``addConditionAndDeletePod`` (both taint eviction controllers): the pod condition
    ``DisruptionTarget=True`` with ``reason``, then delete with the pod's uid as precondition;
    raises the API error of either write."""
    md = pod.get("metadata") or {}
    cond = get_condition(pod, "DisruptionTarget")
    if not cond or cond.get("status") != "True" or cond.get("reason") != reason:
        updated = copy.deepcopy(pod)
        status = updated.setdefault("status", {})
        status["conditions"] = [c for c in status.get("conditions") or []
                                if c.get("type") != "DisruptionTarget"] + [{
            "type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
            "lastTransitionTime": format_time(ctx.now()), "reason": reason, "message": message}]
        ctx.store.update_status(updated)
    ctx.store.delete(kinds.POD, str(md.get("name", "")), md.get("namespace"), uid=md.get("uid"))


def _pod_key(pod: Obj) -> tuple[str, str]:
    md = pod.get("metadata") or {}
    return str(md.get("namespace", "")), str(md.get("name", ""))


def _with_effect(rule: RuleTaint) -> DeviceTaint:
    return msgspec.structs.replace(rule.taint, effect=NO_EXECUTE)


def _count_devices(rule: RuleTaint, slices: Iterable[Obj], claims: Iterable[Obj]) -> tuple[int, int]:
    """Upstream ``countTaintedDevices``: devices published in slices and allocated devices the rule selects."""
    published = 0
    slices = list(slices)
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        pid = (str(spec.get("driver")), str((spec.get("pool") or {}).get("name")))
        newest[pid] = max(newest.get(pid, 0), int((spec.get("pool") or {}).get("generation") or 0))
    for s in slices:
        spec = s.get("spec") or {}
        pid = (str(spec.get("driver")), str((spec.get("pool") or {}).get("name")))
        if int((spec.get("pool") or {}).get("generation") or 0) != newest[pid]:
            continue
        published += sum(1 for d in spec.get("devices") or [] if rule.matches(*pid, str(d.get("name"))))
    results = [r for c in claims
               for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []]
    allocated = sum(1 for r in results if rule.matches(str(r.get("driver")), str(r.get("pool")), str(r.get("device"))))
    return published, allocated
