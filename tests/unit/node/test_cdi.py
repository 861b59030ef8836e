"""CDI spec files: written per claim, checked against the schema, removed on unprepare."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from drasched.node.cdi import SCHEMA_PATH, CDIError, CDIWriter, ContainerEdits, minimum_version, validate_spec

from .helpers import add_claim, gpu_plugin, result, store_with_node

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def _edits() -> ContainerEdits:
    return ContainerEdits(
        env={"GPU": "GPU-1234", "MODE": "a=b"},
        device_nodes=[{"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0, "permissions": "rw"},
                      {"path": "/dev/nvidiactl"}],
        mounts=[{"hostPath": "/usr/lib/libcuda.so", "containerPath": "/usr/lib/libcuda.so",
                 "options": ["ro", "nosuid", "bind"]}],
    )


def test_written_spec_matches_the_schema_and_the_returned_ids(tmp_path: Path) -> None:
    writer = CDIWriter("k8s.gpu.drasched.io", "claim", tmp_path)
    ids = writer.write_claim("abc-123", [("abc-123-gpu-0", _edits()), ("abc-123-gpu-1", ContainerEdits())])
    assert ids == ["k8s.gpu.drasched.io/claim=abc-123-gpu-0", "k8s.gpu.drasched.io/claim=abc-123-gpu-1"]
    path = tmp_path / "k8s.gpu.drasched.io-claim_abc-123.json"
    spec = json.loads(path.read_text())
    jsonschema.validate(spec, SCHEMA)  # the file as a runtime reads it, with the schema itself
    assert spec["kind"] == "k8s.gpu.drasched.io/claim"
    assert spec["cdiVersion"] == "0.3.0"  # nothing newer is needed for this spec
    dev = spec["devices"][0]
    assert dev["containerEdits"]["env"] == ["GPU=GPU-1234", "MODE=a=b"]
    assert dev["containerEdits"]["deviceNodes"][0]["path"] == "/dev/nvidia0"
    assert dev["containerEdits"]["mounts"][0]["options"] == ["ro", "nosuid", "bind"]
    assert spec["devices"][1] == {"name": "abc-123-gpu-1", "containerEdits": {}}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left behind
    writer.remove_claim("abc-123")
    writer.remove_claim("abc-123")  # twice is fine
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("change", "version"), [
    (lambda s: s["devices"][0]["containerEdits"]["mounts"][0].update(type="bind"), "0.4.0"),
    (lambda s: s["devices"][0]["containerEdits"]["deviceNodes"][0].update(hostPath="/dev/x"), "0.5.0"),
    (lambda s: s["devices"][0].update(name="0abc"), "0.5.0"),
    (lambda s: s.update(annotations={"a": "b"}), "0.6.0"),
    (lambda s: s.update(kind="vendor.com/class.with.dots"), "0.6.0"),
    (lambda s: s["devices"][0]["containerEdits"].update(additionalGIDs=[5]), "0.7.0"),
])
def test_minimum_version_follows_the_features_used(change: object, version: str) -> None:
    spec = CDIWriter("vendor.com", "gpu").build_spec([("dev0", _edits())])
    change(spec)  # type: ignore[operator]
    assert minimum_version(spec) == version
    spec["cdiVersion"] = version
    validate_spec(spec)
    if version != "0.4.0":
        spec["cdiVersion"] = "0.4.0"
        with pytest.raises(CDIError, match=f"uses features of {version} but declares 0.4.0"):
            validate_spec(spec)


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.update(kind="novendor"), "kind: 'novendor' does not match"),
    (lambda s: s.update(cdiVersion="9.9.9"), "cdiVersion: '9.9.9' is not one of"),
    (lambda s: s["devices"][0].update(name="-bad"), "devices.0.name: '-bad' does not match"),
    (lambda s: s["devices"][0]["containerEdits"].update(env=["NOEQUALS"]), "env.0: 'NOEQUALS' does not match"),
    (lambda s: s["devices"][0]["containerEdits"]["mounts"][0].pop("containerPath"),
     "'containerPath' is a required property"),
    (lambda s: s["devices"][0]["containerEdits"].update(bogus=1), "Additional properties are not allowed"),
    (lambda s: s["devices"].append(dict(s["devices"][0])), "duplicate device name(s) dev0"),
])
def test_invalid_specs_are_refused_with_the_field_named(change: object, message: str) -> None:
    spec = CDIWriter("vendor.com", "gpu").build_spec([("dev0", _edits())])
    validate_spec(spec)
    change(spec)  # type: ignore[operator]
    with pytest.raises(CDIError) as info:
        validate_spec(spec)
    assert message in str(info.value)


def test_bad_vendor_or_device_names_fail_before_writing(tmp_path: Path) -> None:
    with pytest.raises(CDIError, match="invalid CDI vendor"):
        CDIWriter("-vendor", "claim", tmp_path)
    writer = CDIWriter("vendor.com", "claim", tmp_path)
    with pytest.raises(CDIError, match="invalid CDI device name"):
        writer.write_claim("u", [("bad name", ContainerEdits())])
    assert list(tmp_path.iterdir()) == []


def test_prepare_writes_one_spec_per_claim_and_unprepare_removes_it(tmp_path: Path) -> None:
    store = store_with_node()
    plugin = gpu_plugin(store, cdi_dir=tmp_path)
    a = add_claim(store, "a", [result("gpu-0"), result("gpu-1", request="b")])
    answer = plugin.node_prepare_resources([a])[a.uid]
    (path,) = tmp_path.iterdir()
    spec = json.loads(path.read_text())
    jsonschema.validate(spec, SCHEMA)
    validate_spec(spec)
    qualified = [f"{spec['kind']}={d['name']}" for d in spec["devices"]]
    assert qualified == [i for d in answer.devices for i in d.cdi_device_ids]
    uuids = {d: plugin.driver.pools("node-1")["node-1"].devices[i]["attributes"]["uuid"]["string"]
             for i, d in enumerate(["gpu-0", "gpu-1"])}
    assert spec["devices"][0]["containerEdits"]["env"] == [f"GPU_DEVICE_0={uuids['gpu-0']}"]
    plugin.node_unprepare_resources([a])
    assert list(tmp_path.iterdir()) == []
