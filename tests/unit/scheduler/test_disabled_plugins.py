"""Disabling each built-in plugin by configuration changes what the scheduler does, as documented.

Every test runs the same cluster twice, with the plugin enabled and disabled, and asserts
what a user would see change (placements and PodScheduled messages).
"""

from __future__ import annotations

from drasched.scheduler.config import SchedulerConfig, config_from_dict
from drasched.scheduler.framework.registry import BUILTINS
from drasched.scheduler.plugins.dra import MSG_DRA_DISABLED
from tests.unit.scheduler.helpers import (
    World,
    claim,
    device_class,
    messages,
    no_victims,
    node,
    placed_nodes,
    pod,
    podgroup,
    queue,
    resource_slice,
)
from tests.unit.scheduler.test_extended import GPU_CLASS, ext_pod, gpu_class, gpus, slice_

Obj = dict


def without(name: str, **more: object) -> SchedulerConfig:
    return config_from_dict({"plugins": {name: {"enabled": False}}, "schedulerNames": [], **more})


def both(objs: list[Obj], name: str, **more: object) -> tuple:
    on = World(objs, config_from_dict({"schedulerNames": [], **more})).cycle()
    off = World(objs, without(name, **more)).cycle()
    return on, off


def test_every_builtin_has_a_test_here() -> None:
    tested = {n.removeprefix("test_disabling_").split("_")[0] for n in globals() if n.startswith("test_disabling_")}
    assert tested == {n.lower() for n in BUILTINS}


def job_pod(name: str, job: str = "train", **more: object) -> Obj:
    """A pod as kube-controller-manager's Job controller makes it, before drasched labels it."""
    out = pod(name, cpu="1", **more)
    out["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                           "uid": f"uid-{job}", "controller": True, "blockOwnerDeletion": True}]
    return out


def test_disabling_implicitganggate_places_a_job_pod_before_its_podgroup_exists() -> None:
    on, off = both([node("a", cpu="4"), job_pod("train-abcde")], "implicitGangGate")
    assert messages(on) == {"train-abcde": "0/1 nodes are available: 1 waiting for the pod's implicit "
                                           "PodGroup (Job default/train)."}  # held, not tried: no PostFilter
    assert placed_nodes(off) == {"train-abcde": "a"}


def test_disabling_nodeunschedulable_lets_cordoned_nodes_take_pods() -> None:
    on, off = both([node("a", unschedulable=True), pod("p", cpu="1")], "nodeUnschedulable")
    assert messages(on) == {"p": no_victims("0/1 nodes are available: 1 node(s) were unschedulable.", 0, 1)}
    assert placed_nodes(off) == {"p": "a"}


def test_disabling_nodeselector_ignores_spec_nodeselector() -> None:
    on, off = both([node("a", {"pool": "cpu"}), pod("p", cpu="1", nodeSelector={"pool": "gpu"})], "nodeSelector")
    assert messages(on) == {"p": no_victims("0/1 nodes are available: 1 node(s) didn't match Pod's node "
                                            "affinity/selector.", 0, 1)}
    assert placed_nodes(off) == {"p": "a"}


def test_disabling_nodeaffinity_ignores_required_affinity() -> None:
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]}]}}}
    on, off = both([node("a", {"zone": "z1"}), pod("p", cpu="1", affinity=aff)], "nodeAffinity")
    assert messages(on) == {"p": no_victims("0/1 nodes are available: 1 node(s) didn't match Pod's node "
                                            "affinity/selector.", 0, 1)}
    assert placed_nodes(off) == {"p": "a"}


def test_disabling_tainttoleration_ignores_taints() -> None:
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    on, off = both([node("a", taints=[taint]), pod("p", cpu="1")], "taintToleration")
    assert messages(on) == {"p": no_victims("0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}.",
                                            0, 1)}
    assert placed_nodes(off) == {"p": "a"}


def test_disabling_podcount_lets_a_node_exceed_its_pod_count() -> None:
    on, off = both([node("a", pods="1"), pod("p1", cpu="1"), pod("p2", cpu="1")], "podCount")
    assert sorted(placed_nodes(on)) == ["p1"]
    assert messages(on) == {"p2": no_victims("0/1 nodes are available: 1 Too many pods.", 1, 1)}
    assert sorted(placed_nodes(off)) == ["p1", "p2"]


def test_disabling_resourcefit_overcommits_container_requests() -> None:
    on, off = both([node("a", cpu="2"), pod("p1", cpu="2"), pod("p2", cpu="2")], "resourceFit")
    assert messages(on) == {"p2": no_victims("0/1 nodes are available: 1 Insufficient cpu.", 1, 1)}
    assert sorted(placed_nodes(off)) == ["p1", "p2"]


def test_disabling_resourcefit_keeps_the_pod_count() -> None:
    _, off = both([node("a", cpu="2", pods="1"), pod("p1", cpu="2"), pod("p2", cpu="2")], "resourceFit")
    assert messages(off) == {"p2": no_victims("0/1 nodes are available: 1 Too many pods.", 1, 1)}


def test_disabling_dra_leaves_claim_pods_pending_with_a_message() -> None:
    objs = [node("a"), device_class(), resource_slice("a", 1), claim("c"),
            pod("p", claims=[{"name": "g", "resourceClaimName": "c"}]), pod("plain", cpu="1")]
    on, off = both(objs, "dra")
    assert placed_nodes(on) == {"p": "a", "plain": "a"}
    assert placed_nodes(off) == {"plain": "a"}
    assert messages(off) == {"p": MSG_DRA_DISABLED}


def test_disabling_extendedresources_serves_extended_resources_by_device_plugins_only() -> None:
    objs = [node("dra"), node("dp", gpu=1), gpu_class(), slice_("dra", GPU_CLASS, gpus(2)),
            ext_pod("p1", {"nvidia.com/gpu": "2"}), ext_pod("p2", {"nvidia.com/gpu": "1"})]
    on, off = both(objs, "extendedResources")
    assert placed_nodes(on) == {"p1": "dra", "p2": "dp"}
    assert placed_nodes(off) == {"p2": "dp"}
    # dra: no device plugin serves nvidia.com/gpu there; dp: one GPU, not two
    assert messages(off) == {"p1": no_victims("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.", 2, 2,
                                              "still not schedulable")}


def test_disabling_nodeorder_tries_nodes_in_name_order() -> None:
    objs = [node("a", gpu=8), node("b", gpu=2), pod("p", gpu=2)]
    on, off = both(objs, "nodeOrder")  # binpack: the fullest after placement is b
    assert placed_nodes(on) == {"p": "b"}
    assert placed_nodes(off) == {"p": "a"}


def test_disabling_topology_ignores_required_topology_keys() -> None:
    objs = [node("a1", {"rack": "a"}, gpu=2), node("b1", {"rack": "b"}, gpu=2),
            podgroup("g", 2, topologyConstraint={"requiredTopologyKey": "rack"}),
            pod("g0", gpu=2, group="g"), pod("g1", gpu=2, group="g")]
    on, off = both(objs, "topology")
    assert placed_nodes(on) == {}
    assert "no rack domain can hold the pod group" in messages(on)["g0"]
    assert placed_nodes(off) == {"g0": "a1", "g1": "b1"}


def test_disabling_fairshare_offers_gangs_by_queue_name_not_by_deficit() -> None:
    objs = [node("a", gpu=4), queue("q1"), queue("q2"),
            *[pod(f"a{i}", gpu=1, queue="q1", created=f"2026-01-01T00:00:0{i}Z") for i in range(4)],
            *[pod(f"b{i}", gpu=1, queue="q2", created=f"2026-01-01T00:01:0{i}Z") for i in range(4)]]
    on, off = both(objs, "fairShare")
    assert sorted(placed_nodes(on)) == ["a0", "a1", "b0", "b1"]
    assert sorted(placed_nodes(off)) == ["a0", "a1", "a2", "a3"]


def test_disabling_gangpriority_serves_a_queues_gangs_first_come_first_served() -> None:
    objs = [node("a", gpu=1),
            pod("old-low", gpu=1, priority=10, created="2026-01-01T00:00:01Z"),
            pod("new-high", gpu=1, priority=1000, created="2026-01-01T00:00:02Z")]
    on, off = both(objs, "gangPriority", actions=["allocate"])
    assert placed_nodes(on) == {"new-high": "a"}
    assert placed_nodes(off) == {"old-low": "a"}


def test_disabling_podtopologyspread_ignores_do_not_schedule_spread_constraints() -> None:
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "s"}}}]
    pods = [pod(f"p{i}", cpu="1", created=f"2026-01-01T00:00:0{i}Z", topologySpreadConstraints=spread)
            for i in range(2)]
    for p in pods:
        p["metadata"]["labels"]["app"] = "s"
    on, off = both([node("a", {"zone": "a"}), node("b", {"zone": "b"}), *pods], "podTopologySpread")
    assert sorted(placed_nodes(on).values()) == ["a", "b"]
    assert sorted(placed_nodes(off).values()) == ["a", "a"]


def test_disabling_interpodaffinity_ignores_required_pod_anti_affinity() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "r"}}}]}}
    pods = [pod(f"r{i}", cpu="1", created=f"2026-01-01T00:00:0{i}Z", affinity=anti) for i in range(2)]
    for p in pods:
        p["metadata"]["labels"]["app"] = "r"
    objs = [node("a", {"kubernetes.io/hostname": "a"}), node("b", {"kubernetes.io/hostname": "b"}), *pods]
    on, off = both(objs, "interPodAffinity")
    assert sorted(placed_nodes(on).values()) == ["a", "b"]
    assert sorted(placed_nodes(off).values()) == ["a", "a"]
