"""CEL ``duration`` and ``timestamp`` values, as cel-go (common/types/duration.go,
timestamp.go) and Go's ``time`` package define them.

A duration is a Go ``time.Duration``: signed nanoseconds that fit an int64, parsed by
``time.ParseDuration`` (``"1h30m"``, ``"-1.5s"``, ``"300ms"``) and printed as cel-go's
``string(duration)`` does (seconds with the shortest decimal fraction, then ``s``). A
timestamp is nanoseconds since the Unix epoch; conversions accept years 0001 to 9999 as
cel-go's do, while arithmetic results are only kept within int64 seconds, as cel-go's
``timestampOf`` is. Everything here is pure; the CEL helpers that wrap it (and turn
``ValueError`` into CEL errors) live in :mod:`drasched.cel.runtime`.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, datetime
from decimal import Decimal
from typing import Final

NANOS: Final = 1_000_000_000
INT64_MAX: Final = (1 << 63) - 1
INT64_MIN: Final = -(1 << 63)
MIN_UNIX_SECONDS: Final = -62135596800  # 0001-01-01T00:00:00Z
MAX_UNIX_SECONDS: Final = 253402300799  # 9999-12-31T23:59:59Z

_UNITS: Final = {
    "ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000, "s": NANOS,
    "m": 60 * NANOS, "h": 3600 * NANOS,
}


class Duration:
    """A CEL ``google.protobuf.Duration``: int64 nanoseconds."""

    __slots__ = ("ns",)

    def __init__(self, ns: int) -> None:
        self.ns = ns

    def __eq__(self, other: object) -> bool:
        return type(other) is Duration and other.ns == self.ns

    def __hash__(self) -> int:
        return hash(("Duration", self.ns))

    def __lt__(self, other: object) -> bool:  # sort(), min() and max() of a list of them
        if type(other) is not Duration:
            return NotImplemented
        return self.ns < other.ns

    def __repr__(self) -> str:
        return f"duration({format_duration(self.ns)!r})"


class Timestamp:
    """A CEL ``google.protobuf.Timestamp``: nanoseconds since 1970-01-01T00:00:00Z."""

    __slots__ = ("ns",)

    def __init__(self, ns: int) -> None:
        self.ns = ns

    def __eq__(self, other: object) -> bool:
        return type(other) is Timestamp and other.ns == self.ns

    def __hash__(self) -> int:
        return hash(("Timestamp", self.ns))

    def __lt__(self, other: object) -> bool:  # sort(), min() and max() of a list of them
        if type(other) is not Timestamp:
            return NotImplemented
        return self.ns < other.ns

    def __repr__(self) -> str:
        return f"timestamp({format_timestamp(self.ns)!r})"


# ----------------------------------------------------------------------------- durations


def _leading_int(s: str) -> tuple[int, str]:
    """Go's ``leadingInt``: digits as a uint64, refusing anything beyond 1<<63."""
    x, i = 0, 0
    while i < len(s) and "0" <= s[i] <= "9":
        if x > (1 << 63) // 10:
            raise ValueError("bad [0-9]*")
        x = x * 10 + ord(s[i]) - 48
        if x > 1 << 63:
            raise ValueError("bad [0-9]*")
        i += 1
    return x, s[i:]


def _leading_fraction(s: str) -> tuple[int, float, str]:
    """Go's ``leadingFraction``: digits after the point; those past uint64 precision are dropped."""
    x, scale, i, overflow = 0, 1.0, 0, False
    while i < len(s) and "0" <= s[i] <= "9":
        if not overflow:
            y = x * 10 + ord(s[i]) - 48
            if x > ((1 << 63) - 1) // 10 or y > 1 << 63:
                overflow = True
            else:
                x, scale = y, scale * 10
        i += 1
    return x, scale, s[i:]


def parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration``: ``[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+`` within int64 nanoseconds."""
    invalid = ValueError(f'time: invalid duration "{text}"')
    s, neg = text, False
    if s and s[0] in "+-":
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise invalid
        before = len(s)
        try:
            whole, s = _leading_int(s)
        except ValueError:
            raise invalid from None
        pre, post, frac, scale = before != len(s), False, 0, 1.0
        if s and s[0] == ".":
            s = s[1:]
            before = len(s)
            frac, scale, s = _leading_fraction(s)
            post = before != len(s)
        if not pre and not post:
            raise invalid
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise ValueError(f'time: missing unit in duration "{text}"')
        unit = _UNITS.get(s[:i])
        if unit is None:
            raise ValueError(f'time: unknown unit "{s[:i]}" in duration "{text}"')
        s = s[i:]
        if whole > (1 << 63) // unit:
            raise invalid
        whole *= unit
        if frac > 0:
            whole += int(float(frac) * (float(unit) / scale))  # Go: float64 for fractions of hours
            if whole > 1 << 63:
                raise invalid
        total += whole
        if total > 1 << 63:
            raise invalid
    if neg:
        return -total
    if total > INT64_MAX:
        raise invalid
    return total


def checked_duration(ns: int) -> int:
    """A duration result that must still fit ``time.Duration`` (cel-go: "integer overflow")."""
    if not INT64_MIN <= ns <= INT64_MAX:
        raise ValueError("integer overflow")
    return ns


def format_duration(ns: int) -> str:
    """cel-go's ``string(duration)``: ``strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"``."""
    whole, rest = divmod(abs(ns), NANOS)
    seconds = float(whole) + float(rest) / 1e9  # Go's Duration.Seconds
    text = repr(seconds)
    if "e" in text:
        text = format(Decimal(text), "f")
    if text.endswith(".0"):
        text = text[:-2]
    return ("-" if ns < 0 and text != "0" else "") + text + "s"


# ----------------------------------------------------------------------------- timestamps

_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})\Z")


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def _leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


_MONTH_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def parse_timestamp(text: str) -> int:
    """Go's ``time.Parse(time.RFC3339, s)``, then cel-go's range check (years 0001 to 9999)."""
    m = _RFC3339.match(text)
    if m is None:
        raise ValueError(f'parsing time "{text}" as RFC 3339: cannot parse')
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    if not 1 <= month <= 12:
        raise ValueError(f'parsing time "{text}": month out of range')
    if not 1 <= day <= _MONTH_DAYS[month - 1] + (month == 2 and _leap(year)):
        raise ValueError(f'parsing time "{text}": day out of range')
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f'parsing time "{text}": time out of range')
    nanos = int((m.group(7) or "0")[:9].ljust(9, "0"))
    zone = m.group(8)
    offset = 0
    if zone != "Z":
        zh, zm = int(zone[1:3]), int(zone[4:6])
        if zh > 23 or zm > 59:
            raise ValueError(f'parsing time "{text}": time zone offset out of range')
        offset = (zh * 3600 + zm * 60) * (-1 if zone[0] == "-" else 1)
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    return checked_timestamp_seconds(seconds) * NANOS + nanos


def checked_timestamp_seconds(seconds: int) -> int:
    if not MIN_UNIX_SECONDS <= seconds <= MAX_UNIX_SECONDS:
        raise ValueError("timestamp out of range")
    return seconds


def format_timestamp(ns: int) -> str:
    """Go's ``t.UTC().Format(time.RFC3339Nano)`` (cel-go's ``string(timestamp)``)."""
    seconds, nanos = divmod(ns, NANOS)
    days, rest = divmod(seconds, 86400)
    y, mo, d = _civil_from_days(days)
    frac = f".{nanos:09d}".rstrip("0") if nanos else ""
    return f"{y:04d}-{mo:02d}-{d:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}{frac}Z"


def _offset_seconds(ns: int, tz: str) -> int:
    """The UTC offset of ``tz`` at the instant: cel-go's ``timeZone``. Without a colon it is an
    IANA name for ``time.LoadLocation`` ("" and "UTC" are UTC); with one, ``[+-]HH:MM``
    read with ``strconv.Atoi`` on each side."""
    colon = tz.find(":")
    if colon == -1:
        if tz in ("", "UTC", "Local"):
            return 0
        try:
            zone = zoneinfo.ZoneInfo(tz)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {tz}") from None
        try:
            instant = datetime.fromtimestamp(ns // NANOS, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError("timestamp out of range") from None
        delta = instant.astimezone(zone).utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0
    hours, minutes = _atoi(tz[:colon]), _atoi(tz[colon + 1:])
    return (hours * 60 - minutes if tz[0] == "-" else hours * 60 + minutes) * 60


def _atoi(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


FIELDS: Final = ("getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek",
                 "getHours", "getMinutes", "getSeconds", "getMilliseconds")


def timestamp_field(ns: int, field: str, tz: str = "") -> int:
    """One of cel-go's timestamp accessors, in ``tz``: months, days of month and days of year
    count from 0, ``getDate`` from 1, days of week from Sunday = 0."""
    seconds, nanos = divmod(ns, NANOS)
    seconds += _offset_seconds(ns, tz)
    days, rest = divmod(seconds, 86400)
    y, mo, d = _civil_from_days(days)
    values = {
        "getFullYear": y, "getMonth": mo - 1, "getDayOfYear": days - _days_from_civil(y, 1, 1),
        "getDayOfMonth": d - 1, "getDate": d, "getDayOfWeek": (days + 4) % 7, "getHours": rest // 3600,
        "getMinutes": rest // 60 % 60, "getSeconds": rest % 60, "getMilliseconds": nanos // 1_000_000,
    }
    return values[field]


def duration_field(ns: int, field: str) -> int:
    """cel-go's duration accessors: whole hours, minutes, seconds or milliseconds, truncated toward zero."""
    unit = {"getHours": 3600 * NANOS, "getMinutes": 60 * NANOS, "getSeconds": NANOS, "getMilliseconds": 1_000_000}
    q = abs(ns) // unit[field]
    return -q if ns < 0 else q
