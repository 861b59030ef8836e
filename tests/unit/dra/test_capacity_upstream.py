"""Consumable capacity arithmetic, ported from upstream's ``consumable_capacity_test.go``
(``calculate-consumed-capacity``, ``violate-capacity-sharing``, ``get-consumed-capacity-from-request``),
the integer cases (the fractional-range arithmetic is not a 1.36 default)."""

from __future__ import annotations

from typing import Any

import pytest

from drasched.dra.capacity import consumption
from drasched.dra.pools import DeviceEntry, PoolIndex
from tests.unit.dra.dra_builders import DRIVER, device, rslice


def _device(capacity: dict[str, Any]) -> DeviceEntry:
    idx = PoolIndex([rslice("s", [device("d", capacity=capacity, allowMultipleAllocations=True)], node_name="n")])
    return idx.pools[(DRIVER, "n")].devices[0]


def _policy(**p: Any) -> dict[str, Any]:
    return p


CALCULATE = {
    # name: (requested, capacity value, policy, expected consumed)
    "empty": (None, "1", {}, "1"),
    "min in range": (None, "2", _policy(default="1", validRange={"min": "1"}), "1"),
    "default in set": (None, "2", _policy(default="1", validValues=["1"]), "1"),
    "more than min in range": ("2", "2", _policy(default="1", validRange={"min": "1"}), "2"),
    "less than min in range": ("1", "2", _policy(default="1", validRange={"min": "2"}), "2"),
    "with step (round up)": ("2", "3", _policy(default="1", validRange={"min": "1", "step": "2"}), "3"),
    "with step (no remaining)": ("2", "2", _policy(default="1", validRange={"min": "1", "step": "1"}), "2"),
    "integer-step-sub-milli-request-rounds-up-without-fractional-range": (
        "1.0000001",
        "3",
        _policy(default="1", validRange={"min": "1", "step": "1"}),
        "2",
    ),
    "negative-step-request-below-min-returns-min": (
        "5",
        "15",
        _policy(default="10", validRange={"min": "10", "step": "-1"}),
        "10",
    ),
    "positive-binary-step-request-above-min-rounds-to-itself": (
        "3Gi",
        "3Gi",
        _policy(default="1Gi", validRange={"min": "1Gi", "step": "1Gi"}),
        "3Gi",
    ),
    "valid value in set": ("2", "3", _policy(default="1", validValues=["1", "2", "3"]), "2"),
    "set (round up)": ("2", "3", _policy(default="1", validValues=["1", "3"]), "3"),
}


@pytest.mark.parametrize("name", sorted(CALCULATE))
def test_calculate_consumed_capacity(name: str) -> None:
    # upstream consumable_capacity_test.go testCalculateConsumedCapacity
    requested, value, policy, want = CALCULATE[name]
    cap: dict[str, Any] = {"value": value}
    if policy:
        cap["requestPolicy"] = policy
    dev = _device({"c": cap})
    use = consumption(dev, {"c": requested} if requested is not None else None)
    assert use is not None
    assert use.wire == {"c": want}


VIOLATE = {
    # name: (requested, policy, violates) with a capacity large enough not to matter
    "less than maximum": ("1", _policy(default="1", validRange={"min": "1", "max": "2"}), False),
    "more than maximum": ("2", _policy(default="1", validRange={"min": "1", "max": "1"}), True),
    "in set": ("1", _policy(default="1", validValues=["1"]), False),
    "not in set": ("2", _policy(default="1", validValues=["1"]), True),
}


@pytest.mark.parametrize("name", sorted(VIOLATE))
def test_violates_capacity_request_policy(name: str) -> None:
    # upstream consumable_capacity_test.go testViolateCapacityRequestPolicy: a violating
    # request makes the device unusable for it
    requested, policy, violates = VIOLATE[name]
    dev = _device({"c": {"value": "10", "requestPolicy": policy}})
    assert (consumption(dev, {"c": requested}) is None) == violates


def test_consumed_capacity_from_request() -> None:
    # upstream "get-consumed-capacity-from-request": requested value, else the default, else all of it
    dev = _device(
        {
            "capacity-0": {"value": "2", "requestPolicy": {"default": "2", "validRange": {"min": "1"}}},
            "capacity-1": {"value": "2", "requestPolicy": {"default": "1", "validRange": {"min": "1"}}},
            "dummy": {"value": "1"},
        }
    )
    use = consumption(dev, {"capacity-0": "1", f"{DRIVER}/dummy": "1"})
    assert use is not None
    assert use.wire == {"capacity-0": "1", "capacity-1": "1", "dummy": "1"}


def test_request_for_a_capacity_the_device_lacks_skips_it() -> None:
    # upstream resolveCapacityRequests: a request naming an unknown capacity does not match
    assert consumption(_device({"capacity-1": {"value": "1"}}), {"capacity-0": "1"}) is None
