"""A minimal simulated kubelet for embedded runs: start, finish and remove bound pods.

What it does, per pod bound to a node (``spec.nodeName`` set):

* **Start.** A Pending pod becomes Running (``startTime``, Ready conditions, container
  statuses) once every claim it uses is allocated and reserved for it or for its
  PodGroup (as the real kubelet refuses to run a pod its claims are not reserved for),
  and the driver hook :meth:`SimulatedKubelet._prepare` accepts them.
* **Finish.** A pod annotated ``drasched.io/sim-duration: <Go duration>`` (``90s``,
  ``5m``, ``1h30m``) becomes Succeeded that much virtual time after it started; the
  runner is asked to wake then. Without the annotation a pod runs forever.
* **Remove.** A pod being deleted (``deletionTimestamp`` set) is finished with a force
  delete, as the kubelet ends a graceful deletion once its containers stopped.

The DRA driver side (NodePrepareResources / NodeUnprepareResources through the plugin
kit) is a later issue; it plugs in at :meth:`_prepare` and :meth:`_unprepare`.
"""

from __future__ import annotations

import copy
import heapq
import re
from datetime import datetime, timedelta
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.meta import format_time, parse_time
from drasched.controllers.claimutil import (
    ClaimNotCreated,
    controller_owner_uid,
    group_entry_for,
    is_allocated,
    is_reserved_for,
    pod_claim_name,
    pod_group_name,
)
from drasched.sim.context import SimContext
from drasched.store.informer import Informer

Obj = dict[str, Any]

SIM_DURATION_ANNOTATION = "drasched.io/sim-duration"

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> timedelta:
    """Parse a Go ``time.Duration`` string (``time.ParseDuration``): ``1h30m``, ``1.5s``, ``0``."""
    s = text.strip()
    sign = 1.0
    if s.startswith(("+", "-")):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return timedelta(0)
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    pos, seconds = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r}: expected a number and a unit (ns, us, ms, s, m, h)")
        seconds += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return timedelta(seconds=sign * seconds)


def _md(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _set_condition(conds: list[Obj], cond_type: str, status: str, now: str, reason: str | None = None) -> None:
    for c in conds:
        if c.get("type") == cond_type:
            if c.get("status") != status:
                c["status"] = status
                c["lastTransitionTime"] = now
            if reason:
                c["reason"] = reason
            else:
                c.pop("reason", None)
            return
    cond: Obj = {"type": cond_type, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        cond["reason"] = reason
    conds.append(cond)


class SimulatedKubelet:
    """Every node's kubelet at once, for ``drasched simulate``."""

    name = "sim-kubelet"

    def __init__(self) -> None:
        self._store: object | None = None
        self._again = True
        self._deadlines: list[tuple[datetime, str]] = []
        self._scheduled: set[tuple[datetime, str]] = set()
        self._warned: dict[tuple[str, str], str] = {}

    def _attach(self, ctx: SimContext) -> None:
        if self._store is ctx.store:
            return
        self._store = ctx.store
        self.pods = Informer(ctx.store, kinds.POD)
        self.claims = Informer(ctx.store, kinds.RESOURCE_CLAIM)
        self.groups = Informer(ctx.store, kinds.POD_GROUP)
        self._deadlines.clear()
        self._scheduled.clear()
        self._warned.clear()
        self._again = True

    def reconcile(self, ctx: SimContext) -> bool:
        """One pass over bound pods when anything changed or a pod's run time is up."""
        self._attach(ctx)
        changed = [inf.sync() for inf in (self.pods, self.claims, self.groups)]
        due = False
        while self._deadlines and self._deadlines[0][0] <= ctx.now():
            self._scheduled.discard(heapq.heappop(self._deadlines))
            due = True
        if not any(changed) and not due and not self._again:
            return False
        self.ctx = ctx
        progress = False
        for pod in list(self.pods.values()):
            if (pod.get("spec") or {}).get("nodeName"):
                progress |= self._sync_pod(pod)
        self._again = progress
        return progress

    # ---- driver hooks (the plugin kit of a later issue replaces these) -----------------------
    def _prepare(self, pod: Obj, claims: list[Obj]) -> str | None:
        """NodePrepareResources for ``claims`` before ``pod`` starts; an error message or None."""
        return None

    def _unprepare(self, pod: Obj, claims: list[Obj]) -> None:
        """NodeUnprepareResources once ``pod`` stopped; the claim controller releases after."""
        return None

    # ---- one pod -------------------------------------------------------------------------------
    def _sync_pod(self, pod: Obj) -> bool:
        if _md(pod).get("deletionTimestamp"):
            return self._finish_deletion(pod)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if phase == "Pending":
            return self._start(pod)
        if phase == "Running":
            return self._maybe_complete(pod)
        return False

    def _claims_ready(self, pod: Obj) -> tuple[list[Obj], str | None]:
        """The pod's claims, or why it cannot start yet (as the kubelet's admission checks)."""
        ns = _md(pod).get("namespace")
        group_name = pod_group_name(pod)
        group = self.groups.get(group_name, ns) if group_name else None
        claims: list[Obj] = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            try:
                name, check_owner = pod_claim_name(pod, entry)
            except ClaimNotCreated as exc:
                return [], str(exc)
            if name is None:
                continue  # no claim needed for this entry
            claim = self.claims.get(name, ns)
            if claim is None:
                return [], f"ResourceClaim {name} does not exist"
            is_group_claim = group is not None and group_entry_for(entry, group) is not None
            owner_uid = controller_owner_uid(claim)
            if check_owner and owner_uid not in (_md(pod).get("uid"), _md(group or {}).get("uid")):
                return [], f"ResourceClaim {name} was not created for pod {_md(pod).get('name')}"
            if not is_allocated(claim):
                return [], f"ResourceClaim {name} is not allocated"
            reserved = is_reserved_for(claim, _md(pod).get("uid")) or (
                group is not None and is_reserved_for(claim, _md(group).get("uid")))
            if not reserved:
                kind = "its PodGroup" if is_group_claim else "it"
                return [], f"ResourceClaim {name} is not reserved for {kind}"
            claims.append(claim)
        # The claim the binder made for extended resources (KEP-5004) is prepared like the others.
        extended = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
        if extended:
            claim = self.claims.get(extended, ns)
            if claim is None or not is_allocated(claim) or not is_reserved_for(claim, _md(pod).get("uid")):
                return [], f"extended-resource ResourceClaim {extended} is not allocated and reserved for it"
            claims.append(claim)
        return claims, None

    def _start(self, pod: Obj) -> bool:
        claims, waiting = self._claims_ready(pod)
        if waiting is not None:
            return False  # the claim controller or scheduler has work left; look again on change
        error = self._prepare(pod, claims)
        if error is not None:
            self._warn_once(pod, "FailedPrepareDynamicResources", error)
            return False
        now = format_time(self.ctx.now())
        status = copy.deepcopy(pod.get("status") or {})
        status["phase"] = "Running"
        status["startTime"] = now
        conds = status.setdefault("conditions", [])
        for cond_type in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"):
            _set_condition(conds, cond_type, "True", now)
        status["containerStatuses"] = [
            {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": True, "started": True,
             "restartCount": 0, "state": {"running": {"startedAt": now}}}
            for c in (pod.get("spec") or {}).get("containers") or []
        ]
        if not self._write_status(pod, status):
            return True
        self.ctx.decide(self.name, "start", pod, f"running on {pod['spec']['nodeName']}"
                        + (f" with claims {', '.join(_md(c).get('name', '') for c in claims)}" if claims else ""))
        return True

    def _maybe_complete(self, pod: Obj) -> bool:
        text = (_md(pod).get("annotations") or {}).get(SIM_DURATION_ANNOTATION)
        if text is None:
            return False
        try:
            duration = parse_go_duration(text)
            started = parse_time((pod.get("status") or {}).get("startTime")
                                 or _md(pod).get("creationTimestamp") or "")
        except ValueError as exc:
            self._warn_once(pod, "InvalidSimDuration", f"annotation {SIM_DURATION_ANNOTATION}: {exc}; "
                                                       "the pod keeps running")
            return False
        deadline = started + duration
        if self.ctx.now() < deadline:
            key = f"{_md(pod).get('namespace')}/{_md(pod).get('name')}"
            if (deadline, key) not in self._scheduled:
                self._scheduled.add((deadline, key))
                heapq.heappush(self._deadlines, (deadline, key))
                self.ctx.wake_at(deadline)
            return False
        claims, _ = self._claims_ready(pod)
        self._unprepare(pod, claims)
        now = format_time(self.ctx.now())
        status = copy.deepcopy(pod.get("status") or {})
        status["phase"] = "Succeeded"
        conds = status.setdefault("conditions", [])
        for cond_type in ("PodReadyToStartContainers", "ContainersReady", "Ready"):
            _set_condition(conds, cond_type, "False", now, reason="PodCompleted")
        for cs in status.get("containerStatuses") or []:
            started_at = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
            cs.update(ready=False, started=False, state={"terminated": {
                "exitCode": 0, "reason": "Completed", "startedAt": started_at, "finishedAt": now}})
        if not self._write_status(pod, status):
            return True
        self.ctx.decide(self.name, "complete", pod, f"Succeeded after {text} ({SIM_DURATION_ANNOTATION})")
        return True

    def _finish_deletion(self, pod: Obj) -> bool:
        md = _md(pod)
        claims, _ = self._claims_ready(pod)
        self._unprepare(pod, claims)
        try:
            self.ctx.store.delete(kinds.POD, md.get("name", ""), md.get("namespace"), uid=md.get("uid"),
                                  grace_period_seconds=0)
        except NotFound:
            self.pods.forget(md.get("name", ""), md.get("namespace"))
            return False
        except Conflict:
            return True  # replaced meanwhile: look again on the next pass
        self.pods.forget(md.get("name", ""), md.get("namespace"))
        self.ctx.decide(self.name, "remove", pod, "containers stopped; pod deleted (grace period 0)")
        return True

    # ---- helpers -------------------------------------------------------------------------------
    def _write_status(self, pod: Obj, status: Obj) -> bool:
        """Patch the status subresource under the pod's resourceVersion; False on a lost race."""
        md = _md(pod)
        try:
            updated = self.ctx.store.patch(
                kinds.POD, md.get("name", ""), md.get("namespace"),
                {"metadata": {"resourceVersion": md.get("resourceVersion")}, "status": status},
                subresource="status")
        except (Conflict, NotFound):
            return False
        except ApiError as exc:
            self._warn_once(pod, "FailedStatusUpdate", exc.message)
            return False
        self.pods.put(updated)
        return True

    def _warn_once(self, pod: Obj, reason: str, message: str) -> None:
        key = (_md(pod).get("uid", ""), reason)
        if self._warned.get(key) == message:
            return
        self._warned[key] = message
        self.ctx.event(pod, "Warning", reason, message, component=self.name)
        self.ctx.decide(self.name, reason, pod, message)
