"""The memory store fills the same schema defaults as the real server does from deploy/crds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from drasched.api.defaults import apply_crd_defaults
from drasched.store.memory import MemoryStore

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"


def _defaults(schema: dict[str, Any], path: str = "") -> dict[str, Any]:
    """Every ``default:`` in an OpenAPI schema, keyed by a dotted path (``*`` for map values)."""
    found: dict[str, Any] = {}
    if "default" in schema:
        found[path] = schema["default"]
    for name, sub in (schema.get("properties") or {}).items():
        found.update(_defaults(sub, f"{path}.{name}" if path else name))
    if isinstance(schema.get("additionalProperties"), dict):
        found.update(_defaults(schema["additionalProperties"], f"{path}.*"))
    return found


def _schema(kind: str) -> dict[str, Any]:
    for f in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(f.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    raise AssertionError(kind)


def _dig(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = next(iter(obj.values())) if part == "*" else obj[part]
    return obj


def test_every_crd_default_is_applied() -> None:
    skeletons = {"Queue": {"spec": {"resources": {"nvidia.com/gpu": {}}}}, "PodGroup": {"spec": {}}}
    for kind, obj in skeletons.items():
        apply_crd_defaults(kind, obj)
        wanted = _defaults(_schema(kind))
        assert wanted, kind
        for path, value in wanted.items():
            assert _dig(obj, path) == value, f"{kind} {path}"


def test_memory_store_defaults_on_create_and_update() -> None:
    store = MemoryStore()
    q = store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q"},
                      "spec": {}})
    assert q["spec"]["priority"] == 100
    q["spec"] = {"resources": {"cpu": {"quota": "4"}}}
    assert store.update(q)["spec"] == {"priority": 100, "resources": {"cpu": {"quota": "4", "overQuotaWeight": 1}}}
