"""The worst-case cost of one evaluation of a checked selector, estimated before it ever runs.

The API server refuses a selector whose estimated cost exceeds CELSelectorExpressionMaxCost
(k8s.io/dynamic-resource-allocation/cel compile.go runs cel-go's estimator with the device's
declared sizes; pkg/apis/resource/validation refuses ``MaxCost > limit``). This estimator
follows cel-go's rules where they decide the verdict: one unit per identifier, select, index
and call; 10 per list and 30 per map created; string and list work proportional to their
maximum size; a comprehension costs its range's maximum size times its body. Sizes come from
the device's declared bounds (32 attributes per domain, 64-character attribute values, 63 for
the driver name) or from literals; iterating over a value of unknown size is unbounded, as in
cel-go, so such a selector is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from drasched.cel.ast import Call, Comprehension, CreateList, CreateMap, Ident, Index, Literal, Node, Select
from drasched.cel.checker import (
    ANY,
    BOOL,
    BYTES,
    CIDR,
    DEVICE,
    DOUBLE,
    DUR,
    DYN,
    INT,
    IP,
    QTY,
    SEMVER,
    STRING,
    TS,
    UINT,
    URL,
    Info,
)

__all__ = ["UNBOUNDED", "estimate_cost"]

UNBOUNDED: Final = math.inf
_LIST_CREATE: Final = 10  # cel-go common.ListCreateBaseCost
_MAP_CREATE: Final = 30  # common.MapCreateBaseCost
_TRAVERSAL: Final = 0.1  # common.StringTraversalCostFactor
_REGEX_LENGTH: Final = 0.25  # common.RegexStringLengthCostFactor
_MAX_ATTRIBUTES: Final = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_MAX_ATTRIBUTE_VALUE: Final = 64  # DeviceAttributeMaxValueLength
_MAX_DRIVER: Final = 63  # DriverNameMaxLength
_EXT_STRINGS: Final = frozenset(
    {"charAt", "indexOf", "lastIndexOf", "lowerAscii", "upperAscii", "replace", "split", "substring", "trim"}
)
_STRING_FUNCTIONS: Final = frozenset(
    {"contains", "startsWith", "endsWith", "lowerAscii", "upperAscii", "trim", "replace", "split", "indexOf",
     "lastIndexOf", "substring", "charAt", "reverse", "join", "@in"}
)
_REGEX_FUNCTIONS: Final = frozenset({"matches", "find", "findAll"})
_ORDERING: Final = frozenset({"_<_", "_<=_", "_>_", "_>=_"})
_COMPARISONS: Final = _ORDERING | {"_==_", "_!=_"}
_LIST_SCANS: Final = frozenset({"isSorted", "sum", "min", "max", "indexOf", "lastIndexOf"})
_NUMBERS: Final = frozenset({INT, UINT, DOUBLE})
_SCALAR_TYPES: Final = frozenset({INT, UINT, DOUBLE, BOOL, DUR, TS})  # cel-go isScalar: constant size
# Kubernetes library/cost.go EstimateCallCost for the IP, CIDR and URLs libraries: parsing a
# string is one traversal (0.1 per character) and replaces the call's unit cost; accessors
# cost 1; containsIP/containsCIDR compare up to 16 bytes twice (4), containsCIDR masks again
# (+2, +1), and a string argument is parsed on top.
_NET_PARSERS: Final = frozenset({"ip", "cidr", "isIP", "isCIDR", "url", "quantity", "isQuantity", "semver", "isSemver"})
_NET_ACCESSORS: Final = frozenset(
    {"family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast",
     "masked", "prefixLength", "ip", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery"}
)
_NET_CONTAINS: Final = {"containsIP": 4, "containsCIDR": 7}


@dataclass(frozen=True)
class _Shape:
    """The most a value can hold: its size (elements or characters) and its elements' shape."""

    size: float = UNBOUNDED
    elem: _Shape | None = None


_SCALAR: Final = _Shape(1)
_UNKNOWN: Final = _Shape()
_ATTRIBUTE: Final = _Shape(_MAX_ATTRIBUTE_VALUE)
_DEVICE_FIELDS: Final = {
    "driver": _Shape(_MAX_DRIVER),
    "attributes": _Shape(_MAX_ATTRIBUTES, _Shape(_MAX_ATTRIBUTES, _ATTRIBUTE)),
    "capacity": _Shape(_MAX_ATTRIBUTES, _Shape(_MAX_ATTRIBUTES, _SCALAR)),
    "allowMultipleAllocations": _SCALAR,
}


def estimate_cost(root: Node, info: dict[int, Info]) -> float:
    """Worst-case cost of evaluating ``root`` once (``inf`` when unbounded)."""
    return _Estimator(info).cost(root, {})[0]


class _Estimator:
    def __init__(self, info: dict[int, Info]) -> None:
        self._info = info

    def cost(self, n: Node, env: dict[str, _Shape]) -> tuple[float, _Shape]:
        if isinstance(n, Literal):
            size = len(n.value) if isinstance(n.value, str | bytes) else 1
            return 0, _Shape(size)
        if isinstance(n, Ident):
            i = self._info.get(id(n))
            if i is not None and i.type == DEVICE:
                return 1, _Shape(0)  # the declared object type has no elements of its own
            name = i.pyname if i is not None and i.pyname else n.name
            return 1, env.get(name, _UNKNOWN)
        if isinstance(n, Select):
            c, shape = self.cost(n.operand, env)
            if n.test_only:
                return c + 1, _SCALAR
            t = self._info.get(id(n.operand))
            if t is not None and t.type == DEVICE:
                return c + 1, _DEVICE_FIELDS.get(n.field, _UNKNOWN)
            return c + 1, shape.elem or _UNKNOWN
        if isinstance(n, Index):
            c1, shape = self.cost(n.operand, env)
            c2, _ = self.cost(n.index, env)
            return c1 + c2 + 1, shape.elem or _UNKNOWN
        if isinstance(n, CreateList):
            costs = [self.cost(e, env) for e in n.elements]
            elem = _widest([s for _, s in costs])
            return _LIST_CREATE + sum(c for c, _ in costs), _Shape(len(n.elements), elem)
        if isinstance(n, CreateMap):
            total: float = _MAP_CREATE
            values: list[_Shape] = []
            for k, v, _opt in n.entries:
                ck, _ = self.cost(k, env)
                cv, sv = self.cost(v, env)
                total += ck + cv
                values.append(sv)
            return total, _Shape(len(n.entries), _widest(values))
        if isinstance(n, Comprehension):
            return self._comprehension(n, env)
        if isinstance(n, Call):
            return self._call(n, env)
        return 1, _UNKNOWN  # pragma: no cover - the parser produces only the nodes above

    def _type(self, n: Node) -> Any:
        i = self._info.get(id(n))
        return None if i is None else i.type

    def _call(self, n: Call, env: dict[str, _Shape]) -> tuple[float, _Shape]:
        args = ([n.target] if n.target is not None else []) + list(n.args)
        parts = [self.cost(a, env) for a in args]
        fn = n.function
        base = sum(c for c, _ in parts)
        shapes = [s for _, s in parts]
        if fn == "dyn" and shapes:
            return base + 1, shapes[0]  # cel-go maybeUnwrapDynCall: 1, and the argument's size
        if fn == "_?_:_":
            return parts[0][0] + max(parts[1][0], parts[2][0]), _widest(shapes[1:]) or _UNKNOWN
        if fn in ("_&&_", "_||_"):
            return base, _SCALAR
        if fn == "_+_" and len(shapes) == 2:
            size = shapes[0].size + shapes[1].size
            extra = math.ceil(size * _TRAVERSAL) if size < UNBOUNDED else 1
            return base + 1 + extra, _Shape(size, _widest([shapes[0].elem or _SCALAR, shapes[1].elem or _SCALAR]))
        if fn == "sort" and shapes:  # cel-go charges 2n² for sorting n elements (probed on kube-apiserver 1.36)
            size = shapes[0].size
            return (base + 1 + 2 * size * size if size < UNBOUNDED else UNBOUNDED), shapes[0]
        if fn in _LIST_SCANS and _is_text_list(self._type(args[0])):
            return UNBOUNDED, _UNKNOWN  # Kubernetes charges each string's size, which it cannot know here
        if fn == "join" and _is_list(self._type(args[0])):
            # library/cost.go: the list's size times its elements' size, and DRA's size estimator
            # knows no element size of a literal or split() list: MaxCost ~1.8e18 upstream too
            return UNBOUNDED, _UNKNOWN
        if fn == "lists.range" and isinstance(args[0], Literal) and isinstance(args[0].value, int):
            return base + 1, _Shape(max(args[0].value, 0), _SCALAR)
        if fn in _REGEX_FUNCTIONS and len(shapes) >= 2:
            subject, pattern = shapes[0].size, shapes[1].size
            if subject == UNBOUNDED or pattern == UNBOUNDED:
                return base + 1, _UNKNOWN
            work = math.ceil(subject * _TRAVERSAL) * math.ceil(pattern * _REGEX_LENGTH)
            return base + 1 + work, _Shape(subject, _Shape(subject))
        if fn == "string" and len(args) == 1 and self._type(args[0]) in (BYTES, ANY, DYN):
            size = shapes[0].size  # cel-go bytes_to_string: one traversal, the size kept
            return (base + math.ceil(size * _TRAVERSAL) if size < UNBOUNDED else UNBOUNDED), shapes[0]
        if fn == "size" and shapes:
            return base + 1, _SCALAR  # no estimator upstream: cel-go's unit cost
        if fn in _NET_PARSERS and n.target is None and shapes:
            size = shapes[0].size
            if size == UNBOUNDED:
                return UNBOUNDED, _UNKNOWN  # cel-go: an unknown string size makes the parse unbounded
            return base + math.ceil(size * _TRAVERSAL), _Shape(size) if fn == "url" else _UNKNOWN
        if fn == "ip.isCanonical" and shapes:
            size = shapes[0].size
            return (base + math.ceil(size * 2 * _TRAVERSAL) if size < UNBOUNDED else UNBOUNDED), _SCALAR
        if fn in _NET_ACCESSORS and n.target is not None and self._type(n.target) in (IP, CIDR, URL):
            return base + 1, _UNKNOWN
        if fn in _NET_CONTAINS and len(args) == 2:
            parse: float = 0
            if self._type(args[1]) in (STRING, DYN, ANY):  # the string overload parses its argument
                text = shapes[1].size
                parse = math.ceil(text * _TRAVERSAL) if text < UNBOUNDED else UNBOUNDED
            return base + _NET_CONTAINS[fn] + parse, _SCALAR
        if fn in _ORDERING and all(self._type(a) in _NUMBERS for a in args):
            return base + 1, _SCALAR  # numbers compare at a constant cost
        if fn == "@in" and len(args) == 2:  # O(n) in a list, O(1) in a map
            n_items = shapes[1].size if _is_list(self._type(args[1])) or self._type(args[1]) in (DYN, ANY) else 1
            return (base + n_items if n_items < UNBOUNDED else UNBOUNDED), _SCALAR
        if fn in _COMPARISONS and len(args) == 2:
            return self._comparison(fn, args, shapes, base), _SCALAR
        if n.target is not None and self._type(n.target) in (STRING, ANY, DYN) and fn in _EXT_STRINGS:
            return self._ext_string(fn, args, shapes, base)
        if fn == "strings.quote" and shapes:
            size = shapes[0].size  # cel-go: one traversal; the result is at most 2n+2
            if size == UNBOUNDED:
                return UNBOUNDED, _UNKNOWN
            return base + math.ceil(size * _TRAVERSAL), _Shape(2 * size + 2)
        if fn in _STRING_FUNCTIONS:
            known = [s.size for s in shapes if s.size < UNBOUNDED]
            extra = math.ceil(max(known) * _TRAVERSAL) if known else 0
            if fn in ("quantity", "semver"):
                return base + 1 + extra, _UNKNOWN  # an object; no size cel-go could know
            size = shapes[0].size if shapes else UNBOUNDED
            return base + 1 + extra, _Shape(size, shapes[0].elem if shapes else None)
        same_size = fn in ("flatten", "distinct", "sort", "slice")
        return base + 1, (_widest(shapes) or _UNKNOWN) if same_size else _UNKNOWN

    def _ext_string(self, fn: str, args: list[Node], shapes: list[_Shape], base: float) -> tuple[float, _Shape]:
        """Kubernetes library/cost.go for cel-go's ext.Strings on a string target: the call's cost
        is its traversal (no unit on top); split and replace also build their result (x2)."""
        size = shapes[0].size
        if size == UNBOUNDED:
            return UNBOUNDED, _UNKNOWN
        if fn == "charAt":
            return base + 1, _UNKNOWN  # no estimator upstream: cel-go's unit cost
        if fn in ("indexOf", "lastIndexOf"):
            return base + math.ceil(size * _TRAVERSAL), _SCALAR
        if fn == "split":
            limit = args[2] if len(args) > 2 else None
            count = size
            if isinstance(limit, Literal) and isinstance(limit.value, int):  # a constant limit bounds the list
                count = limit.value if limit.value >= 0 else UNBOUNDED  # upstream reads -1 as a huge uint64
            return base + math.ceil(size * 2 * _TRAVERSAL), _Shape(count, _UNKNOWN)
        if fn == "replace":
            old, new = args[1], shapes[2].size
            old_min = len(old.value) if isinstance(old, Literal) and isinstance(old.value, str) else 0
            if old_min == 0:
                result = (size + 1) * new + size
            elif new <= old_min:
                result = size
            else:
                result = math.ceil(size / old_min) * new
            return base + math.ceil(size * 2 * _TRAVERSAL), _Shape(result)
        return base + math.ceil(size * _TRAVERSAL), shapes[0]  # lowerAscii, upperAscii, substring, trim

    def _comparison(self, fn: str, args: list[Node], shapes: list[_Shape], base: float) -> float:
        """cel-go: the smaller operand's maximum size times 0.1 (values of scalar types have
        size 1; a size nothing bounds makes the comparison unbounded). Two Quantities or two
        Semvers compare at a constant cost, as the Kubernetes estimator has it."""
        types = [self._type(a) for a in args]
        if fn == "_==_" and types[0] == types[1] and types[0] in (QTY, SEMVER, IP, CIDR):
            return base + 1  # library/cost.go prices only == for these; != sizes them (unknown)
        if fn == "_==_" and types[0] == types[1] == URL:
            # library/cost.go sizes both sides by the right one's computed size: url(...)'s argument
            rhs = args[1]
            if isinstance(rhs, Call) and rhs.function == "url" and rhs.target is None:
                size = shapes[1].size
                return base + math.ceil(size * _TRAVERSAL) if size < UNBOUNDED else UNBOUNDED
            return base + 1
        sizes = [1 if _is_scalar(t) else s.size for t, s in zip(types, shapes)]
        smallest = min(sizes)
        return UNBOUNDED if smallest == UNBOUNDED else base + math.ceil(smallest * _TRAVERSAL)

    def _comprehension(self, n: Comprehension, env: dict[str, _Shape]) -> tuple[float, _Shape]:
        c_range, shape = self.cost(n.iter_range, env)
        if n.kind == "bind":
            c_body, body_shape = self.cost(n.args[0], {**env, n.var: shape})
            return c_range + c_body, body_shape
        if n.kind in ("optMap", "optFlatMap"):
            c_body, body_shape = self.cost(n.args[0], {**env, n.var: shape})
            return c_range + c_body + 1, body_shape
        elem = shape.elem or _UNKNOWN
        inner = {**env, n.var: elem if n.var2 is None else _SCALAR}
        if n.var2 is not None:
            inner[n.var2] = elem
        bodies = [self.cost(a, inner) for a in n.args]
        per_item = sum(c for c, _ in bodies) + 3  # loop condition, accumulator read and step
        if n.kind == "exists":
            per_item += 1  # the loop condition negates the accumulator
        elif n.kind == "filter":
            per_item += _LIST_CREATE  # the step is ``p(x) ? accu + [x] : accu``
        elif n.kind in ("map", "transformList", "transformMap", "sortBy"):
            per_item += _LIST_CREATE - 1  # the step is ``accu + [f(x)]``; no loop condition
        if shape.size == UNBOUNDED:
            return UNBOUNDED, _UNKNOWN
        total = c_range + shape.size * per_item
        if n.kind == "sortBy":
            total += 2 * shape.size * shape.size
        if n.kind in ("all", "exists", "exists_one", "existsOne"):
            return total, _SCALAR
        out_elem = bodies[-1][1] if n.kind in ("map", "transformList", "transformMap") else elem
        return total, _Shape(shape.size, out_elem)


def _is_scalar(t: Any) -> bool:
    """cel-go isScalar: a type of constant size (an optional of one too)."""
    if isinstance(t, tuple) and t[0] == "optional_type":
        return _is_scalar(t[1])
    return t in _SCALAR_TYPES


def _is_text_list(t: Any) -> bool:
    return _is_list(t) and t[1] in (STRING, BYTES)


def _is_list(t: Any) -> bool:
    return isinstance(t, tuple) and t[0] == "list"


def _widest(shapes: list[_Shape]) -> _Shape | None:
    if not shapes:
        return None
    size = max(s.size for s in shapes)
    elems = [s.elem for s in shapes if s.elem is not None]
    return _Shape(size, _widest(elems) if elems else None)

