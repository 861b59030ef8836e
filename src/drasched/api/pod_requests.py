"""A pod's requests as numbers: upstream's ``PodRequests``, shared by the scheduler's fit and
the simulated kubelet's admission so both count a pod the same way.

Amounts are float64 in integral units so comparisons are exact: cpu in millicores, everything
else in whole base units (bytes, devices, pods), rounded up as upstream's ``Value()`` does.
Floats stay exact for integers below 2**53, far above any node. Parsed quantities are cached:
a cluster's pods repeat the same few strings, and parsing is the cost of this function.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from drasched.api.pod_resources import is_supported
from drasched.quantity import Quantity

Obj = dict[str, Any]
Requests = dict[str, float]
"""Resource name -> amount in vector units."""

CPU = "cpu"
PODS = "pods"


@lru_cache(maxsize=65536, typed=True)  # typed: True, 1 and 1.0 hash alike but parse differently
def _units_cached(name: str, raw: str | int | float) -> float:
    q = Quantity.parse(raw)
    return float(q.milli_value() if name == CPU else q.value_int())


def to_units(name: str, raw: str | int | float) -> float:
    """A wire quantity of resource ``name`` in vector units; raises ``QuantityError``."""
    return _units_cached(name, raw)


def _container_requests(container: Obj) -> dict[str, float]:
    res = container.get("resources") or {}
    out = {name: _units_cached(name, value) for name, value in (res.get("requests") or {}).items()}
    # The API server defaults a missing request to the limit.
    for name, value in (res.get("limits") or {}).items():
        if name not in out:
            out[name] = _units_cached(name, value)
    return out


def _add(into: dict[str, float], more: Mapping[str, float]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0.0) + v


def _max(into: dict[str, float], more: Mapping[str, float]) -> None:
    for k, v in more.items():
        if v > into.get(k, 0.0):
            into[k] = v


def pod_requests(spec: Obj) -> Requests:
    """Upstream ``PodRequests`` (k8s.io/component-helpers/resource): containers summed, init
    containers as a max, sidecars added; then the pod-level requests (``spec.resources``,
    PodLevelResources) replace that sum for the names they set that pod-level supports (cpu,
    memory, hugepages-*); then ``spec.overhead`` added.

    Includes ``pods: 1``. Raises ``QuantityError`` on a malformed quantity.
    """
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        _add(total, _container_requests(c))
    init_max: dict[str, float] = {}
    sidecars: dict[str, float] = {}
    for c in spec.get("initContainers") or []:
        req = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            _add(total, req)
            _add(sidecars, req)
            _max(init_max, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _max(init_max, step)
    _max(total, init_max)
    pod_level = (spec.get("resources") or {}).get("requests") or {}
    if pod_level:
        for name, value in pod_level.items():
            if is_supported(name):  # applyPodLevelResources
                total[name] = to_units(name, value)
    for name, value in (spec.get("overhead") or {}).items():
        _add(total, {name: to_units(name, value)})
    total[PODS] = total.get(PODS, 0.0) + 1.0
    return {k: v for k, v in total.items() if v}
