"""The DRA-specific rules of upstream k8s.io/dynamic-resource-allocation/cel (compile.go):
the ``device`` variable, the empty-map default for unknown domains, runtime errors for unknown
keys, bool-only results, the 10 KiB expression limit and the 1,000,000 cost budget."""

from __future__ import annotations

import pytest

from drasched.cel import (
    MAX_EXPRESSION_LENGTH,
    CELCompileError,
    CELRuntimeError,
    DeviceView,
    Semver,
    compile_selector,
)
from drasched.quantity import Quantity

DRIVER = "gpu.example.com"


@pytest.fixture
def gpu() -> DeviceView:
    return DeviceView(
        DRIVER,
        {
            DRIVER: {"model": "a100", "cores": 108, "fast": True, "fw": Semver.parse("1.2.3")},
            "pci.example.com": {"slot": "0000:3b:00.0"},
        },
        {DRIVER: {"memory": Quantity("80Gi")}},
        allow_multiple_allocations=True,
    )


def match(expr: str, dev: DeviceView) -> bool:
    return compile_selector(expr).evaluate(dev)


# --------------------------------------------------------------------------- the device variable


def test_device_fields_upstream(gpu: DeviceView) -> None:
    assert match(f'device.driver == "{DRIVER}"', gpu)
    assert match("device.allowMultipleAllocations", gpu)
    assert match(f'device.attributes["{DRIVER}"].model == "a100"', gpu)
    assert match('device.attributes["pci.example.com"].slot.startsWith("0000:")', gpu)
    assert match(f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0', gpu)
    assert not match(f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("80Gi"))', gpu)


def test_allow_multiple_allocations_defaults_false() -> None:
    # upstream: ptr.Deref(input.AllowMultipleAllocations, false)
    assert match("!device.allowMultipleAllocations", DeviceView("d", {}, {}))


def test_unknown_device_field_is_compile_error() -> None:
    with pytest.raises(CELCompileError) as e:
        compile_selector("device.vendor == 'x'")
    assert "undefined field 'vendor'" in str(e.value)
    assert e.value.position == (1, 7)  # cel-go places a select at its '.' (kube-apiserver: <input>:1:7)


def test_unknown_domain_is_empty_map_upstream(gpu: DeviceView) -> None:
    # newStringInterfaceMapWithDefault: an unknown domain reads as an empty map
    assert match('device.attributes["unknown.example.com"].size() == 0', gpu)
    assert match('device.capacity["unknown.example.com"].size() == 0', gpu)
    assert match('!("x" in device.attributes["unknown.example.com"])', gpu)
    assert not match('device.attributes["unknown.example.com"].exists(k, true)', gpu)


def test_unknown_key_in_domain_is_runtime_error_not_false(gpu: DeviceView) -> None:
    with pytest.raises(CELRuntimeError) as e:
        match(f'device.attributes["{DRIVER}"].nosuch == "x"', gpu)
    assert "no such key: nosuch" in str(e.value)
    assert e.value.expression == f'device.attributes["{DRIVER}"].nosuch == "x"'
    with pytest.raises(CELRuntimeError, match="no such key: x"):
        match('device.attributes["unknown.example.com"].x == 1', gpu)
    with pytest.raises(CELRuntimeError, match="no such key: gpus"):
        match(f'device.capacity["{DRIVER}"].gpus.sign() == 1', gpu)


def test_unknown_key_error_is_absorbed_by_logic_upstream(gpu: DeviceView) -> None:
    # CEL's commutative && / ||: an error on one side yields to a decisive other side
    assert match(f'device.attributes["{DRIVER}"].nosuch == "x" || device.driver == "{DRIVER}"', gpu)
    assert not match(f'device.attributes["{DRIVER}"].nosuch == "x" && device.driver == "other"', gpu)
    with pytest.raises(CELRuntimeError):
        match(f'device.attributes["{DRIVER}"].nosuch == "x" && device.driver == "{DRIVER}"', gpu)


def test_has_and_optional_avoid_the_error(gpu: DeviceView) -> None:
    assert not match(f'has(device.attributes["{DRIVER}"].nosuch)', gpu)
    assert match(f'has(device.attributes["{DRIVER}"].model)', gpu)
    assert match(f'device.attributes["{DRIVER}"].?nosuch.orValue("none") == "none"', gpu)
    assert match(f'"model" in device.attributes["{DRIVER}"]', gpu)


def test_cel_bind_upstream_example(gpu: DeviceView) -> None:
    # compile.go's own example for ext.Bindings
    assert match(f'cel.bind(dra, device.attributes["{DRIVER}"], dra.fast && dra.cores > 100)', gpu)


def test_attribute_value_types(gpu: DeviceView) -> None:
    assert match(f'device.attributes["{DRIVER}"].cores == 108 && device.attributes["{DRIVER}"].cores > 100', gpu)
    assert match(f'device.attributes["{DRIVER}"].fast', gpu)
    assert match(f'device.attributes["{DRIVER}"].fw.isGreaterThan(semver("1.0.0"))', gpu)
    assert match(f'device.attributes["{DRIVER}"].fw == semver("1.2.3")', gpu)
    # an int attribute is never equal to a bool, unlike Python's True == 1
    dev = DeviceView("d", {"d": {"one": 1, "yes": True}}, {})
    assert not match('device.attributes["d"].one == true', dev)
    assert not match('device.attributes["d"].yes == 1', dev)


def test_wrong_runtime_type_is_error(gpu: DeviceView) -> None:
    with pytest.raises(CELRuntimeError, match="no such overload"):
        match(f'device.attributes["{DRIVER}"].cores.startsWith("1")', gpu)
    with pytest.raises(CELRuntimeError, match="no such overload"):
        match(f'device.attributes["{DRIVER}"].model > 5', gpu)


# --------------------------------------------------------------------------- result type


@pytest.mark.parametrize(
    ("expr", "shown"),
    [
        ("1", "int"),
        ('device.driver + "x"', "string"),
        ('device.attributes["x"]', "map(string, any)"),
        ("[true]", "list(bool)"),
        ('quantity("1")', "kubernetes.Quantity"),
    ],
)
def test_non_bool_result_is_compile_error_upstream(expr: str, shown: str) -> None:
    # compile.go: "must evaluate to bool or the unknown type, not <type>"
    with pytest.raises(CELCompileError) as e:
        compile_selector(expr)
    assert f"must evaluate to bool or the unknown type, not {shown}" in str(e.value)


def test_non_bool_result_of_unknown_type_is_runtime_error(gpu: DeviceView) -> None:
    # an attribute has the unknown type statically; upstream fails converting the result to bool
    sel = compile_selector(f'device.attributes["{DRIVER}"].model')
    with pytest.raises(CELRuntimeError, match="could not be converted to bool"):
        sel.evaluate(gpu)
    assert compile_selector(f'device.attributes["{DRIVER}"].fast').evaluate(gpu) is True


# --------------------------------------------------------------------------- compile errors


def test_syntax_error_has_position_and_caret() -> None:
    with pytest.raises(CELCompileError) as e:
        compile_selector("device.driver ==")
    err = e.value
    assert err.position == (1, 17)
    assert str(err).startswith("compile error at 1:17: ")
    assert str(err).endswith("\n | device.driver ==\n | ................^")
    assert err.expression == "device.driver =="


def test_multiline_position() -> None:
    with pytest.raises(CELCompileError) as e:
        compile_selector('device.driver == "a" &&\n  device.nope')
    assert e.value.position == (2, 9)
    assert "\n |   device.nope\n | ........^" in str(e.value)


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("foo == 1", "undeclared reference to 'foo'"),
        ("device.driver == 1", "found no matching overload for '_==_' applied to '(string, int)'"),
        ("undefinedFn(1)", "undeclared reference to 'undefinedFn'"),
        ("device.driver.startsWith(1)", "found no matching overload for 'startsWith' applied to 'string.(int)'"),
        ('[1, "a"].size() > 0', "expected type 'int' but found 'string'"),
        ('device.driver.matches("(")', "invalid matches argument"),  # cel-go's regex literal validator
        ("1 == 1.0", "found no matching overload for '_==_' applied to '(int, double)'"),
        ("[1].all(x, x)", "found no matching overload"),
        ("1.all(x, true)", "cannot be range of a comprehension"),
        ("[1].all(1, true)", "argument must be a simple name"),
        ("has(device)", "invalid argument to has() macro"),
        ("if == 1", "reserved identifier: if"),
        ('device.driver == "a" @ 1', "token recognition error"),
        ("quantity(1).isInteger()", "found no matching overload for 'quantity' applied to '(int)'"),
        ("semver('1.0.0') < semver('2.0.0')", "found no matching overload for '_<_'"),
    ],
)
def test_compile_errors(expr: str, fragment: str) -> None:
    with pytest.raises(CELCompileError) as e:
        compile_selector(expr)
    assert fragment in str(e.value)
    assert e.value.expression == expr


def test_expression_length_limit_upstream() -> None:
    # CELSelectorExpressionMaxLength = 10 * 1024
    assert MAX_EXPRESSION_LENGTH == 10 * 1024
    pad = " " * (MAX_EXPRESSION_LENGTH - len("true"))
    assert compile_selector("true" + pad).evaluate(DeviceView("d", {}, {})) is True
    with pytest.raises(CELCompileError) as e:
        compile_selector("true" + pad + " ")
    assert "more than the limit of 10240" in str(e.value)
    assert e.value.position is None


def test_compile_is_cached() -> None:
    assert compile_selector('device.driver == "x"') is compile_selector('device.driver == "x"')
    # errors are cached too and re-raised as fresh exceptions
    with pytest.raises(CELCompileError) as a:
        compile_selector("device.x")
    with pytest.raises(CELCompileError) as b:
        compile_selector("device.x")
    assert a.value is not b.value and str(a.value) == str(b.value)


# --------------------------------------------------------------------------- cost limit


def test_cost_limit_nested_comprehension_upstream() -> None:
    # CELSelectorExpressionMaxCost = 1,000,000: a comprehension over a huge generated list stops
    dev = DeviceView("d", {}, {})
    with pytest.raises(CELRuntimeError, match="cost limit exceeded"):
        match("lists.range(2000).all(x, lists.range(2000).all(y, x >= 0))", dev)
    with pytest.raises(CELRuntimeError, match="cost limit exceeded"):
        match("lists.range(100000000).size() > 0", dev)  # charged before the list is built


def test_cost_limit_exponential_nesting() -> None:
    ten = "[0,1,2,3,4,5,6,7,8,9]"
    expr = "true"
    for v in "abcdef":
        expr = f"{ten}.all({v}, {expr})"
    with pytest.raises(CELRuntimeError, match="cost limit exceeded"):
        match(expr, DeviceView("d", {}, {}))


def test_cost_limit_not_absorbed_by_or() -> None:
    # exceeding the budget aborts the evaluation; `|| true` does not rescue it
    with pytest.raises(CELRuntimeError, match="cost limit exceeded"):
        match("lists.range(2000).all(x, lists.range(2000).all(y, true)) || true", DeviceView("d", {}, {}))


def test_under_budget_comprehension_runs() -> None:
    assert match("lists.range(1000).all(x, lists.range(100).exists(y, y == 99))", DeviceView("d", {}, {}))


# --------------------------------------------------------------------------- deep expressions


def test_deeply_nested_logic_compiles_and_runs(gpu: DeviceView) -> None:
    expr = "true"
    for i in range(40):
        expr = f'(device.attributes["{DRIVER}"].cores > {i} && ({expr} || device.attributes["x"].y == 1))'
    assert match(expr, gpu)


def test_long_conjunction(gpu: DeviceView) -> None:
    expr = " && ".join(f'device.attributes["{DRIVER}"].cores > {i}' for i in range(100))
    assert match(expr, gpu)
    assert not match(expr + f' && device.attributes["{DRIVER}"].cores > 108', gpu)


def test_too_deep_nesting_is_compile_error() -> None:
    with pytest.raises(CELCompileError, match="recursion"):
        compile_selector("(" * 300 + "true" + ")" * 300)
