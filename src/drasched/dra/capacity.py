"""Consumable capacity (KEP-5075): what one request consumes of one device.

Upstream ``consumable_capacity.go``: a request names capacities (qualified or not; an
unqualified name belongs to the device's driver). Every capacity of the device is consumed:
the requested amount rounded up by the ``requestPolicy`` (``validRange`` to ``min`` and then
to ``min + n*step``, ``validValues`` to the next listed value), or, when not requested, the
policy default or else the whole capacity. A device that lacks a requested capacity, or whose
policy the rounded amount violates, cannot serve the request. Exact fractions throughout.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from drasched.api.resource import CapacityRequestPolicy
from drasched.dra.pools import DeviceEntry, format_quantity, qualify, quantity, qvalue
from drasched.quantity import QuantityError

__all__ = ["Consumption", "consumption"]


@dataclass(frozen=True)
class Consumption:
    """Amounts by fully qualified name, and the wire form of ``consumedCapacity``."""

    amounts: dict[str, Fraction]
    wire: dict[str, str]


def _round_up(requested_raw: str | int | float, policy: CapacityRequestPolicy | None) -> tuple[Fraction, str]:
    req = quantity(requested_raw)
    if policy is None:
        return req.value, str(req)
    rng = policy.valid_range
    if rng is not None and rng.min is not None:
        lo = quantity(rng.min)
        if req.value < lo.value:
            return lo.value, str(lo)
        if rng.step is None:
            return req.value, str(req)
        step = quantity(rng.step)
        if step.value <= 0:
            return req.value, str(req)
        n = -(-(req.value - lo.value) // step.value)  # ceil
        value = lo.value + n * step.value
        if value == req.value:
            return value, str(req)
        return value, format_quantity(value, step.format)
    if policy.valid_values:
        for v in policy.valid_values:
            q = quantity(v)
            if req.value <= q.value:
                return q.value, str(q)
    return req.value, str(req)


def _violates(value: Fraction, policy: CapacityRequestPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and value == qvalue(policy.default):
        return False
    rng = policy.valid_range
    if rng is not None:
        if rng.max is not None and value > qvalue(rng.max):
            return True
        if rng.step is not None and rng.min is not None:
            step = qvalue(rng.step)
            if step > 0 and (value - qvalue(rng.min)) % step != 0:
                return True
        return False
    if policy.valid_values:
        return all(value != qvalue(v) for v in policy.valid_values)
    return False


def consumption(dev: DeviceEntry, requests: dict[str, str | int | float] | None) -> Consumption | None:
    """What ``requests`` consumes of ``dev`` on its own, or ``None`` if the device cannot serve it.

    The result does not depend on what others consume; callers add existing consumption
    for devices that allow multiple allocations.
    """
    resolved: dict[str, str | int | float] = {}
    for name, raw in (requests or {}).items():
        fq = qualify(name, dev.driver)
        if fq not in dev.capacity or fq in resolved:
            return None
        resolved[fq] = raw
    amounts: dict[str, Fraction] = {}
    wire: dict[str, str] = {}
    try:
        for fq, cap in dev.capacity.items():
            policy = cap.policy
            if fq in resolved:
                value, text = _round_up(resolved[fq], policy)
            elif policy is not None and policy.default is not None:
                q = quantity(policy.default)
                value, text = q.value, str(q)
            else:
                value, text = cap.value, str(quantity(cap.raw_value))
            if value < 0 or _violates(value, policy) or value > cap.value:
                return None
            amounts[fq] = value
            wire[cap.name] = text
    except QuantityError:
        return None
    return Consumption(amounts, wire)
