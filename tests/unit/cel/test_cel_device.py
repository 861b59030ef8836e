"""DeviceView construction from ResourceSlice devices (upstream compile.go DeviceMatches and
parseQualifiedName) and its cache key."""

from __future__ import annotations

import pytest

from drasched.cel import DeviceView, Semver, compile_selector, device_view_from_slice_device
from drasched.quantity import Quantity

SLICE_DEVICE = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "cores": {"int": 108},
        "mig": {"bool": False},
        "driverVersion": {"version": "535.104.5"},
        "pci.example.com/slot": {"string": "0000:3b:00.0"},
    },
    "capacity": {"memory": {"value": "80Gi"}, "pci.example.com/lanes": {"value": "16"}},
    "allowMultipleAllocations": True,
}


def test_bare_names_belong_to_the_driver_domain_upstream() -> None:
    dev = device_view_from_slice_device("gpu.example.com", SLICE_DEVICE)
    assert dev.driver == "gpu.example.com"
    assert dev.attributes["gpu.example.com"] == {
        "model": "a100",
        "cores": 108,
        "mig": False,
        "driverVersion": Semver.parse("535.104.5"),
    }
    assert dev.attributes["pci.example.com"] == {"slot": "0000:3b:00.0"}
    assert dev.capacity == {
        "gpu.example.com": {"memory": Quantity("80Gi")},
        "pci.example.com": {"lanes": Quantity("16")},
    }
    assert dev.allow_multiple_allocations is True


def test_view_feeds_selectors() -> None:
    dev = device_view_from_slice_device("gpu.example.com", SLICE_DEVICE)
    sel = compile_selector(
        'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("535.0.0")) && '
        '!device.attributes["gpu.example.com"].mig && '
        'device.capacity["pci.example.com"].lanes.isGreaterThan(quantity("8")) && '
        'device.attributes["pci.example.com"].slot.startsWith("0000:") && device.allowMultipleAllocations'
    )
    assert sel.evaluate(dev)


def test_empty_device() -> None:
    dev = device_view_from_slice_device("d.example.com", {"name": "x"})
    assert (dev.attributes, dev.capacity, dev.allow_multiple_allocations) == ({}, {}, False)


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        ({"version": "1.0"}, "parse semantic version"),
        ({}, "unsupported attribute value"),
        ({"int": "3"}, "int value must be an integer"),
        ({"bool": "yes"}, "bool value must be a boolean"),
    ],
)
def test_bad_attribute_values(attr: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        device_view_from_slice_device("d", {"attributes": {"a": attr}})


def test_bad_capacity() -> None:
    with pytest.raises(ValueError):
        device_view_from_slice_device("d", {"capacity": {"m": {"value": "1Q"}}})
    with pytest.raises(ValueError, match="missing value"):
        device_view_from_slice_device("d", {"capacity": {"m": {}}})


def test_cache_key_is_stable_and_type_aware() -> None:
    a = DeviceView("d", {"d": {"x": 1, "y": "s"}}, {"d": {"m": Quantity("1Gi")}})
    b = DeviceView("d", {"d": {"y": "s", "x": 1}}, {"d": {"m": Quantity("1024Mi")}})
    assert a.cache_key == b.cache_key and hash(a) == hash(b) and a == b
    assert a.cache_key is a.cache_key  # computed once
    one = DeviceView("d", {"d": {"x": 1}}, {})
    true = DeviceView("d", {"d": {"x": True}}, {})
    assert one.cache_key != true.cache_key  # True == 1 in Python, not in CEL
    assert DeviceView("d", {}, {}, True).cache_key != DeviceView("d", {}, {}, False).cache_key
    assert DeviceView("d", {}, {}).cache_key != DeviceView("e", {}, {}).cache_key
