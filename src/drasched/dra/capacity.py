"""Consumable capacity (KEP-5075): what one request consumes of one device.

Upstream ``consumable_capacity.go``: a request names capacities (qualified or not; an
unqualified name belongs to the device's driver). Every capacity of the device is consumed:
the requested amount rounded up by the ``requestPolicy`` (``validRange`` to ``min`` and then
to ``min + n*step``, ``validValues`` to the next listed value), or, when not requested, the
policy default or else the whole capacity. A device that lacks a requested capacity, or whose
policy the rounded amount violates, cannot serve the request.

Step arithmetic is upstream's whole-number path (``DRAFractionalCapacityRange`` is alpha and off
in 1.37): request, ``min`` and ``step`` are read as ``Quantity.Value()`` reads them, rounded up
to an integer, so ``200m`` counts as 1. A request that this arithmetic cannot represent (above
MaxInt64, or rounding past it) and a negative amount abort the pod's attempt
(:class:`CapacityError`) instead of skipping the device, as upstream 1.37 does. Everything
else compares exact values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from drasched.api.resource import CapacityRequestPolicy
from drasched.dra.pools import DeviceEntry, format_quantity, qualify, quantity, qvalue
from drasched.quantity import QuantityError

__all__ = ["CapacityError", "Consumption", "consumption", "policy_refusal"]

MAX_INT64 = 2**63 - 1
NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"


class CapacityError(ValueError):
    """A capacity request no device can be checked against: the pod's attempt fails
    (upstream ``errCapacityRequestNotRepresentable`` and ``errNegativeCapacity``)."""


def _whole(value: Fraction) -> int:
    """``Quantity.Value()``: rounded up, away from zero."""
    return math.ceil(value) if value >= 0 else math.floor(value)


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
        if req.value > MAX_INT64:  # Value() would wrap
            raise CapacityError(f"{NOT_REPRESENTABLE}: request {req} exceeds MaxInt64")
        requested, step_int, low = _whole(req.value), _whole(step.value), _whole(lo.value)
        if step_int <= 0:  # refused by validation; upstream would divide by zero
            return req.value, str(req)
        n = -(-(requested - low) // step_int)  # ceil
        if low >= 0 and n > (MAX_INT64 - low) // step_int:
            raise CapacityError(f"{NOT_REPRESENTABLE}: rounding request {req} up to the next step passes MaxInt64")
        value = low + n * step_int
        return Fraction(value), format_quantity(Fraction(value), step.format)
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
            step = _whole(qvalue(rng.step))
            if step > 0 and (_whole(value) - _whole(qvalue(rng.min))) % step != 0:
                return True
        return False
    if policy.valid_values:
        return all(value != qvalue(v) for v in policy.valid_values)
    return False


def consumption(dev: DeviceEntry, requests: dict[str, str | int | float] | None) -> Consumption | None:
    """What ``requests`` consumes of ``dev`` on its own, or ``None`` if the device cannot serve it.

    The result does not depend on what others consume; callers add existing consumption
    for devices that allow multiple allocations. Raises :class:`CapacityError` for a request
    the device's arithmetic cannot represent or a negative amount, whichever capacity holds it
    (every amount is resolved before any policy is checked, as upstream does).
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
                try:
                    value, text = _round_up(resolved[fq], policy)
                except CapacityError as exc:
                    raise CapacityError(f'capacity "{cap.name}": {exc}') from None
            elif policy is not None and policy.default is not None:
                q = quantity(policy.default)
                value, text = q.value, str(q)
            else:
                value, text = cap.value, str(quantity(cap.raw_value))
            if value < 0:
                raise CapacityError(f'capacity "{cap.name}": capacity value is negative')
            amounts[fq] = value
            wire[cap.name] = text
        for fq, cap in dev.capacity.items():
            if _violates(amounts[fq], cap.policy) or amounts[fq] > cap.value:
                return None
    except QuantityError:
        return None
    return Consumption(amounts, wire)


def policy_refusal(dev: DeviceEntry, requests: dict[str, str | int | float] | None) -> str | None:
    """Why ``dev``'s ``requestPolicy`` refuses a requested amount although the device may have
    room: ``request 9Gi exceeds the requestPolicy maximum 8Gi of capacity memory`` (the amount
    rounded up by the policy is above ``validRange.max`` or every ``validValues`` entry); ``None``
    when no requested capacity is refused by its policy."""
    for name, raw in (requests or {}).items():
        cap = dev.capacity.get(qualify(name, dev.driver))
        if cap is None or cap.policy is None:
            continue
        try:
            value, _ = _round_up(raw, cap.policy)
            if not _violates(value, cap.policy):
                continue
            rng, values = cap.policy.valid_range, cap.policy.valid_values
            if rng is not None and rng.max is not None and value > qvalue(rng.max):
                top = str(quantity(rng.max))
            elif rng is None and values:
                top = str(max((quantity(v) for v in values), key=lambda q: q.value))
            else:
                return f"request {quantity(raw)} does not fit the requestPolicy of capacity {cap.name}"
            return f"request {quantity(raw)} exceeds the requestPolicy maximum {top} of capacity {cap.name}"
        except (CapacityError, QuantityError):
            continue
    return None
