"""Pod-level resources (``spec.resources``, KEP-2837 PodLevelResources: beta and on by default
since 1.34): which names a pod may set, the containers' aggregate, and the API server's defaulting.

Upstream: ``k8s.io/component-helpers/resource`` (``IsSupportedPodLevelResource``,
``AggregateContainerRequests``, ``AggregateContainerLimits``) and, with 1.37's
PodLevelResourcesFixDefaulting (beta, on), ``pkg/api/pod`` ``DefaultPodLevelResources`` run
by the pod strategy's PrepareForCreate, before validation.
"""

from __future__ import annotations

from typing import Any

from drasched.quantity import Quantity, QuantityError

Obj = dict[str, Any]

HUGEPAGES_PREFIX = "hugepages-"
SUPPORTED_NAMES = ("cpu", HUGEPAGES_PREFIX, "memory")
"""``SupportedPodLevelResources()`` as ``sets.List`` orders it (for the NotSupported message)."""


def is_supported(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and hugepages-*."""
    return name in ("cpu", "memory") or name.startswith(HUGEPAGES_PREFIX)


def _list(values: Any) -> dict[str, Quantity]:
    out: dict[str, Quantity] = {}
    for name, raw in (values.items() if isinstance(values, dict) else ()):
        if isinstance(raw, str | int | float):
            try:
                out[name] = Quantity.parse(raw)
            except QuantityError:
                continue  # validation names it
    return out


def _container(c: Any, part: str) -> dict[str, Quantity]:
    res = c.get("resources") if isinstance(c, dict) else None
    if not isinstance(res, dict):
        return {}
    if part == "limits":
        return _list(res.get("limits"))
    # the API server defaults a container's missing request to its limit
    return {**_list(res.get("limits")), **_list(res.get("requests"))}


def _add(into: dict[str, Quantity], more: dict[str, Quantity]) -> None:
    for k, v in more.items():
        into[k] = into[k] + v if k in into else v


def _max(into: dict[str, Quantity], more: dict[str, Quantity]) -> None:
    for k, v in more.items():
        if k not in into or v > into[k]:
            into[k] = v


def aggregate(spec: Obj, part: str = "requests") -> dict[str, Quantity]:
    """``AggregateContainerRequests`` (``part="requests"``) or ``AggregateContainerLimits``:
    containers summed, restartable init containers (sidecars) added, the init phase as a max."""
    total: dict[str, Quantity] = {}
    containers = spec.get("containers")
    for c in containers if isinstance(containers, list) else []:
        _add(total, _container(c, part))
    sidecars: dict[str, Quantity] = {}
    init_max: dict[str, Quantity] = {}
    inits = spec.get("initContainers")
    for c in inits if isinstance(inits, list) else []:
        req = _container(c, part)
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            _add(total, req)
            _add(sidecars, req)
            _max(init_max, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _max(init_max, step)
    _max(total, init_max)
    return total


def default_pod_level_resources(spec: Obj) -> None:
    """``DefaultPodLevelResources`` for a pod that sets pod-level requests or limits: hugepage
    limits from the containers' aggregate limits (when the pod requests none of that size),
    then cpu and memory requests from the containers' aggregate requests, then any supported
    request still missing from the pod-level limit. (Upstream's third step, pod-level limits
    from the containers' limits, is left out: drasched schedules on requests, and a limit that
    step writes is never below the pod's request nor any container's limit, so it changes no
    verdict of validation.)"""
    res = spec.get("resources")
    if not isinstance(res, dict):
        return
    requests, limits = res.get("requests"), res.get("limits")
    if not requests and not limits:
        return
    if not isinstance(requests or {}, dict) or not isinstance(limits or {}, dict):
        return  # the decoder refuses these
    requests, limits = dict(requests or {}), dict(limits or {})
    for name, q in aggregate(spec, "limits").items():
        if name.startswith(HUGEPAGES_PREFIX) and name not in requests and name not in limits:
            limits[name] = str(q)
    for name, q in aggregate(spec, "requests").items():
        if name not in requests and name in ("cpu", "memory"):
            requests[name] = str(q)
    for name, value in limits.items():
        if name not in requests and is_supported(name):
            requests[name] = value
    if limits:
        res["limits"] = limits
    if requests:
        res["requests"] = requests
