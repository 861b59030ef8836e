"""Runtime values and functions for compiled CEL (called from generated code).

Values are plain Python where CEL and Python agree (bool, int, float, str, bytes, list, dict,
None) plus :class:`UInt`, :class:`Opt`, :class:`CelType`, ``Quantity`` and ``Semver``. Every
function checks CEL's types itself, because the checker lets ``dyn`` values through and
Python would happily compute ``1 + True``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final, NoReturn, TypeVar

import re2

from drasched.cel import timevals
from drasched.cel.netlib import CIDR, IP, URL, NetError, parse_cidr, parse_ip, parse_url
from drasched.cel.semver import Semver, SemverError
from drasched.cel.timevals import Duration, Timestamp
from drasched.quantity import Format, Quantity, QuantityError

INT_MIN: Final = -(1 << 63)
INT_MAX: Final = (1 << 63) - 1
UINT_MAX: Final = (1 << 64) - 1
COST_LIMIT: Final = 1_000_000


class EvalError(Exception):
    """A CEL runtime error (becomes CELRuntimeError at the selector boundary)."""


class CostLimitExceeded(BaseException):
    """Raised when an evaluation runs past its budget; a BaseException so no CEL ``||`` absorbs it."""


class UInt(int):
    """CEL ``uint``: an int that keeps its type through arithmetic and comparisons."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelType:
    """A CEL type value, as returned by ``type(x)`` and named by ``int``, ``string``..."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("CelType", self.name))


TYPE_VALUES: Final = {
    n: CelType(n)
    for n in (
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
        "optional_type",
        "kubernetes.Quantity",
        "kubernetes.Semver",
        "kubernetes.DRADevice",
        "net.IP",
        "net.CIDR",
        "kubernetes.URL",
        "google.protobuf.Duration",
        "google.protobuf.Timestamp",
    )
}


class Opt:
    """A CEL optional value."""

    __slots__ = ("has", "val")

    def __init__(self, has: bool, val: Any = None) -> None:
        self.has = has
        self.val = val

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Opt):
            return NotImplemented
        if self.has != other.has:
            return False
        return not self.has or eq(self.val, other.val)

    def __hash__(self) -> int:
        return hash(("Opt", self.has))

    def __repr__(self) -> str:
        return f"optional.of({self.val!r})" if self.has else "optional.none()"


NONE: Final = Opt(False)


def fail(msg: str) -> NoReturn:
    raise EvalError(msg)


def cost_exceeded() -> NoReturn:
    raise CostLimitExceeded(f"operation cancelled: actual cost limit exceeded (limit {COST_LIMIT})")


def charge(c: list[int], n: int) -> None:
    c[0] += n
    if c[0] > COST_LIMIT:
        cost_exceeded()


def type_name(v: Any) -> str:
    t = type(v)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is UInt:
        return "uint"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is bytes:
        return "bytes"
    if v is None:
        return "null_type"
    if t is list:
        return "list"
    if isinstance(v, dict):
        return "map"
    if t is Quantity:
        return "kubernetes.Quantity"
    if t is Semver:
        return "kubernetes.Semver"
    if t is IP:
        return "net.IP"
    if t is CIDR:
        return "net.CIDR"
    if t is URL:
        return "kubernetes.URL"
    if t is Opt:
        return "optional_type"
    if t is Duration:
        return "google.protobuf.Duration"
    if t is Timestamp:
        return "google.protobuf.Timestamp"
    if t is CelType:
        return "type"
    if hasattr(v, "attributes") and hasattr(v, "driver"):
        return "kubernetes.DRADevice"
    return t.__name__


def no_overload(fn: str, *args: Any) -> NoReturn:
    raise EvalError(f"no such overload: {fn}({', '.join(type_name(a) for a in args)})")


def type_of(v: Any) -> CelType:
    return TYPE_VALUES.get(type_name(v)) or CelType(type_name(v))


# ----------------------------------------------------------------------------- equality/order

_NUM: Final = (int, UInt, float)


def eq(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality: numbers compare by value across int/uint/double."""
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta is list:
            return len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b))
        if ta is dict:
            if len(a) != len(b):
                return False
            for k, v in a.items():
                k2 = _find_key(b, k)
                if k2 is _MISSING or not eq(v, b[k2]):
                    return False
            return True
        return bool(a == b)
    if ta in _NUM and tb in _NUM:
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return eq(dict(a), dict(b))
    return False


def ne(a: Any, b: Any) -> bool:
    return not eq(a, b)


_MISSING: Final = object()


def _find_key(m: dict[Any, Any], k: Any) -> Any:
    """The stored key of ``m`` CEL-equal to ``k`` (a bool never matches a number), or _MISSING."""
    tk = type(k)
    if tk is str:
        return k if k in m else _MISSING
    if tk is float:
        if not k.is_integer():
            return _MISSING
        k = int(k)
        tk = int
    try:
        if k not in m:
            return _MISSING
    except TypeError:
        return _MISSING
    if tk is bool or tk is int or tk is UInt:
        for kk in m:  # numeric and bool keys collide in Python dicts; they differ in CEL
            if kk == k and type(kk) is not str:
                return kk if (type(kk) is bool) == (tk is bool) else _MISSING
        return _MISSING  # pragma: no cover - k in m guarantees a hit
    return k


def compare(a: Any, b: Any, fn: str) -> int:
    """Ordering for ``<``/``<=``/``>``/``>=``: same types, or numbers across types."""
    ta, tb = type(a), type(b)
    if ta is tb and ta in (int, UInt, float, str, bytes, bool):
        if ta is float and (math.isnan(a) or math.isnan(b)):
            return 2  # unordered: every comparison is false
        return (a > b) - (a < b)
    if ta in _NUM and tb in _NUM:
        if (ta is float and math.isnan(a)) or (tb is float and math.isnan(b)):
            return 2
        return (a > b) - (a < b)
    if ta is tb and ta in (Duration, Timestamp):
        return (a.ns > b.ns) - (a.ns < b.ns)
    no_overload(fn, a, b)


def lt(a: Any, b: Any) -> bool:
    return compare(a, b, "_<_") == -1


def le(a: Any, b: Any) -> bool:
    return compare(a, b, "_<=_") in (-1, 0)


def gt(a: Any, b: Any) -> bool:
    return compare(a, b, "_>_") == 1


def ge(a: Any, b: Any) -> bool:
    return compare(a, b, "_>=_") in (1, 0)


def logic_error(op: str, a: Any, b: Any) -> NoReturn:
    if isinstance(a, BaseException):
        raise a
    if isinstance(b, BaseException):
        raise b
    no_overload(op, a, b)


def bad_logic(op: str, v: Any) -> BaseException:
    """The error a non-bool operand of ``&&``/``||``/all/exists stands for (absorbable)."""
    if isinstance(v, BaseException):
        return v
    return EvalError(f"no such overload: {op} applied to {type_name(v)}")


def not_(a: Any) -> bool:
    if a is True:
        return False
    if a is False:
        return True
    no_overload("!_", a)


def cond(c: Any) -> bool:
    if c is True or c is False:
        return c
    no_overload("_?_:_", c)


def in_(x: Any, c: Any) -> bool:
    t = type(c)
    if t is list:
        if type(x) in (str, int):
            for e in c:
                if type(e) is type(x) and e == x:
                    return True
            if type(x) is str:
                return False
        return any(eq(x, e) for e in c)
    if isinstance(c, dict):
        return _find_key(c, x) is not _MISSING
    no_overload("@in", x, c)


# ----------------------------------------------------------------------------- arithmetic


def _int(v: int) -> int:
    if INT_MIN <= v <= INT_MAX:
        return v
    fail("integer overflow")


def _uint(v: int) -> UInt:
    if 0 <= v <= UINT_MAX:
        return UInt(v)
    fail("unsigned integer overflow")


def _time_result(kind: type[Duration] | type[Timestamp], ns: int) -> Any:
    """A duration must fit int64 nanoseconds; a timestamp int64 seconds (cel-go does not
    range-check arithmetic results further)."""
    if kind is Duration:
        if not INT_MIN <= ns <= INT_MAX:
            fail("integer overflow")
        return Duration(ns)
    if not INT_MIN <= ns // timevals.NANOS <= INT_MAX:
        fail("timestamp overflow")
    return Timestamp(ns)


def _time_add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is Duration and tb is Duration:
        return _time_result(Duration, a.ns + b.ns)
    if {ta, tb} == {Duration, Timestamp}:
        return _time_result(Timestamp, a.ns + b.ns)
    no_overload("_+_", a, b)


def _time_sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is Timestamp and tb is Timestamp:
        return _time_result(Duration, a.ns - b.ns)
    if ta in (Timestamp, Duration) and tb is Duration:
        return _time_result(ta, a.ns - b.ns)
    no_overload("_-_", a, b)


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta in (Duration, Timestamp):
        return _time_add(a, b)
    if ta is not tb:
        no_overload("_+_", a, b)
    if ta is int:
        return _int(a + b)
    if ta is UInt:
        return _uint(a + b)
    if ta in (float, str, bytes, list):
        return a + b
    no_overload("_+_", a, b)


def sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta in (Duration, Timestamp):
        return _time_sub(a, b)
    if ta is not tb:
        no_overload("_-_", a, b)
    if ta is int:
        return _int(a - b)
    if ta is UInt:
        return _uint(a - b)
    if ta is float:
        return a - b
    no_overload("_-_", a, b)


def mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is not tb:
        no_overload("_*_", a, b)
    if ta is int:
        return _int(a * b)
    if ta is UInt:
        return _uint(a * b)
    if ta is float:
        return a * b
    no_overload("_*_", a, b)


def div(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is not tb:
        no_overload("_/_", a, b)
    if ta is int or ta is UInt:
        if b == 0:
            fail("division by zero")
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return _int(q) if ta is int else UInt(q)
    if ta is float:
        if b == 0.0:
            if a == 0.0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    no_overload("_/_", a, b)


def mod(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is not tb or ta not in (int, UInt):
        no_overload("_%_", a, b)
    if b == 0:
        fail("modulus by zero")
    r = abs(a) % abs(b)
    if a < 0:
        r = -r
    return r if ta is int else UInt(r)


def neg(a: Any) -> Any:
    t = type(a)
    if t is int:
        return _int(-a)
    if t is float:
        return -a
    no_overload("-_", a)


# ----------------------------------------------------------------------------- access


def select(obj: Any, field: str) -> Any:
    """``obj.field`` on a map (no such key -> error) or the device."""
    if isinstance(obj, dict):
        try:
            return obj[field]
        except KeyError:
            fail(f"no such key: {field}")
    attr = _DEVICE_FIELDS.get(field)
    if attr is not None and type_name(obj) == "kubernetes.DRADevice":
        return getattr(obj, attr)
    if type(obj) is Opt:
        fail(f"unsupported field selection on optional: {field}")
    fail(f"no such key: {field}" if obj is None else f"type '{type_name(obj)}' does not support field selection")


_DEVICE_FIELDS: Final = {
    "driver": "driver",
    "attributes": "attributes",
    "capacity": "capacity",
    "allowMultipleAllocations": "allow_multiple_allocations",
}


def has_field(obj: Any, field: str) -> bool:
    if isinstance(obj, dict):
        return field in obj
    if type_name(obj) == "kubernetes.DRADevice":
        return field in _DEVICE_FIELDS
    fail(f"invalid type for field selection: {type_name(obj)}")


def index(obj: Any, key: Any) -> Any:
    t = type(obj)
    if t is list:
        tk = type(key)
        if tk is float:
            if not key.is_integer():
                fail(f"unsupported index value {key}")
            key = int(key)
        elif tk not in (int, UInt):
            no_overload("_[_]", obj, key)
        if 0 <= key < len(obj):
            return obj[key]
        fail(f"index out of bounds: {key}")
    if isinstance(obj, dict):
        k = _find_key(obj, key)
        if k is _MISSING:
            fail(f"no such key: {key}")
        return obj[k]
    no_overload("_[_]", obj, key)


def opt_select(obj: Any, field: str) -> Opt:
    if type(obj) is Opt:
        if not obj.has:
            return obj
        obj = obj.val
    if isinstance(obj, dict):
        return Opt(True, obj[field]) if field in obj else NONE
    if type_name(obj) == "kubernetes.DRADevice":
        return Opt(True, select(obj, field))
    fail(f"type '{type_name(obj)}' does not support field selection")


def opt_index(obj: Any, key: Any) -> Opt:
    if type(obj) is Opt:
        if not obj.has:
            return obj
        obj = obj.val
    if type(obj) is list:
        if type(key) in (int, UInt) and 0 <= key < len(obj):
            return Opt(True, obj[key])
        return NONE
    if isinstance(obj, dict):
        k = _find_key(obj, key)
        return NONE if k is _MISSING else Opt(True, obj[k])
    no_overload("_[?_]", obj, key)


def iter_range(r: Any) -> Any:
    if type(r) is list or isinstance(r, dict):
        return r
    fail(f"expression of type '{type_name(r)}' cannot be range of a comprehension (must be list, map, or dynamic)")


def iter_pairs(r: Any) -> Any:
    if type(r) is list:
        return enumerate(r)
    if isinstance(r, dict):
        return r.items()
    fail(f"expression of type '{type_name(r)}' cannot be range of a comprehension (must be list, map, or dynamic)")


def pred(v: Any, macro: str) -> bool:
    if v is True or v is False:
        return v
    no_overload(macro, v)


# ----------------------------------------------------------------------------- builtins


def size(v: Any) -> int:
    t = type(v)
    if t is str or t is bytes or t is list or isinstance(v, dict):
        return len(v)
    no_overload("size", v)


def contains(s: Any, sub: Any) -> bool:
    if type(s) is str and type(sub) is str:
        return sub in s
    no_overload("contains", s, sub)


def starts_with(s: Any, p: Any) -> bool:
    if type(s) is str and type(p) is str:
        return s.startswith(p)
    no_overload("startsWith", s, p)


def ends_with(s: Any, p: Any) -> bool:
    if type(s) is str and type(p) is str:
        return s.endswith(p)
    no_overload("endsWith", s, p)


class RegexError(ValueError):
    pass


#: RE2's error codes in the words of Go's regexp package, which cel-go reports.
_GO_REGEXP_ERRORS: Final = {
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "missing ]": "missing closing ]",
    "trailing \\": "trailing backslash at end of expression",
    "bad repetition operator": "invalid nested repetition operator",
    "bad repetition count": "invalid repeat count",
    "invalid named capture group": "invalid named capture",
    "duplicate capture group name": "duplicate capture group name",
}
_RE2_OPTIONS: Final = re2.Options()
_RE2_OPTIONS.log_errors = False  # the error is returned to the caller, not logged


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> re2._Regexp:
    """Compile with RE2, the linear-time engine (and syntax) cel-go uses through Go's regexp.

    Backreferences and lookarounds are syntax errors, as upstream; no input can make a match
    take more than linear time, so a selector or an attribute value cannot stall a cycle.
    """
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as e:
        raise RegexError(f"error parsing regexp: {_go_message(e)}") from None


def _go_message(e: Exception) -> str:
    raw = e.args[0] if e.args else str(e)
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    code, sep, arg = text.partition(": ")
    code = _GO_REGEXP_ERRORS.get(code, code)
    return f"{code}: `{arg}`" if sep else code


def matches(s: Any, p: Any) -> bool:
    if type(s) is str and type(p) is str:
        try:
            return compile_regex(p).search(s) is not None
        except RegexError as e:
            fail(str(e))
    no_overload("matches", s, p)


def find(s: Any, p: Any) -> str:
    if type(s) is str and type(p) is str:
        try:
            m = compile_regex(p).search(s)
        except RegexError as e:
            fail(str(e))
        return m.group(0) if m else ""
    no_overload("find", s, p)


def find_all(s: Any, p: Any, n: Any = -1) -> list[str]:
    if type(s) is str and type(p) is str and type(n) is int:
        try:
            rx = compile_regex(p)
        except RegexError as e:
            fail(str(e))
        if n == 0:
            return []
        out = [m.group(0) for m in rx.finditer(s)]
        return out if n < 0 else out[:n]
    no_overload("findAll", s, p, n)


# conversions


def to_int(v: Any) -> int:
    t = type(v)
    if t is int:
        return v
    if t is UInt:
        if v > INT_MAX:
            fail("integer overflow")
        return int(v)
    if t is float:
        if math.isnan(v) or math.isinf(v) or not (-9.223372036854776e18 < v < 9.223372036854776e18):
            fail("integer overflow")
        return int(v)
    if t is str:
        if re.fullmatch(r"[+-]?[0-9]+", v):
            return _int(int(v))
        fail(f"cannot convert string {v!r} to int")
    if t is Duration:
        return v.ns  # nanoseconds
    if t is Timestamp:
        return v.ns // timevals.NANOS  # Go's Time.Unix(): whole seconds, rounded down
    no_overload("int", v)


def to_uint(v: Any) -> UInt:
    t = type(v)
    if t is UInt:
        return v
    if t is int:
        if v < 0:
            fail("unsigned integer overflow")
        return UInt(v)
    if t is float:
        if math.isnan(v) or v < 0 or v >= 1.8446744073709552e19:
            fail("unsigned integer overflow")
        return UInt(int(v))
    if t is str:
        if re.fullmatch(r"\+?[0-9]+", v):
            return _uint(int(v))
        fail(f"cannot convert string {v!r} to uint")
    no_overload("uint", v)


def to_double(v: Any) -> float:
    t = type(v)
    if t is float:
        return v
    if t is int or t is UInt:
        return float(v)
    if t is str:
        try:
            return float(v)
        except ValueError:
            fail(f"cannot convert string {v!r} to double")
    no_overload("double", v)


def format_double(f: float) -> str:
    """Go's ``strconv.FormatFloat(f, 'g', -1, 64)`` (what cel-go's string(double) prints)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    r = repr(abs(f))
    mant, _, e = r.partition("e")
    exp10 = int(e) if e else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    dp = len(ip) + exp10 - lead_zeros
    digits = digits.rstrip("0") or "0"
    exp = dp - 1
    sign = "-" if f < 0 else ""
    if exp < -4 or exp >= 6:  # Go: shortest %g switches to %e at exponent 6
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{m}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return sign + digits + "0" * (dp - len(digits))
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def to_string(v: Any) -> str:
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int or t is UInt:
        return str(int(v))
    if t is float:
        return format_double(v)
    if t is bytes:
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            fail("invalid UTF-8 in bytes, cannot convert to string")
    if t is Quantity or t is Semver or t is IP or t is CIDR:
        return str(v)
    if t is Duration:
        return timevals.format_duration(v.ns)
    if t is Timestamp:
        return timevals.format_timestamp(v.ns)
    no_overload("string", v)


# durations and timestamps (cel-go standard library)


def to_duration(v: Any) -> Duration:
    """``duration(string)`` parses as Go's ``time.ParseDuration``; there is no ``duration(int)``
    (cel-go v0.29, Kubernetes 1.37)."""
    t = type(v)
    if t is Duration:
        return v
    if t is str:
        try:
            return Duration(timevals.parse_duration(v))
        except ValueError as e:
            fail(f"type conversion error from 'string' to 'google.protobuf.Duration': {e}")
    no_overload("duration", v)


def to_timestamp(v: Any) -> Timestamp:
    """``timestamp(string)`` parses RFC 3339; ``timestamp(int)`` is Unix seconds; both within
    years 0001 to 9999."""
    t = type(v)
    if t is Timestamp:
        return v
    try:
        if t is str:
            return Timestamp(timevals.parse_timestamp(v))
        if t is int:
            return Timestamp(timevals.checked_timestamp_seconds(v) * timevals.NANOS)
    except ValueError as e:
        fail(f"type conversion error from '{type_name(v)}' to 'google.protobuf.Timestamp': {e}")
    no_overload("timestamp", v)


def _time_accessor(name: str) -> Callable[..., int]:
    def get(v: Any, tz: Any = "") -> int:
        if type(v) is Timestamp and type(tz) is str:
            try:
                return timevals.timestamp_field(v.ns, name, tz)
            except ValueError as e:
                fail(str(e))
        if type(v) is Duration and tz == "" and name in ("getHours", "getMinutes", "getSeconds", "getMilliseconds"):
            return timevals.duration_field(v.ns, name)
        no_overload(name, v, tz)

    get.__name__ = name
    return get


get_full_year = _time_accessor("getFullYear")
get_month = _time_accessor("getMonth")
get_day_of_year = _time_accessor("getDayOfYear")
get_day_of_month = _time_accessor("getDayOfMonth")
get_date = _time_accessor("getDate")
get_day_of_week = _time_accessor("getDayOfWeek")
get_hours = _time_accessor("getHours")
get_minutes = _time_accessor("getMinutes")
get_seconds = _time_accessor("getSeconds")
get_milliseconds = _time_accessor("getMilliseconds")


def to_bytes(v: Any) -> bytes:
    if type(v) is bytes:
        return v
    if type(v) is str:
        return v.encode("utf-8")
    no_overload("bytes", v)


_BOOL_STRINGS: Final = {
    "1": True,
    "t": True,
    "T": True,
    "TRUE": True,
    "true": True,
    "True": True,
    "0": False,
    "f": False,
    "F": False,
    "FALSE": False,
    "false": False,
    "False": False,
}


def to_bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    if type(v) is str:
        b = _BOOL_STRINGS.get(v)
        if b is None:
            fail(f"type conversion error from 'string' to 'bool': {v}")
        return b
    no_overload("bool", v)


# ----------------------------------------------------------------------------- strings ext (v2)


def _chk_str(fn: str, *args: Any) -> None:
    for a in args:
        if type(a) is not str:
            no_overload(fn, *args)


def char_at(s: Any, i: Any) -> str:
    if type(s) is not str or type(i) is not int:
        no_overload("charAt", s, i)
    if i < 0 or i > len(s):
        fail(f"index out of range: {i}")
    return s[i : i + 1]


def index_of(s: Any, sub: Any, off: Any = None) -> int:
    if type(s) is list:
        return list_index_of(s, sub)
    if type(s) is not str or type(sub) is not str or (off is not None and type(off) is not int):
        no_overload("indexOf", s, sub, off)
    if off is None:
        return s.find(sub)
    if sub == "":
        return int(off)
    if off < 0 or off >= len(s):
        fail(f"index out of range: {off}")
    return s.find(sub, off)


def last_index_of(s: Any, sub: Any, off: Any = None) -> int:
    if type(s) is list:
        return list_last_index_of(s, sub)
    if type(s) is not str or type(sub) is not str or (off is not None and type(off) is not int):
        no_overload("lastIndexOf", s, sub, off)
    if off is None:
        return s.rfind(sub)
    if sub == "":
        return int(off)
    if off < 0 or off >= len(s):
        fail(f"index out of range: {off}")
    off = min(off, len(s) - len(sub))
    return s.rfind(sub, 0, off + len(sub)) if off >= 0 else -1


def lower_ascii(s: Any) -> str:
    _chk_str("lowerAscii", s)
    return s.translate(_LOWER)


def upper_ascii(s: Any) -> str:
    _chk_str("upperAscii", s)
    return s.translate(_UPPER)


_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_UPPER: Final = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}


def replace(s: Any, old: Any, new: Any, n: Any = -1) -> str:
    if type(n) is not int:
        no_overload("replace", s, old, new, n)
    _chk_str("replace", s, old, new)
    return s.replace(old, new, n if n >= 0 else -1)


def split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    if type(n) is not int:
        no_overload("split", s, sep, n)
    _chk_str("split", s, sep)
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        if 0 < n < len(chars):
            return [*chars[: n - 1], "".join(chars[n - 1 :])]
        return chars
    if n < 0:
        return s.split(sep)
    return s.split(sep, n - 1)


def substring(s: Any, start: Any, end: Any = None) -> str:
    if type(s) is not str or type(start) is not int or (end is not None and type(end) is not int):
        no_overload("substring", s, start, end)
    stop = len(s) if end is None else end
    if start < 0 or start > len(s):
        fail(f"index out of range: {start}")
    if stop < 0 or stop > len(s):
        fail(f"index out of range: {stop}")
    if start > stop:
        fail(f"invalid substring range. start: {start}, end: {stop}")
    return s[start:stop]


_GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def trim(s: Any) -> str:
    _chk_str("trim", s)
    return s.strip(_GO_SPACE)


def join(lst: Any, sep: Any = "") -> str:
    if type(lst) is not list or type(sep) is not str:
        no_overload("join", lst, sep)
    for e in lst:
        if type(e) is not str:
            no_overload("join", lst, sep)
    return sep.join(lst)


def quote(s: Any) -> str:
    _chk_str("strings.quote", s)
    out = ['"']
    for ch in s:
        if ch in _QUOTE_ESC:
            out.append(_QUOTE_ESC[ch])
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_QUOTE_ESC: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def str_format(fmt: Any, args: Any) -> str:
    """``"...".format([args])`` for %s %d %f %e %b %o %x %X %% (strings ext)."""
    if type(fmt) is not str or type(args) is not list:
        no_overload("format", fmt, args)
    out: list[str] = []
    i = 0
    argi = 0
    n = len(fmt)
    while i < n:
        ch = fmt[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= n:
            fail("unexpected end of format string")
        if fmt[i] == "%":
            out.append("%")
            i += 1
            continue
        prec: int | None = None
        if fmt[i] == ".":
            j = i + 1
            while j < n and fmt[j].isdigit():
                j += 1
            prec = int(fmt[i + 1 : j] or "0")
            i = j
        if i >= n:
            fail("unexpected end of format string")
        verb = fmt[i]
        i += 1
        if argi >= len(args):
            fail(f"index {argi} out of range")
        a = args[argi]
        argi += 1
        out.append(_format_one(verb, a, prec))
    return "".join(out)


def _format_one(verb: str, a: Any, prec: int | None) -> str:
    t = type(a)
    if verb == "s":
        return _format_s(a)
    if verb == "d":
        if t in (int, UInt):
            return str(int(a))
        fail(f"error during formatting: decimal clause can only be used on integers, was given {type_name(a)}")
    if verb in "fe":
        if t in (int, UInt, float):
            p = 6 if prec is None else prec
            return f"{float(a):.{p}{verb}}"
        fail(f"error during formatting: fixed-point clause can only be used on doubles, was given {type_name(a)}")
    if verb in "boxX":
        if t in (int, UInt):
            return format(int(a), verb)
        if t in (str, bytes) and verb in "xX":
            raw = a.encode() if t is str else a
            h = raw.hex()
            return h.upper() if verb == "X" else h
        fail(f"error during formatting: only integers and strings can be formatted as {verb}")
    fail(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')


def _format_s(a: Any) -> str:
    t = type(a)
    if t is str:
        return a
    if t is list:
        return "[" + ", ".join(_format_s(x) if type(x) is not str else quote(x) for x in a) + "]"
    if isinstance(a, dict):
        items = sorted(((_format_s(k), v) for k, v in a.items()), key=lambda kv: kv[0])
        return "{" + ", ".join(f"{k}: {_format_s(v)}" for k, v in items) + "}"
    if a is None:
        return "null"
    if t is CelType:
        return a.name
    return to_string(a)


# ----------------------------------------------------------------------------- lists


def list_index_of(lst: Any, x: Any) -> int:
    if type(lst) is not list:
        no_overload("indexOf", lst, x)
    for i, e in enumerate(lst):
        if eq(e, x):
            return i
    return -1


def list_last_index_of(lst: Any, x: Any) -> int:
    if type(lst) is not list:
        no_overload("lastIndexOf", lst, x)
    for i in range(len(lst) - 1, -1, -1):
        if eq(lst[i], x):
            return i
    return -1


def _comparable(lst: list[Any], fn: str) -> None:
    if lst:
        t0 = type(lst[0])
        if t0 not in (int, UInt, float, str, bytes, bool, Quantity, Semver, Duration, Timestamp):
            no_overload(fn, lst)
        for e in lst:
            if type(e) is not t0:
                fail(f"{fn}: list elements must have the same type")


def is_sorted(lst: Any) -> bool:
    if type(lst) is not list:
        no_overload("isSorted", lst)
    _comparable(lst, "isSorted")
    return all(not (lst[i + 1] < lst[i]) for i in range(len(lst) - 1))


def list_sum(lst: Any) -> Any:
    if type(lst) is not list:
        no_overload("sum", lst)
    if not lst:
        return 0
    acc = lst[0]
    for e in lst[1:]:
        acc = add(acc, e)
    if type(acc) not in _NUM and type(acc) is not Duration:
        no_overload("sum", lst)
    return acc


def list_min(lst: Any) -> Any:
    if type(lst) is not list:
        no_overload("min", lst)
    if not lst:
        fail("min called on empty list")
    _comparable(lst, "min")
    return min(lst)


def list_max(lst: Any) -> Any:
    if type(lst) is not list:
        no_overload("max", lst)
    if not lst:
        fail("max called on empty list")
    _comparable(lst, "max")
    return max(lst)


def lists_range(c: list[int], n: Any) -> list[int]:
    if type(n) is not int:
        no_overload("lists.range", n)
    charge(c, max(n, 0))
    return list(range(n))


def list_slice(lst: Any, start: Any, end: Any) -> list[Any]:
    if type(lst) is not list or type(start) is not int or type(end) is not int:
        no_overload("slice", lst, start, end)
    if start < 0 or end < 0:
        fail(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        fail(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if end > len(lst):
        fail(f"cannot slice({start}, {end}), list is length {len(lst)}")
    return lst[start:end]


def flatten(c: list[int], lst: Any, depth: Any = 1) -> list[Any]:
    if type(lst) is not list or type(depth) is not int:
        no_overload("flatten", lst, depth)
    if depth < 0:
        fail("level must be non-negative")
    out: list[Any] = []

    def rec(xs: list[Any], d: int) -> None:
        for x in xs:
            if type(x) is list and d > 0:
                rec(x, d - 1)
            else:
                out.append(x)

    rec(lst, depth)
    charge(c, len(out))
    return out


def distinct(c: list[int], lst: Any) -> list[Any]:
    if type(lst) is not list:
        no_overload("distinct", lst)
    charge(c, len(lst))
    out: list[Any] = []
    for e in lst:
        if not any(eq(e, o) for o in out):
            out.append(e)
    return out


def reverse(lst: Any) -> list[Any]:
    if type(lst) is not list:
        no_overload("reverse", lst)
    return lst[::-1]


def sort(c: list[int], lst: Any) -> list[Any]:
    if type(lst) is not list:
        no_overload("sort", lst)
    _comparable(lst, "sort")
    charge(c, len(lst))
    return sorted(lst)


def sort_by(c: list[int], lst: list[Any], keys: list[Any]) -> list[Any]:
    _comparable(keys, "sortBy")
    charge(c, len(lst))
    order = sorted(range(len(lst)), key=lambda i: keys[i])
    return [lst[i] for i in order]


def concat(c: list[int], a: Any, b: Any) -> Any:
    r = add(a, b)
    if type(r) is list or type(r) is str:
        charge(c, len(r) // 10)
    return r


# sets


def _lists(fn: str, a: Any, b: Any) -> None:
    if type(a) is not list or type(b) is not list:
        no_overload(fn, a, b)


def sets_contains(a: Any, b: Any) -> bool:
    _lists("sets.contains", a, b)
    return all(in_(x, a) for x in b)


def sets_equivalent(a: Any, b: Any) -> bool:
    _lists("sets.equivalent", a, b)
    return all(in_(x, a) for x in b) and all(in_(x, b) for x in a)


def sets_intersects(a: Any, b: Any) -> bool:
    _lists("sets.intersects", a, b)
    return any(in_(x, a) for x in b)


# ----------------------------------------------------------------------------- quantity


def quantity(s: Any) -> Quantity:
    if type(s) is not str:
        no_overload("quantity", s)
    try:
        return Quantity.parse(s)
    except QuantityError as e:
        fail(str(e))


def is_quantity(s: Any) -> bool:
    if type(s) is not str:
        no_overload("isQuantity", s)
    try:
        Quantity.parse(s)
    except QuantityError:
        return False
    return True


def _q(fn: str, *args: Any) -> None:
    for a in args:
        if type(a) is not Quantity:
            no_overload(fn, *args)


def q_sign(q: Any) -> int:
    _q("sign", q)
    return int(q.sign())


def compare_to(a: Any, b: Any) -> int:
    ta = type(a)
    if ta is Quantity and type(b) is Quantity:
        return a.compare(b)
    if ta is Semver and type(b) is Semver:
        return a.compare(b)
    no_overload("compareTo", a, b)


def is_greater_than(a: Any, b: Any) -> bool:
    return compare_to(a, b) == 1 if type(a) is type(b) else no_overload("isGreaterThan", a, b)


def is_less_than(a: Any, b: Any) -> bool:
    return compare_to(a, b) == -1 if type(a) is type(b) else no_overload("isLessThan", a, b)


def q_as_float(q: Any) -> float:
    _q("asApproximateFloat", q)
    return float(q.as_approximate_float())


def q_as_integer(q: Any) -> int:
    _q("asInteger", q)
    v = q.as_int64()
    if v is None:
        fail("cannot convert value to integer")
    return int(v)


def q_is_integer(q: Any) -> bool:
    _q("isInteger", q)
    return bool(q.is_integer())


def q_add(q: Any, other: Any) -> Quantity:
    if type(q) is Quantity:
        if type(other) is Quantity:
            return q + other
        if type(other) is int:
            return q + Quantity.from_int(other, Format.DECIMAL_EXPONENT)
    no_overload("add", q, other)


def q_sub(q: Any, other: Any) -> Quantity:
    if type(q) is Quantity:
        if type(other) is Quantity:
            return q - other
        if type(other) is int:
            return q - Quantity.from_int(other, Format.DECIMAL_EXPONENT)
    no_overload("sub", q, other)


# ----------------------------------------------------------------------------- semver


def semver(s: Any, normalize: Any = False) -> Semver:
    if type(s) is not str or type(normalize) is not bool:
        no_overload("semver", s, normalize)
    try:
        return Semver.parse_normalized(s) if normalize else Semver.parse(s)
    except SemverError as e:
        fail(str(e))


def is_semver(s: Any, normalize: Any = False) -> bool:
    if type(s) is not str or type(normalize) is not bool:
        no_overload("isSemver", s, normalize)
    try:
        Semver.parse_normalized(s) if normalize else Semver.parse(s)
    except SemverError:
        return False
    return True


def sv_major(v: Any) -> int:
    if type(v) is not Semver:
        no_overload("major", v)
    return int(v.major)


def sv_minor(v: Any) -> int:
    if type(v) is not Semver:
        no_overload("minor", v)
    return int(v.minor)


def sv_patch(v: Any) -> int:
    if type(v) is not Semver:
        no_overload("patch", v)
    return int(v.patch)


# ----------------------------------------------------------------------------- IP, CIDR and URLs
# k8s.io/apiserver/pkg/cel/library ip.go, cidr.go and urls.go; parsing lives in netlib.


_T = TypeVar("_T")


def _parsed(fn: str, parse: Callable[[str], _T], s: Any) -> _T:
    """``ip()``, ``cidr()``, ``url()``: the parsed value, or the parser's error as upstream words it."""
    if type(s) is not str:
        no_overload(fn, s)
    try:
        return parse(s)
    except NetError as e:
        fail(str(e))


def _parses(fn: str, parse: Callable[[str], object], s: Any) -> bool:
    """``isIP()``, ``isCIDR()``, ``isURL()``: whether the string parses."""
    if type(s) is not str:
        no_overload(fn, s)
    try:
        parse(s)
    except NetError:
        return False
    return True


def ip_of(s: Any) -> IP:
    return _parsed("ip", parse_ip, s)


def is_ip(s: Any) -> bool:
    return _parses("isIP", parse_ip, s)


def ip_is_canonical(s: Any) -> bool:
    """Addr.String() is the one canonical form; an unparsable string is an error, as upstream."""
    return str(ip_of(s)) == s if type(s) is str else no_overload("ip.isCanonical", s)


def _ip(fn: str, v: Any) -> IP:
    if type(v) is not IP:
        no_overload(fn, v)
    return v


def ip_family(v: Any) -> int:
    return _ip("family", v).family


def ip_is_unspecified(v: Any) -> bool:
    return _ip("isUnspecified", v).is_unspecified()


def ip_is_loopback(v: Any) -> bool:
    return _ip("isLoopback", v).is_loopback()


def ip_is_link_local_multicast(v: Any) -> bool:
    return _ip("isLinkLocalMulticast", v).is_link_local_multicast()


def ip_is_link_local_unicast(v: Any) -> bool:
    return _ip("isLinkLocalUnicast", v).is_link_local_unicast()


def ip_is_global_unicast(v: Any) -> bool:
    return _ip("isGlobalUnicast", v).is_global_unicast()


def cidr_of(s: Any) -> CIDR:
    return _parsed("cidr", parse_cidr, s)


def is_cidr(s: Any) -> bool:
    return _parses("isCIDR", parse_cidr, s)


def _cidr(fn: str, v: Any) -> CIDR:
    if type(v) is not CIDR:
        no_overload(fn, v)
    return v


def cidr_contains_ip(c: Any, other: Any) -> bool:
    """Both overloads: an IP, or a string parsed as ip() parses it."""
    cidr = _cidr("containsIP", c)
    if type(other) is str:
        try:
            other = parse_ip(other)
        except NetError:
            fail("no such overload")  # upstream drops the parse error: MaybeNoSuchOverloadErr(the CIDR)
    if type(other) is not IP:
        no_overload("containsIP", c, other)
    return cidr.contains(other)


def cidr_contains_cidr(c: Any, other: Any) -> bool:
    cidr = _cidr("containsCIDR", c)
    if type(other) is str:
        other = cidr_of(other)
    if type(other) is not CIDR:
        no_overload("containsCIDR", c, other)
    return cidr.contains_cidr(other)


def cidr_ip(v: Any) -> IP:
    return _cidr("ip", v).ip()


def cidr_masked(v: Any) -> CIDR:
    return _cidr("masked", v).masked()


def cidr_prefix_length(v: Any) -> int:
    return _cidr("prefixLength", v).bits


def url_of(s: Any) -> URL:
    return _parsed("url", parse_url, s)


def is_url(s: Any) -> bool:
    return _parses("isURL", parse_url, s)


def _url(fn: str, v: Any) -> URL:
    if type(v) is not URL:
        no_overload(fn, v)
    return v


def url_get_scheme(v: Any) -> str:
    return _url("getScheme", v).scheme.decode("utf-8", "replace")


def url_get_host(v: Any) -> str:
    return _url("getHost", v).host.decode("utf-8", "replace")


def url_get_hostname(v: Any) -> str:
    return _url("getHostname", v).hostname()


def url_get_port(v: Any) -> str:
    return _url("getPort", v).port()


def url_get_escaped_path(v: Any) -> str:
    return _url("getEscapedPath", v).escaped_path().decode("utf-8", "replace")


def url_get_query(v: Any) -> dict[str, list[str]]:
    return _url("getQuery", v).query()


# ----------------------------------------------------------------------------- optional


def opt_of(v: Any) -> Opt:
    return Opt(True, v)


def _is_zero(v: Any) -> bool:
    t = type(v)
    if v is None:
        return True
    if t in (bool, int, UInt, float, str, bytes, list) or isinstance(v, dict):
        return not v
    if t is Quantity:
        return bool(v.is_zero())
    return False


def opt_of_non_zero(v: Any) -> Opt:
    return NONE if _is_zero(v) else Opt(True, v)


def opt_none() -> Opt:
    return NONE


def _o(fn: str, o: Any) -> Opt:
    if type(o) is not Opt:
        no_overload(fn, o)
    return o


def as_opt(o: Any) -> Opt:
    return _o("optional", o)


def opt_has_value(o: Any) -> bool:
    return _o("hasValue", o).has


def opt_value(o: Any) -> Any:
    if not _o("value", o).has:
        fail("optional.none() dereference")
    return o.val


def opt_or_value(o: Any, d: Any) -> Any:
    return o.val if _o("orValue", o).has else d


def opt_or(o: Any, other: Any) -> Any:
    if _o("or", o).has:
        return o
    return _o("or", other)


def list_with_optionals(items: list[Any], flags: tuple[bool, ...]) -> list[Any]:
    out: list[Any] = []
    for v, f in zip(items, flags):
        if f:
            if type(v) is not Opt:
                no_overload("optional list element", v)
            if v.has:
                out.append(v.val)
        else:
            out.append(v)
    return out


def make_map(pairs: list[tuple[Any, Any, bool]]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for k, v, optional in pairs:
        if type(k) not in (str, int, UInt, bool):
            fail(f"unsupported key type: {type_name(k)}")
        if optional:
            if type(v) is not Opt:
                no_overload("optional map entry", v)
            if not v.has:
                continue
            v = v.val
        if _find_key(out, k) is not _MISSING:
            fail(f"Failed with repeated key: {k}")
        out[k] = v
    return out


# ----------------------------------------------------------------------------- dispatch table

#: Python callables the generated code can name; keys are the names used in the source.
HELPERS: Final[dict[str, Callable[..., Any]]] = {
    name: obj
    for name, obj in dict(globals()).items()
    if callable(obj) and not name.startswith("_") and name not in {"Any", "Callable", "Final", "NoReturn", "TypeVar"}
}
