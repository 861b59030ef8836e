"""The node lifecycle controller: a Node's conditions and ``spec.unschedulable`` become taints.

kube-controller-manager's ``node-lifecycle-controller`` (upstream
``pkg/controller/nodelifecycle/node_lifecycle_controller.go``), the part that taints: what each
node gets is decided in :mod:`drasched.controllers.nodeconditions` (NoSchedule taints for its
conditions and for ``spec.unschedulable``, ``not-ready`` / ``unreachable`` NoExecute for a
``Ready`` condition False / Unknown, zones and their disruption states). This loop looks again
whenever a node changes, writes each node's taints in one update with its resourceVersion as
precondition (a conflict is read again next round), and meters new NoExecute taints per zone
as upstream's ``zoneNoExecuteTainter`` does (``--node-eviction-rate`` 0.1: the first at once,
then one every 10 s of the context's clock, in the order the nodes were queued). The scheduler
then keeps new pods off the tainted nodes and the taint eviction controller
(:mod:`drasched.controllers.nodetainteviction`) evicts what does not tolerate the NoExecute ones.

Left out: pods' ``Ready`` condition set False on an unready node (``MarkPodsNotReady``), the
``RegisteredNode`` / ``NodeNotReady`` Events, ``Ready`` going Unknown when heartbeats stop (a
simulated kubelet keeps reporting what the manifest says), and the label reconciliation.

The embedded control plane's only: in a cluster kube-controller-manager runs upstream's. (The
API server's ``TaintNodesByCondition`` admission plugin, which gives a new Node the
``not-ready:NoSchedule`` taint until this controller sees its conditions, is not modelled.)
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.control import ControllerContext
from drasched.controllers.nodeconditions import (
    NO_EXECUTE,
    apply_taints,
    no_execute_step,
    no_schedule_changes,
    taints_of,
    zone_key,
    zones,
)
from drasched.store.informer import Informer

Obj = dict[str, Any]

NAME = "node-lifecycle-controller"
RETRY = timedelta(seconds=1)


def _name(node: Obj) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


def _describe(taints: list[Obj]) -> str:
    return ", ".join(f"{t.get('key')}:{t.get('effect')}" for t in taints)


class NodeLifecycleController:
    """``node-lifecycle-controller`` of the embedded control plane (its tainting)."""

    name = NAME
    watches = (kinds.NODE,)

    def __init__(self) -> None:
        self._store: object | None = None
        self._queued: dict[str, datetime] = {}
        """Node -> when it was first found waiting for its NoExecute taint (the zone queue's order)."""
        self._limiters: dict[str, tuple[float, datetime]] = {}
        """Zone -> (its tainting rate, when its token bucket of 1 holds a token again)."""
        self._due: datetime | None = None

    def _attach(self, ctx: ControllerContext) -> None:
        if self._store is ctx.store:
            return
        self._store = ctx.store
        self.nodes = Informer(ctx.store, kinds.NODE)
        self._queued.clear()
        self._limiters.clear()
        self._due = None

    def reconcile(self, ctx: ControllerContext) -> bool:
        self._attach(ctx)
        changed = self.nodes.sync()
        now = ctx.now()
        if not changed and not (self._due is not None and self._due <= now):
            return False
        self._due = None
        nodes = sorted(self.nodes.values(), key=_name)
        state = zones(nodes)
        plans: dict[str, tuple[Obj, list[Obj], list[Obj]]] = {}
        waiting: dict[str, list[tuple[datetime, str]]] = {}
        queued: dict[str, datetime] = {}
        for node in nodes:
            name = _name(node)
            add, remove = no_schedule_changes(node)
            step = no_execute_step(node, master_disruption=state.master_disruption)
            remove += [{"key": k, "effect": NO_EXECUTE} for k in step.remove]
            if step.add is not None and step.rate_limited:
                queued[name] = self._queued.get(name, now)
                waiting.setdefault(zone_key(node), []).append((queued[name], name))
            elif step.add is not None:
                add.append({"key": step.add, "effect": NO_EXECUTE})
            plans[name] = (node, add, remove)
        self._queued = queued
        for zone, items in sorted(waiting.items()):
            for _, name in sorted(items):
                if not self._take(ctx, zone, state.tainting_qps(zone), now):
                    break
                key = no_execute_step(plans[name][0]).add
                plans[name][1].append({"key": key, "effect": NO_EXECUTE})
        progress = False
        for node, add, remove in plans.values():
            if add or remove:
                progress |= self._write(ctx, node, add, remove, now)
        return progress

    def _take(self, ctx: ControllerContext, zone: str, qps: float, now: datetime) -> bool:
        """The zone's limiter (``flowcontrol.NewTokenBucketRateLimiter(qps, 1)``, made afresh
        when the rate changes as ``SwapLimiter`` does; rate 0 never lets one through): whether
        a node may be tainted now; if not yet, a wake-up when it may."""
        if qps <= 0:
            self._limiters[zone] = (0.0, now)
            return False
        rate, ready = self._limiters.get(zone, (qps, now))
        if rate != qps:
            ready = now
        if ready > now:
            self._limiters[zone] = (qps, ready)
            if self._due is None or ready < self._due:
                self._due = ready
            ctx.wake_at(ready)
            return False
        self._limiters[zone] = (qps, now + timedelta(seconds=1 / qps))
        return True

    def _write(self, ctx: ControllerContext, node: Obj, add: list[Obj], remove: list[Obj], now: datetime) -> bool:
        """``SwapNodeControllerTaint``: one update of ``spec.taints``; True when something was written
        or must be read again."""
        taints = apply_taints(taints_of(node), add, remove, now)
        spec = {k: v for k, v in (node.get("spec") or {}).items() if k != "taints"}
        if taints:
            spec["taints"] = taints
        try:
            ctx.store.update({**node, "spec": spec})
        except (Conflict, NotFound):
            return True  # changed or gone meanwhile: the next round reads it again
        except ApiError as exc:
            ctx.decide(self.name, "taint-failed", node, exc.message)
            when = now + RETRY
            if self._due is None or when < self._due:
                self._due = when
            ctx.wake_at(when)
            return False
        parts = [f"added {_describe(add)}"] if add else []
        parts += [f"removed {_describe(remove)}"] if remove else []
        ctx.decide(self.name, "taint", node, "; ".join(parts))
        return True
