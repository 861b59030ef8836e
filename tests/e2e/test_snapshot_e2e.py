"""``drasched snapshot`` of a real API server, simulated, reproduces the cluster it was taken from.

A serve scenario is loaded and scheduled by the serve loop until the cluster is quiet (the
helpers of the serve scenario tests); the snapshot is then simulated: every pod must stay on
its node (or stay pending) and every claim must keep its devices. The anonymized snapshot
must reproduce the same cluster under the new names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.manifest import load_paths
from drasched.cli import main
from drasched.plan.anonymize import Renames, anonymize
from drasched.plan.snapshot import take_snapshot, write_snapshot
from drasched.sim.runner import simulate
from drasched.testing.apiserver import LocalCluster
from tests.e2e.test_serve_scenarios_e2e import SCENARIOS, load, settle_under_serve
from tests.scenarios.runner import load_scenario

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
CASES = [
    "scheduler/002-quota-on-device-class.yaml",  # claims from templates, owned by pods, queues
    "scheduler/004-gang-all-or-nothing.yaml",  # a gang that fits and one left pending
]


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster() as c:
        yield c


def _key(o: Obj) -> str:
    md = o["metadata"]
    return f"{md.get('namespace', '')}/{md['name']}"


def _state(objects: list[Obj]) -> tuple[dict[str, str | None], dict[str, list[str]]]:
    """Every pod's node and every claim's devices."""
    pods = {_key(o): (o.get("spec") or {}).get("nodeName") for o in objects if o["kind"] == "Pod"}
    claims = {_key(o): sorted(f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in
                              (((o.get("status") or {}).get("allocation") or {}).get("devices") or {})
                              .get("results") or [])
              for o in objects if o["kind"] == "ResourceClaim"}
    return pods, claims


@pytest.mark.parametrize("case", CASES)
def test_a_simulated_snapshot_of_a_settled_cluster_moves_no_pod(case: str, cluster: LocalCluster,
                                                                 tmp_path: Any) -> None:
    store = cluster.store()
    load(store, load_scenario(SCENARIOS / case))
    settle_under_serve(cluster)

    snapshot = take_snapshot(store)
    assert all("resourceVersion" not in o["metadata"] and "managedFields" not in o["metadata"] for o in snapshot)
    assert all(o["metadata"].get("uid") for o in snapshot)
    assert not any(o["kind"] == "Event" for o in snapshot)
    assert write_snapshot(snapshot, tmp_path / "snap")
    live_pods, live_claims = _state(snapshot)
    assert any(live_pods.values()), [o.get("status") for o in snapshot if o["kind"] == "Pod"]

    result = simulate(snapshot)
    assert result.quiescent
    assert _state(result.objects) == (live_pods, live_claims)

    renames = Renames.for_objects(snapshot)
    anonymous = simulate(anonymize(snapshot))
    ns = renames.namespaces

    def renamed(key: str, names: dict[str, str]) -> str:
        namespace, _, name = key.partition("/")
        return f"{ns.get(namespace, namespace)}/{names[name]}"

    want_pods = {renamed(k, renames.pods): v and renames.nodes[v] for k, v in live_pods.items()}
    pods, claims_after = _state(anonymous.objects)
    assert pods == want_pods
    assert {k: [d.split("/")[2] for d in v] for k, v in claims_after.items()} == {
        renamed(k, renames.claims): [d.split("/")[2] for d in v] for k, v in live_claims.items()}


def test_the_commands_read_a_live_cluster_explain_agrees_with_its_podscheduled_message(
        cluster: LocalCluster, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    store = cluster.store()
    load(store, load_scenario(SCENARIOS / "scheduler/004-gang-all-or-nothing.yaml"))
    settle_under_serve(cluster)
    # big was tried once, on the empty cluster, and then left alone while nothing gave room back
    # (its condition tells what that attempt found); a change to its PodGroup has it tried on
    # the cluster as it is now, which is what explain looks at.
    store.patch(kinds.POD_GROUP, "big", "default", {"metadata": {"annotations": {"example.com/touched": "1"}}})
    settle_under_serve(cluster)
    live = store.get(kinds.POD, "big-1", "default")
    message = next(c["message"] for c in live["status"]["conditions"] if c["type"] == "PodScheduled")
    assert main(["explain", "default/big-1", "--kubeconfig", cluster.kubeconfig_path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"pod default/big-1 is pending: {message}"
    assert "  gang: pod group default/big needs 3 pods placed together; 0 placed, 3 pending" in out
    assert "  n1: Insufficient nvidia.com/gpu" in out and "  n2: Insufficient nvidia.com/gpu" in out

    assert main(["snapshot", "--kubeconfig", cluster.kubeconfig_path, "-o", str(tmp_path / "snap"), "--anonymize"]) == 0
    objects = [item.obj for item in load_paths([str(tmp_path / "snap")])]
    assert not any(o["metadata"]["name"] in ("big-1", "n1") for o in objects)
    live_nodes = sorted(str(p["spec"].get("nodeName")) for p in store.list(kinds.POD).items)
    simulated = simulate(objects).objects
    renames = {v: k for k, v in Renames.for_objects(take_snapshot(store)).nodes.items()}
    assert sorted(str(renames.get(p["spec"].get("nodeName"))) for p in simulated if p["kind"] == "Pod") == live_nodes
