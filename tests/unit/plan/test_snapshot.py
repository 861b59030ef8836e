"""Snapshots: server fields dropped, unserved kinds skipped, names anonymized with their references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import NotFound
from drasched.api.kinds import ResourceType
from drasched.api.manifest import dump_yaml, load_paths
from drasched.plan.anonymize import anonymize
from drasched.plan.snapshot import take_snapshot, write_snapshot
from drasched.sim.runner import simulate
from drasched.store.base import ListResult
from tests.scenarios.runner import load_scenario

Obj = dict[str, Any]
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


class _Server:
    """Lists what a simulation ended with, as an API server would (with its bookkeeping)."""

    def __init__(self, objects: list[Obj], unserved: tuple[ResourceType, ...] = ()) -> None:
        self.objects, self.unserved = objects, unserved

    def list(self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> ListResult:
        if rt in self.unserved:
            raise NotFound(f"the server could not find the requested resource ({rt.plural})")
        items = []
        for o in self.objects:
            if o.get("kind") == rt.kind and o.get("apiVersion") == rt.api_version:
                o = {**o, "metadata": {**o["metadata"], "resourceVersion": "7", "generation": 1,
                                       "managedFields": [{"manager": "kubectl"}]}}
                items.append(o)
        return ListResult(items, "7")


def _settled(case: str) -> list[Obj]:
    return simulate(load_scenario(SCENARIOS / case).manifests).objects


def test_a_snapshot_drops_server_fields_keeps_uids_and_skips_events_and_unserved_kinds() -> None:
    objects = _settled("claims/001-template-claims-three-containers.yaml")
    snap = take_snapshot(_Server(objects, unserved=(kinds.JOB_SET,)))
    assert snap and all(o["kind"] not in ("Event", "Lease", "JobSet") for o in snap)
    for o in snap:
        md = o["metadata"]
        assert not {"resourceVersion", "generation", "managedFields", "selfLink"} & set(md)
        assert md.get("uid") and md.get("creationTimestamp")


def test_written_snapshot_loads_back_as_manifests(tmp_path: Path) -> None:
    snap = take_snapshot(_Server(_settled("claims/001-template-claims-three-containers.yaml")))
    paths = write_snapshot(snap, tmp_path)
    assert [p.name for p in paths] == sorted(p.name for p in paths)
    assert len(load_paths([str(tmp_path)])) == len(snap)


def test_anonymized_names_follow_every_reference() -> None:
    objects = take_snapshot(_Server(_settled("scheduler/002-quota-on-device-class.yaml")))
    anon = anonymize(objects)
    assert any(o["kind"] == "ResourceClaim" and o["status"].get("reservedFor") for o in anon)
    text = repr(anon)
    pods = [o for o in objects if o["kind"] == "Pod"]
    nodes = [o for o in objects if o["kind"] == "Node"]
    for o in pods + nodes:
        assert repr(o["metadata"]["name"]) not in text
    claims = {o["metadata"]["name"] for o in anon if o["kind"] == "ResourceClaim"}
    anon_pods = {o["metadata"]["name"]: o for o in anon if o["kind"] == "Pod"}
    anon_nodes = {o["metadata"]["name"] for o in anon if o["kind"] == "Node"}
    assert any(pod["spec"].get("nodeName") for pod in anon_pods.values())
    for pod in anon_pods.values():
        assert pod["spec"].get("nodeName") in anon_nodes | {None}
        for st in pod["status"].get("resourceClaimStatuses") or []:
            assert st["resourceClaimName"] in claims
    for claim in (o for o in anon if o["kind"] == "ResourceClaim"):
        assert all(r["name"] in anon_pods for r in claim["status"].get("reservedFor") or [])
        assert all(r["name"] in anon_pods for r in claim["metadata"].get("ownerReferences") or [])


def test_anonymized_names_keep_the_order_of_the_originals() -> None:
    objects = _settled("scheduler/004-gang-all-or-nothing.yaml")
    before = [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"]
    after = [o["metadata"]["name"] for o in anonymize(objects) if o["kind"] == "Pod"]
    assert sorted(range(len(before)), key=before.__getitem__) == sorted(range(len(after)), key=after.__getitem__)


def test_an_anonymized_settled_cluster_simulates_to_the_same_placements() -> None:
    objects = _settled("scheduler/004-gang-all-or-nothing.yaml")
    anon = anonymize(objects)
    again = {o["metadata"]["uid"]: o["spec"].get("nodeName") for o in simulate(anon).objects if o["kind"] == "Pod"}
    assert again == {o["metadata"]["uid"]: o["spec"].get("nodeName") for o in anon if o["kind"] == "Pod"}


def _pods(objects: list[Obj]) -> dict[str, tuple[str | None, str]]:
    """Pod name -> (its node, its PodScheduled message)."""
    out = {}
    for o in objects:
        if o["kind"] == "Pod":
            cond = next((c for c in o.get("status", {}).get("conditions") or [] if c["type"] == "PodScheduled"), {})
            out[o["metadata"]["name"]] = (o["spec"].get("nodeName"), cond.get("message", ""))
    return out


@pytest.mark.parametrize("case", ["kai/001-kai-labels-on-workloads.yaml", "gangapi/002-upstream-topology.yaml",
                                  "gangapi/003-coscheduling-demo-min-member-3.yaml"])
def test_a_snapshot_holds_other_schedulers_queues_and_gangs_and_simulates_as_the_cluster(
        case: str, tmp_path: Path) -> None:
    """A cluster whose queues and gangs are KAI's, upstream's or scheduler-plugins' objects: the
    snapshot reads them (drasched serve schedules by them), so simulating it places as the cluster would."""
    manifests = load_scenario(SCENARIOS / case).manifests
    foreign = {(o["apiVersion"], o["kind"]) for o in manifests
               if any(o["apiVersion"] == rt.api_version and o["kind"] == rt.kind for rt in kinds.FOREIGN)}
    assert foreign
    snap = take_snapshot(_Server(manifests))
    assert foreign <= {(o["apiVersion"], o["kind"]) for o in snap}
    write_snapshot(snap, tmp_path / "snapshot")
    (tmp_path / "cluster.yaml").write_text(dump_yaml(manifests), encoding="utf-8")

    def placed(path: Path) -> dict[str, tuple[str | None, str]]:
        return _pods(simulate([item.obj for item in load_paths([str(path)])]).objects)

    assert placed(tmp_path / "snapshot") == placed(tmp_path / "cluster.yaml")


def test_a_kind_served_in_two_versions_is_read_once_in_the_newer() -> None:
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default", "uid": "u1"}, "spec": {}}
    older = {**group, "apiVersion": "scheduling.k8s.io/v1alpha2"}  # the same object, as v1alpha2 serves it
    snap = take_snapshot(_Server([group, older]), kinds_to_read=())
    assert [(o["apiVersion"], o["metadata"]["name"]) for o in snap] == [("scheduling.k8s.io/v1beta1", "g")]
    snap = take_snapshot(_Server([older], unserved=(kinds.UPSTREAM_POD_GROUP,)), kinds_to_read=())
    assert [o["apiVersion"] for o in snap] == ["scheduling.k8s.io/v1alpha2"]


def test_other_schedulers_kinds_are_written_beside_drasched_kinds_of_the_same_name(tmp_path: Path) -> None:
    snap = take_snapshot(_Server(load_scenario(SCENARIOS / "kai/001-kai-labels-on-workloads.yaml").manifests))
    names = [p.name for p in write_snapshot(snap, tmp_path)]
    assert any(n.endswith("-queues.scheduling.run.ai.v2.yaml") for n in names)
    assert len(load_paths([str(tmp_path)])) == len(snap)
