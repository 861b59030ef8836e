"""The simulated kubelet: start when claims are ready, finish after sim-duration, force delete."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from drasched.api import kinds
from drasched.node.sim_kubelet import PrepareFailure, SimulatedKubelet, parse_go_duration
from drasched.sim.clock import DEFAULT_START
from tests.unit.controllers.helpers import (
    NS,
    by_name,
    claim,
    events,
    get_pod,
    new_ctx,
    pod,
    pod_ref,
    settle,
)


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("5m", 300), ("1h30m", 5400), ("1.5h", 5400), ("300ms", 0.3), ("2h45m30.5s", 9930.5),
    ("0", 0), ("-1m", -60), ("1us", 1e-6), ("1µs", 1e-6), ("10ns", 1e-8),
])
def test_parse_go_duration(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "5", "1d", "m", "1h 30m", "1..5h", "abc", "+"])
def test_parse_go_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_go_duration(text)


def test_bound_pod_without_claims_runs_and_unbound_pod_waits() -> None:
    ctx = new_ctx()
    ctx.store.restore(pod("bound", node="node-a", containers=2))
    ctx.store.restore(pod("unbound"))
    settle(ctx, [SimulatedKubelet()])
    bound = get_pod(ctx, "bound")["status"]
    assert bound["phase"] == "Running"
    assert bound["startTime"] == "2026-01-01T00:00:00Z"
    ready = {c["type"]: c["status"] for c in bound["conditions"]}
    assert ready["Ready"] == "True" and ready["ContainersReady"] == "True"
    assert [cs["name"] for cs in bound["containerStatuses"]] == ["c0", "c1"]
    assert get_pod(ctx, "unbound")["status"]["phase"] == "Pending"


@pytest.mark.parametrize(("claim_kwargs", "reserve"), [
    ({"allocated": False}, False),  # not allocated (reservedFor needs an allocation upstream)
    ({}, False),  # allocated but not reserved for the pod
])
def test_pod_waits_until_its_claim_is_allocated_and_reserved(claim_kwargs: dict[str, Any], reserve: bool) -> None:
    ctx = new_ctx()
    p = ctx.store.restore(pod("p", [by_name("gpu", "c")], node="node-a"))
    ctx.store.restore(claim("c", reserved=[pod_ref(p)] if reserve else [], **claim_kwargs))
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    assert get_pod(ctx, "p")["status"]["phase"] == "Pending"
    ctx.store.patch(kinds.RESOURCE_CLAIM, "c", NS, {"status": {
        "allocation": claim("x")["status"]["allocation"], "reservedFor": [pod_ref(p)]}}, subresource="status")
    settle(ctx, [kubelet])
    assert get_pod(ctx, "p")["status"]["phase"] == "Running"


def test_pod_waits_for_a_template_claim_that_is_not_created() -> None:
    ctx = new_ctx()
    ctx.store.restore(pod("p", [{"name": "gpu", "resourceClaimTemplateName": "t"}], node="node-a"))
    settle(ctx, [SimulatedKubelet()])
    assert get_pod(ctx, "p")["status"]["phase"] == "Pending"


def test_sim_duration_completes_in_virtual_time() -> None:
    ctx = new_ctx()
    ctx.store.restore(pod("short", node="node-a", annotations={"drasched.io/sim-duration": "90s"}))
    ctx.store.restore(pod("long", node="node-a", annotations={"drasched.io/sim-duration": "1h30m"}))
    ctx.store.restore(pod("forever", node="node-a"))
    settle(ctx, [SimulatedKubelet()])
    assert ctx.clock.now() == DEFAULT_START + timedelta(hours=1, minutes=30)
    for name in ("short", "long"):
        status = get_pod(ctx, name)["status"]
        assert status["phase"] == "Succeeded"
        terminated = status["containerStatuses"][0]["state"]["terminated"]
        assert terminated["reason"] == "Completed" and terminated["exitCode"] == 0
    assert get_pod(ctx, "short")["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] == \
        "2026-01-01T00:01:30Z"
    assert get_pod(ctx, "forever")["status"]["phase"] == "Running"


def test_invalid_sim_duration_warns_and_keeps_running() -> None:
    ctx = new_ctx()
    ctx.store.restore(pod("p", node="node-a", annotations={"drasched.io/sim-duration": "ten minutes"}))
    settle(ctx, [SimulatedKubelet()])
    assert get_pod(ctx, "p")["status"]["phase"] == "Running"
    (warning,) = events(ctx, "InvalidSimDuration", "p")
    assert warning["type"] == "Warning" and "ten minutes" in warning["message"]


def test_terminating_pod_is_force_deleted() -> None:
    ctx = new_ctx()
    ctx.store.restore(pod("p", node="node-a"))
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    ctx.store.delete(kinds.POD, "p", NS)
    assert ctx.store.peek(kinds.POD, "p", NS) is not None  # graceful: the kubelet must finish it
    settle(ctx, [kubelet])
    assert ctx.store.peek(kinds.POD, "p", NS) is None


def test_prepare_hook_failure_keeps_the_pod_pending_with_an_event() -> None:
    class FailingKubelet(SimulatedKubelet):
        def _prepare(self, pod: dict[str, Any], claims: list[dict[str, Any]]) -> PrepareFailure | None:
            return PrepareFailure(f"driver gpu.example.com: cannot prepare {len(claims)} claim(s)")

    ctx = new_ctx()
    p = ctx.store.restore(pod("p", [by_name("gpu", "c")], node="node-a"))
    ctx.store.restore(claim("c", reserved=[pod_ref(p)]))
    kubelet = FailingKubelet()
    settle(ctx, [kubelet])
    settle(ctx, [kubelet])
    assert get_pod(ctx, "p")["status"]["phase"] == "Pending"
    (warning,) = events(ctx, "FailedPrepareDynamicResources", "p")
    # kuberuntime_manager.go SyncPod: Eventf(..., "Failed to prepare dynamic resources: %v", err)
    assert warning["message"] == ("Failed to prepare dynamic resources: "
                                  "driver gpu.example.com: cannot prepare 1 claim(s)")


def test_extended_resource_claim_must_be_reserved_before_start() -> None:
    """KEP-5004: the binder's extended-resource claim is one of the pod's claims too."""
    ctx = new_ctx()
    p = ctx.store.restore(pod("p", node="node-a"))
    ctx.store.patch(kinds.POD, "p", NS, {"status": {"extendedResourceClaimStatus": {
        "resourceClaimName": "p-extended-resources-abcde", "requestMappings": []}}}, subresource="status")
    ctx.store.restore(claim("p-extended-resources-abcde", owner=p))
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])
    assert get_pod(ctx, "p")["status"]["phase"] == "Pending"
    ctx.store.patch(kinds.RESOURCE_CLAIM, "p-extended-resources-abcde", NS,
                    {"status": {"reservedFor": [pod_ref(p)]}}, subresource="status")
    settle(ctx, [kubelet])
    assert get_pod(ctx, "p")["status"]["phase"] == "Running"


def _replica_set(ctx: Any) -> dict[str, Any]:
    return ctx.store.restore({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                              "metadata": {"name": "web", "namespace": NS},
                              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {
                                  "metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c0", "image": "busybox"}]}}}})


def test_a_controlled_always_pod_restarts_in_place_and_the_run_still_ends() -> None:
    # restartPolicy Always: upstream's kubelet restarts an exited container (code 0 too) in the same pod
    ctx = new_ctx()
    rs = _replica_set(ctx)
    p = pod("web", node="node-a", annotations={"drasched.io/sim-duration": "90s"})
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                         "uid": rs["metadata"]["uid"], "controller": True}]
    ctx.store.restore(p)
    kubelet = SimulatedKubelet()
    settle(ctx, [kubelet])  # ends: once the cycle repeats (90s run, 5m back-off) it no longer wakes the run
    assert ctx.clock.now() == DEFAULT_START + timedelta(minutes=14, seconds=10)
    status = get_pod(ctx, "web")["status"]
    (cs,) = status["containerStatuses"]
    assert status["phase"] == "Running" and cs["ready"] is True
    assert (cs["restartCount"], cs["state"]) == (6, {"running": {"startedAt": "2026-01-01T00:14:10Z"}})
    assert cs["lastState"]["terminated"] == {"exitCode": 0, "reason": "Completed", "startedAt": "2026-01-01T00:10:00Z",
                                             "finishedAt": "2026-01-01T00:11:30Z"}
    # virtual time moves on for other work: the pod is brought to where its timeline stands then
    ctx.clock.advance_to(DEFAULT_START + timedelta(hours=1))
    settle(ctx, [kubelet])
    (cs,) = get_pod(ctx, "web")["status"]["containerStatuses"]
    assert (cs["restartCount"], cs["state"]) == (13, {"running": {"startedAt": "2026-01-01T00:59:40Z"}})
    assert cs["lastState"]["terminated"]["finishedAt"] == "2026-01-01T00:54:40Z"


def test_a_bare_on_failure_pod_failing_for_ever_lets_the_run_end() -> None:
    ctx = new_ctx()
    p = pod("crashy", node="node-a", annotations={"drasched.io/sim-duration": "30s", "drasched.io/sim-exit-code": "1"})
    p["spec"]["restartPolicy"] = "OnFailure"
    ctx.store.restore(p)
    settle(ctx, [SimulatedKubelet()])
    (cs,) = get_pod(ctx, "crashy")["status"]["containerStatuses"]
    assert cs["restartCount"] == 6 and cs["lastState"]["terminated"]["reason"] == "Error"
