"""Conformance per library function of the DRA CEL environment.

Expected values follow cel-go and the Kubernetes libraries (k8s.io/apiserver/pkg/cel/library:
quantity.go, semverlib.go, lists.go, regex.go; cel-go ext: strings v2, lists v3, sets,
bindings, two-variable comprehensions; optional types), including where cel-python differs.
"""

from __future__ import annotations

from typing import Any

import pytest

from drasched.cel import CELCompileError, Semver
from drasched.cel.compiler import compile_expression
from drasched.cel.runtime import EvalError, UInt
from drasched.quantity import Quantity


def ev(expr: str) -> Any:
    return compile_expression(expr)(None)


def cases(*rows: tuple[str, Any]) -> Any:
    return pytest.mark.parametrize(("expr", "expected"), rows, ids=[r[0][:70] for r in rows])


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


# ----------------------------------------------------------------------------- quantity library


@cases(
    ('quantity("1.5Gi").compareTo(quantity("1536Mi"))', 0),
    ('quantity("1Gi").compareTo(quantity("1G"))', 1),
    ('quantity("100m").compareTo(quantity("1"))', -1),
    ('quantity("1Gi").isGreaterThan(quantity("1G"))', True),
    ('quantity("1").isLessThan(quantity("1001m"))', True),
    ('quantity("1").isLessThan(quantity("1"))', False),
    ('quantity("50k").isInteger()', True),
    ('quantity("50m").isInteger()', False),
    ('quantity("1000m").isInteger()', False),  # AsInt64 fails for scale -3, as upstream
    ('quantity("9999999999999999999999999999999999999G").isInteger()', False),
    ('quantity("50k").asInteger()', 50000),
    ('quantity("50.703k").asInteger()', 50703),
    ('quantity("1.5").asApproximateFloat()', 1.5),
    ('quantity("-1").sign()', -1),
    ('sign(quantity("0"))', 0),
    ('quantity("50k").sign()', 1),
    ('quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")', True),
    ('quantity("50k").add(20) == quantity("50020")', True),
    ('quantity("50k").sub(quantity("20k")) == quantity("30k")', True),
    ('quantity("50k").sub(20) == quantity("49980")', True),
    ('quantity("1") == quantity("1000m")', True),
    ('quantity("1") != quantity("1001m")', True),
    ('isQuantity("1Gi")', True),
    ('isQuantity("200K")', False),
    ('isQuantity("Three")', False),
    ('isQuantity("20Mo")', False),  # upstream TestQuantity isQuantity_invalidSuffix
    ('isQuantity("10Mm")', False),  # isQuantity_passingRegex
    # ParseQuantity accepts a bare suffix as zero (parseQuantityString defaults the number to
    # "0"), although the library's doc comment lists isQuantity('Mi') as false; we follow the code.
    ('isQuantity("Mi")', True),
    # upstream TestQuantity arith_chain_1 / arith_chain / add_quantity / sub_quantity
    ('quantity("50k").add(20).sub(quantity("100k")).asInteger()', -49980),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()', 20),
    ('quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    ('quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    ('quantity("50.703k").asApproximateFloat()', 50703.0),
    ('quantity("50").isInteger()', True),
)
def test_quantity_library(expr: str, expected: Any) -> None:
    assert same(ev(expr), expected)


def test_quantity_values_and_errors() -> None:
    assert ev('quantity("1536Mi")') == Quantity("1.5Gi")
    assert str(ev('quantity("1.5Gi").add(quantity("1Gi"))')) == "2560Mi"
    # upstream TestQuantity parseInvalidSuffix / parseInvalidSuffixPassesRegex
    with pytest.raises(EvalError, match="quantities must match the regular expression"):
        ev('quantity("10Mo")')
    with pytest.raises(EvalError, match="unable to parse quantity's suffix"):
        ev('quantity("10Mm")')
    with pytest.raises(EvalError, match="unable to parse quantity's suffix"):
        ev('quantity("200K")')
    with pytest.raises(EvalError, match="cannot convert value to integer"):
        ev('quantity("50m").asInteger()')


# ----------------------------------------------------------------------------- semver library


@cases(
    ('semver("1.2.3").major()', 1),
    ('semver("1.2.3").minor()', 2),
    ('semver("1.2.3").patch()', 3),
    ('semver("1.2.3").compareTo(semver("1.2.3"))', 0),
    ('semver("1.2.3").compareTo(semver("2.0.0"))', -1),
    ('semver("1.2.3").compareTo(semver("0.1.2"))', 1),
    ('semver("1.2.3").isGreaterThan(semver("1.2.2"))', True),
    ('semver("1.2.3").isLessThan(semver("1.2.2"))', False),
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))', True),
    ('semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-beta"))', True),
    ('semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
    ('semver("1.0.0+build.5") == semver("1.0.0")', True),  # build metadata does not order
    ('isSemver("1.0.0")', True),
    ('isSemver("hello")', False),
    ('isSemver("v1.0")', False),
    ('isSemver("v1.0", true)', True),
    ('isSemver("01.01.01", true)', True),
    ('isSemver("1.0-rc", true)', False),  # short versions cannot carry pre-release data
    ('semver("v1.0.0", true) == semver("1.0.0")', True),
    ('semver("1.0", true) == semver("1.0.0")', True),
    ('semver("01.01.01", true) == semver("1.1.1")', True),
)
def test_semver_library(expr: str, expected: Any) -> None:
    assert same(ev(expr), expected)


@pytest.mark.parametrize("bad", ["200K", "Three", "Mi", "1.0", "01.0.0", "1.0.0-01", "v1.0.0", "1.0.0+"])
def test_semver_parse_errors_upstream(bad: str) -> None:
    with pytest.raises(EvalError):
        ev(f'semver("{bad}")')
    assert ev(f'isSemver("{bad}")') is False


def test_semver_type() -> None:
    v = Semver.parse("1.2.3-rc.1+b.7")
    assert (v.major, v.minor, v.patch, v.pre, v.build) == (1, 2, 3, ("rc", 1), ("b", "7"))
    assert str(v) == "1.2.3-rc.1+b.7"
    assert hash(Semver.parse("1.0.0+a")) == hash(Semver.parse("1.0.0+b"))
    assert sorted([Semver.parse("1.0.0"), Semver.parse("1.0.0-rc.2"), Semver.parse("1.0.0-rc.10")]) == [
        Semver.parse("1.0.0-rc.2"),
        Semver.parse("1.0.0-rc.10"),
        Semver.parse("1.0.0"),
    ]


# ----------------------------------------------------------------------------- strings ext v2


@cases(
    ('"abc".charAt(1)', "b"),
    ('"abc".charAt(3)', ""),
    ('"hello".indexOf("l")', 2),
    ('"hello".indexOf("l", 3)', 3),
    ('"hello".indexOf("z")', -1),
    ('"hello".indexOf("")', 0),
    ('"hello".lastIndexOf("l")', 3),
    ('"hello".lastIndexOf("l", 2)', 2),
    ('"hello".lastIndexOf("")', 5),
    ('"HeLLo".lowerAscii()', "hello"),
    ('"héllo".upperAscii()', "HéLLO"),  # ASCII only
    ('"aaa".replace("a", "b")', "bbb"),
    ('"aaa".replace("a", "b", 2)', "bba"),
    ('"a,b,c".split(",")', ["a", "b", "c"]),
    ('"a,b,c".split(",", 2)', ["a", "b,c"]),
    ('"a,b,c".split(",", 0)', []),
    ('"abc".split("")', ["a", "b", "c"]),
    ('"abc".substring(1)', "bc"),
    ('"abc".substring(1, 2)', "b"),
    ('" \\t x \\n".trim()', "x"),
    ('["a", "b"].join("-")', "a-b"),
    ('["a", "b"].join()', "ab"),
    ('strings.quote("a\\"b\\n")', '"a\\"b\\n"'),
    ('"%s has %d cores".format([dyn("gpu"), 8])', "gpu has 8 cores"),
    ('"%.2f".format([1.2345])', "1.23"),
    ('"%x".format([255])', "ff"),
    ('size("héllo")', 5),
    ('"héllo".size()', 5),
    ('"gpu-a100".matches("^gpu-[a-z0-9]+$")', True),
    ('"x".matches("y")', False),
)
def test_strings_library(expr: str, expected: Any) -> None:
    assert same(ev(expr), expected)


@pytest.mark.parametrize(
    ("expr", "msg"),
    [
        ('"abc".charAt(4)', "index out of range: 4"),
        ('"abc".substring(2, 1)', "invalid substring range. start: 2, end: 1"),
        ('"abc".substring(4)', "index out of range: 4"),
        ('"abc".indexOf("a", 9)', "index out of range: 9"),
    ],
)
def test_strings_errors(expr: str, msg: str) -> None:
    with pytest.raises(EvalError, match=msg):
        ev(expr)


# ----------------------------------------------------------------------------- lists, sets, regex


@cases(
    ("[3, 1, 2].sort()", [1, 2, 3]),
    ('["b", "a"].sort()', ["a", "b"]),
    ("[[1], [2, 3]].flatten()", [1, 2, 3]),
    ("[dyn(1), [dyn(2), [3]]].flatten()", [1, 2, [3]]),
    ("[dyn(1), [dyn(2), [3]]].flatten(2)", [1, 2, 3]),
    ("[1, 2, 1, 3].distinct()", [1, 2, 3]),
    ("[1, 2, 3].reverse()", [3, 2, 1]),
    ("[1, 2, 3, 4].slice(1, 3)", [2, 3]),
    ("lists.range(4)", [0, 1, 2, 3]),
    ("[3, 1, 2].sortBy(x, -x)", [3, 2, 1]),
    ("[1, 2, 3].isSorted()", True),
    ("[2, 1].isSorted()", False),
    ("[1, 2, 3].sum()", 6),
    ("[1.5, 2.5].sum()", 4.0),
    ("[3, 1, 2].min()", 1),
    ("[3, 1, 2].max()", 3),
    ("[1, 2, 3].indexOf(2)", 1),
    ("[1, 2, 1].lastIndexOf(1)", 2),
    ("[1, 2].indexOf(5)", -1),
    ("sets.contains([1, 2, 3], [3, 1])", True),
    ("sets.contains([1, 2], [3])", False),
    ("sets.contains([1], [])", True),
    ("sets.equivalent([1, 2], [2, 1, 1])", True),
    ("sets.intersects([1, 2], [3, 2])", True),
    ("sets.intersects([1, 2], [])", False),
    ('"abc123def45".find("[0-9]+")', "123"),
    ('"abc".find("[0-9]+")', ""),
    ('"a1b22c333".findAll("[0-9]+")', ["1", "22", "333"]),
    ('"a1b22c333".findAll("[0-9]+", 2)', ["1", "22"]),
    ("size([1, 2])", 2),
    ('{"a": 1}.size()', 1),
    ("1 in [1, 2]", True),
    ('"k" in {"k": 1}', True),
)
def test_list_set_regex_libraries(expr: str, expected: Any) -> None:
    assert same(ev(expr), expected)


@pytest.mark.parametrize(
    ("expr", "msg"),
    [
        ("[1, 2].slice(1, 5)", "list is length 2"),
        ("[1, 2].slice(2, 1)", "start index must be less than or equal to end index"),
        ("[1].flatten(-1)", "level must be non-negative"),
        ("[].min()", "min called on empty list"),
        ('[dyn(1), "a"].sort()', "must have the same type"),
    ],
)
def test_list_errors(expr: str, msg: str) -> None:
    with pytest.raises(EvalError, match=msg):
        ev(expr)


# ----------------------------------------------------------------------------- optional types


@cases(
    ("optional.of(1).value()", 1),
    ("optional.of(1).hasValue()", True),
    ("optional.none().hasValue()", False),
    ("optional.none().orValue(5)", 5),
    ("optional.none().or(optional.of(2)).value()", 2),
    ("optional.of(1).or(optional.of(2)).value()", 1),
    ("optional.ofNonZeroValue(0).hasValue()", False),
    ('optional.ofNonZeroValue("x").hasValue()', True),
    ('{"a": 1}.?a.value()', 1),
    ('{"a": 1}.?b.hasValue()', False),
    ('{"a": {"b": 2}}.?a.?b.orValue(0)', 2),
    ('{"a": {"b": 2}}.?x.?b.orValue(0)', 0),
    ("[1, 2][?1].value()", 2),
    ("[1, 2][?5].orValue(0)", 0),
    ('{"k": 1}[?"k"].value()', 1),
    ("[?optional.of(1), ?optional.none(), 3]", [1, 3]),
    ('{?"a": optional.of(1), ?"b": optional.none()}', {"a": 1}),
    ("optional.of(2).optMap(x, x * 2).value()", 4),
    ("optional.none().optMap(x, x * 2).hasValue()", False),
    ("optional.of(2).optFlatMap(x, optional.none()).hasValue()", False),
)
def test_optional_types(expr: str, expected: Any) -> None:
    assert same(ev(expr), expected)


def test_optional_none_dereference() -> None:
    with pytest.raises(EvalError, match=r"optional.none\(\) dereference"):
        ev("optional.none().value()")


# ----------------------------------------------------------------------------- macros


@cases(
    ("[1, 2, 3].all(x, x > 0)", True),
    ("[1, 2, 3].exists(x, x > 2)", True),
    ("[1, 2, 3].exists_one(x, x > 1)", False),
    ("[1, 2, 3].map(x, x * 2)", [2, 4, 6]),
    ("[1, 2, 3].map(x, x > 1, x * 10)", [20, 30]),  # cel-python lacks the 3-argument form
    ("[1, 2, 3].filter(x, x != 2)", [1, 3]),
    ('{"a": 1, "b": 2}.filter(k, k == "b")', ["b"]),
    ('{"a": 1, "b": 2}.map(k, k + "!")', ["a!", "b!"]),
    ('has({"a": 1}.a)', True),
    ("cel.bind(x, 2, x * x)", 4),
    ("cel.bind(x, 2, cel.bind(y, 3, x * y))", 6),
    ("cel.bind(x, [1, 2], x.map(y, y + x.size()))", [3, 4]),
    # two-variable comprehensions (cel-go ext.TwoVarComprehensions)
    ("[1, 2, 3].all(i, v, v > i)", True),
    ("[1, 2, 3].exists(i, v, i == 2 && v == 3)", True),
    ("[1, 2, 3].existsOne(i, v, v > 2)", True),
    ('{"a": 1, "b": 2}.all(k, v, v > 0 && k != "")', True),
    ("[1, 2, 3].transformList(i, v, i * v)", [0, 2, 6]),
    ("[1, 2, 3].transformList(i, v, v > 1, v)", [2, 3]),
    ('{"a": 1}.transformMap(k, v, v + 1)', {"a": 2}),
    ('{"a": 1, "b": 2}.transformMap(k, v, v > 1, k)', {"b": "b"}),
)
def test_macros(expr: str, expected: Any) -> None:
    assert same(ev(expr), expected)


# ----------------------------------------------------------------------------- core semantics where cel-python differs


@cases(
    ("string(true)", "true"),
    ("string(1e6)", "1e+06"),  # Go's %g
    ("string(123456.0)", "123456"),
    ("string(0.5)", "0.5"),
    ("1 < 1.5", True),  # CrossTypeNumericComparisons
    ("2u > 1", True),
    ("1.0 <= 1", True),
    ("dyn(1) == 1.0", True),  # heterogeneous equality at runtime
    ("dyn(1u) == 1", True),
    ("dyn(true) == 1", False),
    ("dyn([true]) == [1]", False),
    ('dyn("1") == 1', False),
    ("dyn(1) in [1.0]", True),
    ('bool("true") && !bool("f")', True),
    ("uint(5)", UInt(5)),
    ("int(uint(5))", 5),
    ("double(-3)", -3.0),
    ('bytes("é")', "é".encode()),
    ("type(1u) == uint", True),
    ("type([]) == list", True),
    ("type({}) == map", True),
    ("-9223372036854775808 < 0", True),
    ("1.0 / 0.0 > 1e308", True),
)
def test_core_semantics_cel_go(expr: str, expected: Any) -> None:
    assert same(ev(expr), expected)


@pytest.mark.parametrize(
    ("expr", "msg"),
    [
        ("9223372036854775807 + 1", "integer overflow"),
        ("0u - 1u", "unsigned integer overflow"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "modulus by zero"),
        ("int(1e19)", "integer overflow"),
        ('int("1.5")', "cannot convert"),
        ("[1][3]", "index out of bounds"),
        ('dyn("a") < 1', "no such overload"),
        ('{"a": 1, "a": 2}.size() == 1', "repeated key"),
    ],
)
def test_core_runtime_errors(expr: str, msg: str) -> None:
    with pytest.raises(EvalError, match=msg):
        ev(expr)


@pytest.mark.parametrize(
    "expr",
    [
        '"abc"[0]',  # strings are not indexable in CEL
        "1u == 1",  # no cross-type == overload at compile time
        "[1, 'a']",  # HomogeneousAggregateLiterals
        "{1: 'a', 'b': 2}",
        "int(true)",
        "lists.nope(1)",
        "[1].sortBy(1, 2)",
        "[1].all(x, x, x)",
        "optional.of(1).optMap(x, x).foo",
        "Foo{a: 1}",
    ],
)
def test_core_compile_errors(expr: str) -> None:
    with pytest.raises(CELCompileError):
        compile_expression(expr)
