"""DeviceTaintRule as the API server takes it: validation (pkg/apis/resource/validation
``ValidateDeviceTaintRule``), ``timeAdded`` defaulting (``SetDefaults_DeviceTaint`` and the
devicetaintrule strategy's ``PrepareForUpdate``), and the versions read as v1."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.conversion import ConversionError, to_storage_version
from drasched.api.errors import Invalid
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]


def rule(name: str = "r", **spec: Any) -> Obj:
    body: Obj = {"deviceSelector": {"driver": "gpu.example.com"},
                 "taint": {"key": "example.com/broken", "effect": "NoExecute"}}
    body.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": body}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def causes(obj: Obj) -> list[str]:
    with pytest.raises(Invalid) as err:
        MemoryStore().create(obj)
    return [str(c) for c in err.value.causes]


def test_effects_are_none_noschedule_noexecute_as_validDeviceTaintEffects() -> None:
    got = causes(rule(taint={"key": "k", "effect": "PreferNoSchedule"}))
    assert got == ['spec.taint.effect: Unsupported value: "PreferNoSchedule": '
                   'supported values: "NoExecute", "NoSchedule", "None"']
    for effect in ("None", "NoSchedule", "NoExecute"):
        MemoryStore().create(rule(taint={"key": "k", "effect": effect}))


def test_taint_key_and_effect_are_required() -> None:
    # validateDeviceTaint: ValidateLabelName "includes checking for non-empty"; effect is Required
    got = causes(rule(taint={"value": "x"}))
    assert {c.split(":")[0] for c in got} == {"spec.taint.key", "spec.taint.effect"}
    assert "spec.taint.effect: Required value" in got


def test_selector_names_are_checked_only_when_set_as_validateDeviceTaintSelector() -> None:
    got = causes(rule(deviceSelector={"driver": "Not_A_Driver", "pool": "", "device": "GPU 0"}))
    fields = [c.split(":")[0] for c in got]
    assert fields == ["spec.deviceSelector.driver", "spec.deviceSelector.pool", "spec.deviceSelector.device"]
    MemoryStore().create(rule(deviceSelector={}))  # the empty selector is valid (matches every device)
    MemoryStore().create(rule(name="no-selector", deviceSelector=None))


def test_time_added_is_the_servers_clock_when_unset() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    created = store.create(rule())
    assert created["spec"]["taint"]["timeAdded"] == "2026-01-01T00:00:00Z"
    given = store.create(rule("given", taint={"key": "k", "effect": "NoExecute", "timeAdded": "2025-06-01T00:00:00Z"}))
    assert given["spec"]["taint"]["timeAdded"] == "2025-06-01T00:00:00Z"


def test_changing_the_effect_restarts_time_added_as_PrepareForUpdate() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    created = store.create(rule(taint={"key": "k", "effect": "None"}))
    clock.now += timedelta(minutes=5)
    created["spec"]["taint"]["value"] = "v"  # same effect: the time stays
    same = store.update(created)
    assert same["spec"]["taint"]["timeAdded"] == "2026-01-01T00:00:00Z"
    same["spec"]["taint"]["effect"] = "NoExecute"
    changed = store.update(same)
    assert changed["spec"]["taint"]["timeAdded"] == "2026-01-01T00:05:00Z"


def test_slice_taints_get_time_added_too() -> None:
    store = MemoryStore(clock=Clock())
    created = store.create({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": "gpu.example.com", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                 "nodeName": "n1",
                 "devices": [{"name": "gpu-0", "taints": [{"key": "k", "effect": "NoSchedule"}]}]}})
    assert created["spec"]["devices"][0]["taints"][0]["timeAdded"] == "2026-01-01T00:00:00Z"


def test_status_keeps_at_most_eight_conditions_as_DeviceTaintRuleStatusMaxConditions() -> None:
    store = MemoryStore()
    created = store.create(rule())
    created["status"] = {"conditions": [{"type": f"T{i}", "status": "True", "reason": "R", "message": "",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"} for i in range(9)]}
    with pytest.raises(Invalid, match=re.escape("status.conditions: Too many: 9: must have at most 8 items")):
        store.update_status(created)


def test_v1beta2_and_v1alpha3_rules_are_read_as_v1_and_v1beta1_is_refused() -> None:
    # 1.37 serves DeviceTaintRule as v1, v1beta2 (since 1.36) and v1alpha3 (since 1.33), all of
    # v1's shape since 1.35 tombstoned deviceClassName and selectors; v1beta1 never had it.
    for version in ("v1beta2", "v1alpha3"):
        older = {**rule(), "apiVersion": f"resource.k8s.io/{version}"}
        assert to_storage_version(older)["apiVersion"] == "resource.k8s.io/v1"
        assert to_storage_version(older)["spec"] == older["spec"]
    with pytest.raises(ConversionError, match=re.escape(
            "resource.k8s.io/v1beta1 DeviceTaintRule is not served by Kubernetes 1.37: write it as "
            "resource.k8s.io/v1 (also accepted and converted: resource.k8s.io/v1beta2, resource.k8s.io/v1alpha3)")):
        to_storage_version({**rule(), "apiVersion": "resource.k8s.io/v1beta1"})
    assert kinds.for_object(rule()) is kinds.DEVICE_TAINT_RULE
