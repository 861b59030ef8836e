"""Differential tests: our compiled CEL against cel-python's interpreter as an oracle.

Only plain CEL where cel-python 0.5.0 follows the spec is compared here (arithmetic, strings,
lists, maps, macros, errors). Where cel-python departs from cel-go (cross-type numeric
comparison, ``string(true)``, three-argument ``map``, indexing strings), the expected value is
cel-go's and lives in test_cel_library.py instead.
"""

from __future__ import annotations

from typing import Any

import celpy
import celpy.celtypes as ct
import pytest

from drasched.cel import CELCompileError
from drasched.cel.compiler import compile_expression
from drasched.cel.runtime import UInt

ERROR = "<error>"

EXPRESSIONS = [
    # arithmetic, int64 overflow and division semantics (truncation toward zero)
    "1 + 2 * 3",
    "(1 + 2) * 3",
    "7 / 2",
    "-7 / 2",
    "-7 % 3",
    "7 % -3",
    "9223372036854775807 + 1",
    "-9223372036854775808 - 1",
    "9223372036854775807 * 2",
    "1 / 0",
    "1 % 0",
    "5u - 6u",
    "3u * 2u",
    "10u / 3u",
    "2.5 * 2.0",
    "7.0 / 2.0",
    "-(-5)",
    "0x10 + 1",
    "1e3 == 1000.0",
    # strings and bytes
    '"abc" + "def"',
    '"abc" < "abd"',
    '"b" > "abc"',
    'size("héllo")',
    '"hello".contains("ell")',
    '"hello".startsWith("he")',
    '"hello".endsWith("lo")',
    '"hello".matches("^h.*o$")',
    'matches("hello", "l+")',
    '"\\u00e9" == "é"',
    "'single' == \"single\"",
    'r"a\\n" == "a\\\\n"',
    'b"abc" == b"abc"',
    'size(b"abc")',
    '"a" + 1',
    # lists and maps
    "[1, 2] + [3]",
    "size([1,2,3])",
    "[1,2,3][1]",
    "[1,2,3][5]",
    '"x" in ["x", "y"]',
    "3 in [1, 2]",
    '"a" in {"a": 1}',
    '{"a": 1}["a"]',
    '{"a": 1}["b"]',
    "[1, 2] == [1, 2]",
    "[1, 2] == [2, 1]",
    '{"a": [1]} == {"a": [1]}',
    "[[1], [2]].map(l, l[0])",
    # macros
    "[1,2,3].all(x, x > 0)",
    "[1,2,3].exists(x, x > 2)",
    "[1,2,3].exists_one(x, x > 1)",
    "[1,2,3].exists_one(x, x > 2)",
    "[1,2,3].map(x, x * x)",
    "[1,2,3].filter(x, x % 2 == 1)",
    '{"a": 1, "b": 2}.all(k, k != "c")',
    '{"a": 1, "b": 2}.exists(k, k == "b")',
    "[].all(x, false)",
    "[].exists(x, true)",
    'has({"a": 1}.a)',
    'has({"a": 1}.b)',
    # logic, including CEL's commutative error absorption
    "true ? 1 : 2",
    "false ? 1 : 2",
    "false || true",
    "true && false",
    "1 < 2 && 2 < 3",
    "1 > 2 || 2 > 1",
    "!true",
    "1 / 0 == 1 || true",
    "true || 1 / 0 == 1",
    "false && 1 / 0 == 1",
    "1 / 0 == 1 && false",
    "1 / 0 == 1 && true",
    "[1, 2, 3].exists(x, x / 0 > 1)",
    "[1, 2, 3].all(x, 1 / (x - 2) > 0)",
    "[0, 1].exists(x, 1 / x == 1)",
    # conversions
    'int("42")',
    "int(3.9)",
    "int(-3.9)",
    'int("x")',
    "uint(3)",
    "double(2)",
    "string(12)",
    "string(1.5)",
    "2u < 3u",
    "null == null",
    "type(1) == int",
    'type("a") == string',
    "1 == 1.0",
]


def _from_celpy(v: Any) -> Any:
    if isinstance(v, ct.BoolType):
        return bool(v)
    if isinstance(v, ct.UintType):
        return UInt(int(v))
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, bytes):
        return bytes(v)
    if isinstance(v, list):
        return [_from_celpy(x) for x in v]
    if isinstance(v, dict):
        return {_from_celpy(k): _from_celpy(x) for k, x in v.items()}
    if v is None:
        return None
    if isinstance(v, celpy.CELEvalError | Exception):
        return ERROR
    if isinstance(v, ct.TypeType):
        return ("type", str(v))
    raise AssertionError(f"unexpected celpy value {v!r}")


def _celpy(expr: str) -> Any:
    env = celpy.Environment()
    try:
        return _from_celpy(env.program(env.compile(expr)).evaluate({}))
    except Exception:
        return ERROR


def _ours(expr: str) -> Any:
    try:
        fn = compile_expression(expr)
    except CELCompileError:
        return ERROR
    try:
        return fn(None)
    except Exception:
        return ERROR


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and a and a[0] == "type":
        return type(b).__name__ == "CelType"
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_matches_celpy(expr: str) -> None:
    expected = _celpy(expr)
    got = _ours(expr)
    assert _same(expected, got), f"{expr}: celpy {expected!r}, ours {got!r}"


def test_oracle_sees_errors() -> None:
    # guard against a vacuous comparison: both sides must report errors and values distinctly
    assert _celpy("1 / 0") == ERROR and _ours("1 / 0") == ERROR
    assert _celpy("1 + 1") == 2 and _ours("1 + 1") == 2
