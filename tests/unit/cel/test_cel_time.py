"""What ``duration()`` and ``timestamp()`` evaluate to, as cel-go evaluates them.

The API server only compiles selectors (tests/contract/test_cel_time_contract.py checks
that against it); the values here follow cel-go's common/types/duration.go and timestamp.go
and Go's ``time`` package: ``time.ParseDuration``, ``time.Parse(time.RFC3339, ...)``,
``string(duration)`` as ``strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"``,
``string(timestamp)`` as RFC 3339 with nanoseconds in UTC, ``int(timestamp)`` as
``Time.Unix()``, accessors counting months and days from 0 except ``getDate``.
"""

from __future__ import annotations

import pytest

from drasched.cel.compiler import compile_expression
from drasched.cel.device import DeviceView
from drasched.cel.runtime import EvalError
from drasched.cel.timevals import parse_duration


def value(expression: str) -> object:
    return compile_expression(expression)(None)


@pytest.mark.parametrize(("expression", "expected"), [
    ('string(duration("1h30m"))', "5400s"),
    ('string(duration("-1.5s"))', "-1.5s"),
    ('string(duration("1ns"))', "0.000000001s"),
    ('string(duration("0"))', "0s"),
    ('int(duration("1.5us"))', 1500),
    ('int(duration("2562047h47m16.854775807s"))', 2**63 - 1),  # time.Duration's maximum
    ('string(timestamp("2025-06-01T10:20:30.5+02:00"))', "2025-06-01T08:20:30.5Z"),
    ('string(timestamp("2025-06-01T10:20:30.000000001Z"))', "2025-06-01T10:20:30.000000001Z"),
    ("int(timestamp(-62135596800))", -62135596800),  # 0001-01-01T00:00:00Z, the first one accepted
    ('int(timestamp(-1) - duration("1ns"))', -2),  # Unix() rounds toward the past
    ('timestamp("2024-12-31T12:00:00Z").getDayOfYear()', 365),  # a leap year, counted from 0
    ('timestamp("2024-02-29T23:30:00Z").getDate("Asia/Tokyo")', 1),  # already 1 March there
    ('timestamp("2024-02-29T23:30:00Z").getMonth("Asia/Tokyo")', 2),
    ('timestamp("2024-03-10T12:00:00Z").getHours("America/New_York")', 8),  # daylight saving time began
    ('timestamp("2024-03-09T12:00:00Z").getHours("America/New_York")', 7),
    ('timestamp(0).getHours("-05:30")', 18),  # cel-go: -5 hours, then minus 30 minutes
    ('timestamp(0).getDayOfWeek()', 4),  # 1970-01-01 was a Thursday; Sunday is 0
    ('timestamp("2025-01-01T00:00:00.999Z").getMilliseconds()', 999),
    ('duration("-90m").getHours()', -1),  # truncated toward zero
    ('duration("-1500us").getMilliseconds()', -1),
    ('timestamp(1) - timestamp(0) == duration("1s")', True),
    ('timestamp(0) - duration("1s") < timestamp(0)', True),
    ('[duration("3s"), duration("1s"), duration("2s")].sort()', [parse_duration(f"{i}s") for i in (1, 2, 3)]),
    ('[duration("1s"), duration("2s")].sum() == duration("3s")', True),
    ('[timestamp(3), timestamp(1)].min() == timestamp(1)', True),
])
def test_values_are_cel_gos(expression: str, expected: object) -> None:
    got = value(expression)
    if isinstance(expected, list):
        got = [d.ns for d in got]  # type: ignore[attr-defined]
    assert got == expected


@pytest.mark.parametrize(("expression", "error"), [
    ('duration("2562047h") + duration("2562047h")', "integer overflow"),
    ('timestamp(0) - timestamp(0) + duration("-2562047h") - duration("2562047h")', "integer overflow"),
    ('timestamp(0).getHours("Nowhere/City")', "unknown time zone Nowhere/City"),
    ('timestamp(0).getHours("x:30")', 'parsing "x": invalid syntax'),
    ("duration(string(1))", 'missing unit in duration "1"'),
    ("duration(dyn(1))", "no such overload: duration(int)"),  # cel-go v0.29 (1.37) has no duration(int)
    ('timestamp(string(1) + "2025")', "type conversion error from 'string' to 'google.protobuf.Timestamp'"),
])
def test_a_conversion_or_result_cel_go_refuses_is_a_runtime_error(expression: str, error: str) -> None:
    with pytest.raises(EvalError, match=error.replace("(", r"\(").replace(")", r"\)")):
        value(expression)


def test_a_device_attribute_converts_at_evaluation() -> None:
    """A string attribute compiles (the literal validators only see constants) and converts per device."""
    attributes = {"gpu.example.com": {"window": "90s", "since": "2026-01-01T00:00:00Z"}}
    device = DeviceView(driver="gpu.example.com", attributes=attributes, capacity={})
    fn = compile_expression('duration(device.attributes["gpu.example.com"].window) < duration("2m") && '
                            'timestamp(device.attributes["gpu.example.com"].since).getFullYear() == 2026')
    assert fn(device) is True
