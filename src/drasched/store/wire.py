"""Copies of wire-form (JSON) objects.

Every object a store hands out is the caller's own, so stores copy a lot. Objects in a
store were decoded as the API server decodes them, so they are plain JSON (dicts with string
keys, lists, strings, finite numbers, booleans, null), and for those msgspec's C
``to_builtins`` is a deep copy: ~2x faster than a round trip through its JSON codec (a pod:
2.1 us against 4.5 us), which was ~10x faster than ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import uuid
from typing import Any

import msgspec

Obj = dict[str, Any]

_to_builtins = msgspec.to_builtins


def clone(obj: Obj) -> Obj:
    """A deep copy of a plain JSON object, such as one a store decoded (``deepcopy`` for a
    value msgspec does not know).

    Every dict and list is new; strings and numbers are shared (immutable). Unlike a round
    trip through JSON, what JSON cannot carry is copied as it is rather than converted (a
    tuple stays a tuple, NaN stays NaN, an int key stays an int): a decoded object has none.
    """
    try:
        result: Obj = _to_builtins(obj)
    except TypeError:
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
