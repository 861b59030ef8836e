"""The decoder's fast path: whether a body is already well typed, by checkers built once per shape.

Nearly every body a store decodes is well typed and needs no normalising (a controller
wrote it from an object the store decoded before). :func:`well_typed` answers "nothing to
refuse and nothing to change" for such a body with one pass of plain function calls: each
:class:`~drasched.api.shapes.Shape` gets a checker made once (closures over its fields'
checkers), instead of the general walk interpreting the shape at every value.

It only ever says yes or "not sure": on anything unusual (a wrong type, ``null`` where Go
would drop it, a whole-number float in an integer field, a key that is not a string, a
``oneOf`` field, nesting deeper than :data:`FAST_DEPTH`) it answers False without
changing anything, and :func:`drasched.api.decode.type_errors` walks the body as before,
normalising it and wording every error. So a yes must mean exactly that the walk would
find no error and change nothing; ``tests/unit/api/test_decode_fast.py`` compares the two.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from drasched.api.meta import parse_time
from drasched.api.shapes import Shape
from drasched.quantity import Quantity, QuantityError

Check = Callable[[Any, int], bool]
"""(value, depth of the value) -> whether the value is well typed and needs no normalising."""

FAST_DEPTH = 50
"""Objects and arrays this deep go to the general walk (real objects nest ~15 levels); well
below its ``MAX_DEPTH``, so the fast path never has to word or judge a nesting error."""

_STRING_LEAF = ("string", "any")


@functools.lru_cache(maxsize=4096)
def is_time(text: str) -> bool:
    """Whether ``text`` parses as the ``metav1.Time`` drasched reads back (``parse_time``)."""
    try:
        parse_time(text)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=4096)
def quantity_problem(text: str) -> str | None:
    """Why ``text`` is not a quantity (``resource.ParseQuantity`` runs while decoding), or None."""
    try:
        Quantity.parse(text)
    except QuantityError as exc:
        return str(exc)
    return None


def well_typed(obj: Any, shape: Shape) -> bool:
    """True when decoding ``obj`` as ``shape`` would refuse nothing and change nothing;
    False when it may do either (the general walk then decides). Never changes ``obj``."""
    return checker(shape)(obj, 0)


_CHECKERS: dict[int, tuple[Shape, Check]] = {}
"""Checker by ``id(shape)``; the shape is kept with it, so its id is never reused for
another (shapes hold dicts, so they cannot be dict keys themselves)."""


def checker(shape: Shape) -> Check:
    """The checker of ``shape``, built on first use."""
    hit = _CHECKERS.get(id(shape))
    if hit is not None:
        return hit[1]
    check = _build(shape)
    _CHECKERS[id(shape)] = (shape, check)
    return check


def _build(shape: Shape) -> Check:
    t = shape.type
    if t == "string":
        return _is_str
    if t == "any":
        return _any
    if t == "time":
        return _time
    if t == "quantity":
        return _quantity
    if t == "boolean":
        return _is_bool
    if t == "number":
        return _number
    if t == "integer":
        return _integer(shape.bits)
    if t == "array":
        return _array(shape.item or _ANY_SHAPE)
    if t == "map":
        return _map(shape.item or _ANY_SHAPE)
    if t == "object":
        return _object(shape.fields)
    return _unsure  # oneOf: which option a value takes, and what that skips, is the walk's to say


def _unsure(value: Any, depth: int) -> bool:
    return False


def _is_str(value: Any, depth: int) -> bool:
    return type(value) is str


def _is_bool(value: Any, depth: int) -> bool:
    return type(value) is bool


def _time(value: Any, depth: int) -> bool:
    return type(value) is str and (not value or is_time(value))


def _quantity(value: Any, depth: int) -> bool:
    t = type(value)
    if t is str:
        return quantity_problem(value) is None
    if t is int:
        return True
    return t is float and math.isfinite(value)


def _number(value: Any, depth: int) -> bool:
    t = type(value)
    return t is int or (t is float and math.isfinite(value))


def _integer(bits: int) -> Check:
    low, high = -(1 << (bits - 1)), 1 << (bits - 1)

    def check(value: Any, depth: int) -> bool:
        return type(value) is int and low <= value < high  # a float, even 1.0, is normalised: not here

    return check


def _any(value: Any, depth: int) -> bool:
    """Any JSON value: what an unknown field may hold."""
    t = type(value)
    if t is str or t is int or t is bool:
        return True
    if t is float:
        return math.isfinite(value)
    if depth >= FAST_DEPTH:
        return False
    if t is dict:
        for key, child in value.items():
            if type(key) is not str or (child is not None and not _any(child, depth + 1)):
                return False
        return True
    if t is list:
        return all(child is None or _any(child, depth + 1) for child in value)
    return False


def _child(shape: Shape) -> tuple[bool, bool, Check]:
    """(a string is settled as it is, ``null`` is kept as it is, the checker) for one field."""
    return shape.type in _STRING_LEAF, shape.nullable, checker(shape)


def _array(item: Shape) -> Check:
    strings, nullable, check_item = _child(item)

    def check(value: Any, depth: int) -> bool:
        if type(value) is not list or depth >= FAST_DEPTH:
            return False
        below = depth + 1
        for child in value:
            if child is None:
                if not nullable:
                    return False  # Go's zero value replaces it
            elif not (strings and type(child) is str) and not check_item(child, below):
                return False
        return True

    return check


def _map(item: Shape) -> Check:
    strings, nullable, check_item = _child(item)

    def check(value: Any, depth: int) -> bool:
        if type(value) is not dict or depth >= FAST_DEPTH:
            return False
        below = depth + 1
        for key, child in value.items():
            if type(key) is not str:
                return False  # kubectl's conversion renames it
            if child is None:
                if not nullable:
                    return False
            elif not (strings and type(child) is str) and not check_item(child, below):
                return False
        return True

    return check


def _object(fields: dict[str, Shape]) -> Check:
    # fields a string settles as it is (an unknown field takes any string too), and fields
    # whose null Go drops (an unknown field keeps it)
    strings = frozenset(name for name, shape in fields.items() if shape.type in _STRING_LEAF)
    dropped = frozenset(name for name, shape in fields.items() if not shape.nullable)
    checks = {name: checker(shape) for name, shape in fields.items()}
    lookup = checks.get

    def check(value: Any, depth: int) -> bool:
        if type(value) is not dict or depth >= FAST_DEPTH:
            return False
        below = depth + 1
        for key, child in value.items():
            if type(key) is not str:
                return False
            if type(child) is str:
                if key in strings:
                    continue
                check_child = lookup(key)
                if check_child is not None and not check_child(child, below):
                    return False
            elif child is None:
                if key in dropped:
                    return False  # dropped, as Go decodes it to the zero value the server omits
            elif not lookup(key, _any)(child, below):
                return False
        return True

    return check


_ANY_SHAPE = Shape("any", nullable=True)
