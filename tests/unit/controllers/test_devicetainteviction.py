"""The device taint eviction controller (upstream pkg/controller/devicetainteviction):
what it writes to a pod it evicts and to a DeviceTaintRule's status, on virtual time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from drasched.api import kinds
from drasched.controllers.devicetainteviction import DeviceTaintEvictionController, PendingPod, rule_condition
from drasched.dra.taintrules import Eviction
from drasched.sim.clock import DEFAULT_START
from tests.unit.controllers.helpers import new_ctx, settle

Obj = dict[str, Any]
UID = "7a1d0000-0000-4000-8000-00000000000a"


def seed(ctx: Any, effect: str = "NoExecute", tolerations: list[Obj] | None = None, node: str | None = "n1") -> None:
    store = ctx.store
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                  "spec": {"driver": "gpu.example.com", "pool": {"name": "n1", "generation": 1,
                                                                 "resourceSliceCount": 1},
                           "nodeName": "n1", "devices": [{"name": "gpu-0"}]}})
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
                  "spec": {"deviceSelector": {"device": "gpu-0"},
                           "taint": {"key": "example.com/bad", "effect": effect}}})
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": UID},
                "spec": {"containers": [{"name": "c", "image": "busybox"}],
                         "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}}
    if node:
        pod["spec"]["nodeName"] = node
    store.create(pod)
    result: Obj = {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
    if tolerations:
        result["tolerations"] = tolerations
    claim = store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                          "metadata": {"name": "c", "namespace": "default"},
                          "spec": {"devices": {"requests": [{"name": "gpu",
                                                             "exactly": {"deviceClassName": "gpu.example.com"}}]}}})
    claim["status"] = {"allocation": {"devices": {"results": [result]}},
                       "reservedFor": [{"resource": "pods", "name": "p", "uid": UID}]}
    store.update_status(claim)


def test_evicted_pod_gets_event_disruption_target_and_deletion_addConditionAndDeletePod() -> None:
    ctx = new_ctx()
    seed(ctx)
    settle(ctx, [DeviceTaintEvictionController()])
    pod = ctx.store.get(kinds.POD, "p", "default")  # bound: stays until its kubelet finishes it
    assert pod["metadata"].get("deletionTimestamp")
    (cond,) = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "DeletionByDeviceTaintManager", "Device Taint manager: deleting due to NoExecute taint")
    events = ctx.store.list(kinds.EVENT, "default").items
    assert [(e["reason"], e["message"], e["type"], e["source"]["component"]) for e in events] == [
        ("DeviceTaintManagerEviction", "Marking for deletion", "Normal", "device-taint-eviction-controller")]


def test_pod_not_bound_yet_is_left_alone_podEvictionTime() -> None:
    ctx = new_ctx()
    seed(ctx, node=None)
    settle(ctx, [DeviceTaintEvictionController()])
    assert not ctx.store.get(kinds.POD, "p", "default")["metadata"].get("deletionTimestamp")


def test_toleration_seconds_wait_on_the_virtual_clock() -> None:
    ctx = new_ctx()
    seed(ctx, tolerations=[{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}])
    controller = DeviceTaintEvictionController()
    assert controller.reconcile(ctx) is True  # wrote the rule's status
    assert not ctx.store.get(kinds.POD, "p", "default")["metadata"].get("deletionTimestamp")
    assert ctx.next_wakeup() == DEFAULT_START + timedelta(seconds=300)  # timeAdded + tolerationSeconds
    rule = ctx.store.get(kinds.DEVICE_TAINT_RULE, "r")
    (cond,) = rule["status"]["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.")
    settle(ctx, [controller])
    assert ctx.clock.now() == DEFAULT_START + timedelta(seconds=300)
    assert ctx.store.get(kinds.POD, "p", "default")["metadata"]["deletionTimestamp"]


def test_a_pod_being_deleted_is_not_evicted_again() -> None:
    ctx = new_ctx()
    seed(ctx)
    controller = DeviceTaintEvictionController()
    settle(ctx, [controller])
    pod = ctx.store.get(kinds.POD, "p", "default")
    pod["metadata"].setdefault("labels", {})["touched"] = "yes"  # a change wakes the controller
    ctx.store.update(pod)
    settle(ctx, [controller])
    assert len(ctx.store.list(kinds.EVENT, "default").items) == 1


def _pending(n: int, namespaces: int) -> list[PendingPod]:
    ev = Eviction(DEFAULT_START, (), frozenset({"u"}))
    return [PendingPod({"metadata": {"name": f"p{i}", "namespace": f"ns{i % namespaces}"}}, ev) for i in range(n)]


def rule_obj(effect: str) -> Obj:
    return {"metadata": {"name": "r", "uid": "u", "generation": 3}, "spec": {"taint": {"key": "k", "effect": effect}}}


def test_rule_condition_texts_are_upstreams_maybeUpdateRuleStatus() -> None:
    c = rule_condition(rule_obj("NoExecute"), _pending(3, 2), 2, [], (0, 0))
    assert (c["status"], c["reason"], c["observedGeneration"]) == ("True", "PodsPendingEviction", 3)
    assert c["message"] == ("3 pods need to be evicted in 2 different namespaces. "
                            "2 pods evicted since starting the controller.")
    assert rule_condition(rule_obj("NoExecute"), [], 0, [], (0, 0))["reason"] == "NotStarted"
    other = rule_condition(rule_obj("NoSchedule"), [], 0, [], (0, 0))
    assert (other["reason"], other["message"]) == ("OtherEffect", "Eviction only happens for the NoExecute effect.")
    none = rule_condition(rule_obj("None"), [], 0, _pending(1, 1), (2, 1))
    assert (none["status"], none["reason"]) == ("False", "NoEffect")
    assert none["message"] == ("2 published devices selected. 1 allocated device selected. 1 pod would be "
                               "evicted in 1 namespace if the effect was NoExecute. This information will not be "
                               "updated again. Recreate the DeviceTaintRule to trigger an update.")


def test_effect_none_reports_what_noexecute_would_do_and_evicts_nothing() -> None:
    ctx = new_ctx()
    seed(ctx, effect="None")
    settle(ctx, [DeviceTaintEvictionController()])
    assert not ctx.store.get(kinds.POD, "p", "default")["metadata"].get("deletionTimestamp")
    (cond,) = ctx.store.get(kinds.DEVICE_TAINT_RULE, "r")["status"]["conditions"]
    assert cond["reason"] == "NoEffect"
    assert cond["message"].startswith("1 published device selected. 1 allocated device selected. "
                                      "1 pod would be evicted in 1 namespace ")


def test_removing_the_rule_cancels_a_pending_eviction_cancelWorkWithEvent() -> None:
    ctx = new_ctx()
    seed(ctx, tolerations=[{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}])
    controller = DeviceTaintEvictionController()
    controller.reconcile(ctx)
    ctx.store.delete(kinds.DEVICE_TAINT_RULE, "r")
    settle(ctx, [controller])
    assert not ctx.store.get(kinds.POD, "p", "default")["metadata"].get("deletionTimestamp")
    events = ctx.store.list(kinds.EVENT, "default").items
    assert [(e["reason"], e["message"]) for e in events] == [("DeviceTaintManagerEviction", "Cancelling deletion")]


def test_a_claim_reserved_for_the_pods_group_evicts_the_pod_IsReservedForPod() -> None:
    # resourceclaim.IsReservedForPod with workload claims: a reservation for the PodGroup the
    # pod joins counts, matched by name (the pod does not know the group's uid).
    ctx = new_ctx()
    seed(ctx)
    pod = ctx.store.get(kinds.POD, "p", "default")
    pod["metadata"]["labels"] = {"drasched.io/pod-group": "g"}
    ctx.store.update(pod)
    claim = ctx.store.get(kinds.RESOURCE_CLAIM, "c", "default")
    claim["status"]["reservedFor"] = [{"apiGroup": "scheduling.drasched.io", "resource": "podgroups",
                                       "name": "g", "uid": "group-uid"}]
    ctx.store.update_status(claim)
    settle(ctx, [DeviceTaintEvictionController()])
    assert ctx.store.get(kinds.POD, "p", "default")["metadata"].get("deletionTimestamp")


def test_a_claim_reserved_for_the_pods_upstream_podgroup_evicts_the_pod_IsReservedForPod() -> None:
    # k8s.io/dynamic-resource-allocation resourceclaim.IsReservedForPod (1.37): a reservation
    # for scheduling.k8s.io podgroups named as the pod's spec.schedulingGroup.podGroupName.
    ctx = new_ctx()
    seed(ctx)
    pod = ctx.store.get(kinds.POD, "p", "default")
    pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    ctx.store.delete(kinds.POD, "p", "default", grace_period_seconds=0)  # the field is immutable: made anew
    del pod["metadata"]["resourceVersion"], pod["metadata"]["uid"]
    ctx.store.create(pod)
    claim = ctx.store.get(kinds.RESOURCE_CLAIM, "c", "default")
    claim["status"]["reservedFor"] = [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                       "name": "g", "uid": "group-uid"}]
    ctx.store.update_status(claim)
    settle(ctx, [DeviceTaintEvictionController()])
    assert ctx.store.get(kinds.POD, "p", "default")["metadata"].get("deletionTimestamp")


def test_a_claim_reserved_for_another_group_does_not_evict() -> None:
    ctx = new_ctx()
    seed(ctx)
    claim = ctx.store.get(kinds.RESOURCE_CLAIM, "c", "default")
    claim["status"]["reservedFor"] = [{"apiGroup": "scheduling.drasched.io", "resource": "podgroups",
                                       "name": "other", "uid": "group-uid"}]
    ctx.store.update_status(claim)
    settle(ctx, [DeviceTaintEvictionController()])
    assert not ctx.store.get(kinds.POD, "p", "default")["metadata"].get("deletionTimestamp")
