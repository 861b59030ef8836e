"""A workload controller with none of its kind in the cluster does not follow the pods meanwhile;
when the first one comes it must still see every pod that exists (a cluster restored in two
loads: the pods first, their ReplicaSet later)."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.sim.runner import Simulation

RS_UID = "7d0c2c3e-0000-4000-8000-000000000001"


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                              "uid": RS_UID, "controller": True}]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_a_replicaset_restored_after_its_pods_counts_them_and_creates_none() -> None:
    sim = Simulation()
    sim.load([_pod("web-a"), _pod("web-b")])
    sim.run()  # no ReplicaSet yet: its controller has nothing to do
    sim.load([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "web", "namespace": "default", "uid": RS_UID},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}])
    sim.run()
    pods = sorted(p["metadata"]["name"] for p in sim.store.iter_kind(kinds.POD))
    assert pods == ["web-a", "web-b"]
    rs = sim.store.get(kinds.REPLICA_SET, "web", "default")
    assert rs["status"]["replicas"] == 2
