"""The taint eviction controller: pods on nodes tainted NoExecute are deleted.

A port of upstream's ``pkg/controller/tainteviction/taint_eviction.go`` (kube-controller-manager's
``taint-eviction-controller``), built as :mod:`drasched.controllers.devicetainteviction` is. A
pod bound to a node with a NoExecute taint it does not tolerate is deleted at once; one whose
tolerations match every NoExecute taint of its node is deleted once the smallest
``tolerationSeconds`` of the matching tolerations ran out (upstream ``getMinTolerationTime``:
0 or less is at once, none with seconds tolerates for good). As upstream the time counts from
when the controller first saw the pod on the tainted node (``processPodOnNode`` schedules the
work at ``now``), not from the taint's ``timeAdded``. Before deleting it emits a Normal
``TaintManagerEviction`` Event ("Marking for deletion Pod NS/NAME") and writes the pod
condition ``DisruptionTarget`` (reason ``DeletionByTaintManager``, "Taint manager: deleting
due to NoExecute taint"); a pod that waited and no longer needs to go (the taint went, a
toleration came) gets "Cancelling deletion of Pod NS/NAME".

The embedded control plane's only: in a cluster kube-controller-manager runs upstream's.
Time is the context's clock: ``drasched simulate`` wakes at the next eviction time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.tolerations import tolerates
from drasched.control import ControllerContext
from drasched.controllers.devicetainteviction import add_condition_and_delete
from drasched.store.informer import Informer

Obj = dict[str, Any]

NAME = "taint-eviction-controller"
NO_EXECUTE = "NoExecute"
FOREVER = -1


def toleration_seconds(taints: list[Obj], tolerations: list[Obj]) -> int | None:
    """How long the pod may stay on a node with these NoExecute ``taints``: None when some taint
    is not tolerated (at once), :data:`FOREVER` when tolerated for good, else seconds (upstream
    ``GetMatchingTolerations`` takes each taint's first matching toleration, then
    ``getMinTolerationTime``)."""
    used: list[Obj] = []
    for taint in taints:
        tol = next((t for t in tolerations if tolerates(t, taint)), None)
        if tol is None:
            return None
        used.append(tol)
    seconds = [int(t["tolerationSeconds"]) for t in used if t.get("tolerationSeconds") is not None]
    if not used:
        return 0
    if not seconds:
        return FOREVER
    return max(0, min(seconds))


def _key(pod: Obj) -> tuple[str, str]:
    md = pod.get("metadata") or {}
    return str(md.get("namespace", "")), str(md.get("name", ""))


class NodeTaintEvictionController:
    """``taint-eviction-controller`` of the embedded control plane."""

    name = NAME
    watches = (kinds.NODE, kinds.POD)

    def __init__(self) -> None:
        self._store: object | None = None
        self._reads_pods = False
        """Whether it follows pods: only while some node is tainted NoExecute or an eviction waits."""
        self._tainted: dict[str, list[Obj]] = {}
        """Node name -> its NoExecute taints (upstream ``taintedNodes``)."""
        self._scheduled: dict[str, tuple[datetime, tuple[str, str]]] = {}
        """Pod uid -> (when first seen needing an eviction, (namespace, name)): upstream's work ``CreatedAt``."""
        self._done: set[str] = set()
        self._due: datetime | None = None

    def _attach(self, ctx: ControllerContext) -> None:
        if self._store is ctx.store:
            return
        self._store = ctx.store
        self._reads_pods = False
        self.nodes = Informer(ctx.store, kinds.NODE)
        self._tainted = {}
        self._scheduled.clear()
        self._done.clear()
        self._due = None

    def reconcile(self, ctx: ControllerContext) -> bool:
        self._attach(ctx)
        changed = False
        if self.nodes.sync():
            self._tainted = {}
            for node in self.nodes.values():
                taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == NO_EXECUTE]
                if taints:
                    self._tainted[str((node.get("metadata") or {}).get("name"))] = taints
            changed = True
        if not self._tainted and not self._scheduled:
            self._reads_pods = False  # the common case: no node tainted NoExecute
            return False
        if not self._reads_pods:
            self.pods = Informer(ctx.store, kinds.POD)
            self._reads_pods = True
        changed = self.pods.sync() or changed
        now = ctx.now()
        if not changed and not (self._due is not None and self._due <= now):
            return False
        self._due = None
        progress = False
        waiting: dict[str, tuple[datetime, tuple[str, str]]] = {}
        for pod in sorted(self.pods.values(), key=_key):
            md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
            uid = str(md.get("uid"))
            node_taints = self._tainted.get(str(spec.get("nodeName") or ""))
            if not node_taints or md.get("deletionTimestamp") or uid in self._done:
                continue
            seconds = toleration_seconds(node_taints, spec.get("tolerations") or [])
            if seconds == FOREVER:
                continue
            seen = self._scheduled.get(uid, (now, _key(pod)))[0]
            when = seen + timedelta(seconds=seconds or 0)
            if when > now:
                waiting[uid] = (seen, _key(pod))
                self._wake(ctx, when)
                continue
            progress |= self._evict(ctx, pod)
        for uid, (_, (namespace, name)) in sorted(self._scheduled.items(), key=lambda kv: kv[1][1]):
            if uid in waiting or uid in self._done:
                continue
            still = self.pods.get(name, namespace)
            if still is not None and (still.get("metadata") or {}).get("uid") == uid:
                ctx.event(still, "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {namespace}/{name}",
                          component=self.name)
                progress = True
        self._scheduled = waiting
        return progress

    def _wake(self, ctx: ControllerContext, when: datetime) -> None:
        if self._due is None or when < self._due:
            self._due = when
        ctx.wake_at(when)

    def _evict(self, ctx: ControllerContext, pod: Obj) -> bool:
        """Upstream ``deletePodHandler``: the Event, then ``addConditionAndDeletePod``."""
        namespace, name = _key(pod)
        uid = str((pod.get("metadata") or {}).get("uid"))
        ctx.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {namespace}/{name}",
                  component=self.name)
        try:
            add_condition_and_delete(ctx, pod, "DeletionByTaintManager",
                                     "Taint manager: deleting due to NoExecute taint")
        except NotFound:
            self._done.add(uid)
            return True
        except Conflict:
            return True  # the pod changed: the next round re-reads it
        except ApiError as exc:
            ctx.decide(self.name, "evict-failed", pod, exc.message)
            self._wake(ctx, ctx.now() + timedelta(seconds=1))
            return False
        self._done.add(uid)
        taints = self._tainted.get(str((pod.get("spec") or {}).get("nodeName") or ""), [])
        ctx.decide(self.name, "evict", pod, "deleted: NoExecute taint " + ", ".join(
            f"{t.get('key', '')}={t.get('value', '')}:{t.get('effect')}" for t in taints))
        return True
