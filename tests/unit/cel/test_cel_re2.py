"""matches(), find() and findAll() run on RE2, as cel-go's do through Go's regexp package.

RE2 matches in time linear in the input, so neither a selector nor a driver's attribute value
can stall a scheduling cycle with catastrophic backtracking; patterns RE2 cannot run
(backreferences, lookaround) are compile errors when the pattern is a constant, as with
cel-go's regex literal validator.
"""

from __future__ import annotations

import pytest

from drasched.cel import CELCompileError, CELRuntimeError, compile_selector, device_view_from_slice_device
from drasched.cel.compiler import compile_expression

_LONG_A = "a" * 5000 + "b"


def test_redos_literal_subject_is_linear() -> None:
    # Exponential for a backtracking engine (2^5000 paths); one pass for RE2.
    fn = compile_expression(f'"{_LONG_A}".matches("^(a|a)*$")')
    assert fn(None) is False


def test_redos_attribute_value_against_nested_quantifier() -> None:
    dev = device_view_from_slice_device(
        "gpu.example.com", {"name": "gpu-0", "attributes": {"serial": {"string": "a" * 60 + "!"}}}
    )
    sel = compile_selector('device.attributes["gpu.example.com"].serial.matches("^(a+)+$")')
    assert sel.evaluate(dev) is False
    ok = compile_selector('device.attributes["gpu.example.com"].serial.matches("^(a+)+!$")')
    assert ok.evaluate(dev) is True


def test_pattern_from_an_attribute_is_checked_at_runtime() -> None:
    dev = device_view_from_slice_device(
        "gpu.example.com", {"name": "gpu-0", "attributes": {"pattern": {"string": "(a)\\1"}}}
    )
    sel = compile_selector('"aa".matches(device.attributes["gpu.example.com"].pattern)')
    with pytest.raises(CELRuntimeError, match="invalid escape sequence"):
        sel.evaluate(dev)


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("(a)\\\\1", "error parsing regexp: invalid escape sequence: `\\1`"),
        ("(?=a)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
        ("(?<!a)b", "error parsing regexp: invalid or unsupported Perl syntax"),
        ("(a", "error parsing regexp: missing closing ): `(a`"),
        ("a**", "error parsing regexp: invalid nested repetition operator: `**`"),
    ],
)
def test_patterns_re2_refuses_are_compile_errors(pattern: str, fragment: str) -> None:
    # find() is not covered by cel-go's literal validator: the program cannot be built
    # ("program instantiation failed: <Go's regexp error>"), which the API server reports.
    with pytest.raises(CELCompileError) as e:
        compile_selector(f'device.driver.find("{pattern}") == ""')
    assert e.value.internal
    assert e.value.detail.startswith("program instantiation failed: error parsing regexp: ")
    assert fragment in e.value.detail
    # the member form of matches() is checked by cel-go's regex literal validator
    with pytest.raises(CELCompileError) as e:
        compile_selector(f'device.driver.matches("{pattern}")')
    assert e.value.detail == "invalid matches argument" and not e.value.internal


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # Go's $ matches only at the end of the text (Python's re also before a final newline).
        ('"abc\\n".matches("abc$")', False),
        ('"abc".matches("abc$")', True),
        ('"x=1, y=22".find("[0-9]+")', "1"),
        ('"x=1, y=22".findAll("[0-9]+")', ["1", "22"]),
        ('"über".matches("^.ber$")', True),  # UTF-8 aware, one rune per dot
        ('"abc".matches("(?i)ABC")', True),
        ('"abz".matches("\\\\Aab")', True),
    ],
)
def test_re2_semantics(expr: str, expected: object) -> None:
    assert compile_expression(expr)(None) == expected
