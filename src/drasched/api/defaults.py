"""Defaults the API server fills in, applied by the memory store so both stores agree.

* resource.k8s.io/v1 claim specs (claims and templates): a request's ``allocationMode``
  defaults to ExactCount and then ``count`` to 1, for ``exactly`` and for every
  ``firstAvailable`` subrequest; a toleration's ``operator`` to Equal (upstream
  ``SetDefaults_ExactDeviceRequest``, ``SetDefaults_DeviceSubRequest``, ``SetDefaults_DeviceToleration``).
* pods: pod-level requests (``spec.resources``) from the containers' aggregate and the
  pod-level limits (``api/pod_resources.py``, upstream ``DefaultPodLevelResources``).
* drasched's CRDs: the ``default:`` values of deploy/crds/*.yaml
  (tests/unit/test_crd_defaults.py keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drasched.api.pod_resources import default_pod_level_resources
from drasched.api.workload_defaults import WORKLOAD_DEFAULTS

Obj = dict[str, Any]


def _queue(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("priority", 100)
    for entry in (spec.get("resources") or {}).values():
        if isinstance(entry, dict):
            entry.setdefault("overQuotaWeight", 1)


def _pod_group(obj: Obj) -> None:
    obj.setdefault("spec", {}).setdefault("minMember", 1)


CRD_DEFAULTS: dict[str, Callable[[Obj], None]] = {"Queue": _queue, "PodGroup": _pod_group}


def apply_crd_defaults(kind: str, obj: Obj) -> None:
    """Fill the schema defaults of a drasched CRD object in place (no-op for other kinds)."""
    fill = CRD_DEFAULTS.get(kind)
    if fill is not None and isinstance(obj.get("spec", {}), dict):
        fill(obj)


def _device_request(body: Obj) -> None:
    body.setdefault("allocationMode", "ExactCount")
    if body["allocationMode"] == "ExactCount" and body.get("count") in (None, 0):
        body["count"] = 1  # count is omitempty: 0 and absent are one wire value, defaulted alike
    for tol in body.get("tolerations") or []:
        if isinstance(tol, dict):
            tol.setdefault("operator", "Equal")


def default_claim_spec(spec: Any) -> None:
    """Fill a ResourceClaimSpec's defaults in place."""
    if not isinstance(spec, dict):
        return
    for req in (spec.get("devices") or {}).get("requests") or []:
        if not isinstance(req, dict):
            continue
        if isinstance(req.get("exactly"), dict):
            _device_request(req["exactly"])
        for sub in req.get("firstAvailable") or []:
            if isinstance(sub, dict):
                _device_request(sub)


def apply_builtin_defaults(kind: str, obj: Obj) -> None:
    """Defaults of built-in kinds our logic reads (claims, claim templates, workloads)."""
    if kind in WORKLOAD_DEFAULTS and isinstance(obj.get("spec"), dict):
        WORKLOAD_DEFAULTS[kind](obj)
    elif kind == "Pod" and isinstance(obj.get("spec"), dict):
        default_pod_level_resources(obj["spec"])  # upstream: the pod strategy's PrepareForCreate
    elif kind == "ResourceClaim":
        default_claim_spec(obj.get("spec"))
    elif kind == "ResourceClaimTemplate" and isinstance(obj.get("spec"), dict):
        default_claim_spec(obj["spec"].get("spec"))
        # the template's ObjectMeta is a struct, not a pointer: the server always writes it
        obj["spec"].setdefault("metadata", {})


def default_taint_times(kind: str, obj: Obj, now: str, old: Obj | None = None) -> None:
    """A device taint's ``timeAdded`` is the server's clock when unset (upstream
    ``SetDefaults_DeviceTaint``), in ResourceSlices and DeviceTaintRules; a rule update that
    changes the effect and keeps the old time gets the current time (the devicetaintrule
    strategy's ``PrepareForUpdate``), so ``tolerationSeconds`` count from the new effect."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "ResourceSlice":
        for dev in spec.get("devices") or []:
            for taint in (dev.get("taints") if isinstance(dev, dict) else None) or []:
                if isinstance(taint, dict) and not taint.get("timeAdded"):
                    taint["timeAdded"] = now
    elif kind == "DeviceTaintRule" and isinstance(spec.get("taint"), dict):
        taint = spec["taint"]
        old_taint = ((old or {}).get("spec") or {}).get("taint") or {}
        if not taint.get("timeAdded") or (
                old_taint and taint.get("effect") != old_taint.get("effect")
                and taint.get("timeAdded") == old_taint.get("timeAdded")):
            taint["timeAdded"] = now
