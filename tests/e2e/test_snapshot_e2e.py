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

from drasched.plan.anonymize import Renames, anonymize
from drasched.plan.snapshot import take_snapshot, write_snapshot
from drasched.sim.runner import simulate
from drasched.testing.apiserver import LocalCluster
from tests.e2e.test_serve_scenarios_e2e import SCENARIOS, Serving, load, wait_quiet
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
    with Serving(cluster, claims_only=True) as claims:
        wait_quiet(store)
    assert claims.error is None, claims.error
    with Serving(cluster) as serving:
        wait_quiet(store)
    assert serving.error is None, serving.error

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
