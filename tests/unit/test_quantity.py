"""Quantity conformance, ported from k8s.io/apimachinery/pkg/api/resource/quantity_test.go.

Each table cites the upstream test it comes from. Expected values are upstream's.
"""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction

import pytest

from drasched.quantity import ErrFormatWrong, ErrSuffix, Format, Quantity, QuantityError

DSI, BSI, DEX = Format.DECIMAL_SI, Format.BINARY_SI, Format.DECIMAL_EXPONENT
MAX_INT64 = (1 << 63) - 1


def dec(i: int, exponent: int) -> Fraction:
    return Fraction(i) * Fraction(10) ** exponent


# upstream TestQuantityParse: (input, value, format)
PARSE_TABLE = [
    ("0", dec(0, 0), DSI),
    ("0n", dec(0, 0), DSI),
    ("0u", dec(0, 0), DSI),
    ("0m", dec(0, 0), DSI),
    ("0Ki", dec(0, 0), BSI),
    ("0k", dec(0, 0), DSI),
    ("0Mi", dec(0, 0), BSI),
    ("0M", dec(0, 0), DSI),
    ("0Gi", dec(0, 0), BSI),
    ("0G", dec(0, 0), DSI),
    ("0Ti", dec(0, 0), BSI),
    ("0T", dec(0, 0), DSI),
    ("1", dec(1, 0), DSI),
    ("1Ki", dec(1024, 0), BSI),
    ("8Ki", dec(8 * 1024, 0), BSI),
    ("7Mi", dec(7 * 1024**2, 0), BSI),
    ("6Gi", dec(6 * 1024**3, 0), BSI),
    ("5Ti", dec(5 * 1024**4, 0), BSI),
    ("4Pi", dec(4 * 1024**5, 0), BSI),
    ("3Ei", dec(3 * 1024**6, 0), BSI),
    ("10Ti", dec(10 * 1024**4, 0), BSI),
    ("100Ti", dec(100 * 1024**4, 0), BSI),
    ("5n", dec(5, -9), DSI),
    ("4u", dec(4, -6), DSI),
    ("3m", dec(3, -3), DSI),
    ("9", dec(9, 0), DSI),
    ("8k", dec(8, 3), DSI),
    ("50k", dec(5, 4), DSI),
    ("7M", dec(7, 6), DSI),
    ("6G", dec(6, 9), DSI),
    ("5T", dec(5, 12), DSI),
    ("40T", dec(4, 13), DSI),
    ("300T", dec(3, 14), DSI),
    ("2P", dec(2, 15), DSI),
    ("1E", dec(1, 18), DSI),
    ("1E-3", dec(1, -3), DEX),
    ("1e3", dec(1, 3), DEX),
    ("1E6", dec(1, 6), DEX),
    ("1e9", dec(1, 9), DEX),
    ("1E12", dec(1, 12), DEX),
    ("1e15", dec(1, 15), DEX),
    ("1E18", dec(1, 18), DEX),
    ("1e14", dec(1, 14), DEX),
    ("1e13", dec(1, 13), DEX),
    ("100.035k", dec(100035, 0), DSI),
    ("0.001", dec(1, -3), DSI),
    ("0.0005k", dec(5, -1), DSI),
    ("0.005", dec(5, -3), DSI),
    ("0.05", dec(5, -2), DSI),
    ("0.5", dec(5, -1), DSI),
    ("0.00050k", dec(5, -1), DSI),
    ("0.00500", dec(5, -3), DSI),
    ("0.05000", dec(5, -2), DSI),
    ("0.50000", dec(5, -1), DSI),
    ("0.5e0", dec(5, -1), DEX),
    ("0.5e-1", dec(5, -2), DEX),
    ("0.5e-2", dec(5, -3), DEX),
    ("10.035M", dec(10035, 3), DSI),
    ("1.2e3", dec(12, 2), DEX),
    ("1.3E+6", dec(13, 5), DEX),
    ("1.40e9", dec(14, 8), DEX),
    ("1.53E12", dec(153, 10), DEX),
    ("1.6e15", dec(16, 14), DEX),
    ("1.7E18", dec(17, 17), DEX),
    ("9.01", dec(901, -2), DSI),
    ("8.1k", dec(81, 2), DSI),
    ("7.123456M", dec(7123456, 0), DSI),
    ("6.987654321G", dec(6987654321, 0), DSI),
    ("5.444T", dec(5444, 9), DSI),
    ("40.1T", dec(401, 11), DSI),
    ("300.2T", dec(3002, 11), DSI),
    ("2.5P", dec(25, 14), DSI),
    ("1.01E", dec(101, 16), DSI),
    # things that saturate/round
    ("3.001n", dec(4, -9), DSI),
    ("1.1E-9", dec(2, -9), DEX),
    ("0.0000000001", dec(1, -9), DSI),
    ("0.0000000005", dec(1, -9), DSI),
    ("0.00000000050", dec(1, -9), DSI),
    ("0.5e-9", dec(1, -9), DEX),
    ("0.9n", dec(1, -9), DSI),
    ("0.00000012345", dec(124, -9), DSI),
    ("0.00000012354", dec(124, -9), DSI),
    ("9Ei", Fraction(MAX_INT64), BSI),
    ("9223372036854775807Ki", Fraction(MAX_INT64), BSI),
    ("12E", dec(12, 18), DSI),
    # fractional binary
    ("100.035Ki", dec(10243584, -2), BSI),
    ("0.5Mi", dec(512 * 1024, 0), BSI),
    ("0.05Gi", dec(536870912, -1), BSI),
    ("0.025Ti", dec(274877906944, -1), BSI),
    # "things written by trolls"
    ("0.000000000001Ki", dec(2, -9), DSI),  # rounds up, changes format
    (".001", dec(1, -3), DSI),
    (".0001k", dec(100, -3), DSI),
    ("1.", dec(1, 0), DSI),
    ("1.G", dec(1, 9), DSI),
]


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_TABLE)
def test_parse_table_upstream(text: str, value: Fraction, fmt: Format) -> None:
    q = Quantity.parse(text)
    assert q.value == value
    assert q.format is fmt


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_TABLE)
def test_parse_table_signed_upstream(text: str, value: Fraction, fmt: Format) -> None:
    # upstream TestQuantityParse also parses "-"+input and "+"+input
    neg = Quantity.parse("-" + text)
    assert neg.value == -value
    assert neg.format is fmt
    pos = Quantity.parse("+" + text)
    assert pos.value == value
    assert pos.format is fmt


@pytest.mark.parametrize(
    "text",
    # upstream TestQuantityParse "invalid" list, plus the empty string
    ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "],
)
def test_parse_invalid_upstream(text: str) -> None:
    with pytest.raises(ValueError):
        Quantity.parse(text)


def test_parse_error_messages_are_upstreams() -> None:
    with pytest.raises(QuantityError) as e:
        Quantity.parse("1.1.M")
    assert str(e.value) == ErrFormatWrong
    assert "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'" in str(e.value)
    with pytest.raises(QuantityError) as e:
        Quantity.parse("1KK")  # suffix characters, but no such suffix
    assert str(e.value) == ErrSuffix
    with pytest.raises(QuantityError):
        Quantity.parse("１")  # a non-ASCII digit is not a digit upstream
    with pytest.raises(QuantityError):
        Quantity.parse("1_000")


@pytest.mark.parametrize(
    ("text", "positive", "num", "denom", "suffix"),
    # upstream TestParseQuantityString: these decompose without error
    [("0.025Ti", True, "0", "025", "Ti"), (".", True, "0", "", ""), ("-.", False, "0", "", "")],
)
def test_scan_upstream(text: str, positive: bool, num: str, denom: str, suffix: str) -> None:
    from drasched.quantity import _scan

    assert _scan(text) == (positive, num, denom, suffix)


def test_lone_dot_parses_as_zero_upstream() -> None:
    # parseQuantityString accepts "." and "-." (TestParseQuantityString), so they parse as 0
    assert Quantity.parse(".").is_zero()
    assert str(Quantity.parse("-.")) == "0"
    assert Quantity.parse("0.025Ti").value == dec(25, -3) * 2**40


# upstream TestQuantityString: (value, format, expected canonical, alternate spelling)
STRING_TABLE = [
    (dec(1024**3, 0), BSI, "1Gi", "1024Mi"),
    (dec(300 * 1024**2, 0), BSI, "300Mi", "307200Ki"),
    (dec(6 * 1024, 0), BSI, "6Ki", ""),
    (dec(1001 * 1024**3, 0), BSI, "1001Gi", "1025024Mi"),
    (dec(1024**4, 0), BSI, "1Ti", "1024Gi"),
    (dec(5, 0), BSI, "5", "5000m"),
    (dec(500, -3), BSI, "500m", "0.5"),
    (dec(1, 9), DSI, "1G", "1000M"),
    (dec(1000, 6), DSI, "1G", "0.001T"),
    (dec(1000000, 3), DSI, "1G", ""),
    (dec(1000000000, 0), DSI, "1G", ""),
    (dec(1, -3), DSI, "1m", "1000u"),
    (dec(80, -3), DSI, "80m", ""),
    (dec(1080, -3), DSI, "1080m", "1.08"),
    (dec(108, -2), DSI, "1080m", "1080000000n"),
    (dec(10800, -4), DSI, "1080m", ""),
    (dec(300, 6), DSI, "300M", ""),
    (dec(1, 12), DSI, "1T", ""),
    (dec(1, 18), DSI, "1E", ""),
    (dec(1, 21), DSI, "1e21", "1000E"),
    (dec(5, 21), DSI, "5e21", "5000E"),
    (dec(1, 24), DSI, "1e24", "1000000E"),
    (dec(1234567, 6), DSI, "1234567M", ""),
    (dec(1234567, -3), BSI, "1234567m", ""),
    (dec(3, 3), DSI, "3k", ""),
    (dec(1025, 0), BSI, "1025", ""),
    (dec(0, 0), DSI, "0", ""),
    (dec(0, 0), BSI, "0", ""),
    (dec(1, 9), DEX, "1e9", ".001e12"),
    (dec(1, -3), DEX, "1e-3", "0.001e0"),
    (dec(1, -9), DEX, "1e-9", "1000e-12"),
    (dec(80, -3), DEX, "80e-3", ""),
    (dec(300, 6), DEX, "300e6", ""),
    (dec(1, 12), DEX, "1e12", ""),
    (dec(1, 3), DEX, "1e3", ""),
    (dec(3, 3), DEX, "3e3", ""),
    (dec(0, 0), DEX, "0", "00"),
    (dec(1, -9), DSI, "1n", ""),
    (dec(80, -9), DSI, "80n", ""),
    (dec(1080, -9), DSI, "1080n", ""),
    (dec(108, -8), DSI, "1080n", ""),
    (dec(10800, -10), DSI, "1080n", ""),
    (dec(1, -6), DSI, "1u", ""),
    (dec(80, -6), DSI, "80u", ""),
    (dec(1080, -6), DSI, "1080u", ""),
]


@pytest.mark.parametrize(("value", "fmt", "expect", "alternate"), STRING_TABLE)
def test_string_table_upstream(value: Fraction, fmt: Format, expect: str, alternate: str) -> None:
    q = Quantity._make(value, fmt, None)
    assert str(q) == expect
    assert str(Quantity.parse(expect)) == expect
    if alternate:
        assert str(Quantity.parse(alternate)) == expect
    if value:
        assert str(-q) == "-" + expect


@pytest.mark.parametrize(
    ("text", "expect"),
    # upstream TestQuantityParseEmit
    [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
    ],
)
def test_parse_emit_upstream(text: str, expect: str) -> None:
    assert str(Quantity.parse(text)) == expect
    assert str(Quantity.parse("-" + text)) == "-" + expect


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        # the brief's examples, each following the upstream rules above
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1000m", "1"),
        ("1e3", "1e3"),
        ("12e6", "12e6"),
        ("100k", "100k"),
        ("1000000", "1M"),
        ("1e-12", "1e-9"),
        ("0.1n", "1n"),
        ("-0.1n", "-1n"),
        ("0", "0"),
        ("-0", "0"),
        ("0.0", "0"),
        ("5e-12", "1e-9"),
        ("1.5", "1500m"),
        ("1.2345", "1234500u"),  # quantity.go doc comment
        ("18446744073709551616", "18446744073709551616"),  # decimals are not capped
        ("1e100", "10e99"),  # exponent made a multiple of 3, as AsCanonicalBytes does
        ("1e99", "1e99"),
        ("1e-100", "1e-9"),
        ("8Ei", "9223372036854775807"),  # binary capped at 2^63-1, as documented upstream
        # the fast parse path caches an already-canonical-looking input verbatim
        ("+1", "+1"),
        ("1E3", "1E3"),
        ("007k", "007k"),
        ("1.500", "1.500"),
        ("1Ki", "1Ki"),
        ("+1Ki", "+1Ki"),
    ],
)
def test_canonical_form(text: str, expect: str) -> None:
    assert str(Quantity.parse(text)) == expect


@pytest.mark.parametrize(
    ("x", "y", "expect"),
    # upstream TestQuantityCmp
    [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1)],
)
def test_cmp_upstream(x: str, y: str, expect: int) -> None:
    a, b = Quantity(x), Quantity(y)
    assert a.compare(b) == expect
    assert b.compare(a) == -expect
    assert (a < b) == (expect < 0)
    assert (a > b) == (expect > 0)
    assert (a == b) == (expect == 0)
    assert (a <= b) == (expect <= 0)
    assert (a >= b) == (expect >= 0)


def test_equal_is_by_value_and_hash_agrees() -> None:
    assert Quantity("1Gi") == Quantity("1024Mi") == Quantity("1073741824")
    assert hash(Quantity("1Gi")) == hash(Quantity("1073741824"))
    assert len({Quantity("1"), Quantity("1000m"), Quantity("1e0")}) == 1
    assert sorted([Quantity("2"), Quantity("1Ki"), Quantity("1m")]) == [
        Quantity("1m"),
        Quantity("2"),
        Quantity("1Ki"),
    ]
    assert Quantity("1") != 1  # no implicit number comparison


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_add_sub_zero_preserves_suffix_upstream(text: str) -> None:
    # upstream TestQuantityAddZeroPreservesSuffix / TestQuantitySubZeroPreservesSuffix
    zero, v = Quantity("0"), Quantity(text)
    assert str(v + zero) == text
    assert str(zero + v) == text
    assert str(v - zero) == text
    assert str(zero - v) == str(-v) == "-" + text


def test_add_keeps_left_format_upstream() -> None:
    assert str(Quantity("1Gi") + Quantity("1G")) == "2073741824"  # binary, not a multiple of 1Ki
    assert str(Quantity("1Gi") + Quantity("1Gi")) == "2Gi"
    assert str(Quantity("1G") + Quantity("1Gi")) == "2073741824"
    assert (Quantity("1G") + Quantity("24Mi")).format is DSI
    assert str(Quantity("1e3") + Quantity("1k")) == "2e3"
    assert str(Quantity("500m") + Quantity("500m")) == "1"
    assert str(Quantity("1") - Quantity("1500m")) == "-500m"


@pytest.mark.parametrize(
    ("value", "fmt", "expect", "exact"),
    # upstream TestMilliNewSet (the "invalid format" row is DecimalExponent here)
    [
        (1, DSI, "1m", True),
        (1000, DSI, "1", True),
        (1234000, DSI, "1234", True),
        (1024, BSI, "1024m", False),
        (1000000, DEX, "1e3", True),
        (1024 * 1024, BSI, "1048576m", False),
    ],
)
def test_from_milli_upstream(value: int, fmt: Format, expect: str, exact: bool) -> None:
    q = Quantity.from_milli(value, fmt)
    assert str(q) == expect
    if exact:
        assert Quantity.parse(str(q)).milli_value() == value


@pytest.mark.parametrize(
    ("value", "fmt", "expect"),
    # upstream TestNewSet
    [
        (1, DSI, "1"),
        (1000, DSI, "1k"),
        (1234000, DSI, "1234k"),
        (1024, BSI, "1Ki"),
        (1000000, DEX, "1e6"),
        (1024 * 1024, BSI, "1Mi"),
    ],
)
def test_from_int_upstream(value: int, fmt: Format, expect: str) -> None:
    q = Quantity.from_int(value, fmt)
    assert str(q) == expect
    assert Quantity.parse(str(q)).value_int() == value


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    # Value()/MilliValue() round away from zero (upstream TestQuantityRoundUp semantics)
    [
        ("9.01", 10, 9010),
        ("-9.01", -10, -9010),
        ("1m", 1, 1),
        ("0.1m", 1, 1),
        ("-0.1m", -1, -1),
        ("1Gi", 1 << 30, (1 << 30) * 1000),
        ("0", 0, 0),
        ("1.5", 2, 1500),
    ],
)
def test_value_and_milli_value(text: str, value: int, milli: int) -> None:
    q = Quantity(text)
    assert q.value_int() == value
    assert q.milli_value() == milli


def test_is_integer_follows_upstream_asint64() -> None:
    # CEL isInteger() is AsInt64(): true only for upstream's scaled-int64 form at scale >= 0.
    assert Quantity("1").is_integer()
    assert Quantity("50k").is_integer()
    assert Quantity("50.703k").is_integer()
    assert Quantity("1Gi").is_integer()
    assert not Quantity("50m").is_integer()
    assert not Quantity("1000m").is_integer()  # int64Amount{1000, -3}
    assert not Quantity("1.5Gi").is_integer()  # parsed through inf.Dec
    assert not Quantity("9999999999999999999999").is_integer()
    assert not Quantity("100E").is_integer()  # 1e20 overflows int64
    assert Quantity("9E").as_int64() == 9 * 10**18
    assert (Quantity("1") + Quantity("1Gi")).as_int64() == (1 << 30) + 1
    assert (Quantity("1") + Quantity("1m")).as_int64() is None  # scale -3
    assert (Quantity("500m") + Quantity("500m")).as_int64() is None  # still scale -3 upstream


def test_as_approximate_float() -> None:
    assert Quantity("1.5").as_approximate_float() == 1.5
    assert Quantity("1Ki").as_approximate_float() == 1024.0
    assert Quantity("-1m").as_approximate_float() == -0.001
    assert Quantity("1e400").as_approximate_float() == float("inf")


def test_is_zero_sign_neg() -> None:
    assert Quantity("0Ki").is_zero()
    assert not Quantity("0m") and Quantity("1n")
    assert not Quantity("1n").is_zero()
    assert Quantity("-1").sign() == -1 and Quantity("0").sign() == 0 and Quantity("2").sign() == 1
    # upstream TestQuantityNeg
    assert str(-Quantity("9.01")) == "-9010m"


def test_immutable_hashable_and_cached() -> None:
    q = Quantity("1Gi")
    with pytest.raises(AttributeError):
        q.value = Fraction(1)  # type: ignore[misc]
    assert Quantity.parse("1Gi") is Quantity.parse("1Gi")
    assert copy.deepcopy(q) is q
    r = pickle.loads(pickle.dumps(q))
    assert r == q and str(r) == "1Gi" and r.format is BSI
    assert repr(q) == "Quantity('1Gi')"


def test_parse_numbers() -> None:
    assert str(Quantity.parse(3)) == "3"
    assert str(Quantity.parse(1.5)) == "1500m"
    assert Quantity.parse(Quantity("1Ki")) == Quantity("1024")
    with pytest.raises(ValueError):
        Quantity.parse(float("nan"))
    with pytest.raises(ValueError):
        Quantity.parse(True)


def test_huge_exponent_is_rejected_not_hung() -> None:
    with pytest.raises(ValueError):
        Quantity.parse("1e999999999")
    assert str(Quantity.parse("1e-999999999")) == "1e-9"
