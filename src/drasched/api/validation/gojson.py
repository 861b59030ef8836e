"""An object's JSON as Go's ``encoding/json`` writes the versioned type: keys in the order of
the Go struct's fields.

Why: since 1.37 a duplicate item of a list the API validates declaratively (``+k8s:unique=map``)
is reported with the whole item, ``Duplicate value: {"name":"gpu","exactly":{...}}``, in the
field order of the ``k8s.io/api`` struct, which the views in :mod:`drasched.api.resource`
declare in the same order. Keys a view does not describe keep their place after the others.
"""

from __future__ import annotations

from typing import Any

import msgspec


def go_ordered(value: Any, view: type) -> Any:
    """``value`` (wire form) with every object's keys in ``view``'s field order, recursively."""
    return _ordered(value, msgspec.inspect.type_info(view))


def _ordered(value: Any, t: msgspec.inspect.Type) -> Any:
    if isinstance(t, msgspec.inspect.UnionType):
        for option in t.types:
            if isinstance(value, dict) and isinstance(option, msgspec.inspect.StructType | msgspec.inspect.DictType):
                return _ordered(value, option)
            if isinstance(value, list) and isinstance(option, msgspec.inspect.ListType):
                return _ordered(value, option)
        return value
    if isinstance(t, msgspec.inspect.StructType) and isinstance(value, dict):
        out = {f.encode_name: _ordered(value[f.encode_name], f.type) for f in t.fields if f.encode_name in value}
        out.update((k, v) for k, v in value.items() if k not in out)
        return out
    if isinstance(t, msgspec.inspect.ListType) and isinstance(value, list):
        return [_ordered(v, t.item_type) for v in value]
    if isinstance(t, msgspec.inspect.DictType) and isinstance(value, dict):
        return {k: _ordered(v, t.value_type) for k, v in value.items()}
    return value
