"""Device taint eviction in ``drasched serve`` against a real kube-apiserver.

The scenario of embedded mode (tests/scenarios/taints/005) loaded into the server and run by
serve's loop with ``--enable-claim-controller`` (which also runs the device taint eviction
controller, as kube-controller-manager runs upstream's). No kubelet runs here, so the evicted
pod stays with ``deletionTimestamp`` set (a bound pod is deleted gracefully) and keeps its
claim until a kubelet would finish it; what the controller writes is checked: the
``DisruptionTarget`` condition, the Event and the deletion.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drasched.api import kinds
from drasched.testing.apiserver import LocalCluster
from tests.e2e.test_serve_scenarios_e2e import SCENARIOS, Serving, load, wait_quiet
from tests.scenarios.runner import load_scenario

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
