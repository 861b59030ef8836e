"""DaemonSet rules as upstream's controller defines them: pkg/controller/daemon/daemon_controller.go
(``NodeShouldRunDaemonPod``, ``podsShouldBeOnNode``, ``syncNodes``, ``updateDaemonSetStatus``), update.go
(``rollingUpdate``) and pkg/controller/daemon/util/daemonset_util.go (``AddOrUpdateDaemonPodTolerations``,
``ReplaceDaemonSetPodNodeNameNodeAffinity``, ``GetTargetNodeName``); and the controller driven through an
embedded run."""

from __future__ import annotations

from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.api.meta import parse_time
from drasched.controllers.workloads.daemonset import (
    DAEMON_TOLERATIONS,
    add_daemon_tolerations,
    daemon_pod,
    node_should_run,
    oldest_first,
    plan_node,
    replace_node_name_affinity,
    scaled_count,
    target_node,
)
from drasched.sim.runner import Simulation, default_controllers

Obj = dict[str, Any]


def _node(name: str, labels: dict[str, str] | None = None, taints: list[Obj] | None = None,
          cpu: str = "8", unschedulable: bool = False) -> Obj:
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}


def _ds(pod_spec: Obj | None = None, name: str = "agent", **spec: Any) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "default", "uid": "ds-uid",
                         "annotations": {"deprecated.daemonset.template.generation": "3"}},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "agent:1"}], **(pod_spec or {})}},
                     **spec}}


# ---- which nodes ---------------------------------------------------------------------------------


def test_a_plain_node_runs_it_and_a_tainted_one_does_not() -> None:
    assert node_should_run(_node("n1"), _ds()) == (True, True)
    # NoSchedule untolerated: no new pod, but one already there may stay (shouldContinueRunning)
    no_schedule = _node("n2", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    assert node_should_run(no_schedule, _ds()) == (False, True)
    # NoExecute untolerated: one already there goes too
    no_execute = _node("n3", taints=[{"key": "maintenance", "effect": "NoExecute"}])
    assert node_should_run(no_execute, _ds()) == (False, False)
    # PreferNoSchedule is a preference: the daemon runs there
    assert node_should_run(_node("n4", taints=[{"key": "k", "effect": "PreferNoSchedule"}]), _ds()) == (True, True)


def test_a_tolerated_taint_and_the_controllers_own_tolerations_let_it_run() -> None:
    tainted = _node("n2", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    tolerating = _ds({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "x"}]})
    assert node_should_run(tainted, tolerating) == (True, True)
    # cordoned: spec.unschedulable and its taint; every daemon pod tolerates unschedulable:NoSchedule
    cordoned = _node("n3", unschedulable=True, taints=[{"key": "node.kubernetes.io/unschedulable",
                                                        "effect": "NoSchedule"}])
    assert node_should_run(cordoned, _ds()) == (True, True)
    for key in ("not-ready", "unreachable"):
        assert node_should_run(_node("n4", taints=[{"key": f"node.kubernetes.io/{key}", "effect": "NoExecute"}]),
                               _ds()) == (True, True)
    # network-unavailable only for hostNetwork pods
    network = _node("n5", taints=[{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}])
    assert node_should_run(network, _ds()) == (False, True)
    assert node_should_run(network, _ds({"hostNetwork": True})) == (True, True)


def test_node_selector_affinity_and_node_name_choose_the_nodes() -> None:
    gpu, cpu = _node("g1", {"role": "gpu"}), _node("c1")
    by_selector = _ds({"nodeSelector": {"role": "gpu"}})
    assert node_should_run(gpu, by_selector) == (True, True)
    assert node_should_run(cpu, by_selector) == (False, False)
    by_affinity = _ds({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "role", "operator": "In", "values": ["gpu"]}]}]}}}})
    assert node_should_run(gpu, by_affinity) == (True, True)
    assert node_should_run(cpu, by_affinity) == (False, False)
    pinned = _ds({"nodeName": "c1"})
    assert node_should_run(gpu, pinned) == (False, False)
    assert node_should_run(cpu, pinned) == (True, True)


# ---- the pod -------------------------------------------------------------------------------------


def test_daemon_tolerations_are_added_in_upstreams_order_and_replace_equal_ones() -> None:
    spec: Obj = {"tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "dedicated", "operator": "Exists"}]}
    add_daemon_tolerations(spec)
    # AddOrUpdateTolerationInPodSpec: the same key/operator/value/effect is replaced (no tolerationSeconds)
    assert spec["tolerations"] == [DAEMON_TOLERATIONS[0], {"key": "dedicated", "operator": "Exists"},
                                   *DAEMON_TOLERATIONS[1:]]
    host: Obj = {"hostNetwork": True}
    add_daemon_tolerations(host)
    assert host["tolerations"][-1] == {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
                                       "effect": "NoSchedule"}


def test_the_node_affinity_replaces_required_terms_and_keeps_preferred_ones() -> None:
    preferred = [{"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]
    spec: Obj = {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "role", "operator": "In", "values": ["gpu"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}}}
    replace_node_name_affinity(spec, "n7")
    assert spec["affinity"]["nodeAffinity"] == {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}
    bare: Obj = {}
    replace_node_name_affinity(bare, "n1")
    assert target_node({"spec": bare}) == "n1"
    assert target_node({"spec": {**bare, "nodeName": "n2"}}) == "n2"  # a placed pod: its node
    assert target_node({"spec": {}}) is None


def test_the_pod_created_for_a_node() -> None:
    pod = daemon_pod(_ds({"nodeSelector": {"role": "gpu"}}), "n1", "5d8f9c7b4")
    md = pod["metadata"]
    assert md["generateName"] == "agent-" and "name" not in md
    assert md["labels"] == {"app": "agent", "pod-template-generation": "3", "controller-revision-hash": "5d8f9c7b4"}
    assert md["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-uid",
                                      "controller": True, "blockOwnerDeletion": True}]
    assert pod["spec"]["nodeSelector"] == {"role": "gpu"} and "nodeName" not in pod["spec"]  # the scheduler binds it
    assert target_node(pod) == "n1"
    assert pod["spec"]["tolerations"] == list(DAEMON_TOLERATIONS)


# ---- keeping one per node ------------------------------------------------------------------------


def _pod(name: str, node: str = "n1", phase: str = "Running", created: str = "2026-01-01T00:00:00Z",
         bound: bool = True, deleting: bool = False) -> Obj:
    md: Obj = {"name": name, "namespace": "default", "creationTimestamp": created}
    if deleting:
        md["deletionTimestamp"] = created
    spec: Obj = {"nodeName": node} if bound else {}
    replace_node_name_affinity(spec, node)
    return {"metadata": md, "spec": spec, "status": {"phase": phase}}


def test_pods_should_be_on_node() -> None:
    ds, node = _ds(), _node("n1")
    assert plan_node(node, ds, []) == (True, [], [])
    # several running: all but the oldest go (placed before pending, then by creation time)
    old, new = _pod("a", created="2026-01-01T00:00:00Z"), _pod("b", created="2026-01-01T00:01:00Z")
    pending = _pod("c", created="2025-12-31T00:00:00Z", bound=False)
    assert oldest_first([pending, new, old]) == [old, new, pending]
    assert plan_node(node, ds, [pending, new, old]) == (False, [new, pending], [])
    # ended pods are handed back to be replaced; a pod being deleted is waited for, not made again
    failed = _pod("f", phase="Failed")
    assert plan_node(node, ds, [failed]) == (False, [], [failed])
    assert plan_node(node, ds, [_pod("d", deleting=True)]) == (False, [], [])
    # a node that should not run it loses its pods; an unscheduled pod aimed at a node that is gone goes
    tainted = _node("n1", taints=[{"key": "k", "effect": "NoExecute"}])
    assert plan_node(tainted, ds, [old]) == (False, [old], [])
    assert plan_node(None, ds, [old, pending]) == (False, [pending], [])


def test_max_unavailable_is_scaled_up() -> None:
    # intstr.GetScaledValueFromIntOrPercent(..., roundUp=true)
    assert scaled_count(1, 10) == 1
    assert scaled_count("10%", 15) == 2
    assert scaled_count("0%", 15) == 0


# ---- the controller in an embedded run -----------------------------------------------------------


def _pods(sim: Simulation) -> dict[str, Obj]:
    return {target_node(p) or "": p for p in sim.store.iter_kind(kinds.POD)
            if p["metadata"]["name"].startswith("agent-")}


def test_a_new_node_gets_a_pod_and_a_relabelled_one_loses_it() -> None:
    sim = Simulation()
    sim.load([_node("n1", {"role": "agent"}), _ds({"nodeSelector": {"role": "agent"}})])
    assert sim.run()
    assert sorted(_pods(sim)) == ["n1"]
    sim.store.create(_node("n2", {"role": "agent"}))
    assert sim.run()
    assert sorted(_pods(sim)) == ["n1", "n2"]
    assert _pods(sim)["n2"]["spec"]["nodeName"] == "n2"
    sim.store.patch(kinds.NODE, "n1", None, {"metadata": {"labels": {"role": None}}})
    assert sim.run()
    assert sorted(_pods(sim)) == ["n2"]
    status = sim.store.get(kinds.DAEMON_SET, "agent", "default")["status"]
    counts = (status["desiredNumberScheduled"], status["currentNumberScheduled"], status["numberMisscheduled"])
    assert counts == (1, 1, 0)


def test_a_template_change_rolls_one_node_at_a_time() -> None:
    sim = Simulation()
    sim.load([_node("n1"), _node("n2"), _node("n3"), _ds()])
    assert sim.run()
    before = {n: p["metadata"]["labels"]["controller-revision-hash"] for n, p in _pods(sim).items()}
    assert len(before) == 3 and len(set(before.values())) == 1
    ds = sim.store.get(kinds.DAEMON_SET, "agent", "default")
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "3"
    sim.store.patch(kinds.DAEMON_SET, "agent", "default",
                    {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "agent:2"}]}}}})
    ds = sim.store.get(kinds.DAEMON_SET, "agent", "default")
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "4"
    # maxUnavailable 1 (the default): one node at a time loses its old pod, gets the new one, then the next
    for _ in range(12):
        sim.run(max_rounds=1)
        assert len(_pods(sim)) >= 2
    after = _pods(sim)
    assert sorted(after) == ["n1", "n2", "n3"]
    assert {p["spec"]["containers"][0]["image"] for p in after.values()} == {"agent:2"}
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in after.values()} == {"4"}
    assert sim.run()
    status = sim.store.get(kinds.DAEMON_SET, "agent", "default")["status"]
    assert (status["updatedNumberScheduled"], status["numberAvailable"], status["observedGeneration"]) == (3, 3, 2)
    deletes = [e for e in sim.store.iter_kind(kinds.EVENT) if e["reason"] == "SuccessfulDelete"]
    assert len(deletes) == 3


def test_on_delete_keeps_the_old_pods() -> None:
    sim = Simulation()
    sim.load([_node("n1"), _ds(updateStrategy={"type": "OnDelete"})])
    assert sim.run()
    sim.store.patch(kinds.DAEMON_SET, "agent", "default",
                    {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "agent:2"}]}}}})
    assert sim.run()
    assert _pods(sim)["n1"]["spec"]["containers"][0]["image"] == "agent:1"
    status = sim.store.get(kinds.DAEMON_SET, "agent", "default")["status"]
    assert "updatedNumberScheduled" not in status and status["numberReady"] == 1


class _EvictingKubelet:
    """Fails every running pod at once, as a kubelet's node-pressure eviction leaves it (phase Failed,
    reason Evicted): a daemon pod (restartPolicy Always) whose container exits is restarted in place,
    never Failed, so this is how a DaemonSet meets a Failed pod."""

    name = "evicting-kubelet"

    def reconcile(self, ctx: Any) -> bool:
        running = [p for p in ctx.store.iter_kind(kinds.POD) if (p.get("status") or {}).get("phase") == "Running"]
        for p in running:
            ctx.store.patch(kinds.POD, p["metadata"]["name"], p["metadata"]["namespace"],
                            {"status": {"phase": "Failed", "reason": "Evicted"}}, subresource="status")
        return bool(running)


def test_a_failing_pod_is_replaced_with_back_off() -> None:
    # podsShouldBeOnNode: a Failed pod is deleted (FailedDaemonPod) at most once per back-off per node,
    # failedPodsBackoff = flowcontrol.NewBackOff(1s, 15m); the replacement is made once it is gone
    sim = Simulation([*default_controllers(), _EvictingKubelet()])
    sim.load([_node("n1"), _ds()])
    assert not sim.run(max_rounds=300)  # upstream too replaces a crashing daemon pod for ever
    failed = sorted((e for e in sim.store.iter_kind(kinds.EVENT) if e["reason"] == "FailedDaemonPod"),
                    key=lambda e: e["firstTimestamp"])
    assert {e["type"] for e in failed} == {"Warning"}
    assert failed[0]["message"].startswith("Found failed daemon pod default/agent-")
    assert failed[0]["message"].endswith(" on node n1, will try to kill it")
    seconds = [int(parse_time(e["firstTimestamp"]).timestamp() - parse_time(failed[0]["firstTimestamp"]).timestamp())
               for e in failed]
    assert seconds[:7] == [0, 1, 3, 7, 15, 31, 63]  # 1s doubling
    assert {b - a for a, b in zip(seconds[-5:], seconds[-4:], strict=False)} == {900}  # at most 15 min


def test_the_store_validates_and_defaults_a_daemon_set_as_the_api_server() -> None:
    # pkg/apis/apps/validation ValidateDaemonSetSpec; pkg/apis/apps/v1 SetDefaults_DaemonSet
    sim = Simulation()
    sim.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    never = _ds({"restartPolicy": "Never"}, name="never")
    with pytest.raises(ApiError, match=r'spec.template.spec.restartPolicy: Unsupported value: "Never": '
                                       r'supported values: "Always"'):
        sim.store.create(never)
    empty = _ds(name="empty")
    empty["spec"]["selector"] = {}
    with pytest.raises(ApiError, match="empty selector is invalid for daemonset"):
        sim.store.create(empty)
    created = sim.store.create(_ds())
    assert created["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                                 "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert created["spec"]["revisionHistoryLimit"] == 10
