"""selector_errors: the create-time refusals of pkg/apis/resource/validation validateCELSelector,
and the static cost estimate behind "too complex, exceeds cost limit"."""

from __future__ import annotations

import pytest

from drasched.cel import DeviceView, compile_selector
from drasched.cel.compiler import COST_LIMIT
from drasched.cel.errors import CELRuntimeError
from drasched.cel.validate import selector_errors

FIVE_HUNDRED = "[" + ",".join(str(i) for i in range(500)) + "]"
TOO_COSTLY = f"{FIVE_HUNDRED}.map(x, {FIVE_HUNDRED}.map(y, {FIVE_HUNDRED})).size() > 0"


@pytest.mark.parametrize(
    "expression",
    [
        'device.driver == "gpu.example.com"',
        'device.attributes["gpu.example.com"].model.matches("^a100(-sxm)?$")',
        'device.attributes["gpu.example.com"].all(k, k.size() < 64)',
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
        "lists.range(1000).all(x, lists.range(100).exists(y, y == 99))",
        'cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && g.cores > 100)',
    ],
)
def test_selectors_within_the_limits_are_accepted(expression: str) -> None:
    assert selector_errors(expression) == []


def test_type_error_is_invalid_with_cel_go_position_and_caret() -> None:
    (err,) = selector_errors("device.driver == 1")
    assert err.reason == "FieldValueInvalid"
    assert err.message == (
        'Invalid value: "device.driver == 1": compilation failed: ERROR: <input>:1:15: '
        "found no matching overload for '_==_' applied to '(string, int)'\n"
        " | device.driver == 1\n"
        " | ..............^"
    )


def test_non_bool_result_is_invalid_without_compilation_prefix() -> None:
    (err,) = selector_errors('device.attributes["gpu.example.com"].cores + 1')
    assert err.message.endswith(": must evaluate to bool or the unknown type, not int")


def test_expression_is_quoted_as_go_quotes_it() -> None:
    (err,) = selector_errors('device.driver == "a" +')
    assert err.message.startswith('Invalid value: "device.driver == \\"a\\" +": compilation failed: ')


def test_bad_constant_regex_outside_the_validator_is_an_internal_error() -> None:
    # kube-apiserver 1.36: the global matches(), find() and findAll() compile, and building
    # the program fails: field.InternalError.
    assert selector_errors('matches(device.driver, "(?=a)")') == [(
        "Internal error: program instantiation failed: error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
        "InternalError",
    )]
    (err,) = selector_errors('device.driver.matches("(?=a)")')
    assert err.message.endswith(": compilation failed: ERROR: <input>:1:23: invalid matches argument\n"
                                " | device.driver.matches(\"(?=a)\")\n"
                                " | ......................^")


def test_over_10_kib_is_too_long_and_not_compiled() -> None:
    (err,) = selector_errors("true" + " " * 10 * 1024)
    assert err == ("Too long: may not be more than 10240 bytes", "FieldValueTooLong")


def test_estimated_cost_over_the_limit_is_forbidden() -> None:
    assert compile_selector(TOO_COSTLY).max_cost > COST_LIMIT
    assert selector_errors(TOO_COSTLY) == [("Forbidden: too complex, exceeds cost limit", "FieldValueForbidden")]


@pytest.mark.parametrize(
    "expression",
    [
        # a comprehension over a list of unknown size is unbounded, as in cel-go's estimator
        'device.attributes["gpu.example.com"].model.split(",").map(s, s.split("-")).all(l, '
        'l.all(p, lists.range(p.size()).all(i, i >= 0)))',
        "[0,1,2,3,4,5,6,7,8,9].all(a, [0,1,2,3,4,5,6,7,8,9].all(b, [0,1,2,3,4,5,6,7,8,9].all(c, "
        "[0,1,2,3,4,5,6,7,8,9].all(d, [0,1,2,3,4,5,6,7,8,9].all(e, [0,1,2,3,4,5,6,7,8,9].all(f, true))))))",
    ],
)
def test_unbounded_or_exponential_comprehensions_are_forbidden(expression: str) -> None:
    assert [e.reason for e in selector_errors(expression)] == ["FieldValueForbidden"]


def test_runtime_charges_list_creation_and_stops_before_building_huge_lists() -> None:
    # cel-go charges 10 per list created: the budget ends the evaluation after about 90,000 of
    # the 250,000 inner iterations, and the constant list is shared rather than built each time.
    with pytest.raises(CELRuntimeError, match="actual cost limit exceeded"):
        compile_selector(TOO_COSTLY).evaluate(DeviceView("gpu.example.com", {}, {}))


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        # Python refuses int() of more than 4,300 decimal digits; cel-go says the literal is invalid.
        ("1" * 5000 + " > 0", "invalid int literal: 1111"),
        ("0x" + "f" * 5000 + " > 0", "invalid int literal: 0xfff"),
        ("1" * 5000 + "u > 0u", "invalid uint literal: 1111"),
    ],
)
def test_huge_integer_literals_are_invalid_not_a_crash(expression: str, fragment: str) -> None:
    (err,) = selector_errors(expression)
    assert err.reason == "FieldValueInvalid" and fragment in err.message


@pytest.mark.parametrize("version", ["1" * 5000 + ".0.0", "1.0.0-" + "1" * 5000, "1.0.0-18446744073709551616"])
def test_semver_with_huge_numbers_is_a_runtime_error_not_a_crash(version: str) -> None:
    sel = compile_selector(f"semver('{version}') == semver('1.0.0')")
    with pytest.raises(CELRuntimeError, match="out of range"):
        sel.evaluate(DeviceView("gpu.example.com", {}, {}))


def test_dyn_of_an_attribute_value_compiles_and_runs() -> None:
    # dyn() around google.protobuf.Any once reached the code generator without an implementation.
    from drasched.cel import device_view_from_slice_device

    dev = device_view_from_slice_device("gpu.example.com", {"name": "g", "attributes": {"cores": {"int": 8}}})
    assert compile_selector('dyn(device.attributes["gpu.example.com"].cores) == 8').evaluate(dev) is True
    assert selector_errors('dyn(device.attributes["gpu.example.com"].cores) == 8') == []


@pytest.mark.parametrize(
    "expression",
    ["dyn(1)", 'device.attributes["gpu.example.com"].cores.min()', 'true ? dyn(true) : false'],
)
def test_a_dyn_result_is_refused_as_upstream(expression: str) -> None:
    (err,) = selector_errors(expression)
    assert err.message.endswith(": must evaluate to bool or the unknown type, not dyn")
