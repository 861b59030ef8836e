"""Kubernetes ``resource.Quantity``, exact.

A port of k8s.io/apimachinery/pkg/api/resource (quantity.go, amount.go, suffix.go).
The value is kept as an exact :class:`fractions.Fraction`; floats are never used, because
the scheduler adds and compares capacities and must agree with the API server to the last
nano-unit. Upstream details that are observable are kept on purpose:

* parsing rounds a non-zero value away from zero to a multiple of 1n, and caps a BinarySI
  magnitude at 2^63-1;
* ``str()`` is upstream's ``String()``: the canonical form, except that a string the fast
  parse path recognises as already canonical is echoed as written (``"+1"`` stays ``"+1"``);
* ``is_integer()``/``as_int64()`` follow ``AsInt64()``, which depends on whether upstream
  holds the value as a scaled int64 or as an ``inf.Dec`` (``"1000m"`` is not an int64 there).
  We track that representation so CEL's ``isInteger``/``asInteger`` answer as upstream does.
"""

from __future__ import annotations

import math
from enum import StrEnum
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final, final

__all__ = [
    "ErrFormatWrong",
    "ErrNumeric",
    "ErrSuffix",
    "Format",
    "Quantity",
    "QuantityError",
    "parse_quantity",
]


class Format(StrEnum):
    """How a quantity is written (upstream ``resource.Format``)."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi
    DECIMAL_SI = "DecimalSI"  # 12M


_SPLIT_RE: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ErrFormatWrong: Final = f"quantities must match the regular expression '{_SPLIT_RE}'"
ErrNumeric: Final = "unable to parse numeric part of quantity"
ErrSuffix: Final = "unable to parse quantity's suffix"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message is upstream's."""


_DIGITS: Final = frozenset("0123456789")
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_DEC_SUFFIX: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BIN_SUFFIX: Final[dict[str, int]] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXP: Final = {v: k for k, v in _DEC_SUFFIX.items()}
_BIN_BY_EXP: Final = {v // 10: k for k, v in _BIN_SUFFIX.items()}

_MAX_INT64: Final = (1 << 63) - 1
_MIN_INT64: Final = -(1 << 63)
_NANO: Final = 10**9
# Python cannot materialise 10**(2**31) the way inf.Dec defers it; positive decimal exponents
# beyond this bound are rejected (a documented deviation; no real manifest comes close).
_MAX_EXPONENT: Final = 100_000
# Likewise for the digits of the number itself: Python refuses to convert strings of more
# than 4,300 digits to int (and the conversion is quadratic); inf.Dec has no such bound.
_MAX_DIGITS: Final = 1_000


def _fits_int64(v: int) -> bool:
    return _MIN_INT64 <= v <= _MAX_INT64


def _ceil_away(v: Fraction) -> int:
    """Round away from zero to an integer (upstream ``RoundUp``)."""
    n, d = v.numerator, v.denominator
    q = -(-abs(n) // d)
    return q if n >= 0 else -q


@final
class Quantity:
    """An exact, immutable Kubernetes quantity.

    ``value`` is the exact number, ``format`` the suffix family it was written in. Equality,
    hashing and ordering use the value only, as upstream ``Cmp``/``Equal`` do: ``1Gi == 1024Mi``.
    """

    __slots__ = ("_hash", "_iscale", "_ival", "_s", "format", "value")

    value: Fraction
    format: Format
    _ival: int | None  # upstream int64Amount.value, or None when upstream holds an inf.Dec
    _iscale: int  # upstream int64Amount.scale (power of ten)
    _s: str | None  # the string upstream caches on parse (or computes lazily)
    _hash: int

    def __new__(cls, s: str | int | float | Quantity) -> Quantity:
        return cls.parse(s)

    @classmethod
    def _make(cls, value: Fraction, fmt: Format, ival: int | None, iscale: int = 0, s: str | None = None) -> Quantity:
        q = object.__new__(cls)
        sa = object.__setattr__
        sa(q, "value", value)
        sa(q, "format", fmt)
        sa(q, "_ival", ival)
        sa(q, "_iscale", iscale)
        sa(q, "_s", s)
        sa(q, "_hash", hash(value))
        return q

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Quantity is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Quantity._make, (self.value, self.format, self._ival, self._iscale, self._s))

    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Quantity:
        return self

    # ----------------------------------------------------------------- construction

    @staticmethod
    def parse(s: str | int | float | Quantity) -> Quantity:
        """Parse a quantity as ``resource.ParseQuantity`` does (cached per string).

        An int is taken as ``NewQuantity(n, DecimalSI)``; a float as the JSON number text it
        would be on the wire.
        """
        if isinstance(s, str):
            return _parse_cached(s)
        if isinstance(s, Quantity):
            return s
        if isinstance(s, bool):
            raise QuantityError(ErrFormatWrong)
        if isinstance(s, int):
            return Quantity.from_int(s)
        if isinstance(s, float):
            if not math.isfinite(s):
                raise QuantityError(ErrFormatWrong)
            return _parse_cached(repr(s))
        raise TypeError(f"cannot parse a quantity from {type(s).__name__}")

    @staticmethod
    def from_int(n: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewQuantity(n, fmt)``."""
        if _fits_int64(n):
            return Quantity._make(Fraction(n), fmt, n, 0)
        return Quantity._make(Fraction(n), fmt, None)

    @staticmethod
    def from_milli(n: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewMilliQuantity(n, fmt)``: n thousandths."""
        if _fits_int64(n):
            return Quantity._make(Fraction(n, 1000), fmt, n, -3)
        return Quantity._make(Fraction(n, 1000), fmt, None)

    # ----------------------------------------------------------------- accessors

    def is_zero(self) -> bool:
        return self.value == 0

    def __bool__(self) -> bool:
        """Truthiness is non-zero, as for Python numbers (``if q:`` means "some amount")."""
        return self.value != 0

    def sign(self) -> int:
        """-1, 0 or 1 (upstream ``Sign``)."""
        return (self.value > 0) - (self.value < 0)

    def value_int(self) -> int:
        """Upstream ``Value()``: rounded away from zero to an integer (no int64 overflow here)."""
        return _ceil_away(self.value)

    def milli_value(self) -> int:
        """Upstream ``MilliValue()``: ``ceil(q*1000)`` away from zero."""
        return _ceil_away(self.value * 1000)

    def scaled_value(self, scale: int) -> int:
        """Upstream ``ScaledValue(scale)``: value / 10^scale rounded away from zero."""
        return _ceil_away(self.value / Fraction(10) ** scale)

    def as_approximate_float(self) -> float:
        """Upstream ``AsApproximateFloat64``; +-inf when out of float range."""
        try:
            return float(self.value)
        except OverflowError:
            return math.inf if self.value > 0 else -math.inf

    def as_int64(self) -> int | None:
        """Upstream ``AsInt64()``: the int64 value when upstream's fast form holds it exactly.

        ``None`` for values held as inf.Dec (e.g. more than 18 digits, fractional binary
        input) or with a negative scale (``"1000m"``), exactly where upstream says false.
        """
        v = self._ival
        if v is None:
            return None
        sc = self._iscale
        if sc == 0:
            return v
        if sc < 0:
            return None
        r = v * 10**sc
        return r if _fits_int64(r) else None

    def is_integer(self) -> bool:
        """CEL ``isInteger()``: whether ``as_int64()`` succeeds."""
        return self.as_int64() is not None

    # ----------------------------------------------------------------- arithmetic

    def __add__(self, other: Quantity) -> Quantity:
        """Upstream ``Add``: keeps the left format unless the left value is zero."""
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._add(other._ival, other._iscale, other.value, other.format)

    def __sub__(self, other: Quantity) -> Quantity:
        """Upstream ``Sub``: keeps the left format unless the left value is zero."""
        if not isinstance(other, Quantity):
            return NotImplemented
        oi = other._ival
        if oi is not None and oi == _MIN_INT64:
            oi = None  # -mostNegative overflows: upstream falls back to inf.Dec
        return self._add(None if oi is None else -oi, other._iscale, -other.value, other.format)

    def _add(self, bi: int | None, bs: int, bval: Fraction, bfmt: Format) -> Quantity:
        fmt = bfmt if self.value == 0 else self.format
        value = self.value + bval
        ai = self._ival
        if ai is not None and bi is not None:
            r = _int64_add(ai, self._iscale, bi, bs)
            if r is not None:
                return Quantity._make(value, fmt, r[0], r[1])
        return Quantity._make(value, fmt, None)

    def __neg__(self) -> Quantity:
        ai = self._ival
        if ai is not None and ai != _MIN_INT64:
            return Quantity._make(-self.value, self.format, -ai, self._iscale)
        return Quantity._make(-self.value, self.format, None)

    def __pos__(self) -> Quantity:
        return self

    def __abs__(self) -> Quantity:
        return -self if self.value < 0 else self

    # ----------------------------------------------------------------- comparison

    def compare(self, other: Quantity) -> int:
        """Upstream ``Cmp``: -1, 0 or 1."""
        a, b = self.value, other.value
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value >= other.value

    # ----------------------------------------------------------------- formatting

    def __str__(self) -> str:
        s = self._s
        if s is None:
            s = _canonical(self.value, self.format)
            object.__setattr__(self, "_s", s)
        return s

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def to_json(self) -> str:
        """The wire form (what ``MarshalJSON`` writes)."""
        return str(self)


def _int64_add(av: int, ascale: int, bv: int, bscale: int) -> tuple[int, int] | None:
    """Upstream ``int64Amount.Add``; ``None`` where it reports overflow (inf.Dec fallback)."""
    if bv == 0:
        return av, ascale
    if av == 0:
        return bv, bscale
    if ascale == bscale:
        c = av + bv
        return (c, ascale) if _fits_int64(c) else None
    if ascale > bscale:
        c = av * 10 ** (ascale - bscale)
        if not _fits_int64(c):
            return None
        c += bv
        return (c, bscale) if _fits_int64(c) else None
    c = bv * 10 ** (bscale - ascale)
    if not _fits_int64(c):
        return None
    c += av
    return (c, ascale) if _fits_int64(c) else None


def _scan(s: str) -> tuple[bool, str, str, str]:
    """Upstream ``parseQuantityString``: (positive, num, denom, suffix)."""
    positive = True
    pos = 0
    end = len(s)
    if end and s[0] in "+-":
        positive = s[0] == "+"
        pos = 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    num = s[start:pos] or "0"
    if pos >= end:
        return positive, num, "", ""
    denom = ""
    if s[pos] == ".":
        pos += 1
        start = pos
        while pos < end and s[pos] in _DIGITS:
            pos += 1
        denom = s[start:pos]
        if pos >= end:
            return positive, num, denom, ""
    suffix_start = pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, num, denom, s[suffix_start:]
    raise QuantityError(ErrFormatWrong)


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """Upstream ``suffixer.interpret``: (base, exponent, format)."""
    e = _DEC_SUFFIX.get(suffix)
    if e is not None:
        return 10, e, Format.DECIMAL_SI
    e = _BIN_SUFFIX.get(suffix)
    if e is not None:
        return 2, e, Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        body = suffix[1:]
        digits = body[1:] if body[0] in "+-" else body
        # more than 19 significant digits never fit int64 (and int() refuses over 4,300)
        if digits and all(c in _DIGITS for c in digits) and len(digits.lstrip("0")) <= 19:
            parsed = int(body[0] + (digits.lstrip("0") or "0") if body[0] in "+-" else digits.lstrip("0") or "0")
            if _fits_int64(parsed):
                # upstream narrows with int32(parsed), which wraps
                exp = ((parsed + (1 << 31)) % (1 << 32)) - (1 << 31)
                return 10, exp, Format.DECIMAL_EXPONENT
    raise QuantityError(ErrSuffix)


_ZERO_STR: Quantity


@lru_cache(maxsize=65536)
def _parse_cached(s: str) -> Quantity:
    return parse_quantity(s)


def parse_quantity(s: str) -> Quantity:
    """Uncached ``resource.ParseQuantity``; raises :class:`QuantityError` (a ValueError)."""
    if not s:
        raise QuantityError(ErrFormatWrong)
    if s == "0":
        return _ZERO_STR
    positive, num, denom, suf = _scan(s)
    base, exponent, fmt = _interpret(suf)
    shifted = num + denom
    nden = len(denom)
    if len(shifted) > _MAX_DIGITS:
        raise QuantityError(f"{ErrNumeric}: {len(shifted)} digits, more than the {_MAX_DIGITS} supported")
    if base == 10 and exponent - nden > _MAX_EXPONENT:
        raise QuantityError(f"{ErrNumeric}: exponent {exponent} out of supported range")

    # Upstream's int64 fast path: decides the representation (AsInt64) and the cached string.
    if fmt is Format.BINARY_SI:
        precision = 14 - len(num) - 3 * (exponent // 10) if nden == 0 else -1
        if precision >= 0:
            ival = int(shifted)
            result = ival << exponent
            if _fits_int64(result):
                if not positive:
                    result = -result
                cache = s if ival & 7 else None
                return Quantity._make(Fraction(result), fmt, result, 0, cache)
    else:
        precision = 18 - len(num) - nden
        scale = exponent - nden
        if precision >= 0 and scale >= -9:
            ival = int(shifted)
            if not positive:
                ival = -ival
            value = Fraction(ival) * (Fraction(10) ** scale)
            cache = s if scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0" else None
            return Quantity._make(value, fmt, ival, scale, cache)

    # inf.Dec path: exact value, rounded away from zero to nano, BinarySI capped at 2^63-1.
    mant = int(shifted)
    if base == 10:
        scale = exponent - nden
        if mant == 0:
            amount = Fraction(0)
        elif scale < -9 - len(shifted) - 1:
            amount = Fraction(1, _NANO)  # far below 1n: rounds up to exactly 1n
        else:
            amount = Fraction(mant) * Fraction(10) ** scale
    else:
        amount = Fraction(mant << exponent, 10**nden)
    if amount.denominator != 1 and _NANO % amount.denominator != 0:
        amount = Fraction(_ceil_away(amount * _NANO), _NANO)
    if fmt is Format.BINARY_SI:
        if amount > _MAX_INT64:
            amount = Fraction(_MAX_INT64)
        if 0 < amount < 1:
            fmt = Format.DECIMAL_SI
    if not positive:
        amount = -amount
    return Quantity._make(amount, fmt, None)


_ZERO_STR = Quantity._make(Fraction(0), Format.DECIMAL_SI, 0, 0, "0")


def _decimal_canonical(value: Fraction) -> tuple[str, int]:
    """Mantissa digits and a base-10 exponent that is a multiple of 3 (``AsCanonicalBytes``)."""
    den = value.denominator
    exp = 0
    num = value.numerator
    if den != 1:
        # every value here is a multiple of 10^-k for some k (parse rounds to nano)
        k = 0
        p = 1
        while p % den:
            k += 1
            p *= 10
            if k > 4096:
                raise ValueError(f"quantity {value} has no finite decimal form")
        num = num * (p // den)
        exp = -k
    digits = str(abs(num))
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    mantissa = int(stripped) if stripped else 0
    r = exp % 3
    if r:
        mantissa *= 10**r
        exp -= r
    return (str(-mantissa) if num < 0 else str(mantissa)), exp


def _canonical(value: Fraction, fmt: Format) -> str:
    """Upstream ``CanonicalizeBytes`` + suffix."""
    if value == 0:
        return "0"
    if fmt is Format.BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
        fmt = Format.DECIMAL_SI
    if fmt is Format.BINARY_SI:
        n = value.numerator
        times = 0
        # upstream stops only when not divisible; past Ei no suffix exists, so stop at Ei
        while times < 6 and n % 1024 == 0:
            n //= 1024
            times += 1
        return f"{n}{_BIN_BY_EXP.get(times, '')}"
    number, exp = _decimal_canonical(value)
    if fmt is Format.DECIMAL_SI:
        suffix = _DEC_BY_EXP.get(exp)
        if suffix is not None:
            return number + suffix
    return number if exp == 0 else f"{number}e{exp}"
