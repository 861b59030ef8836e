"""Fields of a built-in object that its kind does not declare: almost always a typo.

``kubectl apply`` validates strictly by default, and the API server then refuses an unknown
field (``strict decoding error: unknown field "spec.nodeSelektor"``); without it the field
is dropped, and a misspelt ``allocationMode: All`` quietly becomes one device, a misspelt
``nodeSelector`` lets the pod land anywhere. :func:`unknown_fields` names such fields from
the fields Kubernetes declares, as a real kube-apiserver's OpenAPI v3 publishes them
(``openapi_fields.json``, written by ``scripts/gen-openapi-fields.py`` from the API server
the tests run: every built-in kind drasched reads, in each version it reads). Kinds outside
it (drasched's CRDs, other schedulers' objects) are not checked here.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

Obj = dict[str, Any]
Schema = str | dict[str, Any]
"""A schema name, or ``{"fields": {...}, "items": ..., "values": ..., "open": True}`` (see the script)."""


@functools.cache
def _data() -> tuple[dict[str, str], dict[str, Schema]]:
    raw = json.loads(resources.files("drasched.api").joinpath("openapi_fields.json").read_text())
    return raw["kinds"], raw["schemas"]


def checks(api_version: str, kind: str) -> bool:
    """Whether the fields of this kind in this version are known here."""
    return f"{api_version}/{kind}" in _data()[0]


def unknown_fields(obj: Obj) -> list[str]:
    """The paths of the fields ``obj`` carries that its kind does not declare, in order
    (``spec.devices.requests[0].exactly.allocationmode``); none for a kind not known here."""
    kinds_by_gvk, _ = _data()
    name = kinds_by_gvk.get(f"{obj.get('apiVersion')}/{obj.get('kind')}")
    if name is None:
        return []
    found: list[str] = []
    _walk(obj, name, "", found)
    return found


def _walk(value: Any, ref: Schema, path: str, found: list[str]) -> None:
    schema = _data()[1].get(ref) if isinstance(ref, str) else ref
    if not isinstance(schema, dict):
        return
    if schema.get("open"):
        return  # x-kubernetes-preserve-unknown-fields: anything goes below
    fields = schema.get("fields")
    if fields is not None and isinstance(value, dict):
        for key, sub in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in fields:
                found.append(where)
            else:
                _walk(sub, fields[key], where, found)
        return
    items = schema.get("items")
    if items is not None and isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, items, f"{path}[{i}]", found)
        return
    values = schema.get("values")
    if values is not None and isinstance(value, dict):
        for key, item in value.items():
            _walk(item, values, f"{path}[{key}]", found)
