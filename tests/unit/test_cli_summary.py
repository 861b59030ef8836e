"""What ``drasched simulate`` prints first: a table of where each pod went, then totals;
``-o yaml|json`` prints the objects instead, ``-o FILE`` writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from drasched.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_quickstart_prints_the_pod_its_node_and_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLES / "quickstart"), "-q"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "WORKLOAD  POD              NODE    DEVICES                       PHASE    WAITING",
        "-         default/trainer  node-a  gpu.example.com/node-a/gpu-0  Running  -",
        "1 pods (1 Running); 1 of 1 ResourceClaims allocated; 3 rounds, quiescent",
    ]


def test_pending_pods_show_why_and_workloads_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.yaml"
    src.write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "default"},
         "spec": {"parallelism": 1, "completions": 1, "template": {"spec": {
             "restartPolicy": "Never",
             "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}}}},
    ], sort_keys=False))
    assert main(["simulate", str(src), "-q"]) == 0
    out = capsys.readouterr().out.splitlines()
    (row,) = [line for line in out if line.startswith("Job/train")]
    assert row.split()[2:5] == ["-", "-", "Pending"]
    assert "pod group default/train: 0 of the 1 pods needed" in row  # the PodScheduled message, cut to width
    assert out[-1].startswith("1 pods (1 Pending)")


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_dash_o_format_prints_the_objects(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLES / "quickstart"), "-q", "-o", fmt]) == 0
    text = capsys.readouterr().out
    objs = json.loads(text) if fmt == "json" else list(yaml.safe_load_all(text))
    pod = next(o for o in objs if o and o["kind"] == "Pod")
    assert pod["spec"]["nodeName"] == "node-a"


def test_dash_o_file_writes_the_objects_and_prints_the_table(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.json"
    assert main(["simulate", str(EXAMPLES / "quickstart"), "-q", "-o", str(out)]) == 0
    assert any(o["kind"] == "ResourceClaim" for o in json.loads(out.read_text()))
    assert capsys.readouterr().out.startswith("WORKLOAD")


def test_the_stderr_summary_names_a_device_class_whose_extended_resource_name_another_serves(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two classes set ``extendedResourceName: nvidia.com/gpu`` at the same creation time:
    upstream gives it to the name sorted first, silently; the summary says so."""
    src = tmp_path / "in.yaml"
    src.write_text(yaml.safe_dump_all([
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
         "spec": {"extendedResourceName": "nvidia.com/gpu",
                  "selectors": [{"cel": {"expression": f'device.driver == "{name}"'}}]}}
        for name in ("gpu.nvidia.com", "mig-1g.gpu.nvidia.com")
    ], sort_keys=False))
    assert main(["simulate", str(src)]) == 0
    err = capsys.readouterr().err
    assert ("  warning DeviceClass/mig-1g.gpu.nvidia.com: extendedResourceName nvidia.com/gpu is also set on "
            "DeviceClass gpu.nvidia.com, which serves it") in err
    assert "warning DeviceClass/gpu.nvidia.com:" not in err


def test_a_pod_whose_claims_cannot_be_prepared_is_pending_and_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream's kubelet keeps such a pod Pending (containers waiting in ContainerCreating) and says
    why only in its FailedPrepareDynamicResources Warning: the table, the stderr summary and the
    report say it from there, the reason first, then the end of the driver's error."""
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "node" / \
        "008-prepare-error-keeps-pods-pending-without-churn.yaml"
    src = tmp_path / "in.yaml"
    src.write_text(yaml.safe_dump_all([d for d in yaml.safe_load_all(scenario.read_text())
                                       if d and d["kind"] != "Scenario"], sort_keys=False))
    report = tmp_path / "report.md"
    assert main(["simulate", str(src), "--report", str(report)]) == 0
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    rows = out[1:-1]
    assert len(rows) == 3
    for row in rows:
        assert row.split()[4:6] == ["Pending", "FailedPrepareDynamicResources:"]
        assert row.endswith("...ing.strategy must be TimeSlicing or SpacePartitioning, not 'Magic'")  # cut to width
    assert out[-1].startswith("3 pods (3 Pending); 3 of 3 ResourceClaims allocated;")
    assert out[-1].endswith("quiescent")
    pending = [line for line in captured.err.splitlines() if line.startswith("  pending default/bare on gpu-node: ")]
    assert len(pending) == 1 and "FailedPrepareDynamicResources: ResourceClaim default/bare-gpu-" in pending[0]
    assert "(3 Pending)" in captured.err
    text = report.read_text()
    assert "## Pending pods" in text and "| default/bare | FailedPrepareDynamicResources: " in text
