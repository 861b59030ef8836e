"""Copies of wire-form (JSON) objects.

Every object a store hands out is the caller's own, so stores copy a lot: a round trip
through msgspec's JSON codec copies a pod ~10x faster than ``copy.deepcopy`` (measured:
16 us against 179 us). Objects in a store were decoded as the API server decodes them, so
they are plain JSON; anything else (a value JSON cannot carry) falls back to ``deepcopy``.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

Obj = dict[str, Any]

_encode = msgspec.json.encode
_decode = msgspec.json.decode


def clone(obj: Obj) -> Obj:
    """A deep copy of a JSON object (``deepcopy`` for what JSON cannot carry)."""
    try:
        result: Obj = _decode(_encode(obj))
    except (TypeError, OverflowError, msgspec.EncodeError):
        return copy.deepcopy(obj)
    return result


_LEAVES = frozenset({str, int, float, bool, type(None)})


def tree_copy(obj: Any) -> Any:
    """A copy of the dicts and lists of a request body, every other value kept as it is (a
    value JSON cannot carry stays for the decoder to refuse); ~4x faster than ``deepcopy``.
    A JSON leaf is kept without a call of its own (most nodes are leaves: ~1.7x faster)."""
    if isinstance(obj, dict):
        return {k: v if type(v) in _LEAVES else tree_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [v if type(v) in _LEAVES else tree_copy(v) for v in obj]
    return obj
