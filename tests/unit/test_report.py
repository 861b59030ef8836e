"""``drasched simulate --report``: the Markdown account of a run a platform team reads."""

from __future__ import annotations

from pathlib import Path

from drasched.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_report_shows_routes_devices_and_queue_numbers(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    assert main(["simulate", str(EXAMPLES / "migration"), "-o", str(tmp_path / "out.yaml"), "-q",
                 "--report", str(report)]) == 0
    text = report.read_text()
    pods_section = text.split("## Pods")[1].split("## ")[0]
    rows = {line.split("|")[1].strip(): line for line in pods_section.splitlines() if line.startswith("| default/")}
    # device-plugin nodes show the plugin route, DRA nodes the devices of the extended-resource claim
    assert "nvidia.com/gpu=2 (device plugin)" in rows["default/research-0"]
    dra_pods = [line for line in rows.values() if "gpu-dra-" in line.split("|")[2]]
    assert len(dra_pods) == 4 and all("gpu.nvidia.com/gpu-dra-" in line for line in dra_pods)
    assert "| research | - | nvidia.com/gpu | 8 | 8 | 8 |" in text
    assert "| binder | bind | 8 |" in text


def test_report_lists_pending_pods_with_their_reason(tmp_path: Path) -> None:
    src = tmp_path / "in.yaml"
    src.write_text("""
apiVersion: v1
kind: Node
metadata: {name: small}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: default}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "4"}}}]}
""")
    report = tmp_path / "r.md"
    assert main(["simulate", str(src), "-o", str(tmp_path / "o.yaml"), "-q", "--report", str(report)]) == 0
    text = report.read_text()
    assert "## Pending pods" in text
    assert "| default/big | 0/1 nodes are available: 1 Insufficient cpu" in text
