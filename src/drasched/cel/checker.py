"""Macro expansion and static type checking for the DRA CEL environment.

The declarations mirror what k8s.io/dynamic-resource-allocation/cel (compile.go) enables on
top of the Kubernetes base environment (k8s.io/apiserver/pkg/cel/environment/base.go) for a
1.35/1.36 compatibility version: the standard library, ext.Strings v2, ext.Sets, ext.Lists v3,
two-variable comprehensions, optional types, cel.bind, and the Kubernetes quantity, semver,
lists, regex, IP, CIDR and URLs libraries. The checker decides what cel-go would reject at compile time
(undeclared names, no matching overload, undefined device fields, heterogeneous literals,
non-bool results) and annotates nodes with types so the code generator can pick fast paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from drasched.cel.ast import (
    Call,
    Comprehension,
    CreateList,
    CreateMap,
    Ident,
    Index,
    Literal,
    Node,
    Select,
)
from drasched.cel.runtime import EvalError, RegexError, compile_regex, to_duration, to_timestamp

# ------------------------------------------------------------------------------------ types

Type: TypeAlias = str | tuple[Any, ...]

BOOL: Final = "bool"
INT: Final = "int"
UINT: Final = "uint"
DOUBLE: Final = "double"
STRING: Final = "string"
BYTES: Final = "bytes"
NULL: Final = "null_type"
DYN: Final = "dyn"
ANY: Final = "any"
TYPE: Final = "type"
QTY: Final = "kubernetes.Quantity"
SEMVER: Final = "kubernetes.Semver"
IP: Final = "net.IP"
CIDR: Final = "net.CIDR"
URL: Final = "kubernetes.URL"
DUR: Final = "google.protobuf.Duration"
TS: Final = "google.protobuf.Timestamp"
DEVICE: Final = "kubernetes.DRADevice"
A: Final = "~A"
B: Final = "~B"


def list_of(t: Type) -> Type:
    return ("list", t)


def map_of(k: Type, v: Type) -> Type:
    return ("map", k, v)


def opt_of(t: Type) -> Type:
    return ("optional_type", t)


def dmap_of(v: Type) -> Type:
    """``map(string, v)`` whose missing keys read as an empty map (device.attributes/capacity)."""
    return ("dmap", v)


ATTR_INNER: Final = map_of(STRING, ANY)
CAP_INNER: Final = map_of(STRING, QTY)
DEVICE_FIELDS: Final[dict[str, Type]] = {
    "driver": STRING,
    "attributes": dmap_of(ATTR_INNER),
    "capacity": dmap_of(CAP_INNER),
    "allowMultipleAllocations": BOOL,
}
TYPE_IDENTS: Final = {
    "bool": "bool",
    "int": "int",
    "uint": "uint",
    "double": "double",
    "string": "string",
    "bytes": "bytes",
    "list": "list",
    "map": "map",
    "null_type": "null_type",
    "type": "type",
    "optional_type": "optional_type",
    # the CIDR library declares net.CIDR as a variable; the IP library registers net.IP as a type
    "net.IP": "net.IP",
    "net.CIDR": "net.CIDR",
}


def is_dyn(t: Type) -> bool:
    return t in (DYN, ANY)


_SHORT_NAMES: Final = {DUR: "duration", TS: "timestamp"}
"""How cel-go's messages name the well-known types ("applied to '(duration, int)'")."""


def fmt(t: Type) -> str:
    if isinstance(t, str):
        return "dyn" if t.startswith("~") else _SHORT_NAMES.get(t, t)
    if t[0] == "dmap":
        return f"map(string, {fmt(t[1])})"
    return f"{t[0]}({', '.join(fmt(p) for p in t[1:])})"


def _norm(t: Type) -> Type:
    return map_of(STRING, t[1]) if isinstance(t, tuple) and t[0] == "dmap" else t


def unify(param: Type, arg: Type, b: dict[str, Type]) -> bool:
    """Whether ``arg`` is assignable to ``param`` (binding type variables in ``b``)."""
    arg = _norm(arg)
    if isinstance(param, str) and param.startswith("~"):
        bound = b.get(param)
        if bound is None:
            b[param] = arg
            return True
        if is_dyn(arg):
            b[param] = arg  # as cel-go: a dyn or any argument generalises the parameter
            return True
        if is_dyn(bound):
            return True
        if bound == arg or _null_and_object(bound, arg):
            return True
        return _compatible(bound, arg, b)
    if is_dyn(arg) or is_dyn(param):
        return True
    if isinstance(param, str) or isinstance(arg, str):
        return param == arg
    if param[0] != arg[0] or len(param) != len(arg):
        return False
    return all(unify(p, a, b) for p, a in zip(param[1:], arg[1:]))


def _null_and_object(x: Type, y: Type) -> bool:
    """null is a value of every object type (Quantity, Semver, the device), as in cel-go."""
    return (x == NULL and y in (QTY, SEMVER, DEVICE)) or (y == NULL and x in (QTY, SEMVER, DEVICE))


def _compatible(x: Type, y: Type, b: dict[str, Type]) -> bool:
    if isinstance(x, tuple) and isinstance(y, tuple) and x[0] == y[0] and len(x) == len(y):
        return all(is_dyn(p) or is_dyn(q) or p == q or _compatible(p, q, b) for p, q in zip(x[1:], y[1:]))
    return False


def subst(t: Type, b: dict[str, Type]) -> Type:
    if isinstance(t, str):
        if t.startswith("~"):
            return b.get(t, DYN)
        return t
    return (t[0], *(subst(p, b) for p in t[1:]))


# ------------------------------------------------------------------------------- overloads


@dataclass(frozen=True)
class Overload:
    """One declared signature. ``impl`` is ``h:name`` (runtime helper), ``hc:name`` (helper taking
    the cost cell first) or ``t:template`` (inline Python with ``{0}``, ``{1}``...). ``total`` means
    the implementation cannot fail once the argument types hold."""

    member: bool
    params: tuple[Type, ...]
    result: Type
    impl: str
    total: bool = False


def _o(member: bool, params: tuple[Type, ...], result: Type, impl: str, total: bool = False) -> Overload:
    return Overload(member, params, result, impl, total)


def _g(params: tuple[Type, ...], result: Type, impl: str, total: bool = False) -> Overload:
    return _o(False, params, result, impl, total)


def _m(params: tuple[Type, ...], result: Type, impl: str, total: bool = False) -> Overload:
    return _o(True, params, result, impl, total)


_NUMS = (INT, UINT, DOUBLE)
_ORDERED = (INT, UINT, DOUBLE, STRING, BYTES, BOOL)


def _rel(op: str, helper: str) -> list[Overload]:
    out = [_g((t, t), BOOL, f"t:({{0}} {op} {{1}})", True) for t in _ORDERED]
    out += [_g((x, y), BOOL, f"t:({{0}} {op} {{1}})", True) for x in _NUMS for y in _NUMS if x != y]
    out += [_g((t, t), BOOL, f"h:{helper}", True) for t in (DUR, TS)]
    return out


_TS_FIELDS: Final = ("getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek")
_CLOCK_FIELDS: Final = ("getHours", "getMinutes", "getSeconds", "getMilliseconds")


def _time_accessors() -> dict[str, list[Overload]]:
    """cel-go's timestamp accessors (each also with a time zone argument) and the duration
    ones (without); one runtime helper per name serves every overload."""
    out: dict[str, list[Overload]] = {}
    for name in (*_TS_FIELDS, *_CLOCK_FIELDS):
        helper = "h:" + "".join("_" + c.lower() if c.isupper() else c for c in name)  # getFullYear -> get_full_year
        out[name] = [_m((TS,), INT, helper), _m((TS, STRING), INT, helper)]
        if name in _CLOCK_FIELDS:
            out[name].append(_m((DUR,), INT, helper, True))
    return out


FUNCTIONS: Final[dict[str, list[Overload]]] = {
    "_==_": [_g((A, A), BOOL, "h:eq", True)],
    "_!=_": [_g((A, A), BOOL, "h:ne", True)],
    "_<_": _rel("<", "lt"),
    "_<=_": _rel("<=", "le"),
    "_>_": _rel(">", "gt"),
    "_>=_": _rel(">=", "ge"),
    "_+_": [
        _g((INT, INT), INT, "h:add"),
        _g((UINT, UINT), UINT, "h:add"),
        _g((DOUBLE, DOUBLE), DOUBLE, "t:({0} + {1})", True),
        _g((STRING, STRING), STRING, "hc:concat"),
        _g((BYTES, BYTES), BYTES, "t:({0} + {1})", True),
        _g((list_of(A), list_of(A)), list_of(A), "hc:concat"),
        _g((TS, DUR), TS, "h:add"),
        _g((DUR, TS), TS, "h:add"),
        _g((DUR, DUR), DUR, "h:add"),
    ],
    "_-_": [
        _g((INT, INT), INT, "h:sub"),
        _g((UINT, UINT), UINT, "h:sub"),
        _g((DOUBLE, DOUBLE), DOUBLE, "t:({0} - {1})", True),
        _g((TS, TS), DUR, "h:sub"),
        _g((TS, DUR), TS, "h:sub"),
        _g((DUR, DUR), DUR, "h:sub"),
    ],
    "_*_": [
        _g((INT, INT), INT, "h:mul"),
        _g((UINT, UINT), UINT, "h:mul"),
        _g((DOUBLE, DOUBLE), DOUBLE, "t:({0} * {1})", True),
    ],
    "_/_": [_g((t, t), t, "h:div") for t in _NUMS],
    "_%_": [_g((INT, INT), INT, "h:mod"), _g((UINT, UINT), UINT, "h:mod")],
    "-_": [_g((INT,), INT, "h:neg"), _g((DOUBLE,), DOUBLE, "t:(-{0})", True)],
    "!_": [_g((BOOL,), BOOL, "t:(not {0})", True)],
    "@in": [
        _g((A, list_of(A)), BOOL, "h:in_", True),
        _g((A, map_of(A, B)), BOOL, "h:in_", True),
    ],
    # standard functions
    "size": [
        *(_g((t,), INT, "t:len({0})", True) for t in (STRING, BYTES, list_of(A), map_of(A, B))),
        *(_m((t,), INT, "t:len({0})", True) for t in (STRING, BYTES, list_of(A), map_of(A, B))),
    ],
    "contains": [_m((STRING, STRING), BOOL, "t:({1} in {0})", True)],
    "startsWith": [_m((STRING, STRING), BOOL, "t:{0}.startswith({1})", True)],
    "endsWith": [_m((STRING, STRING), BOOL, "t:{0}.endswith({1})", True)],
    "matches": [_m((STRING, STRING), BOOL, "h:matches"), _g((STRING, STRING), BOOL, "h:matches")],
    "int": [_g((t,), INT, "h:to_int") for t in (INT, UINT, DOUBLE, STRING, DUR, TS)],
    "uint": [_g((t,), UINT, "h:to_uint") for t in (INT, UINT, DOUBLE, STRING)],
    "double": [_g((t,), DOUBLE, "h:to_double") for t in (INT, UINT, DOUBLE, STRING)],
    "string": [_g((t,), STRING, "h:to_string") for t in (INT, UINT, DOUBLE, BOOL, STRING, BYTES, DUR, TS, IP, CIDR)],
    # cel-go standard library: google.protobuf.Duration and Timestamp
    # cel-go v0.29 (Kubernetes 1.37) dropped the int64_to_duration overload cel-go v0.26 declared
    "duration": [_g((t,), DUR, "h:to_duration") for t in (STRING, DUR)],
    "timestamp": [_g((t,), TS, "h:to_timestamp") for t in (STRING, INT, TS)],
    **_time_accessors(),
    "bytes": [_g((t,), BYTES, "h:to_bytes") for t in (BYTES, STRING)],
    "bool": [_g((t,), BOOL, "h:to_bool") for t in (BOOL, STRING)],
    "dyn": [_g((A,), DYN, "t:{0}", True)],
    "type": [_g((A,), TYPE, "h:type_of", True)],
    # kubernetes quantity library
    "quantity": [_g((STRING,), QTY, "h:quantity")],
    "isQuantity": [_g((STRING,), BOOL, "h:is_quantity", True)],
    "sign": [_g((QTY,), INT, "h:q_sign", True), _m((QTY,), INT, "h:q_sign", True)],
    "isGreaterThan": [
        _m((QTY, QTY), BOOL, "t:({0}.compare({1}) == 1)", True),
        _m((SEMVER, SEMVER), BOOL, "t:({0}.compare({1}) == 1)", True),
    ],
    "isLessThan": [
        _m((QTY, QTY), BOOL, "t:({0}.compare({1}) == -1)", True),
        _m((SEMVER, SEMVER), BOOL, "t:({0}.compare({1}) == -1)", True),
    ],
    "compareTo": [
        _m((QTY, QTY), INT, "t:{0}.compare({1})", True),
        _m((SEMVER, SEMVER), INT, "t:{0}.compare({1})", True),
    ],
    "asApproximateFloat": [_m((QTY,), DOUBLE, "h:q_as_float", True)],
    "asInteger": [_m((QTY,), INT, "h:q_as_integer")],
    "isInteger": [_m((QTY,), BOOL, "h:q_is_integer", True)],
    "add": [_m((QTY, QTY), QTY, "h:q_add", True), _m((QTY, INT), QTY, "h:q_add", True)],
    "sub": [_m((QTY, QTY), QTY, "h:q_sub", True), _m((QTY, INT), QTY, "h:q_sub", True)],
    # kubernetes semver library (v1: with normalize)
    "semver": [_g((STRING,), SEMVER, "h:semver"), _g((STRING, BOOL), SEMVER, "h:semver")],
    "isSemver": [_g((STRING,), BOOL, "h:is_semver", True), _g((STRING, BOOL), BOOL, "h:is_semver", True)],
    "major": [_m((SEMVER,), INT, "h:sv_major", True)],
    "minor": [_m((SEMVER,), INT, "h:sv_minor", True)],
    "patch": [_m((SEMVER,), INT, "h:sv_patch", True)],
    # kubernetes IP library (library/ip.go)
    "ip": [_g((STRING,), IP, "h:ip_of"), _m((CIDR,), IP, "h:cidr_ip", True)],
    "isIP": [_g((STRING,), BOOL, "h:is_ip", True)],
    "ip.isCanonical": [_g((STRING,), BOOL, "h:ip_is_canonical")],
    "family": [_m((IP,), INT, "h:ip_family", True)],
    "isUnspecified": [_m((IP,), BOOL, "h:ip_is_unspecified", True)],
    "isLoopback": [_m((IP,), BOOL, "h:ip_is_loopback", True)],
    "isLinkLocalMulticast": [_m((IP,), BOOL, "h:ip_is_link_local_multicast", True)],
    "isLinkLocalUnicast": [_m((IP,), BOOL, "h:ip_is_link_local_unicast", True)],
    "isGlobalUnicast": [_m((IP,), BOOL, "h:ip_is_global_unicast", True)],
    # kubernetes CIDR library (library/cidr.go); one helper serves the string and typed overloads
    "cidr": [_g((STRING,), CIDR, "h:cidr_of")],
    "isCIDR": [_g((STRING,), BOOL, "h:is_cidr", True)],
    "containsIP": [_m((CIDR, STRING), BOOL, "h:cidr_contains_ip"), _m((CIDR, IP), BOOL, "h:cidr_contains_ip", True)],
    "containsCIDR": [
        _m((CIDR, STRING), BOOL, "h:cidr_contains_cidr"),
        _m((CIDR, CIDR), BOOL, "h:cidr_contains_cidr", True),
    ],
    "masked": [_m((CIDR,), CIDR, "h:cidr_masked", True)],
    "prefixLength": [_m((CIDR,), INT, "h:cidr_prefix_length", True)],
    # kubernetes URLs library (library/urls.go)
    "url": [_g((STRING,), URL, "h:url_of")],
    "isURL": [_g((STRING,), BOOL, "h:is_url", True)],
    "getScheme": [_m((URL,), STRING, "h:url_get_scheme", True)],
    "getHost": [_m((URL,), STRING, "h:url_get_host", True)],
    "getHostname": [_m((URL,), STRING, "h:url_get_hostname", True)],
    "getPort": [_m((URL,), STRING, "h:url_get_port", True)],
    "getEscapedPath": [_m((URL,), STRING, "h:url_get_escaped_path", True)],
    "getQuery": [_m((URL,), map_of(STRING, list_of(STRING)), "h:url_get_query", True)],
    # cel-go ext.Strings v2
    "charAt": [_m((STRING, INT), STRING, "h:char_at")],
    "indexOf": [
        _m((STRING, STRING), INT, "h:index_of", True),
        _m((STRING, STRING, INT), INT, "h:index_of"),
        _m((list_of(A), A), INT, "h:list_index_of", True),
    ],
    "lastIndexOf": [
        _m((STRING, STRING), INT, "h:last_index_of", True),
        _m((STRING, STRING, INT), INT, "h:last_index_of"),
        _m((list_of(A), A), INT, "h:list_last_index_of", True),
    ],
    "lowerAscii": [_m((STRING,), STRING, "h:lower_ascii", True)],
    "upperAscii": [_m((STRING,), STRING, "h:upper_ascii", True)],
    "replace": [
        _m((STRING, STRING, STRING), STRING, "h:replace", True),
        _m((STRING, STRING, STRING, INT), STRING, "h:replace", True),
    ],
    "split": [
        _m((STRING, STRING), list_of(STRING), "h:split", True),
        _m((STRING, STRING, INT), list_of(STRING), "h:split", True),
    ],
    "substring": [_m((STRING, INT), STRING, "h:substring"), _m((STRING, INT, INT), STRING, "h:substring")],
    "trim": [_m((STRING,), STRING, "h:trim", True)],
    "join": [
        _m((list_of(STRING),), STRING, "h:join", True),
        _m((list_of(STRING), STRING), STRING, "h:join", True),
    ],
    "strings.quote": [_g((STRING,), STRING, "h:quote", True)],
    "format": [_m((STRING, list_of(DYN)), STRING, "h:str_format")],
    # kubernetes lists library
    "isSorted": [_m((list_of(A),), BOOL, "h:is_sorted")],
    "sum": [_m((list_of(A),), A, "h:list_sum")],
    "min": [_m((list_of(A),), A, "h:list_min")],
    "max": [_m((list_of(A),), A, "h:list_max")],
    # cel-go ext.Lists v3
    "lists.range": [_g((INT,), list_of(INT), "hc:lists_range")],
    "slice": [_m((list_of(A), INT, INT), list_of(A), "h:list_slice")],
    "flatten": [_m((list_of(DYN),), list_of(DYN), "hc:flatten"), _m((list_of(DYN), INT), list_of(DYN), "hc:flatten")],
    "distinct": [_m((list_of(A),), list_of(A), "hc:distinct")],
    "reverse": [_m((list_of(A),), list_of(A), "h:reverse", True)],
    "sort": [_m((list_of(A),), list_of(A), "hc:sort")],
    # cel-go ext.Sets
    "sets.contains": [_g((list_of(A), list_of(A)), BOOL, "h:sets_contains", True)],
    "sets.equivalent": [_g((list_of(A), list_of(A)), BOOL, "h:sets_equivalent", True)],
    "sets.intersects": [_g((list_of(A), list_of(A)), BOOL, "h:sets_intersects", True)],
    # kubernetes regex library
    "find": [_m((STRING, STRING), STRING, "h:find")],
    "findAll": [
        _m((STRING, STRING), list_of(STRING), "h:find_all"),
        _m((STRING, STRING, INT), list_of(STRING), "h:find_all"),
    ],
    # optional types
    "optional.of": [_g((A,), opt_of(A), "h:opt_of", True)],
    "optional.ofNonZeroValue": [_g((A,), opt_of(A), "h:opt_of_non_zero", True)],
    "optional.none": [_g((), opt_of(DYN), "h:opt_none", True)],
    "hasValue": [_m((opt_of(A),), BOOL, "h:opt_has_value", True)],
    "value": [_m((opt_of(A),), A, "h:opt_value")],
    "orValue": [_m((opt_of(A), A), A, "h:opt_or_value", True)],
    "or": [_m((opt_of(A), opt_of(A)), opt_of(A), "h:opt_or", True)],
}

#: Functions whose runtime helper handles every overload of that name (used when args are dyn).
GENERIC: Final[dict[str, str]] = {
    "_==_": "h:eq",
    "_!=_": "h:ne",
    "_<_": "h:lt",
    "_<=_": "h:le",
    "_>_": "h:gt",
    "_>=_": "h:ge",
    "_+_": "hc:concat",
    "_-_": "h:sub",
    "_*_": "h:mul",
    "_/_": "h:div",
    "_%_": "h:mod",
    "-_": "h:neg",
    "!_": "h:not_",
    "size": "h:size",
    "contains": "h:contains",
    "startsWith": "h:starts_with",
    "endsWith": "h:ends_with",
    "isGreaterThan": "h:is_greater_than",
    "isLessThan": "h:is_less_than",
    "compareTo": "h:compare_to",
    "indexOf": "h:index_of",
    "lastIndexOf": "h:last_index_of",
}

MEMBER_MACROS: Final = {
    ("all", 2),
    ("exists", 2),
    ("exists_one", 2),
    ("map", 2),
    ("map", 3),
    ("filter", 2),
    ("all", 3),
    ("exists", 3),
    ("existsOne", 3),
    ("transformList", 3),
    ("transformList", 4),
    ("transformMap", 3),
    ("transformMap", 4),
    ("sortBy", 2),
    ("optMap", 2),
    ("optFlatMap", 2),
}
TWO_VAR: Final = {"all", "exists", "existsOne", "transformList", "transformMap"}
NAMESPACES: Final = {"lists", "sets", "strings", "optional", "cel", "ip"}


class _Mixed(Exception):
    """Raised by Checker._join for mixed element types where cel-go allows them."""


_MIXED: Final = "~mixed"  # while checking an aggregate literal under format(): its elements' types differ


class CheckError(Exception):
    """``internal``: cel-go compiles the expression but cannot build the program (a constant
    regex it fails to compile outside the literal validator); the API server reports that as
    an internal error of the field rather than an invalid value."""

    def __init__(self, message: str, pos: tuple[int, int], internal: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.internal = internal


@dataclass
class Info:
    """What the checker learned about a node."""

    type: Type
    overloads: tuple[Overload, ...] = ()
    raises: bool = True  # conservative: may fail at runtime
    pyname: str | None = None  # identifiers: the Python variable holding them


class Checker:
    """Expands macros and type-checks; ``info[id(node)]`` holds the result for codegen."""

    def __init__(self) -> None:
        self.info: dict[int, Info] = {}
        self._n = 0
        self._exempt = 0  # inside format()'s arguments: aggregate literals may mix types

    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def check(self, node: Node, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        meth = getattr(self, "c_" + type(node).__name__)
        new, info = meth(node, scope)
        self.info[id(new)] = info
        return new, info

    # --------------------------------------------------------------------------- leaves

    def c_Literal(self, n: Literal, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        kinds = {
            "int": INT,
            "uint": UINT,
            "double": DOUBLE,
            "string": STRING,
            "bytes": BYTES,
            "bool": BOOL,
            "null": NULL,
        }
        return n, Info(kinds[n.kind], raises=False)

    def c_Ident(self, n: Ident, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        name = n.name.lstrip(".")
        if not n.name.startswith(".") and name in scope:
            py, t = scope[name]
            return n, Info(t, raises=False, pyname=py)
        if name == "device":
            return n, Info(DEVICE, raises=False, pyname="device")
        if name in TYPE_IDENTS:
            return n, Info(TYPE, raises=False)
        raise CheckError(f"undeclared reference to '{name}' (in container '')", n.pos)

    # --------------------------------------------------------------------------- selection

    def c_Select(self, n: Select, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        op = n.operand
        if (
            isinstance(op, Ident)
            and op.name.lstrip(".") == "net"
            and "net" not in scope
            and n.field in ("IP", "CIDR")
            and not (n.test_only or n.optional)
        ):
            return Ident(n.pos, f"net.{n.field}"), Info(TYPE, raises=False)  # the type names net.IP, net.CIDR
        operand, oi = self.check(n.operand, scope)
        n.operand = operand
        t = oi.type
        if n.optional:
            inner = t[1] if isinstance(t, tuple) and t[0] == "optional_type" else t
            ft = self._field_type(inner, n)
            return n, Info(opt_of(ft), raises=oi.raises or not _is_map_like(inner))
        if n.test_only:
            self._field_type(t, n)
            return n, Info(BOOL, raises=oi.raises or is_dyn(t))
        ft = self._field_type(t, n)
        safe = t == DEVICE or (isinstance(t, tuple) and t[0] == "dmap")
        return n, Info(ft, raises=oi.raises or not safe)

    def _field_type(self, t: Type, n: Select) -> Type:
        if t == DEVICE:
            ft = DEVICE_FIELDS.get(n.field)
            if ft is None:
                raise CheckError(f"undefined field '{n.field}'", n.pos)
            return ft
        if is_dyn(t):
            return DYN
        if isinstance(t, tuple):
            if t[0] == "dmap":
                return t[1]
            if t[0] == "map":
                if not (is_dyn(t[1]) or t[1] == STRING):
                    raise CheckError(f"type '{fmt(t)}' does not support field selection", n.pos)
                return t[2]
        raise CheckError(f"type '{fmt(t)}' does not support field selection", n.pos)

    def c_Index(self, n: Index, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        operand, oi = self.check(n.operand, scope)
        idx, ii = self.check(n.index, scope)
        n.operand, n.index = operand, idx
        t = oi.type
        inner = t
        if n.optional and isinstance(t, tuple) and t[0] == "optional_type":
            inner = t[1]
        rt = self._index_type(inner, ii.type, n)
        safe = isinstance(inner, tuple) and inner[0] == "dmap"
        raises = oi.raises or ii.raises or not safe
        if n.optional:
            return n, Info(opt_of(rt), raises=raises)
        return n, Info(rt, raises=raises)

    def _index_type(self, t: Type, k: Type, n: Index) -> Type:
        if is_dyn(t):
            return DYN
        if isinstance(t, tuple):
            if t[0] == "list":
                if k in (INT, UINT, DOUBLE) or is_dyn(k):
                    return t[1] if k == INT or is_dyn(k) else self._no_overload("_[_]", [t, k], n.pos)
            elif t[0] in ("map", "dmap"):
                kt = STRING if t[0] == "dmap" else t[1]
                vt = t[1] if t[0] == "dmap" else t[2]
                if unify(kt, k, {}):
                    return vt
        return self._no_overload("_[_]", [t, k], n.pos)

    def _no_overload(self, fn: str, types: list[Type], pos: tuple[int, int]) -> Type:
        shown = ", ".join(fmt(x) for x in types)
        raise CheckError(f"found no matching overload for '{fn}' applied to '({shown})'", pos)

    # --------------------------------------------------------------------------- literals

    def c_CreateList(self, n: CreateList, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        elems: list[Node] = []
        et: Type | None = None
        raises = False
        for i, e in enumerate(n.elements):
            ne, ei = self.check(e, scope)
            elems.append(ne)
            raises = raises or ei.raises
            t = ei.type
            if n.optional and n.optional[i]:
                if not (isinstance(t, tuple) and t[0] == "optional_type") and not is_dyn(t):
                    raise CheckError(f"expected type 'optional_type' but found '{fmt(t)}'", ne.pos)
                t = t[1] if isinstance(t, tuple) else DYN
                raises = True
            et = self._join_exempt(et, t, ne.pos)
        n.elements = elems
        return n, Info(list_of(DYN if et in (None, _MIXED) else et), raises=raises)

    def _join_exempt(self, acc: Type | None, t: Type, pos: tuple[int, int]) -> Type:
        """_join, except that under format() mixed elements make the aggregate dyn for good."""
        if acc == _MIXED:
            return _MIXED
        try:
            return self._join(acc, t, pos)
        except _Mixed:
            return _MIXED

    def _join(self, acc: Type | None, t: Type, pos: tuple[int, int]) -> Type:
        """Homogeneous aggregate literals: every element has the same type (dyn excepted; an
        attribute value's type, google.protobuf.Any, is a type like any other here)."""
        t = _norm(t)
        if acc is None:
            return t
        if DYN in (acc, t) or acc == t:
            return acc if acc != DYN else t
        if _compatible(acc, t, {}):
            return acc
        if self._exempt:
            raise _Mixed
        raise CheckError(f"expected type '{fmt(acc)}' but found '{fmt(t)}'", pos)

    def c_CreateMap(self, n: CreateMap, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        kt: Type | None = None
        vt: Type | None = None
        entries: list[tuple[Node, Node, bool]] = []
        for k, v, opt in n.entries:
            nk, ki = self.check(k, scope)
            nv, vi = self.check(v, scope)
            if not (ki.type in (STRING, INT, UINT, BOOL) or is_dyn(ki.type)):
                raise CheckError(f"unsupported map key type: {fmt(ki.type)}", nk.pos)
            t = vi.type
            if opt:
                if not (isinstance(t, tuple) and t[0] == "optional_type") and not is_dyn(t):
                    raise CheckError(f"expected type 'optional_type' but found '{fmt(t)}'", nv.pos)
                t = t[1] if isinstance(t, tuple) else DYN
            kt = self._join_exempt(kt, ki.type, nk.pos)
            vt = self._join_exempt(vt, t, nv.pos)
            entries.append((nk, nv, opt))
        n.entries = entries
        kt = DYN if kt in (None, _MIXED) else kt
        vt = DYN if vt in (None, _MIXED) else vt
        return n, Info(map_of(kt, vt), raises=True)

    # --------------------------------------------------------------------------- calls

    def c_Call(self, n: Call, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        fn = n.function.lstrip(".")
        target = n.target
        # namespaced functions and macros: lists.range(...), cel.bind(...), optional.of(...)
        if isinstance(target, Ident) and target.name in NAMESPACES and target.name not in scope:
            qual = f"{target.name}.{fn}"
            if qual == "cel.bind":
                return self._bind(n, scope)
            if qual in FUNCTIONS:
                return self._call(Call(n.pos, qual, n.args, None), scope)
            raise CheckError(f"undeclared reference to '{qual}' (in container '')", n.pos)
        if target is None and fn == "has" and len(n.args) == 1:
            return self._has(n, scope)
        if target is not None and (fn, len(n.args)) in MEMBER_MACROS:
            return self._comprehension(n, scope)
        if fn in ("_&&_", "_||_"):
            return self._logic(n, scope)
        if fn == "_?_:_":
            return self._ternary(n, scope)
        return self._call(n, scope)

    def _call(self, n: Call, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        fn = n.function.lstrip(".")
        overloads = FUNCTIONS.get(fn)
        target_info: Info | None = None
        if n.target is not None:
            n.target, target_info = self.check(n.target, scope)
        args: list[Node] = []
        infos: list[Info] = []
        # cel-go exempts everything under format()'s arguments from the homogeneous-literal check
        exempt = int(fn == "format" and n.target is not None)
        self._exempt += exempt
        try:
            for a in n.args:
                na, ai = self.check(a, scope)
                args.append(na)
                infos.append(ai)
        finally:
            self._exempt -= exempt
        n.args = args
        n.function = fn
        if overloads is None:
            raise CheckError(f"undeclared reference to '{fn}' (in container '')", n.pos)
        types = ([target_info.type] if target_info else []) + [i.type for i in infos]
        member = target_info is not None
        matched: list[tuple[Overload, Type]] = []
        for ov in overloads:
            if ov.member != member or len(ov.params) != len(types):
                continue
            b: dict[str, Type] = {}
            if all(unify(p, t, b) for p, t in zip(ov.params, types)):
                matched.append((ov, subst(ov.result, b)))
        if not matched:
            shown = ", ".join(fmt(t) for t in types)
            if member:
                rest = ", ".join(fmt(t) for t in types[1:])
                raise CheckError(f"found no matching overload for '{fn}' applied to '{fmt(types[0])}.({rest})'", n.pos)
            raise CheckError(f"found no matching overload for '{fn}' applied to '({shown})'", n.pos)
        results = {_norm(r) for _, r in matched}
        rt: Type = results.pop() if len(results) == 1 else DYN
        if fn in ("matches", "find", "findAll"):
            pattern = args[-1] if fn == "matches" and not member else (args[0] if args else None)
            self._check_regex(pattern, validated=fn == "matches" and member)
        if fn == "format" and member and args:
            self._check_format(n, args[0])
        if fn in ("duration", "timestamp") and not member and args:
            self._check_time_literal(fn, args[0])
        all_total = len(matched) == 1 and matched[0][0].total and not any(is_dyn(_norm(x)) for x in types)
        raises = (target_info.raises if target_info else False) or any(i.raises for i in infos) or not all_total
        return n, Info(rt, overloads=tuple(ov for ov, _ in matched), raises=raises)

    def _check_format(self, call: Call, arg_list: Node) -> None:
        """cel-go's string format validator: a constant format string over a list literal is
        checked clause by clause against the arguments' static types at compile time."""
        fmt_node = call.target
        if not (isinstance(fmt_node, Literal) and isinstance(fmt_node.value, str) and isinstance(arg_list, CreateList)):
            return
        verbs = _format_verbs(fmt_node.value)
        if verbs is None:
            return  # a malformed format string fails when evaluated
        elements = arg_list.elements
        for i, verb in enumerate(verbs):
            if i >= len(elements):
                raise CheckError(f"index {i} out of range", call.pos)
            elem = elements[i]
            t = _norm(self.info[id(elem)].type)
            # An attribute value is declared as google.protobuf.Any (not dyn, which passes).
            given = "google.protobuf.Any" if t == ANY else t if isinstance(t, str) and t != DYN else None
            bad = None
            if verb == "s" and t == ANY:
                bad = ("string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
                       "types, durations, and timestamps")
            elif verb == "d" and given is not None and given not in (INT, UINT):
                bad = "decimal clause can only be used on integers"
            if bad is not None:
                raise CheckError(f"error during formatting: {bad}, was given {given}", elem.pos)

    def _check_time_literal(self, fn: str, arg: Node) -> None:
        """cel-go's duration and timestamp literal validators (the Kubernetes base environment
        enables them): a constant argument is converted at compile time, and one that fails
        is "invalid duration argument" at the literal."""
        if not isinstance(arg, Literal):
            return
        try:
            (to_duration if fn == "duration" else to_timestamp)(arg.value)
        except EvalError:
            raise CheckError(f"invalid {fn} argument", arg.pos) from None

    def _check_regex(self, pat: Node | None, validated: bool) -> None:
        """A constant pattern must compile. cel-go's regex literal validator checks the member
        form of ``matches`` ("invalid matches argument"); for the others the program cannot be
        built ("program instantiation failed: ...")."""
        if isinstance(pat, Literal) and isinstance(pat.value, str):
            try:
                compile_regex(pat.value)
            except RegexError as e:
                if validated:
                    raise CheckError("invalid matches argument", pat.pos) from None
                raise CheckError(f"program instantiation failed: {e}", pat.pos, internal=True) from None

    def _logic(self, n: Call, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        args: list[Node] = []
        infos: list[Info] = []
        for a in n.args:
            na, ai = self.check(a, scope)
            args.append(na)
            infos.append(ai)
        if any(not (i.type == BOOL or is_dyn(i.type)) for i in infos):
            self._no_overload(n.function, [i.type for i in infos], n.pos)
        n.args = args
        return n, Info(BOOL, raises=any(i.raises or is_dyn(i.type) for i in infos))

    def _ternary(self, n: Call, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        c, ci = self.check(n.args[0], scope)
        a, ai = self.check(n.args[1], scope)
        b, bi = self.check(n.args[2], scope)
        if not (ci.type == BOOL or is_dyn(ci.type)):
            self._no_overload("_?_:_", [ci.type, ai.type, bi.type], c.pos)
        bind: dict[str, Type] = {}
        if not (unify(A, ai.type, bind) and unify(A, bi.type, bind)):
            self._no_overload("_?_:_", [ci.type, ai.type, bi.type], n.pos)
        rt = _norm(bind.get(A, DYN))
        n.args = [c, a, b]
        return n, Info(rt, raises=ci.raises or ai.raises or bi.raises or is_dyn(ci.type))

    # --------------------------------------------------------------------------- macros

    def _has(self, n: Call, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        arg = n.args[0]
        if not isinstance(arg, Select) or arg.optional:
            raise CheckError("invalid argument to has() macro", arg.pos)
        arg.test_only = True
        arg.pos = n.pos  # the expanded test is the macro call's, as in cel-go
        return self.check(arg, scope)

    def _var(self, node: Node) -> str:
        if not isinstance(node, Ident) or node.name.startswith("."):
            raise CheckError("argument must be a simple name", node.pos)
        return node.name

    def _bind(self, n: Call, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        if len(n.args) != 3:
            raise CheckError("undeclared reference to 'cel.bind' (in container '')", n.pos)
        name = self._var(n.args[0])
        init, ii = self.check(n.args[1], scope)
        py = self.fresh("b_")
        body, bi = self.check(n.args[2], {**scope, name: (py, ii.type)})
        comp = Comprehension(n.pos, "bind", init, py, None, [body])
        return comp, Info(bi.type, raises=ii.raises or bi.raises, pyname=py)

    def _comprehension(self, n: Call, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        assert n.target is not None
        kind = n.function
        nargs = len(n.args)
        two = kind in TWO_VAR and nargs >= 3 and kind not in ("map",)
        if kind in ("transformList", "transformMap"):
            two = True
        rng, ri = self.check(n.target, scope)
        rt = _norm(ri.type)
        names = [self._var(n.args[0])] + ([self._var(n.args[1])] if two else [])
        if two and names[0] == names[1]:
            raise CheckError(f"duplicate variable name: {names[0]}", n.args[1].pos)
        if kind in ("optMap", "optFlatMap"):
            if not (isinstance(rt, tuple) and rt[0] == "optional_type") and not is_dyn(rt):
                self._no_overload(kind, [rt], n.pos)
            vt = rt[1] if isinstance(rt, tuple) else DYN
            py = self.fresh("v_")
            body, bi = self.check(n.args[1], {**scope, names[0]: (py, vt)})
            if kind == "optFlatMap":
                if not (isinstance(bi.type, tuple) and bi.type[0] == "optional_type") and not is_dyn(bi.type):
                    self._no_overload("optFlatMap", [bi.type], body.pos)
                res: Type = bi.type if not is_dyn(bi.type) else opt_of(DYN)
            else:
                res = opt_of(bi.type)
            return Comprehension(n.pos, kind, rng, py, None, [body]), Info(res, raises=True)
        if rt == DYN:
            t1: Type = DYN
            t2: Type = DYN
        elif isinstance(rt, tuple) and rt[0] == "list":
            t1, t2 = (INT, rt[1]) if two else (rt[1], DYN)
        elif isinstance(rt, tuple) and rt[0] == "map":
            t1, t2 = rt[1], rt[2]
        else:
            raise CheckError(
                f"expression of type '{fmt(rt)}' cannot be range of a comprehension (must be list, map, or dynamic)",
                rng.pos,
            )
        p1 = self.fresh("v_")
        inner = {**scope, names[0]: (p1, t1)}
        p2 = None
        if two:
            p2 = self.fresh("v_")
            inner[names[1]] = (p2, t2)
        rest = n.args[2:] if two else n.args[1:]
        bodies: list[Node] = []
        infos: list[Info] = []
        for r in rest:
            b, bi = self.check(r, inner)
            bodies.append(b)
            infos.append(bi)
        preds = {"all": 1, "exists": 1, "exists_one": 1, "existsOne": 1, "filter": 1}
        npred = preds.get(kind, 0)
        if kind in ("map", "transformList", "transformMap") and len(bodies) == 2:
            npred = 1
        for b, bi in zip(bodies[:npred], infos[:npred]):
            if not (bi.type == BOOL or is_dyn(bi.type)):
                op = {"all": "_&&_", "exists": "_||_"}.get(kind, "_?_:_")
                self._no_overload(op, [BOOL, bi.type], b.pos)
        result: Type
        if kind in ("all", "exists", "exists_one", "existsOne"):
            result = BOOL
        elif kind == "filter":
            result = list_of(t1 if not two else t2)
        elif kind in ("map", "transformList"):
            result = list_of(infos[-1].type)
        elif kind == "transformMap":
            if isinstance(rt, tuple) and rt[0] == "list":
                result = map_of(INT, infos[-1].type)
            else:
                result = map_of(t1, infos[-1].type)
        elif kind == "sortBy":
            result = rt if not is_dyn(rt) else list_of(DYN)
        else:  # pragma: no cover - MEMBER_MACROS is exhaustive
            raise CheckError(f"unsupported macro {kind}", n.pos)
        comp = Comprehension(n.pos, kind, rng, p1, p2, bodies)
        return comp, Info(result, raises=True)

    def c_Comprehension(self, n: Comprehension, scope: dict[str, tuple[str, Type]]) -> tuple[Node, Info]:
        raise AssertionError("comprehensions are created by the checker")  # pragma: no cover


def _format_verbs(text: str) -> list[str] | None:
    """The verbs of a format string's clauses in order (``%%`` is none), or None if malformed."""
    verbs: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] != "%":
            i += 1
            continue
        i += 1
        if i < n and text[i] == "%":
            i += 1
            continue
        if i < n and text[i] == ".":
            i += 1
            while i < n and text[i].isdigit():
                i += 1
        if i >= n:
            return None
        verbs.append(text[i])
        i += 1
    return verbs


def _is_map_like(t: Type) -> bool:
    return isinstance(t, tuple) and t[0] in ("map", "dmap")
