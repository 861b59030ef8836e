"""The disruption controller: PodDisruptionBudget status in embedded runs.

kube-controller-manager's ``disruption`` controller (``pkg/controller/disruption``) keeps every
budget's ``status`` (``expectedPods``, ``currentHealthy``, ``desiredHealthy``,
``disruptionsAllowed``, ``disruptedPods``, ``observedGeneration``, the ``DisruptionAllowed``
condition) true; the numbers are :mod:`drasched.controllers.pdbstatus`'s, this module reads and
writes. The embedded control plane's only: in a cluster kube-controller-manager writes them
(``drasched serve`` does not run it). The eviction API and the scheduler do not read this status:
they judge budgets from the pods themselves (:mod:`drasched.api.disruption`).

Event-driven as upstream's work queue: a budget is synced when it changes, when a pod it selects
(or selected) changes, when a controller's scale changes (budgets counting scales only), and when
an entry of ``disruptedPods`` times out. While no budget exists, pods are not followed at all.
Upstream's finders (``finders()``): a ReplicaSet's pods count their Deployment's ``replicas``
(the ReplicaSet's own without one), a StatefulSet's its ``replicas``; other kinds through their
scale subresource: here the LeaderWorkerSet's, whose pods count ``replicas`` times ``size`` (what
its StatefulSets would sum to upstream, where they own the pods). A Job, DaemonSet or JobSet has
none, so a budget counting scales over their pods fails its sync (``SyncFailed``). Events as
upstream's, once each time the budget comes to need one (upstream repeats them, counted by the
Event correlator).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drasched.api import kinds
from drasched.api.disruption import selects
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.kinds import ResourceType
from drasched.control import ControllerContext
from drasched.controllers import pdbstatus
from drasched.controllers.pdbstatus import Event, Scale, ScaleError, controller_ref
from drasched.store.informer import Informer

Obj = dict[str, Any]
Key = tuple[str, str]

NAME = "disruption-controller"
COMPONENT = "controllermanager"
"""The Event source upstream's recorder writes."""

SCALED: tuple[ResourceType, ...] = (kinds.DEPLOYMENT, kinds.REPLICA_SET, kinds.STATEFUL_SET, kinds.LEADER_WORKER_SET)
"""The kinds drasched serves that have a scale subresource."""


def _key(obj: Obj) -> Key:
    md = obj.get("metadata") or {}
    return str(md.get("namespace") or ""), str(md.get("name") or "")


def counts_scales(pdb: Obj) -> bool:
    """Whether the budget's expected count is its pods' controllers' scale (upstream: ``maxUnavailable``,
    or a percentage ``minAvailable``)."""
    spec = pdb.get("spec") or {}
    return spec.get("maxUnavailable") is not None or isinstance(spec.get("minAvailable"), str)


def scale_of(rt: ResourceType, obj: Obj) -> int:
    spec = obj.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    if rt is kinds.LEADER_WORKER_SET:
        return replicas * int((spec.get("leaderWorkerTemplate") or {}).get("size", 1))
    return replicas


class DisruptionController:
    """``disruption`` of the embedded control plane."""

    name = NAME

    def __init__(self) -> None:
        self._store: object | None = None

    def _attach(self, ctx: ControllerContext) -> None:
        if self._store is ctx.store:
            return
        self._store = ctx.store
        self.pdbs = Informer(ctx.store, kinds.POD_DISRUPTION_BUDGET)
        self._forget_pods()

    def _forget_pods(self) -> None:
        self.pods: Informer | None = None
        self.owners: dict[ResourceType, Informer] = {}
        self._selectors: dict[Key, Any] = {}
        """Budget -> the selector its members were found with."""
        self._members: dict[Key, set[Key]] = {}
        self._covering: dict[Key, set[Key]] = {}
        self._dirty: set[Key] = set()
        self._rechecks: dict[Key, datetime] = {}
        self._said: dict[Key, set[tuple[str, str, str]]] = {}
        self._said_pods: set[tuple[Key, str, str]] = set()

    def reconcile(self, ctx: ControllerContext) -> bool:
        self._attach(ctx)
        self.pdbs.sync()
        changed_pdbs = self.pdbs.take_changed()
        if len(self.pdbs) == 0:
            if self.pods is not None:
                self._forget_pods()  # the common case: no budget, no pods followed
            return False
        if self.pods is None:
            self.pods = Informer(ctx.store, kinds.POD)
            changed_pdbs = None
        self.pods.sync()
        changed_pods = self.pods.take_changed()
        if changed_pdbs is None or changed_pods is None:
            self._selectors.clear()
            self._members.clear()
            self._covering.clear()
            changed_pdbs = {_key(b) for b in self.pdbs.values()} | set(self._rechecks) | set(self._said)
            changed_pods = set()
        for key in sorted(changed_pdbs):
            self._budget_changed(key)
        for key in sorted(changed_pods):
            self._pod_changed(key)
        if any([inf.sync() for inf in self.owners.values()]):
            self._dirty |= {_key(b) for b in self.pdbs.values() if counts_scales(b)}
        now = ctx.now()
        for key, when in list(self._rechecks.items()):
            if when <= now:
                del self._rechecks[key]
                self._dirty.add(key)
        progress = False
        for key in sorted(self._dirty):
            progress |= self._sync(ctx, key)
        self._dirty.clear()
        return progress

    # ---- which budgets a change concerns ---------------------------------------------------------
    def _budget_changed(self, key: Key) -> None:
        assert self.pods is not None
        pdb = self.pdbs.get(key[1], key[0])
        selector = (pdb.get("spec") or {}).get("selector") if pdb is not None else None
        if pdb is None or key not in self._selectors or self._selectors[key] != selector:
            for pod in self._members.pop(key, set()):
                self._covering.get(pod, set()).discard(key)
            self._selectors.pop(key, None)
        if pdb is None:
            self._rechecks.pop(key, None)
            self._said.pop(key, None)
            return
        if key not in self._selectors:
            self._selectors[key] = selector
            members = {_key(p) for p in self.pods.values() if selects(pdb, p)}
            self._members[key] = members
            for pod in members:
                self._covering.setdefault(pod, set()).add(key)
        self._dirty.add(key)

    def _pod_changed(self, key: Key) -> None:
        assert self.pods is not None
        pod = self.pods.get(key[1], key[0])
        before = self._covering.pop(key, set())
        now: set[Key] = set()
        if pod is not None:
            now = {b for b in self._selectors if b[0] == key[0] and selects(self.pdbs.get(b[1], b[0]) or {}, pod)}
        for b in before - now:
            self._members.get(b, set()).discard(key)
        for b in now - before:
            self._members.setdefault(b, set()).add(key)
        if now:
            self._covering[key] = now
        self._dirty |= before | now

    # ---- one budget ------------------------------------------------------------------------------
    def _sync(self, ctx: ControllerContext, key: Key) -> bool:
        assert self.pods is not None
        pdb = self.pdbs.get(key[1], key[0])
        if pdb is None:
            return False
        pods = [p for p in (self.pods.get(n, ns) for ns, n in sorted(self._members.get(key, set()))) if p is not None]
        result = pdbstatus.sync(pdb, pods, self._find, ctx.now())
        progress = self._say(ctx, key, pdb, result.events)
        if result.recheck is not None:
            self._rechecks[key] = result.recheck
            ctx.wake_at(result.recheck)
        if result.status == (pdb.get("status") or {}):
            return progress
        try:
            updated = ctx.store.update_status({**pdb, "status": result.status})
        except (Conflict, NotFound):
            return True  # changed or gone meanwhile: its watch event brings it back
        except ApiError as exc:
            ctx.decide(self.name, "status-failed", pdb, exc.message)
            return progress
        self.pdbs.put(updated)
        return True

    def _say(self, ctx: ControllerContext, key: Key, pdb: Obj, events: list[Event]) -> bool:
        """The sync's Events, each once while the budget keeps needing it."""
        before, now = self._said.get(key, set()), set()
        said = False
        for e in events:
            if e.pod is None:
                now.add((e.type, e.reason, e.message))
                if (e.type, e.reason, e.message) in before:
                    continue
                ctx.event(pdb, e.type, e.reason, e.message, component=COMPONENT)
            else:
                once = (_key(e.pod), str((e.pod.get("metadata") or {}).get("uid")), e.reason)
                if once in self._said_pods:
                    continue
                self._said_pods.add(once)
                ctx.event(e.pod, e.type, e.reason, e.message, component=COMPONENT)
            said = True
        self._said[key] = now
        return said

    # ---- upstream's finders ----------------------------------------------------------------------
    def _owner(self, rt: ResourceType, name: str, namespace: str, uid: Any) -> Obj | None:
        """The ``rt`` called ``name`` whose uid is ``uid`` (the finders' ``UID`` check), or None."""
        inf = self.owners.get(rt)
        if inf is None:
            inf = self.owners[rt] = Informer(self.pdbs.store, rt)
            inf.sync()
        obj = inf.get(name, namespace)
        return obj if obj is not None and (obj.get("metadata") or {}).get("uid") == uid else None

    def _find(self, ref: Obj, namespace: str) -> Scale | None:
        """Upstream ``finders()`` in order: ReplicationController (none here), Deployment (through its
        ReplicaSet), ReplicaSet, StatefulSet, then any scale subresource."""
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        kind, name, uid = ref.get("kind"), str(ref.get("name") or ""), ref.get("uid")
        if kind == "ReplicaSet" and group in ("apps", "extensions"):
            rs = self._owner(kinds.REPLICA_SET, name, namespace, uid)
            if rs is not None:
                parent = controller_ref(rs)
                if parent is not None and parent.get("kind") == "Deployment" and str(
                        parent.get("apiVersion") or "").rpartition("/")[0] in ("apps", "extensions"):
                    dep = self._owner(kinds.DEPLOYMENT, str(parent.get("name") or ""), namespace, parent.get("uid"))
                    if dep is not None:
                        return str(parent.get("uid")), scale_of(kinds.DEPLOYMENT, dep)
                return str(uid), scale_of(kinds.REPLICA_SET, rs)
        return self._scale_subresource(ref, namespace)

    def _scale_subresource(self, ref: Obj, namespace: str) -> Scale | None:
        """Upstream ``getScaleController``: the owner's scale, or why it has none."""
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        try:
            rt = kinds.for_object({"apiVersion": api_version, "kind": kind})
        except ApiError:
            raise ScaleError(f'no matches for kind "{kind}" in version "{api_version}"') from None
        if rt not in SCALED:
            resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
            raise ScaleError(f"{resource} does not implement the scale subresource")
        obj = self._owner(rt, str(ref.get("name") or ""), namespace, ref.get("uid"))
        return (str(ref.get("uid")), scale_of(rt, obj)) if obj is not None else None
