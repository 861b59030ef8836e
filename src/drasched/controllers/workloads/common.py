"""What every workload controller shares: pods from templates, ownership, pod states, conditions."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.kinds import ResourceType
from drasched.api.meta import controller_uid, format_time, owner_reference
from drasched.control import ControllerContext
from drasched.store.informer import Informer

Obj = dict[str, Any]

TERMINAL_PHASES = ("Succeeded", "Failed")


def md(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def spec_of(obj: Obj) -> dict[str, Any]:
    return obj.get("spec") or {}


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_terminal(pod: Obj) -> bool:
    return phase(pod) in TERMINAL_PHASES


def is_deleting(obj: Obj) -> bool:
    return bool(md(obj).get("deletionTimestamp"))


def is_active(pod: Obj) -> bool:
    """Pending or Running and not being deleted: what a controller counts as ``active``."""
    return not is_terminal(pod) and not is_deleting(pod)


def is_ready(pod: Obj) -> bool:
    """The pod's Ready condition is True (upstream ``podutil.IsPodReady``)."""
    if phase(pod) != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def sort_key(obj: Obj) -> tuple[str, str]:
    return (md(obj).get("namespace") or "", md(obj).get("name") or "")


def pod_from_template(owner: Obj, template: Obj, *, name: str | None = None, generate_name: str | None = None,
                      extra_labels: dict[str, str] | None = None,
                      extra_annotations: dict[str, str] | None = None) -> Obj:
    """A pod as upstream ``controller.GetPodFromTemplate`` builds it: the template's labels,
    annotations and spec, the owner's namespace, a controller ownerReference to the owner."""
    tmd = template.get("metadata") or {}
    labels = dict(tmd.get("labels") or {})
    labels.update(extra_labels or {})
    annotations = dict(tmd.get("annotations") or {})
    annotations.update(extra_annotations or {})
    meta: Obj = {"namespace": md(owner).get("namespace") or "default",
                 "ownerReferences": [owner_reference(owner)]}
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = generate_name or f"{md(owner).get('name')}-"
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if tmd.get("finalizers"):
        meta["finalizers"] = list(tmd["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy.deepcopy(template.get("spec") or {})}


def owned_by(objects: Iterable[Obj]) -> dict[str, list[Obj]]:
    """Objects by the uid of their controlling owner, each list in name order."""
    out: dict[str, list[Obj]] = defaultdict(list)
    for o in objects:
        uid = controller_uid(o)
        if uid:
            out[uid].append(o)
    for lst in out.values():
        lst.sort(key=sort_key)
    return out


def set_condition(status: Obj, cond_type: str, cond_status: str, reason: str, message: str, now: str,
                  *, probe: bool | None = True) -> bool:
    """Add or update a condition; ``lastTransitionTime`` moves only when the status changes.

    True when anything changed. ``probe``: the condition has a ``lastProbeTime`` (Job
    conditions do); False: ``lastUpdateTime`` (Deployment conditions); None: neither
    (``metav1.Condition``, as JobSet uses).
    """
    stamp_key = {True: "lastProbeTime", False: "lastUpdateTime"}.get(probe) if probe is not None else None
    conds = status.setdefault("conditions", [])
    for c in conds:
        if c.get("type") != cond_type:
            continue
        if (c.get("status"), c.get("reason"), c.get("message")) == (cond_status, reason, message):
            return False
        if c.get("status") != cond_status:
            c["lastTransitionTime"] = now
        c.update(status=cond_status, reason=reason, message=message)
        if stamp_key:
            c[stamp_key] = now
        return True
    cond: Obj = {"type": cond_type, "status": cond_status}
    if stamp_key:
        cond[stamp_key] = now
    cond.update(lastTransitionTime=now, reason=reason, message=message)
    conds.append(cond)
    return True


def condition_true(obj: Obj, cond_type: str) -> bool:
    return any(c.get("type") == cond_type and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


class WorkloadBase:
    """Informers over one workload kind and the kinds it owns; writes through the context.

    Level-triggered as every controller here: a pass over every object of the kind when
    anything watched changed or a timer fell due.
    """

    name = "workload"
    component = "workload-controller"
    kind: ResourceType = kinds.POD
    watched: tuple[ResourceType, ...] = (kinds.POD,)

    def __init__(self) -> None:
        self._store: object | None = None
        self._informers: dict[ResourceType, Informer] = {}
        self._due: set[str] = set()
        self._timers: dict[str, str] = {}
        self._failed: set[str] = set()
        self.last_create_error: str | None = None
        """The API server's answer to the last create that failed (a ReplicaSet's ReplicaFailure)."""
        self.ctx: ControllerContext

    def _attach(self, ctx: ControllerContext) -> bool:
        if self._store is ctx.store:
            return False
        self._store = ctx.store
        self._informers = {rt: Informer(ctx.store, rt) for rt in (self.kind, *self.watched)}
        self._timers.clear()
        return True

    def informer(self, rt: ResourceType) -> Informer:
        return self._informers[rt]

    def reconcile(self, ctx: ControllerContext) -> bool:
        first = self._attach(ctx)
        self.ctx = ctx
        own = self.informer(self.kind)
        changed = own.sync()
        if len(own) == 0:
            # none of this kind: nothing to do whatever else changed, so the other informers
            # are not drained (every pod event, a dozen times over); they catch up when one comes
            return False
        changed = any([inf.sync() for inf in self._informers.values() if inf is not own]) or changed
        now = ctx.now()
        due = any(when <= format_time(now) for when in self._timers.values())
        if not (first or changed or due):
            return False
        self._timers = {k: v for k, v in self._timers.items() if v > format_time(now)}
        progress = False
        for obj in sorted(self.informer(self.kind).values(), key=sort_key):
            if is_deleting(obj):
                continue
            progress |= self.sync(obj)
        return progress

    def sync(self, obj: Obj) -> bool:
        """Bring one workload object's dependents and status in line; True when it wrote."""
        raise NotImplementedError

    def wake(self, obj: Obj, when: Any) -> None:
        """Look at ``obj`` again at ``when`` (a datetime) even if nothing changes."""
        key = f"{md(obj).get('uid')}"
        self._timers[key] = min(self._timers.get(key, format_time(when)), format_time(when))
        self.ctx.wake_at(when)

    # ---- writes ------------------------------------------------------------------------------
    def create(self, obj: Obj, owner: Obj) -> Obj | None:
        """Create a dependent; an API error is a Warning event on the owner (upstream's
        ``FailedCreate``) and None, so one bad template never stops the other workloads."""
        try:
            created = self.ctx.store.create(obj)
        except ApiError as exc:
            message = f"Error creating: {exc.message}"
            key = md(owner).get("uid", "")
            if key not in self._failed:  # once per owner: every retry fails alike (a generated name aside)
                self._failed.add(key)
                self.ctx.event(owner, "Warning", "FailedCreate", message, self.component)
                self.ctx.decide(self.name, "FailedCreate", owner, message)
            self.last_create_error = exc.message
            return None
        self._put(created)
        return created

    def _put(self, obj: Obj) -> None:
        for rt, inf in self._informers.items():
            if rt.kind == obj.get("kind") and rt.api_version == obj.get("apiVersion"):
                inf.put(obj)

    def delete(self, rt: ResourceType, obj: Obj) -> bool:
        try:
            self.ctx.store.delete(rt, md(obj).get("name", ""), md(obj).get("namespace"), uid=md(obj).get("uid"))
        except (NotFound, Conflict):
            return False
        return True

    def write_status(self, obj: Obj, status: Obj) -> bool:
        """Replace the status subresource under the object's resourceVersion; False on a lost race."""
        if status == (obj.get("status") or {}):
            return False
        try:
            updated = self.ctx.store.patch(
                self.kind, md(obj).get("name", ""), md(obj).get("namespace"),
                {"metadata": {"resourceVersion": md(obj).get("resourceVersion")},
                 "status": _replace_patch(obj.get("status") or {}, status)},
                subresource="status")
        except (Conflict, NotFound):
            return True  # look again next round
        self._put(updated)
        return True


def _replace_patch(old: Obj, new: Obj) -> Obj:
    """A merge patch that turns ``old`` into ``new`` (keys gone from ``new`` become null)."""
    patch: Obj = {k: None for k in old if k not in new}
    patch.update(new)
    return patch
