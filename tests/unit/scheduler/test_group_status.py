"""PodGroup status (:mod:`drasched.scheduler.groupstatus`), computed from a gang as a cycle leaves it.

Modelled on Volcano's ``PodGroupStatus`` (scheduling.volcano.sh/v1beta1: ``phase`` Pending /
Running / Completed, ``running`` / ``succeeded`` / ``failed``, conditions with a reason) and on
KAI-Scheduler's ``OverLimit`` unschedulable reason (pkg/apis/scheduling/v2alpha2/podgroup_types.go).
"""

from __future__ import annotations

from drasched.api import kinds
from drasched.scheduler.controller import SchedulerController, gang_signature
from drasched.scheduler.groups import GroupInfo
from drasched.scheduler.groupstatus import pod_group_status, status_changed
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore
from tests.unit.scheduler.helpers import World, node, pod, podgroup

NOW = "2026-03-01T00:00:00Z"
LATER = "2026-03-01T00:05:00Z"


def _group(*objs: dict, key: str = "default/g") -> GroupInfo:
    return World([node("a", gpu=8), *objs]).snapshot().groups[key]


def _cond(status: dict) -> dict:
    return next(c for c in status["conditions"] if c["type"] == "Scheduled")


def test_a_waiting_gang_is_pending_with_its_message() -> None:
    g = _group(podgroup("g", 2), pod("g-1", gpu=1, group="g"), pod("g-2", gpu=1, group="g"))
    st = pod_group_status(g, 0, "pod group default/g: 1 of the 2 pods ...", False, NOW)
    assert (st["phase"], st["scheduled"], st["running"], st["succeeded"], st["failed"]) == ("Pending", 0, 0, 0, 0)
    assert _cond(st) == {"type": "Scheduled", "status": "False", "reason": "Unschedulable",
                         "message": "pod group default/g: 1 of the 2 pods ...", "lastTransitionTime": NOW}
    over = pod_group_status(g, 0, "pod group default/g: its minMember 2 pods need ...", True, NOW)
    assert _cond(over)["reason"] == "OverLimit"


def test_placed_this_cycle_counts_and_the_condition_turns_true() -> None:
    g = _group(podgroup("g", 2), pod("g-1", gpu=1, group="g"), pod("g-2", gpu=1, group="g"))
    st = pod_group_status(g, 2, None, False, NOW)
    assert (st["phase"], st["scheduled"]) == ("Scheduled", 2)
    assert (_cond(st)["status"], _cond(st)["reason"]) == ("True", "Scheduled")


def test_phases_follow_the_pods() -> None:
    running = _group(podgroup("g", 2), pod("g-1", gpu=1, group="g", node_name="a", phase="Running"),
                     pod("g-2", gpu=1, group="g", node_name="a", phase="Succeeded"))
    st = pod_group_status(running, 0, None, False, NOW)
    assert (st["phase"], st["scheduled"], st["running"], st["succeeded"]) == ("Running", 2, 1, 1)
    done = _group(podgroup("g", 2), pod("g-1", gpu=1, group="g", node_name="a", phase="Succeeded"),
                  pod("g-2", gpu=1, group="g", node_name="a", phase="Succeeded"))
    assert pod_group_status(done, 0, None, False, NOW)["phase"] == "Completed"
    failed = _group(podgroup("g", 2), pod("g-1", gpu=1, group="g", node_name="a", phase="Succeeded"),
                    pod("g-2", gpu=1, group="g", node_name="a", phase="Failed"))
    st = pod_group_status(failed, 0, None, False, NOW)
    assert (st["phase"], st["scheduled"], st["failed"]) == ("Failed", 1, 1)
    bound = _group(podgroup("g", 2), pod("g-1", gpu=1, group="g", node_name="a", phase="Pending"),
                   pod("g-2", gpu=1, group="g", node_name="a", phase="Pending"))
    assert pod_group_status(bound, 0, None, False, NOW)["phase"] == "Scheduled"


def test_the_transition_time_moves_only_with_the_status_and_other_fields_are_kept() -> None:
    pg = podgroup("g", 2)
    pg["status"] = {"resourceClaimStatuses": [{"name": "shared", "resourceClaimName": "g-shared-x"}],
                    "conditions": [{"type": "ResourceClaimsValid", "status": "True"},
                                   {"type": "Scheduled", "status": "False", "reason": "Unschedulable",
                                    "message": "old", "lastTransitionTime": NOW}]}
    g = _group(pg, pod("g-1", gpu=1, group="g"), pod("g-2", gpu=1, group="g"))
    st = pod_group_status(g, 0, "new message", False, LATER)
    assert st["resourceClaimStatuses"] == pg["status"]["resourceClaimStatuses"]
    assert st["conditions"][0] == {"type": "ResourceClaimsValid", "status": "True"}
    assert _cond(st)["message"] == "new message" and _cond(st)["lastTransitionTime"] == NOW  # still False
    kept = pod_group_status(g, 0, None, False, LATER)  # not tried this cycle: what it said holds
    assert _cond(kept)["message"] == "old"
    assert _cond(pod_group_status(g, 2, None, False, LATER))["lastTransitionTime"] == LATER
    assert status_changed(pg, st) and not status_changed({"status": kept}, kept)


def test_the_controller_writes_it_once_and_its_own_write_does_not_unpark_the_gang() -> None:
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    for o in (node("a", gpu=2), podgroup("g", 2), pod("g-1", gpu=2, group="g"), pod("g-2", gpu=2, group="g"),
              podgroup("ok", 1), pod("ok-1", cpu="1", group="ok")):
        ctx.store.create(o)
    sc = SchedulerController()
    assert sc.reconcile(ctx)
    g = ctx.store.get(kinds.POD_GROUP, "g", "default")
    assert g["status"]["phase"] == "Pending" and _cond(g["status"])["reason"] == "Unschedulable"
    ok = ctx.store.get(kinds.POD_GROUP, "ok", "default")
    assert (ok["status"]["phase"], ok["status"]["scheduled"]) == ("Scheduled", 1)
    rv = g["metadata"]["resourceVersion"]
    sc.reconcile(ctx)
    sc.reconcile(ctx)
    assert ctx.store.get(kinds.POD_GROUP, "g", "default")["metadata"]["resourceVersion"] == rv  # no rewrite
    assert "default/g" in sc._parked  # its status write was no change to the gang


def test_a_status_write_is_no_change_to_the_gang_signature() -> None:
    w = World([node("a", gpu=1), podgroup("g", 2), pod("g-1", gpu=1, group="g"), pod("g-2", gpu=1, group="g")])
    before = gang_signature(w.snapshot().groups["default/g"])
    pg = w.store.get(kinds.POD_GROUP, "g", "default")
    pg["status"] = {"phase": "Pending", "conditions": [{"type": "Scheduled", "status": "False"}]}
    w.store.update_status(pg)
    assert gang_signature(w.snapshot().groups["default/g"]) == before


def test_the_status_follows_pods_that_start_running_while_nothing_waits() -> None:
    """In serve no cycle runs while nothing is pending (``idle_cycle_period``): the builds in
    between still move a PodGroup's status when its pods start running or finish."""
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    for o in (node("a", gpu=2), podgroup("g", 2), pod("g-1", gpu=1, group="g"), pod("g-2", gpu=1, group="g")):
        ctx.store.create(o)
    sc = SchedulerController(idle_cycle_period=60.0)
    sc.reconcile(ctx)
    for br in ctx.store.list(kinds.BIND_REQUEST).items:  # the binder's work, by hand
        p = ctx.store.get(kinds.POD, br["spec"]["podName"], "default")
        p["spec"]["nodeName"] = br["spec"]["selectedNode"]
        ctx.store.update(p)
    sc.reconcile(ctx)
    assert ctx.store.get(kinds.POD_GROUP, "g", "default")["status"]["phase"] == "Scheduled"
    for name in ("g-1", "g-2"):
        p = ctx.store.get(kinds.POD, name, "default")
        p["status"] = {**(p.get("status") or {}), "phase": "Running"}
        ctx.store.update_status(p)
        sc.reconcile(ctx)  # no cycle: nothing is pending
    st = ctx.store.get(kinds.POD_GROUP, "g", "default")["status"]
    assert (st["phase"], st["running"]) == ("Running", 2)
