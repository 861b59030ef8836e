"""Copies of wire-form (JSON) objects.

Every object a store hands out is the caller's own, so stores copy a lot: a round trip
through msgspec's JSON codec copies a pod ~10x faster than ``copy.deepcopy`` (measured:
16 us against 179 us). Objects in a store were decoded as the API server decodes them, so
they are plain JSON; anything else (a value JSON cannot carry) falls back to ``deepcopy``.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import uuid
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


_KEPT_AS_IS = (bytes, bytearray, memoryview, datetime.datetime, datetime.date, datetime.time, datetime.timedelta,
               decimal.Decimal, uuid.UUID)
"""Values JSON cannot carry that a copy keeps as they are (the decoder refuses them)."""

_LEAVES = frozenset({str, int, float, bool, type(None)})


def tree_copy(obj: Any) -> Any:
    """A copy of the dicts and lists of a request body, every other value kept as it is (a
    value JSON cannot carry stays for the decoder to refuse).

    msgspec's ``to_builtins`` copies in C (~3.5x faster than the Python walk, which still
    takes what it refuses: an object of a class it does not know). One difference: a set
    becomes a list, as the real API store's JSON encoder sends it.
    """
    try:
        return msgspec.to_builtins(obj, builtin_types=_KEPT_AS_IS)
    except TypeError:
        return _walk_copy(obj)


def _walk_copy(obj: Any) -> Any:
    """:func:`tree_copy` in Python: a JSON leaf is kept without a call of its own."""
    if isinstance(obj, dict):
        return {k: v if type(v) in _LEAVES else _walk_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [v if type(v) in _LEAVES else _walk_copy(v) for v in obj]
    return obj
