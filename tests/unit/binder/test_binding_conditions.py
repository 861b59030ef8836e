"""Binding conditions (KEP-5007): the pod is bound only once its devices are ready.

Upstream: kube-scheduler's DynamicResources PreBind writes the allocation and reservation,
then polls (every 5 s, ``bindingTimeout`` 600 s) until every ``bindingConditions`` entry of
an allocated device is True in the claim's ``status.devices`` (``isPodReadyForBinding``); a
True ``bindingFailureConditions`` entry or the timeout fails the attempt.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from drasched.api import kinds
from drasched.binder.bindingconditions import BINDING_TIMEOUT, POLL_INTERVAL, waiting_for
from drasched.binder.claims import BindFailure
from tests.unit.binder.helpers import (
    NS,
    T0,
    Recorder,
    add_bind_request,
    add_claim,
    add_pod,
    allocation,
    claim_entry,
    get_br,
    make_binder,
    make_store,
)

Obj = dict[str, Any]


def conditional(node: str, device: str) -> Obj:
    """An allocation whose device needs ``Attached`` (and fails on ``AttachFailed``)."""
    alloc = allocation(node, device)
    alloc["devices"]["results"][0].update(bindingConditions=["Attached"], bindingFailureConditions=["AttachFailed"])
    return alloc


def set_device_condition(store: Any, claim: str, cond_type: str, status: str = "True") -> None:
    """What the driver's controller does: report the device's condition in the claim's status."""
    c = store.get(kinds.RESOURCE_CLAIM, claim, NS)
    result = c["status"]["allocation"]["devices"]["results"][0]
    condition = {"type": cond_type, "status": status, "reason": "Test", "message": "set by the test",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
    c["status"]["devices"] = [{"driver": result["driver"], "pool": result["pool"], "device": result["device"],
                               "conditions": [condition]}]
    store.update_status(c)


def setup() -> tuple[Any, Obj]:
    store, _ = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "n1", [claim_entry(claim, conditional("n1", "gpu-0"))])
    return store, pod


def test_the_pod_waits_unbound_with_its_claim_allocated_and_reserved() -> None:
    store, pod = setup()
    rec = Recorder()
    binder = make_binder(store, rec)

    out = binder.process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason, out.attempts) == ("Pending", "BindingConditionsPending", 0)
    assert "spec" not in store.get(kinds.POD, "p", NS) or not store.get(kinds.POD, "p", NS)["spec"].get("nodeName")
    claim = store.get(kinds.RESOURCE_CLAIM, "c1", NS)
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": pod["metadata"]["uid"]}]
    assert get_br(store, "p")["status"]["message"].startswith("waiting for binding conditions for device on node n1")
    # upstream's Event, once
    assert rec.events == [("p", "Normal", "BindingConditionsPending",
                           "waiting for binding conditions for device on node n1")]
    # Nothing changed: nothing new to write or say (an embedded run ends here, waiting).
    assert binder.process(get_br(store, "p"), T0 + timedelta(seconds=1)) is None
    assert len(rec.events) == 1


def test_the_pod_is_bound_once_the_driver_reports_the_condition_true() -> None:
    store, _ = setup()
    rec = Recorder()
    binder = make_binder(store, rec)
    binder.process(get_br(store, "p"), T0)
    set_device_condition(store, "c1", "Attached", "False")
    out = binder.process(get_br(store, "p"), T0 + timedelta(seconds=5))
    assert out is not None and out.reason == "BindingConditionsPending"  # False is not True
    assert not store.get(kinds.POD, "p", NS)["spec"].get("nodeName")

    set_device_condition(store, "c1", "Attached")
    out = binder.process(get_br(store, "p"), T0 + timedelta(seconds=10))

    assert out is not None and (out.phase, out.attempts) == ("Succeeded", 1)
    assert store.get(kinds.POD, "p", NS)["spec"]["nodeName"] == "n1"
    assert rec.events[-1][2] == "Scheduled"


def test_a_failure_condition_fails_the_bind_and_frees_the_device() -> None:
    store, _ = setup()
    binder = make_binder(store, Recorder())
    binder.process(get_br(store, "p"), T0)
    set_device_condition(store, "c1", "AttachFailed")

    out = binder.process(get_br(store, "p"), T0 + timedelta(seconds=5))

    assert out is not None and (out.phase, out.reason) == ("Failed", "BindingFailed")
    assert "claim c1 binding failed: reason=Test" in out.message
    status = store.get(kinds.RESOURCE_CLAIM, "c1", NS).get("status") or {}
    assert not status.get("allocation") and not status.get("reservedFor") and not status.get("devices")
    assert not store.get(kinds.POD, "p", NS)["spec"].get("nodeName")


def test_the_binding_timeout_fails_the_bind() -> None:
    store, _ = setup()
    binder = make_binder(store, Recorder())
    binder.process(get_br(store, "p"), T0)

    assert binder.process(get_br(store, "p"), T0 + BINDING_TIMEOUT) is None  # not past it yet
    out = binder.process(get_br(store, "p"), T0 + BINDING_TIMEOUT + timedelta(seconds=1))

    assert out is not None and (out.phase, out.reason) == ("Failed", "BindingTimeout")
    assert not (store.get(kinds.RESOURCE_CLAIM, "c1", NS).get("status") or {}).get("allocation")


def test_serve_polls_every_five_seconds_as_upstream() -> None:
    store, _ = setup()
    binder = make_binder(store, Recorder(), binding_poll=POLL_INTERVAL)

    first = binder.process(get_br(store, "p"), T0)
    assert first is not None and first.retry_at == T0 + POLL_INTERVAL
    assert binder.process(get_br(store, "p"), T0 + timedelta(seconds=1)) is None  # before the poll is due
    again = binder.process(get_br(store, "p"), T0 + POLL_INTERVAL)
    assert again is not None and again.retry_at == T0 + 2 * POLL_INTERVAL


def test_a_device_without_binding_conditions_binds_at_once() -> None:
    store, _ = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "n1", [claim_entry(claim, allocation("n1", "gpu-0"))])
    out = make_binder(store, Recorder()).process(get_br(store, "p"), T0)
    assert out is not None and out.phase == "Succeeded"


def test_readiness_reads_each_device_by_driver_pool_and_name() -> None:
    claim = {"metadata": {"name": "c"}, "status": {
        "allocation": {"devices": {"results": [
            {"request": "a", "driver": "d", "pool": "p", "device": "x", "bindingConditions": ["Ready"]},
            {"request": "b", "driver": "d", "pool": "p", "device": "y", "bindingConditions": ["Ready"]}]}},
        "devices": [{"driver": "d", "pool": "p", "device": "x", "conditions": [{"type": "Ready", "status": "True"}]}]}}
    assert waiting_for([claim], T0) == "claim c: device d/p/y has no status yet"
    claim["status"]["devices"].append({"driver": "d", "pool": "p", "device": "y",
                                       "conditions": [{"type": "Ready", "status": "True"}]})
    assert waiting_for([claim], T0) is None


def test_a_failure_condition_that_is_false_does_not_fail() -> None:
    claim = {"metadata": {"name": "c"}, "status": {
        "allocation": {"devices": {"results": [
            {"request": "a", "driver": "d", "pool": "p", "device": "x", "bindingConditions": ["Ready"],
             "bindingFailureConditions": ["Broken"]}]}},
        "devices": [{"driver": "d", "pool": "p", "device": "x",
                     "conditions": [{"type": "Broken", "status": "False"}]}]}}
    assert waiting_for([claim], T0) == "claim c: device d/p/x: condition Ready is not True"
    claim["status"]["devices"][0]["conditions"][0]["status"] = "True"
    with pytest.raises(BindFailure, match="binding failed"):
        waiting_for([claim], T0)
