"""The node lifecycle controller (upstream pkg/controller/nodelifecycle): which taints a node's
conditions call for, and the loop that writes them on virtual time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from drasched.api import kinds
from drasched.controllers.nodeconditions import (
    FULL,
    NORMAL,
    NOT_READY,
    PARTIAL,
    UNREACHABLE,
    NoExecuteStep,
    apply_taints,
    no_execute_step,
    no_schedule_changes,
    zone_key,
    zone_state,
    zones,
)
from drasched.controllers.nodelifecycle import NodeLifecycleController
from drasched.sim.clock import DEFAULT_START
from tests.unit.controllers.helpers import new_ctx

Obj = dict[str, Any]
T0 = "2026-01-01T00:00:00Z"


def node(name: str = "n1", *, ready: str | None = None, conditions: dict[str, str] | None = None,
         taints: list[Obj] | None = None, unschedulable: bool = False, zone: str | None = None,
         labels: dict[str, str] | None = None) -> Obj:
    conds = [{"type": t, "status": s} for t, s in (conditions or {}).items()]
    if ready is not None:
        conds.append({"type": "Ready", "status": ready})
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    md: Obj = {"name": name, "labels": dict(labels or {})}
    if zone is not None:
        md["labels"]["topology.kubernetes.io/zone"] = zone
    status: Obj = {"allocatable": {"cpu": "4", "pods": "110"}}
    if conds:
        status["conditions"] = conds
    return {"apiVersion": "v1", "kind": "Node", "metadata": md, "spec": spec, "status": status}


def ns(key: str) -> Obj:
    return {"key": key, "effect": "NoSchedule"}


def nx(key: str) -> Obj:
    return {"key": key, "effect": "NoExecute"}


# --- NoSchedule taints (doNoScheduleTaintingPass) ---

def test_conditions_map_to_their_noschedule_taints_in_condition_order() -> None:
    n = node(ready="False", conditions={"MemoryPressure": "True", "DiskPressure": "False", "PIDPressure": "True",
                                        "NetworkUnavailable": "True"})
    add, remove = no_schedule_changes(n)
    assert add == [ns("node.kubernetes.io/memory-pressure"), ns("node.kubernetes.io/pid-pressure"),
                   ns("node.kubernetes.io/network-unavailable"), ns(NOT_READY)]
    assert remove == []


def test_ready_unknown_is_unreachable_and_ready_true_calls_for_nothing() -> None:
    assert no_schedule_changes(node(ready="Unknown")) == ([ns(UNREACHABLE)], [])
    assert no_schedule_changes(node(ready="True")) == ([], [])


def test_cleared_conditions_lose_their_taints_and_other_taints_stay() -> None:
    mine = [ns(NOT_READY), ns("node.kubernetes.io/memory-pressure"), nx(NOT_READY), ns("example.com/gpu"),
            {"key": "node.kubernetes.io/memory-pressure", "effect": "PreferNoSchedule"}]
    add, remove = no_schedule_changes(node(ready="True", conditions={"MemoryPressure": "False"}, taints=mine))
    # NoExecute ones belong to taint based eviction; PreferNoSchedule and foreign keys are not this pass's
    assert add == [] and remove == [ns(NOT_READY), ns("node.kubernetes.io/memory-pressure")]


def test_a_taint_already_there_is_not_added_again_whatever_its_value() -> None:
    have = [{"key": NOT_READY, "value": "x", "effect": "NoSchedule", "timeAdded": T0}]
    assert no_schedule_changes(node(ready="False", taints=have)) == ([], [])


def test_unschedulable_gets_its_taint_and_loses_it_when_uncordoned() -> None:
    assert no_schedule_changes(node(ready="True", unschedulable=True)) == (
        [ns("node.kubernetes.io/unschedulable")], [])
    assert no_schedule_changes(node(ready="True", taints=[ns("node.kubernetes.io/unschedulable")])) == (
        [], [ns("node.kubernetes.io/unschedulable")])


def test_a_node_without_conditions_keeps_its_condition_taints_but_not_a_stale_cordon() -> None:
    """Hand-written nodes (no kubelet) are left as written; spec.unschedulable still counts."""
    written = [ns(NOT_READY), ns("node.kubernetes.io/disk-pressure")]
    assert no_schedule_changes(node(taints=written)) == ([], [])
    assert no_schedule_changes(node(unschedulable=True)) == ([ns("node.kubernetes.io/unschedulable")], [])
    assert no_schedule_changes(node(taints=[ns("node.kubernetes.io/unschedulable")])) == (
        [], [ns("node.kubernetes.io/unschedulable")])


# --- NoExecute taints (processTaintBaseEviction) ---

def test_ready_false_and_unknown_queue_their_noexecute_taint() -> None:
    assert no_execute_step(node(ready="False")) == NoExecuteStep(add=NOT_READY, rate_limited=True)
    assert no_execute_step(node(ready="Unknown")) == NoExecuteStep(add=UNREACHABLE, rate_limited=True)


def test_the_opposite_taint_is_swapped_at_once() -> None:
    assert no_execute_step(node(ready="Unknown", taints=[nx(NOT_READY)])) == NoExecuteStep(
        add=UNREACHABLE, remove=(NOT_READY,))
    assert no_execute_step(node(ready="False", taints=[nx(UNREACHABLE)])) == NoExecuteStep(
        add=NOT_READY, remove=(UNREACHABLE,))


def test_already_tainted_is_left_and_ready_removes_both() -> None:
    assert no_execute_step(node(ready="False", taints=[nx(NOT_READY)])) == NoExecuteStep()
    assert no_execute_step(node(ready="True", taints=[nx(NOT_READY), nx(UNREACHABLE)])) == NoExecuteStep(
        remove=(NOT_READY, UNREACHABLE))
    assert no_execute_step(node(ready="True")) == NoExecuteStep()


def test_never_reported_is_not_unreachable_here() -> None:
    """Upstream takes it as Unknown after nodeStartupGracePeriod; a hand-written node has no kubelet."""
    assert no_execute_step(node(taints=[nx(NOT_READY)])) == NoExecuteStep()
    assert no_execute_step(node(conditions={"MemoryPressure": "True"})) == NoExecuteStep()
    assert no_execute_step(node(taints=[nx(NOT_READY)]), master_disruption=True) == NoExecuteStep()


def test_master_disruption_removes_and_adds_none() -> None:
    assert no_execute_step(node(ready="False", taints=[nx(NOT_READY)]), master_disruption=True) == NoExecuteStep(
        remove=(NOT_READY,))
    assert no_execute_step(node(ready="Unknown"), master_disruption=True) == NoExecuteStep()


def test_apply_stamps_added_taints_replaces_in_place_and_removes_by_key_and_effect() -> None:
    have = [{"key": "a", "effect": "NoSchedule"}, {"key": NOT_READY, "value": "old", "effect": "NoExecute"},
            nx(UNREACHABLE)]
    out = apply_taints(have, [nx(NOT_READY), ns(NOT_READY)], [nx(UNREACHABLE)], DEFAULT_START)
    assert out == [{"key": "a", "effect": "NoSchedule"}, {"key": NOT_READY, "effect": "NoExecute", "timeAdded": T0},
                   {"key": NOT_READY, "effect": "NoSchedule", "timeAdded": T0}]
    assert have[1] == {"key": NOT_READY, "value": "old", "effect": "NoExecute"}  # the input is not changed


# --- zones (ComputeZoneState, handleDisruption) ---

def test_zone_key_prefers_the_beta_labels() -> None:
    assert zone_key(node()) == ""
    assert zone_key(node(zone="a")) == ":\x00:a"
    assert zone_key(node(labels={"failure-domain.beta.kubernetes.io/zone": "b", "topology.kubernetes.io/zone": "a",
                                 "topology.kubernetes.io/region": "r"})) == "r:\x00:b"


def test_zone_states() -> None:
    assert zone_state(0, 1) == FULL
    assert zone_state(1, 2) == NORMAL  # not more than 2 unready
    assert zone_state(2, 3) == PARTIAL  # 60 % >= 55 %
    assert zone_state(3, 3) == NORMAL  # 50 %
    assert zone_state(0, 0) == NORMAL


def test_master_disruption_only_when_every_zone_is_fully_disrupted() -> None:
    assert zones([node("a", ready="False", zone="z1"), node("b", ready="Unknown", zone="z2")]).master_disruption
    assert not zones([node("a", ready="False", zone="z1"), node("b", ready="True", zone="z2")]).master_disruption
    # a node that never reported counts as ready; one excluded from disruption checks does not count
    assert not zones([node("a", ready="False"), node("b")]).master_disruption
    assert zones([node("a", ready="False"),
                  node("b", labels={"node.kubernetes.io/exclude-disruption": ""})]).master_disruption


def test_tainting_rate_per_zone_state() -> None:
    small = zones([node(f"n{i}", ready="False" if i < 3 else "True", zone="z") for i in range(5)])
    assert small.states == {":\x00:z": PARTIAL} and small.tainting_qps(":\x00:z") == 0.0
    big = zones([node(f"n{i}", ready="False" if i < 40 else "True", zone="z") for i in range(60)])
    assert big.tainting_qps(":\x00:z") == 0.01
    normal = zones([node("a", ready="False", zone="z"), node("b", ready="True", zone="z")])
    assert normal.tainting_qps(":\x00:z") == 0.1


# --- the loop ---

def _set_ready(ctx: Any, name: str, status: str) -> None:
    n = ctx.store.get(kinds.NODE, name)
    ctx.store.update_status({**n, "status": {**n["status"], "conditions": [{"type": "Ready", "status": status}]}})


def _taints(ctx: Any, name: str) -> list[Obj]:
    return list(ctx.store.get(kinds.NODE, name).get("spec", {}).get("taints") or [])


def _run(ctx: Any, c: NodeLifecycleController, rounds: int = 20) -> None:
    """Rounds until idle, then virtual time to the next wake-up, ``rounds`` times at most."""
    for _ in range(rounds):
        if c.reconcile(ctx):
            continue
        wake = ctx.next_wakeup()
        if wake is None:
            return
        ctx.clock.advance_to(wake)


def test_the_loop_taints_and_untaints_as_the_condition_changes() -> None:
    ctx = new_ctx()
    ctx.store.create(node("bad", ready="False"))
    ctx.store.create(node("good", ready="True"))
    c = NodeLifecycleController()
    _run(ctx, c)
    assert _taints(ctx, "bad") == [{**ns(NOT_READY), "timeAdded": T0}, {**nx(NOT_READY), "timeAdded": T0}]
    assert _taints(ctx, "good") == []
    assert [d.action for d in ctx.decisions] == ["taint"]
    ctx.clock.advance(30)
    _set_ready(ctx, "bad", "Unknown")
    _run(ctx, c)
    later = "2026-01-01T00:00:30Z"
    assert _taints(ctx, "bad") == [{**ns(UNREACHABLE), "timeAdded": later}, {**nx(UNREACHABLE), "timeAdded": later}]
    _set_ready(ctx, "bad", "True")
    _run(ctx, c)
    assert _taints(ctx, "bad") == []
    assert "taints" not in ctx.store.get(kinds.NODE, "bad")["spec"]


def test_noexecute_taints_come_one_node_every_ten_seconds_per_zone() -> None:
    ctx = new_ctx()
    for name in ("a", "b"):
        ctx.store.create(node(name, ready="False", zone="z1"))
    ctx.store.create(node("c", ready="False", zone="z2"))
    for name in ("ok1", "ok2"):
        ctx.store.create(node(name, ready="True", zone="z1" if name == "ok1" else "z2"))
    c = NodeLifecycleController()
    assert c.reconcile(ctx)
    assert nx(NOT_READY)["effect"] in {t["effect"] for t in _taints(ctx, "a")}
    assert [t["effect"] for t in _taints(ctx, "b")] == ["NoSchedule"]  # b waits for z1's limiter
    assert [t["effect"] for t in _taints(ctx, "c")] == ["NoSchedule", "NoExecute"]  # z2 has its own
    assert ctx.next_wakeup() == DEFAULT_START + timedelta(seconds=10)
    _run(ctx, c)
    assert _taints(ctx, "b")[-1] == {**nx(NOT_READY), "timeAdded": "2026-01-01T00:00:10Z"}


def test_no_noexecute_taint_in_master_disruption_mode() -> None:
    """Every node unready (one zone, fully disrupted): upstream stops taint based eviction."""
    ctx = new_ctx()
    ctx.store.create(node("a", ready="False", taints=[nx(NOT_READY)]))
    ctx.store.create(node("b", ready="Unknown"))
    _run(ctx, NodeLifecycleController())
    assert _taints(ctx, "a") == [{**ns(NOT_READY), "timeAdded": T0}]
    assert _taints(ctx, "b") == [{**ns(UNREACHABLE), "timeAdded": T0}]


def test_a_node_without_conditions_is_not_written() -> None:
    ctx = new_ctx()
    ctx.store.create(node("plain", taints=[nx(NOT_READY)]))
    rv = ctx.store.get(kinds.NODE, "plain")["metadata"]["resourceVersion"]
    c = NodeLifecycleController()
    assert not c.reconcile(ctx)
    assert ctx.store.get(kinds.NODE, "plain")["metadata"]["resourceVersion"] == rv
    assert not c.reconcile(ctx)  # and nothing to do until a node changes
