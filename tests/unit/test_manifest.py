"""Manifest loading: formats, List kinds, and errors that say where the problem is."""

from __future__ import annotations

from pathlib import Path

import pytest

from drasched.api.manifest import ManifestError, dump_yaml, load_paths, parse_documents

POD = """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: busybox}]
"""


def test_multi_document_yaml_and_list_kind(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POD + "---\n" + """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}}
""")
    loaded = load_paths([str(tmp_path)])
    assert [o.obj["metadata"]["name"] for o in loaded] == ["p", "n1", "n2"]
    assert loaded[2].index == 1


def test_json_file(tmp_path: Path) -> None:
    (tmp_path / "n.json").write_text('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}')
    assert load_paths([str(tmp_path / "n.json")])[0].obj["kind"] == "Node"


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: [\n")
    with pytest.raises(ManifestError, match=r"bad\.yaml: line \d+ column \d+: malformed YAML"):
        load_paths([str(f)])


def test_unknown_kind_names_document_and_object(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(POD + "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    with pytest.raises(ManifestError, match=r'x\.yaml: document 1: Widget w: no kind "Widget"'):
        load_paths([str(f)])


def test_invalid_field_names_the_field_path(tmp_path: Path) -> None:
    f = tmp_path / "claim.yaml"
    f.write_text("""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: default}
spec:
  devices:
    requests:
    - name: Bad_Name
      exactly: {deviceClassName: gpu.example.com}
""")
    want = r"ResourceClaim default/c: spec\.devices\.requests\[0\]\.name: Invalid value"
    with pytest.raises(ManifestError, match=want):
        load_paths([str(f)])


def test_missing_file() -> None:
    with pytest.raises(ManifestError, match="no such file"):
        load_paths(["/nonexistent/x.yaml"])


def test_dump_puts_identity_first_and_is_stable() -> None:
    obj = {"spec": {"b": 1}, "metadata": {"name": "n"}, "kind": "Node", "apiVersion": "v1"}
    text = dump_yaml([obj])
    assert text.startswith("---\napiVersion: v1\nkind: Node\nmetadata:")
    assert parse_documents(text, "x")[0].obj == obj
