"""CEL ``duration()`` and ``timestamp()`` in device selectors: what compiles and what is refused,
on the memory store and a real kube-apiserver alike.

The declarations are cel-go's standard library (common/stdlib/standard.go: conversions from
string and int, ``int()`` and ``string()`` of both, ``+``/``-`` between them, ordering, the
``get*`` accessors with an optional time zone on timestamps) plus the Kubernetes base
environment's literal validators (cel.ValidateDurationLiterals, ValidateTimestampLiterals):
a constant argument that does not convert is refused at compile time, at the literal.
"""

from __future__ import annotations

import contextlib
import uuid

import pytest

from drasched.api import kinds
from drasched.api.errors import Invalid, NotFound
from drasched.store.base import ClusterStore, Obj

FIELD = "spec.selectors[0].cel.expression"


def device_class(expression: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": f"cel-time-{uuid.uuid4().hex[:8]}.example.com"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


ACCEPTED = [
    'duration("1h") > duration("30m")',
    'duration("1.5h") == duration("90m") && duration("1us") == duration("1µs")',
    'duration(duration("1s")) == duration("1s")',
    'timestamp(0) < timestamp("2025-01-01T00:00:00Z")',
    'timestamp("2025-01-01T00:00:00+01:00") == timestamp("2024-12-31T23:00:00Z")',
    'int(duration("1s")) == 1000000000 && int(timestamp(5)) == 5',
    'string(duration("1ms")) == "0.001s" && string(timestamp(0)) == "1970-01-01T00:00:00Z"',
    'timestamp(0) + duration("1s") == duration("1s") + timestamp(0)',
    'timestamp(1) - timestamp(0) == duration("1s") && timestamp(1) - duration("1s") == timestamp(0)',
    'timestamp(0).getFullYear("America/New_York") == 1969 && timestamp(0).getHours("+05:30") == 5',
    "timestamp(0).getMonth() + timestamp(0).getDayOfYear() + timestamp(0).getDayOfMonth() == 0",
    "timestamp(0).getDate() == 1 && timestamp(0).getDayOfWeek() == 4",
    'duration("90m").getHours() == 1 && duration("90m").getMinutes() == 90',
    'duration("1500ms").getMilliseconds() == 1500 && duration("90m").getSeconds() == 5400',
    '[duration("2s"), duration("1s")].sort()[0] == duration("1s")',
    '[duration("2s"), duration("1s")].sum() == duration("3s")',
    '[timestamp(2), timestamp(1)].isSorted() || duration("1s") in [duration("1s")]',
    'duration(device.attributes["gpu.example.com"].window) < duration("1h")',
    'timestamp(device.attributes["gpu.example.com"].since).getFullYear("Europe/Paris") > 2000',
    "duration(device.driver) > duration(\"1s\")",
]


def _compile_error(expression: str, column: int, detail: str) -> str:
    quoted = expression.replace('"', '\\"')
    return (f'Invalid value: "{quoted}": compilation failed: ERROR: <input>:1:{column}: {detail}\n'
            f" | {expression}\n | {'.' * (column - 1)}^")


REFUSED = [
    ('duration("abc") > duration("1s")', 10, "invalid duration argument"),
    ('duration("9999999999999h") > duration("1s")', 10, "invalid duration argument"),
    # cel-go v0.29 (Kubernetes 1.37) has no int overload; v0.26 (1.36) said "invalid duration argument"
    ('duration(1) == duration("1ns")', 9, "found no matching overload for 'duration' applied to '(int)'"),
    ('timestamp("nope") > timestamp(0)', 11, "invalid timestamp argument"),
    ('timestamp("10000-01-01T00:00:00Z") > timestamp(0)', 11, "invalid timestamp argument"),
    ("timestamp(253402300800) > timestamp(0)", 11, "invalid timestamp argument"),
    ("timestamp(-62135596801) < timestamp(0)", 11, "invalid timestamp argument"),
    ('-duration("1s") < duration("0s")', 1, "found no matching overload for '-_' applied to '(duration)'"),
    ('duration("1s") - timestamp(0) == duration("1s")', 16,
     "found no matching overload for '_-_' applied to '(duration, timestamp)'"),
    ('duration("1h").getHours("UTC") == 1', 24,
     "found no matching overload for 'getHours' applied to 'duration.(string)'"),
    ('duration("1s") > 1', 16, "found no matching overload for '_>_' applied to '(duration, int)'"),
    ('timestamp(0) == duration("0s")', 14, "found no matching overload for '_==_' applied to '(timestamp, duration)'"),
    ('duration("1s") * 2 == duration("2s")', 16, "found no matching overload for '_*_' applied to '(duration, int)'"),
    ('duration(1.5) == duration("1s")', 9, "found no matching overload for 'duration' applied to '(double)'"),
    ("timestamp(0).getFullYear(1) == 1970", 25,
     "found no matching overload for 'getFullYear' applied to 'timestamp.(int)'"),
    ('[duration("1s"), timestamp(0)].size() == 2', 27, "expected type 'duration' but found 'timestamp'"),
]


@pytest.mark.parametrize("expression", ACCEPTED)
def test_a_time_selector_cel_go_compiles_is_accepted(store: ClusterStore, expression: str) -> None:
    obj = device_class(expression)
    try:
        store.create(obj)
    finally:
        with contextlib.suppress(NotFound):
            store.delete(kinds.DEVICE_CLASS, obj["metadata"]["name"])


@pytest.mark.parametrize(("expression", "column", "detail"), REFUSED, ids=[e for e, _, _ in REFUSED])
def test_a_time_selector_cel_go_refuses_is_refused_in_its_words(store: ClusterStore, expression: str, column: int,
                                                                detail: str) -> None:
    with pytest.raises(Invalid) as caught:
        store.create(device_class(expression))
    assert [(c.field, c.message) for c in caught.value.causes] == [(FIELD, _compile_error(expression, column, detail))]
