"""``drasched what-if`` on the migration example: more DRA nodes, a quota change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api.manifest import load_paths
from drasched.cli import main
from drasched.plan.whatif import Change, ChangeError, apply_change, what_if

Obj = dict[str, Any]
MIGRATION = Path(__file__).resolve().parents[3] / "examples" / "migration"


def _gpu_pod(name: str, queue: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"drasched.io/queue": queue}},
            "spec": {"containers": [{"name": "main", "image": "app:1", "resources": {
                "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"},
                "limits": {"nvidia.com/gpu": "2"}}}]}}


def _dra_node(name: str) -> list[Obj]:
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}}
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
              "metadata": {"name": f"{name}-gpu.nvidia.com"},
              "spec": {"driver": "gpu.nvidia.com", "nodeName": name,
                       "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                       "devices": [{"name": f"gpu-{i}"} for i in range(4)]}}
    return [node, slice_]


@pytest.fixture
def crowded() -> list[Obj]:
    """The migration example with four more research pods than its 16 GPUs hold."""
    base = [item.obj for item in load_paths([str(MIGRATION)])]
    return base + [_gpu_pod(f"research-extra-{i}", "research") for i in range(4)]


def test_two_more_dra_nodes_place_the_pending_pods_and_raise_the_gpu_count(crowded: list[Obj]) -> None:
    result = what_if(crowded, Change(adds=_dra_node("gpu-dra-2") + _dra_node("gpu-dra-3")))
    assert len(result.base.pending) == 4
    assert result.newly_placed() == [f"default/research-extra-{i}" for i in range(4)]
    nodes = {node for node in result.changed.placements.values() if node}
    assert {"gpu-dra-2", "gpu-dra-3"} <= nodes
    assert (result.base.devices_used, result.base.devices_total) == (16, 16)
    assert (result.changed.devices_used, result.changed.devices_total) == (24, 24)
    text = "\n".join(result.lines())
    assert "pending: 4 -> 0" in text
    assert "GPU utilization: 16/16 (100%) -> 24/24 (100%)" in text


def test_a_quota_change_reports_the_queues_whose_fair_share_changes(crowded: list[Obj]) -> None:
    change = Change(sets=["queue/research.spec.resources.nvidia.com/gpu.quota=12",
                          "queue/inference.spec.resources.nvidia.com/gpu.quota=4"])
    result = what_if(crowded, change)
    shares = {q: (before[1], after[1]) for q, r, before, after in result.queue_changes() if r == "nvidia.com/gpu"}
    assert shares == {"research": ("8", "12"), "inference": ("8", "4")}


def test_removing_a_node_leaves_its_pods_pending(crowded: list[Obj]) -> None:
    result = what_if(crowded, Change(removes=["Node/gpu-dp-0"]))
    on_dp0 = sorted(k for k, node in result.base.placements.items() if node == "gpu-dp-0")
    assert on_dp0 and set(on_dp0) <= set(result.newly_pending()) | {k for k, _, _ in result.moved()}
    assert result.changed.devices_total == 12


def test_a_change_that_names_nothing_is_an_error(crowded: list[Obj]) -> None:
    with pytest.raises(ChangeError, match="no Node nowhere"):
        apply_change(crowded, Change(removes=["Node/nowhere"]))
    with pytest.raises(ChangeError, match="no Queue missing"):
        apply_change(crowded, Change(sets=["queue/missing.spec.resources.nvidia.com/gpu.quota=1"]))


def test_a_default_duration_lets_pending_work_run_after_the_first_pods_finish(crowded: list[Obj]) -> None:
    result = what_if(crowded, Change(), default_duration="1h")
    assert result.base.pending == [] and result.base.last_placement_s == 3600


def test_the_command_prints_the_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    added = tmp_path / "nodes.yaml"
    added.write_text(yaml.safe_dump_all(_dra_node("gpu-dra-2")), encoding="utf-8")
    assert main(["what-if", str(MIGRATION), "--add", str(added)]) == 0
    out = capsys.readouterr().out
    assert "GPU utilization: 16/16 (100%) -> 16/20 (80%)" in out
