"""Device taint eviction in ``drasched serve`` against a real kube-apiserver.

Scenarios of embedded mode (tests/scenarios/taints/) loaded into the server and run by
serve's loop with ``--enable-claim-controller`` (which also runs the device taint eviction
controller, as kube-controller-manager runs upstream's). No kubelet runs here, so an evicted
pod stays with ``deletionTimestamp`` set (a bound pod is deleted gracefully) and keeps its
claim until a kubelet would finish it; what the controller writes is checked: the
``DisruptionTarget`` condition, the Event, the deletion, the rule's status.

Rules are created in the version the test server serves (``resource.k8s.io/v1`` on 1.37;
``v1beta2``, v1's shape, on 1.36) and serve finds that version by discovery.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.meta import parse_time
from drasched.serve.main import build_controllers, run, served_taint_rules
from drasched.testing.apiserver import LocalCluster
from drasched.testing.served import as_served
from tests.e2e.test_serve_scenarios_e2e import SCENARIOS, Serving, load, wait_quiet
from tests.scenarios.runner import Scenario, load_scenario

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster() as c:
        yield c


def test_serve_evicts_the_pod_on_a_device_tainted_noexecute_in_its_slice(cluster: LocalCluster) -> None:
    scn = load_scenario(SCENARIOS / "taints/005-slice-noexecute-taint-evicts.yaml")
    store = cluster.store()
    load(store, scn)
    with Serving(cluster) as serving:
        wait_quiet(store)
    assert serving.error is None, serving.error
    tainted = store.get(kinds.POD, "on-tainted", "default")
    healthy = store.get(kinds.POD, "on-healthy", "default")
    assert tainted["metadata"].get("deletionTimestamp"), "the pod on the tainted device is being deleted"
    assert not healthy["metadata"].get("deletionTimestamp")
    (cond,) = [c for c in tainted["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "DeletionByDeviceTaintManager", "Device Taint manager: deleting due to NoExecute taint")
    events = [e for e in store.list(kinds.EVENT, "default").items
              if e["involvedObject"]["name"] == "on-tainted" and e["reason"] == "DeviceTaintManagerEviction"]
    assert [(e["type"], e["message"]) for e in events] == [("Normal", "Marking for deletion")]
    slice_taint = store.get(kinds.RESOURCE_SLICE, "n1-gpus")["spec"]["devices"][0]["taints"][0]
    assert slice_taint["timeAdded"], "the server stamps timeAdded, from which tolerationSeconds count"


def _rules_kind(cluster: LocalCluster) -> kinds.ResourceType:
    """The DeviceTaintRule resource of the test server's release."""
    return kinds.for_object({"apiVersion": cluster.served.taint_rule, "kind": "DeviceTaintRule"})


def _serve_until_quiet(cluster: LocalCluster, store: Any) -> None:
    """serve's loop with the claim controller and the rules in the version the server serves."""
    rules_kind = served_taint_rules(store)
    assert rules_kind is _rules_kind(cluster)
    stop, errors = threading.Event(), []

    def serve() -> None:
        try:
            run(store, build_controllers(True, None, rules_kind), stop=stop, period=0.05, watch_timeout=5.0)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        wait_quiet(store)
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors


def _as_served(cluster: LocalCluster, manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [as_served(obj, cluster.served) for obj in manifests]


def test_serve_reads_the_served_rules_and_evicts(cluster: LocalCluster) -> None:
    scn = load_scenario(SCENARIOS / "taints/001-noexecute-rule-evicts-running-pod.yaml")
    store = cluster.store()
    load(store, Scenario(Path(scn.path), scn.description, {}, _as_served(cluster, scn.manifests)))
    _serve_until_quiet(cluster, store)
    pod = store.get(kinds.POD, "trainer", "default")
    assert pod["metadata"].get("deletionTimestamp")
    assert any(c["type"] == "DisruptionTarget" and c["reason"] == "DeletionByDeviceTaintManager"
               for c in pod["status"]["conditions"])
    rule = store.get(_rules_kind(cluster), "broken-gpu")
    (cond,) = rule["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "EvictionInProgress", "False", "Completed", "1 pod evicted since starting the controller.")


def test_serve_places_a_tolerating_pod_and_evicts_it_after_toleration_seconds(cluster: LocalCluster) -> None:
    """The allocator takes the tainted device for a claim that tolerates the rule for 2 s; the
    eviction comes no earlier than the rule's timeAdded plus those 2 s (the wall clock here)."""
    scn = load_scenario(SCENARIOS / "taints/002-toleration-seconds-evicts-at-300s.yaml")
    manifests = [o for o in scn.manifests if (o.get("metadata") or {}).get("name") not in ("short", "short-gpu")]
    for obj in (o for o in manifests if o["kind"] == "ResourceClaim"):
        for req in obj["spec"]["devices"]["requests"]:
            req["exactly"]["tolerations"][0]["tolerationSeconds"] = 2
    store = cluster.store()
    load(store, Scenario(Path(scn.path), scn.description, {}, _as_served(cluster, manifests)))
    _serve_until_quiet(cluster, store)
    claim = store.get(kinds.RESOURCE_CLAIM, "long-gpu", "default")
    results = claim["status"]["allocation"]["devices"]["results"]
    assert results[0]["tolerations"][0]["tolerationSeconds"] == 2  # copied into the result
    pod = store.get(kinds.POD, "long", "default")
    assert pod["spec"].get("nodeName") == "n1" and pod["metadata"].get("deletionTimestamp")
    (cond,) = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    rule = store.get(_rules_kind(cluster), "maintenance")
    added = parse_time(rule["spec"]["taint"]["timeAdded"])
    assert parse_time(cond["lastTransitionTime"]) >= added + timedelta(seconds=2)
