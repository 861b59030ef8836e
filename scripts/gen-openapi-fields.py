#!/usr/bin/env python3
"""Regenerate src/drasched/api/openapi_fields.json from a real kube-apiserver's OpenAPI v3.

The file holds, for every built-in kind drasched reads, which fields each object level
declares (nothing else of the schema: no types, no descriptions), so that a manifest's
unknown field can be named the way ``kubectl apply``'s strict validation names it
(drasched.api.unknown_fields). Run it after moving to a new Kubernetes version:

    .venv/bin/python scripts/gen-openapi-fields.py

It starts the API server the tests use (drasched.testing.apiserver.LocalCluster).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from drasched.testing.apiserver import LocalCluster, binary_version, kube_apiserver_binary  # noqa: E402

GROUP_VERSIONS = (
    "api/v1",
    "apis/apps/v1",
    "apis/batch/v1",
    "apis/coordination.k8s.io/v1",
    "apis/node.k8s.io/v1",
    "apis/policy/v1",
    "apis/resource.k8s.io/v1",
    "apis/resource.k8s.io/v1beta1",
    "apis/resource.k8s.io/v1beta2",
    "apis/scheduling.k8s.io/v1",
    "apis/scheduling.k8s.io/v1beta1",
)
OUT = ROOT / "src" / "drasched" / "api" / "openapi_fields.json"
REF = "#/components/schemas/"


def _sub(schema: dict[str, Any]) -> Any:
    """One property's schema, pruned: a schema name (a $ref), or the fields that matter."""
    if "$ref" in schema:
        return schema["$ref"].removeprefix(REF)
    refs = [s["$ref"] for s in schema.get("allOf") or [] if "$ref" in s]
    if refs:
        return refs[0].removeprefix(REF)
    out: dict[str, Any] = {}
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        out["open"] = True
    if "properties" in schema:
        out["fields"] = {k: _sub(v) for k, v in sorted(schema["properties"].items())}
    if isinstance(schema.get("items"), dict):
        out["items"] = _sub(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        out["values"] = _sub(schema["additionalProperties"])
    return out


def main() -> int:
    schemas: dict[str, Any] = {}
    kinds: dict[str, str] = {}
    with LocalCluster() as cluster:
        store = cluster.store()
        for gv in GROUP_VERSIONS:
            doc = store._request("GET", f"/openapi/v3/{gv}").json()
            for name, schema in doc["components"]["schemas"].items():
                schemas[name] = _sub(schema)
                if name.startswith("io.k8s.apimachinery.") or name.endswith("List"):
                    continue  # DeleteOptions, WatchEvent, lists: never in a manifest
                for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                    api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
                    if gv in (f"api/{api_version}", f"apis/{api_version}"):
                        kinds[f"{api_version}/{gvk['kind']}"] = name
    version = binary_version(kube_apiserver_binary())
    OUT.write_text(json.dumps({"kubernetes": version, "kinds": dict(sorted(kinds.items())),
                               "schemas": dict(sorted(schemas.items()))}, separators=(",", ":")) + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(kinds)} kinds, {len(schemas)} schemas, kube-apiserver {version}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
