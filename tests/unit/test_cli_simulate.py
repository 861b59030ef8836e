"""``drasched simulate`` as a user runs it: determinism, bad input, output files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from drasched.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_simulate_is_byte_identical_across_runs(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert main(["simulate", str(EXAMPLES / "quickstart"), "-o", str(a), "-q"]) == 0
    assert main(["simulate", str(EXAMPLES / "quickstart"), "-o", str(b), "-q"]) == 0
    assert a.read_bytes() == b.read_bytes()


def test_input_metadata_is_kept(tmp_path: Path) -> None:
    src = tmp_path / "in.yaml"
    src.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "uid": "11111111-2222-3333-4444-555555555555",
                     "creationTimestamp": "2025-05-05T10:00:00Z"},
    }))
    out = tmp_path / "out.yaml"
    assert main(["simulate", str(src), "-o", str(out), "-q"]) == 0
    node = next(o for o in yaml.safe_load_all(out.read_text()) if o["kind"] == "Node")
    assert node["metadata"]["uid"] == "11111111-2222-3333-4444-555555555555"
    assert node["metadata"]["creationTimestamp"] == "2025-05-05T10:00:00Z"
    assert "resourceVersion" not in node["metadata"]


def test_unknown_namespace_rejects_the_whole_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.yaml"
    src.write_text("""
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: nowhere}
spec: {containers: [{name: c, image: busybox}]}
""")
    out = tmp_path / "out.yaml"
    assert main(["simulate", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert 'document 1: Pod nowhere/p: namespaces "nowhere" not found' in err
    assert not out.exists()


def test_duplicate_object_with_other_content_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.yaml"
    src.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
                   "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {a: b}}\n")
    assert main(["simulate", str(src)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {src}: document 1: Node n1: defined again with different content (first at {src}: document 0; "
        "they differ at metadata.labels): give each object once, or repeat it unchanged",
        "error: 1 object(s) rejected; nothing was simulated"]


def test_identical_objects_in_two_files_are_simulated_once(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    (tmp_path / "a.yaml").write_text(node)
    (tmp_path / "b.yaml").write_text(node)
    assert main(["simulate", str(tmp_path), "-q", "-o", "yaml"]) == 0
    out = [o for o in yaml.safe_load_all(capsys.readouterr().out) if o and o["kind"] == "Node"]
    assert [o["metadata"]["name"] for o in out] == ["n1"]


def test_every_refusal_is_an_error_line_then_a_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = "apiVersion: v1\nkind: Pod\nmetadata: {{name: {}}}\nspec: {{containers: [{{name: Bad, image: x}}]}}\n"
    (tmp_path / "a.yaml").write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    (tmp_path / "b.yaml").write_text(bad.format("p1") + "---\n" + bad.format("p2"))
    for command in (["simulate", str(tmp_path), "-q"], ["explain", "default/p1", str(tmp_path)],
                    ["what-if", str(tmp_path)]):
        assert main(command) == 2
        err = capsys.readouterr().err.splitlines()
        assert [line.split(": ")[3] for line in err[:3]] == ["Widget w", "Pod p1", "Pod p2"], command
        assert err[3:] == ["error: 3 object(s) rejected; nothing was simulated"], command


def test_convert_reports_every_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.yaml").write_text("a: [1\n")
    assert main(["convert", str(tmp_path), str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "malformed YAML" in err[0] and err[1].endswith("nope.yaml: no such file or directory")
    assert err[2] == "error: 2 file(s) not read; nothing was converted"


def test_a_chart_s_rbac_is_left_out_and_its_daemonset_runs_on_every_node(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = tmp_path / "chart.yaml"
    chart.write_text("""
apiVersion: v1
kind: ServiceAccount
metadata: {name: dra-driver, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: dra-driver}
rules: [{apiGroups: [resource.k8s.io], resources: [resourceslices], verbs: [get, list, watch, create]}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-dra-driver, namespace: kube-system}
spec:
  selector: {matchLabels: {app: dra}}
  template:
    metadata: {labels: {app: dra}}
    spec: {serviceAccountName: dra-driver, containers: [{name: plugin, image: driver}]}
""")
    out = tmp_path / "out.yaml"
    assert main(["simulate", str(EXAMPLES / "quickstart"), str(chart), "-q", "-o", str(out)]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {chart}: document 1: ClusterRole dra-driver: does not affect scheduling; left out"]
    objects = list(yaml.safe_load_all(out.read_text()))
    kinds = {o["kind"] for o in objects}
    assert {"ServiceAccount", "DaemonSet"} <= kinds and "ClusterRole" not in kinds
    assert all(o["spec"].get("nodeName") for o in objects if o["kind"] == "Pod")
    # the DaemonSet's pods run on every node, as kube-controller-manager's DaemonSet controller makes them
    nodes = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "Node")
    daemon = sorted(o["spec"]["nodeName"] for o in objects if o["kind"] == "Pod"
                    and o["metadata"].get("generateName") == "nvidia-dra-driver-")
    assert daemon == nodes
    ds = next(o for o in objects if o["kind"] == "DaemonSet")
    assert ds["status"]["desiredNumberScheduled"] == ds["status"]["numberReady"] == len(nodes)


def test_an_unknown_kind_beside_a_chart_is_still_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.yaml"
    src.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n"
                   "apiVersion: v1\nkind: Sevrice\nmetadata: {name: typo}\n")
    assert main(["simulate", str(src), "-q"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {src}: document 0: Secret s: does not affect scheduling; left out",
        f'error: {src}: document 1: Sevrice typo: no kind "Sevrice" is registered for version "v1"',
        "error: 1 object(s) rejected; nothing was simulated"]


def test_a_misspelt_dra_field_is_a_warning_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``allocationmode: All`` would silently mean ExactCount; kubectl's strict validation refuses
    it (``unknown field``), drasched names it on stderr and goes on."""
    src = tmp_path / "claim.yaml"
    src.write_text(yaml.safe_dump({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "all", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.example.com",
                                                                        "allocationmode": "All"}}]}}}))
    assert main(["simulate", str(src), "-q"]) == 0
    assert (f'warning: {src}: document 0: ResourceClaim default/all: unknown field '
            '"spec.devices.requests[0].exactly.allocationmode" (ignored)') in capsys.readouterr().err
