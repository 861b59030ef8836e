"""The decode shapes of drasched's CRDs agree with deploy/crds/*.yaml (the schema the real
API server enforces): every property the CRD declares has a shape of the same JSON type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api import kinds
from drasched.api.shapes import Shape, shape_for

CRDS = Path(__file__).resolve().parents[3] / "deploy" / "crds"


def _crd_schema(kind: str) -> dict[str, Any]:
    for f in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(f.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    raise AssertionError(f"no CRD for {kind}")


def _type_of(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    if schema.get("type") == "object" and "additionalProperties" in schema:
        return "map"
    return str(schema.get("type", "any"))


def _shape_type(shape: Shape) -> str:
    if shape.type == "oneOf" and {o.type for o in shape.options} == {"string", "integer"}:
        return "int-or-string"
    return shape.type


def _mismatches(schema: dict[str, Any], shape: Shape, path: str) -> list[str]:
    if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return []
    want, got = _type_of(schema), _shape_type(shape)
    if want != got:
        return [f"{path or '<root>'}: CRD says {want}, shape says {got}"]
    out: list[str] = []
    if want == "object":
        for name, sub in (schema.get("properties") or {}).items():
            if name in ("apiVersion", "kind", "metadata"):
                continue
            child = shape.fields.get(name)
            if child is None:
                out.append(f"{path}.{name}: in the CRD, not in the shape")
            else:
                out += _mismatches(sub, child, f"{path}.{name}" if path else name)
    elif want == "map" and isinstance(schema["additionalProperties"], dict):
        assert shape.item is not None
        out += _mismatches(schema["additionalProperties"], shape.item, f"{path}.*")
    elif want == "array":
        assert shape.item is not None
        out += _mismatches(schema.get("items") or {}, shape.item, f"{path}[*]")
    return out


@pytest.mark.parametrize("rt", [kinds.QUEUE, kinds.POD_GROUP, kinds.BIND_REQUEST], ids=lambda rt: rt.kind)
def test_the_decode_shape_of_each_crd_matches_its_openapi_schema(rt: kinds.ResourceType) -> None:
    assert _mismatches(_crd_schema(rt.kind), shape_for(rt), "") == []
