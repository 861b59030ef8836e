"""Upstream's PostFilter statuses on every lone pod's FitError, also where no pod could be a victim.

kube-scheduler runs its PostFilter plugins for every pod that fits nowhere and appends their
statuses, joined by ", ", to the filters' message (schedule_one.go: ``PostFilterMsg``;
``FitError.Error()``; ``RunPostFilterPlugins``): DynamicResources' first, then
DefaultPreemption's. Each test names what of kubernetes/kubernetes it checks:
``DryRunPreemption``/``SelectVictimsOnNode`` (a node tried without a victim), ``findCandidates``
(only nodes rejected as ``Unschedulable`` are tried; the others are "not helpful"),
``PodEligibleToPreemptOthers`` (``preemptionPolicy: Never``) and DynamicResources' ``PostFilter``.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.plugins.interpod import MSG_AFFINITY
from tests.unit.scheduler.helpers import (
    World,
    claim,
    device_class,
    messages,
    node,
    pod,
    podgroup,
    queue,
    resource_slice,
)
from tests.unit.scheduler.preemption_helpers import priority_class

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"
PREEMPT = importlib.import_module("drasched.scheduler.actions.preempt")  # the package exports the function
INSUFFICIENT = "0/3 nodes are available: 3 Insufficient cpu."


def _small_nodes(**labels: dict[str, str]) -> list[Obj]:
    """Three nodes of 2 CPUs, running nothing; ``labels``: node name -> its labels."""
    return [node(n, {HOST: n, **labels.get(n, {})}, cpu="2") for n in ("a", "b", "c")]


def test_dry_run_preemption_finds_no_victims_on_an_empty_cluster() -> None:
    # SelectVictimsOnNode: no pod on any node may be preempted; the three are tried (Insufficient
    # cpu is Unschedulable), each "No preemption victims found for incoming pod"
    r = World([*_small_nodes(), pod("p", cpu="4")]).cycle()
    assert messages(r) == {"p": "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, "
                                "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}


def test_find_candidates_leaves_out_the_nodes_a_node_selector_rejects() -> None:
    # NodeAffinity's rejection is UnschedulableAndUnresolvable: not tried, "not helpful" (the
    # absent nodes' status); the counted reasons sorted as strings, as FitError.Error sorts them
    r = World([*_small_nodes(b={"pool": "x"}, c={"pool": "x"}), pod("p", cpu="4", nodeSelector={"pool": "x"})]).cycle()
    assert messages(r) == {"p": "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                                "2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are "
                                "available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found "
                                "for incoming pod."}


def test_find_candidates_tries_a_node_short_of_resources_before_the_pods_affinity_is_checked() -> None:
    # NodeResourcesFit runs before InterPodAffinity: a node the pod's unmatched required affinity
    # would reject as unresolvable is tried all the same when its CPUs are short
    p = pod("p", cpu="4")
    p["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST}]}}
    both = [node("a", {HOST: "a"}, cpu="2"), node("b", {HOST: "b"}, cpu="8"), p]
    assert messages(World(both).cycle()) == {
        "p": f"0/2 nodes are available: 1 Insufficient cpu, 1 {MSG_AFFINITY}. no new claims to deallocate, "
             "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
             "1 Preemption is not helpful for scheduling."}


def test_pod_eligible_to_preempt_others_refuses_preemption_policy_never_in_the_pod_spec() -> None:
    # the API server admits spec.preemptionPolicy only as the pod's PriorityClass says it
    p = pod("p", cpu="4", priorityClassName="waits", preemptionPolicy="Never")
    r = World([*_small_nodes(), priority_class("waits", 1000, policy="Never"), p]).cycle()
    assert messages(r) == {"p": f"{INSUFFICIENT} no new claims to deallocate, preemption: not eligible due to "
                                "preemptionPolicy=Never."}


def test_pod_eligible_to_preempt_others_refuses_preemption_policy_never_of_the_priority_class() -> None:
    # the Priority admission plugin copies the class's policy into the pod: the lower-priority
    # pods that could make room stay, and the pod says why it did not try
    lows = [pod(f"low-{n}", cpu="2", node_name=n, queue="q", priorityClassName="low") for n in ("a", "b", "c")]
    r = World([*_small_nodes(), queue("q"), priority_class("waits", 1000, policy="Never"), priority_class("low", 1),
               *lows, pod("p", cpu="2", queue="q", priorityClassName="waits")]).cycle()
    assert r.evictions == [] and r.nominations == []
    assert messages(r) == {"p": f"{INSUFFICIENT} no new claims to deallocate, preemption: not eligible due to "
                                "preemptionPolicy=Never."}


def test_dynamic_resources_post_filter_is_still_not_schedulable_for_a_pod_with_claims() -> None:
    # DynamicResources' PostFilter: the pod has claims, none to deallocate ("still not schedulable")
    objs = [*_small_nodes(), device_class(), resource_slice("a", 1), claim("c"),
            pod("p", cpu="4", claims=[{"name": "gpu", "resourceClaimName": "c"}])]
    assert messages(World(objs).cycle()) == {
        "p": f"{INSUFFICIENT} still not schedulable, preemption: 0/3 nodes are available: 3 No preemption victims "
             "found for incoming pod."}


def test_without_dynamic_resources_in_the_profile_default_preemption_alone_speaks() -> None:
    config = SchedulerConfig(scheduler_names=(), disabled_plugins=frozenset({"dra"}))
    r = World([*_small_nodes(), pod("p", cpu="4")], config).cycle()
    assert messages(r) == {"p": f"{INSUFFICIENT} preemption: 0/3 nodes are available: 3 No preemption victims found "
                                "for incoming pod."}


def test_gang_members_and_pods_waiting_for_claims_get_no_post_filter_status() -> None:
    # a PodGroup's members are no lone pods; a pod waiting for its claim to be created is no FitError
    objs = [*_small_nodes(), podgroup("g", 2), pod("m1", cpu="4", group="g"), pod("m2", cpu="4", group="g"),
            pod("w", cpu="1", claims=[{"name": "gpu", "resourceClaimName": "missing"}])]
    msgs = messages(World(objs).cycle())
    assert all("preemption:" not in m and "deallocate" not in m for m in msgs.values()), msgs
    assert msgs["w"] == "waiting for ResourceClaim default/missing to be created"


def test_a_pod_held_for_its_implicit_podgroup_gets_no_post_filter_status() -> None:
    # not tried until its PodGroup exists: upstream holds such a pod before its queue (a scheduling
    # gate), so no FitError and no PostFilter
    held = pod("j-0", cpu="1")
    held["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u1",
                                            "controller": True}]
    msgs = messages(World([*_small_nodes(), held]).cycle())
    assert msgs == {"j-0": "0/3 nodes are available: 3 waiting for the pod's implicit PodGroup (Job default/train)."}


def test_a_cluster_without_nodes_is_no_fit_error() -> None:
    # upstream: ErrNoNodesAvailable, not a FitError: no PostFilter runs
    assert messages(World([pod("p", cpu="1")]).cycle()) == {"p": "0/0 nodes are available: no nodes in the cluster."}


def test_pods_of_one_template_share_one_dry_run(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = PREEMPT.preemptor

    def counting(session: Any, t: Any, domain: Any) -> Any:
        calls.append(t.name)
        return real(session, t, domain)

    monkeypatch.setattr(PREEMPT, "preemptor", counting)
    r = World([*_small_nodes(), *(pod(f"p{i}", cpu="4") for i in range(5)), pod("other", cpu="8")]).cycle()
    assert len(messages(r)) == 6
    assert all(m.endswith("3 No preemption victims found for incoming pod.") for m in messages(r).values())
    assert len(calls) == 2 and "other" in calls  # one per pod shape, not one per pod
