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


def test_duplicate_object_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.yaml"
    src.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
                   "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n")
    assert main(["simulate", str(src)]) == 2
    assert 'nodes "n1" already exists' in capsys.readouterr().err
