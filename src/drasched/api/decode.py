"""Decode before validate: refuse an object whose JSON types do not fit its kind's shape.

The API server decodes a request body into its Go types before any validation runs, so
validation, storage and every controller only ever see well-typed objects. This module is
that step for drasched: the manifest loader and the memory store both call
:func:`decode_object` first. It checks every known field's JSON type (unknown fields stay
allowed and untouched), and normalises the object in place the way the decoder does:

* ``null`` in a known field is dropped (Go decodes it to the zero value, which the API
  server then omits), and a ``null`` list item or map value becomes the zero value;
* a whole-number float in an integer field becomes an int (``1.0`` is JSON's ``1``);
* non-string map keys from YAML (``1:``, ``true:``) become strings, as kubectl converts them.

What is refused: a wrong type (``spec.devices.requests[0]: expected object, got string``),
an integer outside its Go type (int32 or int64), a quantity ``resource.ParseQuantity``
refuses (``80 Gi``), a time that is not RFC 3339, a non-finite number, a value JSON cannot carry (YAML binary, sets),
and nesting deeper than :data:`MAX_DEPTH`. Built-in kinds answer 400 BadRequest
(``Pod in version "v1" cannot be handled as a Pod: ...``) as the API server's decoder does;
drasched's CRDs answer 422 Invalid in the CRD schema validator's words
(``spec.priority: Invalid value: "string": spec.priority in body must be of type integer: "string"``).
"""

from __future__ import annotations

import math
from typing import Any

from drasched.api import kinds
from drasched.api.decode_fast import FAST_DEPTH, is_time, quantity_problem, well_typed
from drasched.api.errors import ApiError, BadRequest, Cause, invalid
from drasched.api.kinds import ResourceType
from drasched.api.shapes import Shape, shape_for, struct_shape

Obj = dict[str, Any]

MAX_DEPTH = 100
"""Deepest nesting of objects and arrays accepted; far beyond any real object, well within
what Python's recursive copy and serialisation handle."""

assert FAST_DEPTH < MAX_DEPTH  # the fast path leaves every nesting error to the walk

MAX_ERRORS = 10
"""Report at most this many type errors for one object."""

CRD_GROUPS = {kinds.DRASCHED, "jobset.x-k8s.io", "leaderworkerset.x-k8s.io", "scheduling.run.ai"}
"""Groups served by CustomResourceDefinitions: their errors are the OpenAPI validator's."""


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, as error messages say it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _zero(shape: Shape) -> Any:
    """What Go decodes ``null`` to inside a list or map: the zero value ("0" for a quantity)."""
    if shape.type == "oneOf":
        return 0 if any(s.type in ("integer", "number") for s in shape.options) else _zero(shape.options[0])
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {},
            "map": {}, "quantity": "0", "time": ""}.get(shape.type)


def _fits(value: Any, shape: Shape) -> bool:
    """Whether ``value``'s JSON type is one ``shape`` accepts (ignoring what it contains)."""
    t = shape.type
    if t == "any":
        return True
    if t == "oneOf":
        return any(_fits(value, s) for s in shape.options)
    if t == "string":
        return isinstance(value, str)
    if t == "time":
        return isinstance(value, str)
    if t == "quantity":
        return isinstance(value, str | int | float) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if t == "array":
        return isinstance(value, list)
    return isinstance(value, dict)  # object, map


def _expected(shape: Shape) -> str:
    if shape.type == "oneOf":
        return " or ".join(_expected(s) for s in shape.options)
    if shape.type == "quantity":
        return "a quantity (a string or a number)"
    return "object" if shape.type == "map" else shape.type


def _key(key: Any) -> str | None:
    """A YAML mapping key as kubectl's YAML-to-JSON conversion writes it, or None if it cannot."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int | float):
        return str(key)
    return None


Trail = tuple[Any, Any] | None
"""A field's place as (parent's trail, key or index): the path text is built only for errors."""


def _path(trail: Trail) -> str:
    parts: list[Any] = []
    while trail is not None:
        trail, key = trail
        parts.append(key)
    text = ""
    for key in reversed(parts):
        text += f"[{key}]" if isinstance(key, int) else f".{key}" if text else str(key)
    return text if len(text) <= 200 else text[:200] + "..."


_STRING_LEAF = ("string", "any")
_NUMBER_LEAF = ("any", "number", "quantity")
"""Shapes an int settles without a check of its own (a quantity's number is not parsed)."""
_BOOLEAN_LEAF = ("boolean", "any")
_CONTAINER = ("object", "map", "any")
"""Shapes a dict fits as it is (``oneOf`` goes the long way, choosing its option)."""


def _settled(child: Any, shape: Shape) -> bool:
    """Whether a leaf is well typed for ``shape`` and needs no normalising: the common case,
    settled without a stack entry. False means "not settled here" (it may still be fine):
    the long path decides, and words any error."""
    t = type(child)
    st = shape.type
    if t is str:
        return st in _STRING_LEAF or (st == "time" and (not child or is_time(child))) or (
            st == "quantity" and quantity_problem(child) is None)
    if t is int:
        if st == "integer":
            half = 1 << (shape.bits - 1)
            return -half <= child < half
        return st in _NUMBER_LEAF
    if t is bool:
        return st in _BOOLEAN_LEAF
    return False


def type_errors(obj: Obj, shape: Shape) -> list[tuple[str, str, Any]]:
    """Check and normalise ``obj`` in place; return ``(field path, expected, value)`` per error."""
    errors: list[tuple[str, str, Any]] = []
    # (value, shape, trail, depth, container, key); iterative, so depth costs no Python stack
    stack: list[tuple[Any, Shape, Trail, int, Any, Any]] = [(obj, shape, None, 0, None, None)]
    while stack and len(errors) < MAX_ERRORS:
        value, sh, trail, depth, container, slot = stack.pop()
        if depth > MAX_DEPTH:
            errors.append((_path(trail), f"at most {MAX_DEPTH} levels of nesting", value))
            continue
        if type(value) is not dict or sh.type not in _CONTAINER:  # the long way: anything but an object
            if isinstance(value, float) and not math.isfinite(value):
                errors.append((_path(trail), "a finite number", value))
                continue
            if not _fits(value, sh):
                errors.append((_path(trail), _expected(sh), value))
                continue
            if sh.type == "oneOf":  # the option the value's JSON type takes, checked as that option
                sh = next(s for s in sh.options if _fits(value, s))
            if sh.type == "integer":
                if not -(1 << (sh.bits - 1)) <= value < 1 << (sh.bits - 1):
                    errors.append((_path(trail), f"an integer that fits in {sh.bits} bits", value))
                elif isinstance(value, float) and container is not None:
                    container[slot] = int(value)  # a whole-number float: JSON's 1.0 is 1
                continue
            if sh.type == "time":
                if value and not is_time(value):
                    errors.append((_path(trail), "a time in RFC 3339 (2006-01-02T15:04:05Z)", value))
                continue
            if sh.type == "quantity":
                if isinstance(value, str):
                    problem = quantity_problem(value)
                    if problem:
                        errors.append((_path(trail), f"a quantity ({problem})", value))
                continue
        # a leaf one level deeper than allowed is still refused on the long way
        shallow = depth < MAX_DEPTH
        if isinstance(value, dict):
            fields = sh.fields if sh.type == "object" else None
            item = sh.item if sh.type == "map" else None
            for key in list(value):
                if type(key) is not str:
                    skey = _key(key)
                    if skey is None:
                        errors.append((_path((trail, str(key))), "a string key", key))
                        continue
                    value[skey] = value.pop(key)
                    key = skey
                child = value[key]
                known = fields.get(key) if fields is not None else item
                child_shape = known or _ANY  # an unknown field (or inside ``any``): only JSON-ness is checked
                if type(child) is str and child_shape.type in _STRING_LEAF:
                    continue  # the common leaf, settled without a stack entry
                if child is None:
                    if not child_shape.nullable:
                        if sh.type == "object":
                            del value[key]
                        else:
                            value[key] = _zero(child_shape)
                    continue
                if shallow and _settled(child, child_shape):
                    continue
                stack.append((child, child_shape, (trail, key), depth + 1, value, key))
        elif isinstance(value, list):
            item_shape = sh.item if sh.type == "array" and sh.item is not None else _ANY
            for i, child in enumerate(value):
                if type(child) is str and item_shape.type in _STRING_LEAF:
                    continue
                if child is None:
                    if not item_shape.nullable:
                        value[i] = _zero(item_shape)
                    continue
                if shallow and _settled(child, item_shape):
                    continue
                stack.append((child, item_shape, (trail, i), depth + 1, value, i))
        elif sh.type == "any" and not isinstance(value, str | int | float | bool):
            errors.append((_path(trail), "a JSON value", value))
    return errors


_ANY = Shape("any", nullable=True)


def decode_object(obj: Obj, rt: ResourceType | None = None) -> ResourceType:
    """Check ``obj``'s JSON types against its kind's shape, normalising it in place.

    Raises the API server's error for a malformed body: BadRequest for built-in kinds,
    Invalid for drasched's CRDs. Returns the object's resource type.
    """
    rt = rt or kinds.for_object(obj)
    if rt in kinds.UPSTREAM_GANG:  # the upstream gang API's own shapes, not drasched's PodGroup
        from drasched.api.foreign_shapes import FOREIGN_VIEWS  # (it imports this module)

        shape = struct_shape(FOREIGN_VIEWS[(rt.api_version, rt.kind)])
    else:
        shape = shape_for(rt)
    decode_as(obj, shape, kind=rt.kind, group=rt.group, version=rt.version)
    return rt


def decode_as(obj: Obj, shape: Shape, *, kind: str, group: str, version: str) -> None:
    """:func:`decode_object` for a kind given by hand (one drasched only reads, never serves)."""
    if well_typed(obj, shape):  # the common case: nothing to refuse or normalise (decode_fast.py)
        return
    errors = type_errors(obj, shape)
    if not errors:
        return
    md = obj.get("metadata")
    name: str = md["name"] if isinstance(md, dict) and isinstance(md.get("name"), str) else ""
    if group in CRD_GROUPS:
        causes = [_crd_cause(path, expected, v) for path, expected, v in errors]
        raise invalid(f"{kind}.{group}", name, causes)
    detail = "; ".join(f"{path or '<object>'}: expected {expected}, got {_got(expected, v)}"
                       for path, expected, v in errors)
    err: ApiError = BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}', kind, name)
    err.causes = [Cause(path, f"expected {expected}, got {_got(expected, v)}", "FieldValueTypeInvalid")
                  for path, expected, v in errors]
    raise err


def _got(expected: str, value: Any) -> str:
    if expected.startswith("an integer that fits"):
        text = str(value) if isinstance(value, int) or abs(value) < 1e30 else f"{value:g}"
        return text if len(text) <= 40 else f"an integer of {len(text)} digits"
    if expected.startswith(("a quantity", "a time")) and isinstance(value, str):
        return f'"{value[:40]}"' + (f" ({len(value)} characters)" if len(value) > 40 else "")
    return json_type(value)


_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def _crd_cause(path: str, expected: str, value: Any) -> Cause:
    """A CRD schema error as the OpenAPI validator words it (``... in body must be of type ...``)."""
    got = json_type(value)
    if expected.startswith("an integer that fits in"):  # the CRD validator's format check
        return Cause(path, f"Invalid value: {value}: must be of type integer with format int{expected.split()[-2]}")
    if expected in _JSON_TYPES:
        return Cause(path, f'Invalid value: "{got}": {path} in body must be of type {expected}: "{got}"',
                     "FieldValueTypeInvalid")
    return Cause(path, f'Invalid value: "{got}": must be {expected}')
