"""The DRA example driver's controller plugin ``BindingConditions``, for embedded runs.

kubernetes-sigs/dra-example-driver's ``binding-conditions`` example installs the driver with
``kubeletPlugin.bindingConditions=true`` (every device published with the binding condition
``BindingConditions``) and ``controller.plugins={BindingConditions}``: a controller that watches
ResourceClaims and, once one is allocated, marks each such device's condition ``True`` in the
claim's ``status.devices``, reason ``Ready``, message ``Device is ready``
(``cmd/dra-example-controller/plugins/bindingconditions.go`` ``Reconcile``, ``setDeviceCondition``).
Until then kube-scheduler holds the pod in PreBind; without the controller it would wait out the
binding timeout. A node annotated ``drasched.io/sim-gpus: "driver=gpu.example.com,bindingConditions"``
stands for both chart values, so the example runs unchanged and its pod ends ``Running`` with the
claim status its README shows.

Only results of a driver that runs with binding conditions on some node are touched (the
controller is the driver's, and only reconciles its own ``driverName``); conditions already
``True`` are left alone; a failure condition is never set (the example driver never fails).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.meta import format_time
from drasched.control import ControllerContext
from drasched.store.informer import Informer
from drasched.store.wire import clone

Obj = dict[str, Any]

COMPONENT = "dra-example-controller"
READY_REASON = "Ready"
READY_MESSAGE = "Device is ready"


def satisfy_binding_conditions(claim: Obj, driver_names: frozenset[str], now: str) -> Obj | None:
    """``claim`` with every binding condition of ``driver_names``' allocated devices set ``True``
    in ``status.devices``, as the example driver's ``Reconcile`` sets them; None when nothing is
    to be changed (not allocated, no such device, every condition already ``True``)."""
    status = claim.get("status") or {}
    allocation = status.get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    todo = [r for r in results
            if r.get("driver") in driver_names and r.get("bindingConditions")]
    if not todo:
        return None
    out = clone(claim)
    devices: list[Obj] = out.setdefault("status", {}).setdefault("devices", []) or []
    out["status"]["devices"] = devices
    modified = False
    for result in todo:
        ident = (result.get("driver"), result.get("pool"), result.get("device"))
        entry = next((d for d in devices if (d.get("driver"), d.get("pool"), d.get("device")) == ident), None)
        for cond_type in result.get("bindingConditions") or []:
            if entry is not None and any(c.get("type") == cond_type and c.get("status") == "True"
                                         for c in entry.get("conditions") or []):
                continue  # isConditionTrue
            condition = {"type": cond_type, "status": "True", "reason": READY_REASON,
                         "message": READY_MESSAGE, "lastTransitionTime": now}
            if entry is None:  # no entry yet: a new one with this one condition
                entry = {"driver": ident[0], "pool": ident[1], "device": ident[2], "conditions": [condition]}
                devices.append(entry)
            else:
                conditions = entry.setdefault("conditions", [])
                old = next((c for c in conditions if c.get("type") == cond_type), None)
                if old is None:
                    conditions.append(condition)
                else:
                    old.update(condition)
            modified = True
    return out if modified else None


class ExampleBindingConditionsController:
    """Satisfies the binding conditions of the example driver's devices, as its controller's
    ``BindingConditions`` plugin does; ``drivers`` says which drivers run with them on."""

    name = COMPONENT

    def __init__(self, drivers: Callable[[], frozenset[str]]) -> None:
        self._drivers = drivers
        self._store: object | None = None
        self.claims: Informer | None = None
        self._known: frozenset[str] = frozenset()

    def reconcile(self, ctx: ControllerContext) -> bool:
        drivers = self._drivers()
        if not drivers:
            return False  # no node runs the example driver with binding conditions: no informer either
        if self._store is not ctx.store or self.claims is None:
            self._store = ctx.store
            self.claims = Informer(ctx.store, kinds.RESOURCE_CLAIM)
        claims = self.claims
        claims.sync()
        changed_keys = claims.take_changed()
        if drivers != self._known:  # a driver started with binding conditions: look at every claim
            self._known, changed_keys = drivers, None
        if changed_keys is None:
            todo = list(claims.values())
        else:
            todo = [c for ns, name in sorted(changed_keys) if (c := claims.get(name, ns)) is not None]
        wrote = False
        for claim in todo:
            updated = satisfy_binding_conditions(claim, drivers, format_time(ctx.now()))
            if updated is None:
                continue
            try:
                written = ctx.store.update_status(updated)
            except (Conflict, NotFound):
                continue  # a newer claim (or none): its own watch event brings it back
            except ApiError as exc:
                ctx.decide(COMPONENT, "FailedUpdateStatus", claim, f"cannot set binding conditions: {exc}")
                continue
            claims.put(written)
            devices = ", ".join(sorted(f"{d.get('driver')}/{d.get('pool')}/{d.get('device')}"
                                       for d in (written.get("status") or {}).get("devices") or []))
            ctx.decide(COMPONENT, "set-binding-conditions", written,
                       f"binding conditions of {devices} set True (Ready: {READY_MESSAGE})")
            wrote = True
        return wrote
