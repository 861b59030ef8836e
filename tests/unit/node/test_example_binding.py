"""The DRA example driver with binding conditions: ``kubeletPlugin.bindingConditions=true``
(internal/profiles/gpu/gpu.go ``EnumerateDevices``) and its controller's ``BindingConditions``
plugin (cmd/dra-example-controller/plugins/bindingconditions.go ``Reconcile``,
``isConditionTrue``, ``setDeviceCondition``), github.com/kubernetes-sigs/dra-example-driver.
The whole example runs in ``tests/scenarios/node/025-dra-example-driver-binding-conditions.yaml``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from drasched.api import kinds, validation
from drasched.node.example_binding import satisfy_binding_conditions
from drasched.node.example_gpu import EXAMPLE_DRIVER_NAME, ExampleGpuDriver
from drasched.node.publisher import SlicePublisher
from drasched.node.sim_drivers import parse_sim_gpus

Obj = dict[str, Any]
NOW = "2026-01-01T00:00:05Z"
DRIVERS = frozenset({EXAMPLE_DRIVER_NAME})


def example(spec: str) -> ExampleGpuDriver:
    d = parse_sim_gpus(f"driver={EXAMPLE_DRIVER_NAME},{spec}").driver("n")
    assert isinstance(d, ExampleGpuDriver)
    return d


def test_gpu_profile_gives_every_device_the_binding_conditions() -> None:
    """gpu.go: after building the devices, every one of them (partitions and full devices too)."""
    for spec in ("count=2,bindingConditions", "count=1,partitions=2,bindingConditions"):
        d = example(spec)
        devs = d.pools("n")["n"].devices
        assert devs and all(dev["bindingConditions"] == ["BindingConditions"]
                            and dev["bindingFailureConditions"] == ["BindingFailureConditions"]
                            and "bindsToNode" not in dev for dev in devs)
        for s in SlicePublisher(None, d.name, "n").desired_slices(d.pools("n")):
            validation.validate(s, kinds.RESOURCE_SLICE)  # as the API server accepts them
    assert all("bindingConditions" not in dev for dev in example("count=1").pools("n")["n"].devices)


def test_binding_conditions_are_the_example_drivers_chart_value() -> None:
    with pytest.raises(ValueError, match=re.escape("bindingConditions is the DRA example driver's chart value")):
        parse_sim_gpus("driver=gpu.nvidia.com,bindingConditions")
    assert "binding condition BindingConditions" in parse_sim_gpus(
        f"driver={EXAMPLE_DRIVER_NAME},bindingConditions").describe()


def result(driver: str = EXAMPLE_DRIVER_NAME, device: str = "gpu-0", conditions: bool = True) -> Obj:
    out: Obj = {"request": "gpu", "driver": driver, "pool": "n", "device": device}
    if conditions:
        out |= {"bindingConditions": ["BindingConditions"], "bindingFailureConditions": ["BindingFailureConditions"]}
    return out


def claim(*results: Obj, devices: list[Obj] | None = None) -> Obj:
    status: Obj = {"allocation": {"devices": {"results": list(results)}}}
    if devices is not None:
        status["devices"] = devices
    return {"metadata": {"name": "c", "namespace": "ns"}, "status": status}


READY = {"type": "BindingConditions", "status": "True", "reason": "Ready", "message": "Device is ready",
         "lastTransitionTime": NOW}


def test_reconcile_adds_a_device_entry_with_the_condition_true() -> None:
    out = satisfy_binding_conditions(claim(result()), DRIVERS, NOW)
    assert out is not None
    assert out["status"]["devices"] == [{"driver": EXAMPLE_DRIVER_NAME, "pool": "n", "device": "gpu-0",
                                         "conditions": [READY]}]


def test_reconcile_updates_a_false_condition_and_keeps_other_entries() -> None:
    """setDeviceCondition: the device's entry is updated in place, its other conditions kept."""
    other = {"type": "Attached", "status": "False", "reason": "x", "message": "", "lastTransitionTime": NOW}
    stale = {**READY, "status": "False", "reason": "NotYet", "message": "wait"}
    entry = {"driver": EXAMPLE_DRIVER_NAME, "pool": "n", "device": "gpu-0", "conditions": [other, stale]}
    out = satisfy_binding_conditions(claim(result(), devices=[entry]), DRIVERS, NOW)
    assert out is not None and out["status"]["devices"] == [{**entry, "conditions": [other, READY]}]
    assert entry["conditions"][1]["status"] == "False"  # the claim as read is not changed


def test_nothing_to_do_leaves_the_claim_alone() -> None:
    """isConditionTrue; other drivers' devices, devices without conditions, no allocation."""
    done = {"driver": EXAMPLE_DRIVER_NAME, "pool": "n", "device": "gpu-0", "conditions": [READY]}
    assert satisfy_binding_conditions(claim(result(), devices=[done]), DRIVERS, NOW) is None
    assert satisfy_binding_conditions(claim(result(driver="fabric.example.com")), DRIVERS, NOW) is None
    assert satisfy_binding_conditions(claim(result(conditions=False)), DRIVERS, NOW) is None
    assert satisfy_binding_conditions({"metadata": {"name": "c"}}, DRIVERS, NOW) is None
    assert satisfy_binding_conditions(claim(result()), frozenset(), NOW) is None
