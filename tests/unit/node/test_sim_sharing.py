"""Twenty pods share four mock GPUs: replay the run's history and check no device was ever
held twice, at both ends of the claim lifecycle.

The run is ``tests/scenarios/node/001-twenty-pods-share-four-gpus.yaml`` through
``drasched.sim.runner.simulate`` (the scenario test checks its final state). Here two
independent records are replayed in order:

* the store's watch history of ResourceClaims (what the scheduler/binder allocated and the
  claim controller deallocated): no device is allocated to two claims at once;
* the simulated kubelet's ``prepare``/``unprepare`` decisions (what the driver prepared):
  no device is prepared for two claims, hence two pods, at once; every pod is prepared
  once and unprepared once, before its claim is deallocated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api import kinds
from drasched.node.sim_kubelet import SimulatedKubelet
from drasched.sim.context import Decision
from drasched.sim.registry import build_default_controllers
from drasched.sim.runner import SimResult, simulate
from drasched.store.base import WatchEvent

Obj = dict[str, Any]
SCENARIO = Path(__file__).parents[2] / "scenarios" / "node" / "001-twenty-pods-share-four-gpus.yaml"
PODS = 20
GPUS = 4
_CLAIM_DEVICES = re.compile(r"claim (\S+) \[([^\]]*)\]")


@dataclass
class Hold:
    device: str
    claim: str
    pod: str
    start: str
    end: str | None = None


def replay_prepares(decisions: Iterable[Decision]) -> tuple[list[Hold], list[str]]:
    """Who held which device when, from the kubelet's decisions; and every double hold found."""
    holds: list[Hold] = []
    current: dict[str, Hold] = {}  # device -> open hold
    problems: list[str] = []
    for d in decisions:
        if d.controller != "sim-kubelet" or d.action not in ("prepare", "unprepare"):
            continue
        for claim, devices in _CLAIM_DEVICES.findall(d.message):
            for device in devices.split(", "):
                held = current.get(device)
                if d.action == "prepare":
                    if held is not None:
                        problems.append(f"{d.time}: {device} prepared for {claim} ({d.object}) while "
                                        f"{held.claim} ({held.pod}) holds it")
                    current[device] = Hold(device, claim, d.object, d.time)
                    holds.append(current[device])
                elif held is None or held.pod != d.object:
                    problems.append(f"{d.time}: {d.object} unprepared {device}, which it did not hold")
                else:
                    held.end = d.time
                    del current[device]
    return holds, problems


def replay_allocations(events: Iterable[WatchEvent]) -> tuple[int, list[str]]:
    """Replay ResourceClaim watch events; (allocations seen, every device allocated twice at once)."""
    owners: dict[str, set[str]] = {}  # device -> claims it is allocated to
    mine: dict[str, set[str]] = {}  # claim -> devices
    allocations = 0
    problems: list[str] = []
    for ev in events:
        md = ev.object.get("metadata") or {}
        claim = f"{md.get('namespace')}/{md.get('name')}"
        alloc = ((ev.object.get("status") or {}).get("allocation") or {}) if ev.type != "DELETED" else {}
        now = {f"{r['driver']}/{r['pool']}/{r['device']}" for r in (alloc.get("devices") or {}).get("results") or []}
        before = mine.get(claim, set())
        for device in before - now:
            owners[device].discard(claim)
        for device in sorted(now - before):
            allocations += 1
            holders = owners.setdefault(device, set())
            if holders:
                problems.append(f"{device} allocated to {claim} while {', '.join(sorted(holders))} has it")
            holders.add(claim)
        mine[claim] = now
    return allocations, problems


def _manifests() -> list[Obj]:
    return [d for d in yaml.safe_load_all(SCENARIO.read_text()) if d and d.get("kind") != "Scenario"]


def _kubelet_record(result: SimResult) -> list[tuple[str, str, str, str]]:
    return [(d.time, d.action, d.object, d.message) for d in result.context.decisions
            if d.controller == "sim-kubelet" and d.action in ("prepare", "unprepare", "start", "complete")]


@pytest.fixture(scope="module")
def run() -> SimResult:
    result = simulate(_manifests())
    assert result.quiescent
    return result


def test_the_same_run_over_real_sockets(run: SimResult) -> None:
    """``plugin_sockets``: the kubelet calls the driver over gRPC; same record, no files left."""
    controllers = [c for c in build_default_controllers() if not isinstance(c, SimulatedKubelet)]
    kubelet = SimulatedKubelet(plugin_sockets=True)
    try:
        result = simulate(_manifests(), [*controllers, kubelet])
        sockets = kubelet.node_drivers.socket_dir()
        assert sockets is not None and sorted(p.name for p in sockets.rglob("*.sock")) == [
            "dra.sock", "gpu.drasched.io-reg.sock"]
        assert type(kubelet.registry.plugin("gpu-node", "gpu.drasched.io")).__name__ == "KubeletPluginClient"
    finally:
        kubelet.close()
    assert not sockets.exists()
    assert _kubelet_record(result) == _kubelet_record(run)


def test_no_device_was_prepared_for_two_pods_at_once(run: SimResult) -> None:
    holds, problems = replay_prepares(run.context.decisions)
    assert problems == []
    assert len(holds) == PODS and all(h.end is not None for h in holds)
    assert sorted({h.pod for h in holds}) == [f"Pod/default/job-{i:02d}" for i in range(1, PODS + 1)]
    assert len({h.device for h in holds}) == GPUS  # every GPU served, none more than one pod at a time
    # Four at a time, 10m each: five waves, the last ending at 50m.
    starts = sorted({h.start for h in holds})
    assert starts == [f"2026-01-01T00:{m}0:00Z" for m in range(5)]
    assert max(h.end or "" for h in holds) == "2026-01-01T00:50:00Z"


def test_no_device_was_allocated_to_two_claims_at_once(run: SimResult) -> None:
    allocations, problems = replay_allocations(run.store.watch(kinds.RESOURCE_CLAIM, "0"))
    assert problems == []
    assert allocations == PODS


def test_each_claim_is_unprepared_before_its_devices_are_freed(run: SimResult) -> None:
    """The driver unprepares a claim before the claim controller frees its devices: here by
    deleting the generated claim of the done pod (the devices go with it)."""
    holds, _ = replay_prepares(run.context.decisions)
    order = [(d.controller, d.action, d.object, d.message) for d in run.context.decisions]
    freeing = ("release", "deallocate", "delete", "remove-finalizer")
    for h in holds:
        claim_ref = f"ResourceClaim/{h.claim}"
        unprepared = next(i for i, (c, a, o, m) in enumerate(order)
                          if c == "sim-kubelet" and a == "unprepare" and o == h.pod)
        freed = next(i for i, (c, a, o, _) in enumerate(order)
                     if c.startswith("resourceclaim-") and a in freeing and o == claim_ref)
        assert unprepared < freed, h
    deleted = sorted(d.object for d in run.context.decisions
                     if d.controller.startswith("resourceclaim-") and d.action == "delete")
    assert deleted == sorted(f"ResourceClaim/{h.claim}" for h in holds)
    assert run.store.list(kinds.RESOURCE_CLAIM).items == []
    pods = run.store.list(kinds.POD).items
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"] * PODS


# ---- the replays themselves catch what they look for -------------------------------------------
def _decision(time: str, action: str, pod: str, claim: str, device: str) -> Decision:
    return Decision(time, "sim-kubelet", action, f"Pod/default/{pod}", f"node n: claim default/{claim} [{device}]")


def test_replay_prepares_reports_an_overlap() -> None:
    record = [
        _decision("t0", "prepare", "a", "ca", "d/n/gpu-0"),
        _decision("t1", "prepare", "b", "cb", "d/n/gpu-0"),
        _decision("t2", "unprepare", "a", "ca", "d/n/gpu-0"),
    ]
    _, problems = replay_prepares(record)
    assert problems == ["t1: d/n/gpu-0 prepared for default/cb (Pod/default/b) while default/ca "
                        "(Pod/default/a) holds it", "t2: Pod/default/a unprepared d/n/gpu-0, which it did not hold"]


def test_replay_allocations_reports_an_overlap() -> None:
    def claim(name: str, device: str | None) -> Obj:
        status = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "d", "pool": "n", "device": device}]}}} if device else {}
        return {"metadata": {"namespace": "default", "name": name}, "status": status}

    events = [WatchEvent("ADDED", claim("a", "gpu-0")), WatchEvent("ADDED", claim("b", "gpu-0")),
              WatchEvent("MODIFIED", claim("a", None)), WatchEvent("MODIFIED", claim("c", "gpu-0"))]
    allocations, problems = replay_allocations(events)
    assert allocations == 3
    assert problems == ["d/n/gpu-0 allocated to default/b while default/a has it",
                        "d/n/gpu-0 allocated to default/c while default/b has it"]
