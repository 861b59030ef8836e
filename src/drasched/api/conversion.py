"""Older resource.k8s.io versions on input, converted to v1 as the API server converts them.

Kubernetes 1.37 serves DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice in
``resource.k8s.io/v1`` (the storage version), ``v1beta2`` and ``v1beta1``. Manifests written
for a 1.32-1.35 cluster use the beta versions; drasched reads them and works on v1, as the
API server does: it decodes any served version and converts to the storage version.

What changes (upstream ``pkg/apis/resource/v1beta1/conversion.go`` and its generated
conversions; v1beta2 has v1's shape):

* **v1beta1 requests**: a request's flat fields (``deviceClassName``, ``selectors``,
  ``allocationMode``, ``count``, ``adminAccess``, ``tolerations``, ``capacity``) move into
  ``exactly``; when none is set the request has only ``firstAvailable`` (upstream's
  ``hasAnyMainRequestFieldsSet``). ``firstAvailable`` subrequests keep their shape.
* **v1beta1 devices**: a slice's ``devices[].basic`` is flattened onto the device
  (attributes, capacity, consumesCounters, nodeName, nodeSelector, allNodes, taints,
  bindsToNode, bindingConditions, bindingFailureConditions, allowMultipleAllocations).
* Everything else (classes, claim status, slice counters) has the same shape in all three.

Versions 1.37 no longer serves for these kinds (``v1alpha2``, ``v1alpha3``) are refused with
the versions that are accepted. DeviceTaintRule is served as ``v1``, ``v1beta2`` and
``v1alpha3``, all of v1's shape (there never was a ``v1beta1`` one).
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

GROUP = "resource.k8s.io"
STORAGE_VERSION = f"{GROUP}/v1"
CONVERTED_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceTaintRule")
SERVED_VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta2", f"{GROUP}/v1beta1")
SERVED_VERSIONS_OF: dict[str, tuple[str, ...]] = {
    # v1alpha3 (1.33) and v1beta2 (1.36) have v1's shape since 1.35 dropped deviceClassName and
    # selectors from the selector; there never was a v1beta1 DeviceTaintRule.
    "DeviceTaintRule": (f"{GROUP}/v1", f"{GROUP}/v1beta2", f"{GROUP}/v1alpha3"),
}
EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


class ConversionError(ValueError):
    """An apiVersion the API server does not serve for this kind; the message lists those it does."""


def needs_conversion(obj: Obj) -> bool:
    """Whether ``obj`` is one of the converted kinds in a version other than v1."""
    api_version = obj.get("apiVersion")
    return (isinstance(api_version, str) and api_version.startswith(GROUP + "/")
            and obj.get("kind") in CONVERTED_KINDS and api_version != STORAGE_VERSION)


def to_storage_version(obj: Obj) -> Obj:
    """``obj`` in resource.k8s.io/v1 (a new object; ``obj`` itself is left as it was).

    Raises :class:`ConversionError` for a version no 1.37 server serves. Malformed shapes
    are passed through unchanged for the decoder to report with their field paths.
    """
    if not needs_conversion(obj):
        return obj
    version = obj["apiVersion"]
    served = SERVED_VERSIONS_OF.get(obj["kind"], SERVED_VERSIONS)
    if version not in served:
        raise ConversionError(f"{version} {obj['kind']} is not served by Kubernetes 1.37: write it as "
                              f"{STORAGE_VERSION} (also accepted and converted: {', '.join(served[1:])})")
    out = copy.deepcopy(obj)
    out["apiVersion"] = STORAGE_VERSION
    if version == f"{GROUP}/v1beta1":
        _convert_v1beta1(out)
    return out


def _convert_v1beta1(obj: Obj) -> None:
    kind = obj["kind"]
    if kind == "ResourceClaim":
        _claim_spec(obj.get("spec"))
    elif kind == "ResourceClaimTemplate":
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _claim_spec(spec.get("spec"))
    elif kind == "ResourceSlice":
        spec = obj.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("devices"), list):
            spec["devices"] = [_device(d) for d in spec["devices"]]


def _claim_spec(spec: Any) -> None:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if isinstance(devices, dict) and isinstance(devices.get("requests"), list):
        devices["requests"] = [_request(r) for r in devices["requests"]]


def _request(req: Any) -> Any:
    """A v1beta1 DeviceRequest as v1: the flat fields become ``exactly``."""
    if not isinstance(req, dict):
        return req
    exact = {k: req[k] for k in EXACT_FIELDS if k in req and req[k] is not None}
    out = {k: v for k, v in req.items() if k not in EXACT_FIELDS}
    if exact:
        out["exactly"] = exact
    return out


def _device(device: Any) -> Any:
    """A v1beta1 Device as v1: ``basic``'s fields on the device itself."""
    if not isinstance(device, dict) or not isinstance(device.get("basic"), dict):
        return device
    out = {k: v for k, v in device.items() if k != "basic"}
    for k, v in device["basic"].items():
        out.setdefault(k, v)
    return out
