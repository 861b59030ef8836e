"""The Kubernetes IP, CIDR and URLs CEL libraries, and the cost estimate of them and of ext.Strings.

Cases are ported from k8s.io/apiserver/pkg/cel/library ip_test.go (TestIP), cidr_test.go
(TestCIDR), the examples in urls.go's doc comment, and cost_test.go (TestIPCost, TestCIDRCost,
TestIPIsCanonicalCost, TestURLsCost, TestStringLibrary). Where a case depends on DRA's own
environment (attribute sizes, MaxCost), the expected value is what
k8s.io/dynamic-resource-allocation/cel v0.37.2 CompileCELExpression reports, run offline.
"""

from __future__ import annotations

from typing import Any

import pytest

from drasched.cel import CELCompileError, compile_selector, device_view_from_slice_device
from drasched.cel.ast import parse
from drasched.cel.checker import Checker
from drasched.cel.compiler import COST_LIMIT, compile_expression
from drasched.cel.cost import estimate_cost
from drasched.cel.runtime import EvalError
from drasched.cel.validate import selector_errors


def ev(expr: str) -> Any:
    return compile_expression(expr)(None)


def cost(expr: str) -> float:
    checker = Checker()
    root, _ = checker.check(parse(expr), {})
    return estimate_cost(root, checker.info)


def cases(*rows: tuple[str, Any]) -> Any:
    return pytest.mark.parametrize(("expr", "expected"), rows, ids=[r[0][:70] for r in rows])


# ----------------------------------------------------------------------------- ip_test.go TestIP


@cases(
    ('string(ip("192.168.0.1"))', "192.168.0.1"),
    ('isIP("192.168.0.1")', True),
    ('isIP("192.168.0.1.0")', False),
    ('ip.isCanonical("127.0.0.1")', True),
    ('ip("192.168.0.1").family()', 4),
    ('ip("0.0.0.0").isUnspecified()', True),
    ('ip("127.0.0.1").isUnspecified()', False),
    ('ip("127.0.0.1").isLoopback()', True),
    ('ip("1.2.3.4").isLoopback()', False),
    ('ip("224.0.0.1").isLinkLocalMulticast()', True),
    ('ip("224.0.1.1").isLinkLocalMulticast()', False),
    ('ip("169.254.169.254").isLinkLocalUnicast()', True),
    ('ip("192.168.0.1").isLinkLocalUnicast()', False),
    ('ip("192.168.0.1").isGlobalUnicast()', True),
    ('ip("255.255.255.255").isGlobalUnicast()', False),
    ('string(ip("2001:db8::68"))', "2001:db8::68"),
    ('isIP("2001:db8::68")', True),
    ('isIP("2001:db8:::68")', False),
    ('ip.isCanonical("2001:db8::68")', True),
    ('ip.isCanonical("2001:DB8::68")', False),
    ('ip.isCanonical("2001:db8::0:0:0:abcd")', False),  # ip.go doc comment
    ('ip("2001:db8::68").family()', 6),
    ('ip("::").isUnspecified()', True),
    ('ip("::1").isUnspecified()', False),
    ('ip("::1").isLoopback()', True),
    ('ip("2001:db8::abcd").isLoopback()', False),
    ('ip("ff02::1").isLinkLocalMulticast()', True),
    ('ip("fd00::1").isLinkLocalMulticast()', False),
    ('ip("fe80::1").isLinkLocalUnicast()', True),
    ('ip("fd80::1").isLinkLocalUnicast()', False),
    ('ip("2001:db8::abcd").isGlobalUnicast()', True),
    ('ip("ff00::1").isGlobalUnicast()', False),
    ('type(ip("192.168.0.1")) == net.IP', True),
    ('ip("192.168.0.1") == ip("192.168.0.1")', True),
    ('ip("::1") == ip("0:0:0:0:0:0:0:1")', True),
    ('ip("10.0.0.1") == ip("10.0.0.2")', False),
    # netip.ParseAddr's stricter rules, which Python's ipaddress does not share
    ('isIP("01.2.3.4")', False),
    ('isIP("::ffff:1.2.3.4")', False),
    ('isIP("fe80::1%eth0")', False),
    ('string(ip("1:0:0:2:0:0:0:3"))', "1:0:0:2::3"),
    ('string(ip("::1.2.3.4"))', "::102:304"),
)
def test_ip_library(expr: str, expected: Any) -> None:
    assert ev(expr) == expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ('ip("192.168.0.1.0")', 'IP Address "192.168.0.1.0" parse error during conversion from string: '
                                'ParseAddr("192.168.0.1.0"): IPv4 address too long'),
        ('ip.isCanonical("127.0.0.1.0")', 'IP Address "127.0.0.1.0" parse error during conversion from string: '
                                          'ParseAddr("127.0.0.1.0"): IPv4 address too long'),
        ('ip("2001:db8:::68")', 'IP Address "2001:db8:::68" parse error during conversion from string: '
                                'ParseAddr("2001:db8:::68"): each colon-separated field must have at least one '
                                'digit (at ":68")'),
        ('ip("::ffff:1.2.3.4")', 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
        ('ip("fe80::1%eth0")', 'IP address "fe80::1%eth0" with zone value is not allowed'),
        ('ip("01.2.3.4")', 'IP Address "01.2.3.4" parse error during conversion from string: '
                           'ParseAddr("01.2.3.4"): IPv4 field has octet with leading zero'),
    ],
)
def test_ip_errors_are_upstreams(expr: str, message: str) -> None:
    with pytest.raises(EvalError) as e:
        ev(expr)
    assert str(e.value) == message


def test_passing_a_cidr_to_is_ip_is_a_compile_error() -> None:
    with pytest.raises(CELCompileError, match=r"found no matching overload for 'isIP' applied to '\(net.CIDR\)'"):
        ev('isIP(cidr("192.168.0.0/24"))')


# ----------------------------------------------------------------------------- cidr_test.go TestCIDR


@cases(
    ('string(cidr(dyn("192.168.0.0/24")))', "192.168.0.0/24"),
    ('cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))', True),
    ('cidr("192.168.0.0/24").containsIP(ip("192.168.1.1"))', False),
    ('cidr("192.168.0.0/24").containsIP("192.168.0.1")', True),
    ('cidr("192.168.0.0/24").containsIP("192.168.1.1")', False),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25"))', True),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23"))', False),
    ('cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")', True),
    ('cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23")', False),
    ('cidr("192.168.0.0/24").ip() == ip("192.168.0.0")', True),
    ('cidr("192.168.0.0/24").masked() == cidr("192.168.0.0/24")', True),
    ('cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24")', True),
    ('cidr("192.168.0.0/24").prefixLength()', 24),
    ('string(cidr("2001:db8::/32"))', "2001:db8::/32"),
    ('cidr("2001:db8::/32").containsIP(ip("2001:db8::1"))', True),
    ('cidr("2001:db8::/32").containsIP(ip("2001:dc8::1"))', False),
    ('cidr("2001:db8::/32").containsIP("2001:db8::1")', True),
    ('cidr("2001:db8::/32").containsIP("2001:dc8::1")', False),
    ('cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33"))', True),
    ('cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/31"))', False),
    ('cidr("2001:db8::/32").containsCIDR("2001:db8::/33")', True),
    ('cidr("2001:db8::/32").containsCIDR("2001:db8::/31")', False),
    ('cidr("2001:db8::/32").ip() == ip("2001:db8::")', True),
    ('cidr("2001:db8::/32").masked() == cidr("2001:db8::/32")', True),
    ('cidr("2001:db8:1::/32").masked() == cidr("2001:db8::/32")', True),
    ('cidr("2001:db8::/32").prefixLength()', 32),
    ('string(cidr("192.168.0.0/24"))', "192.168.0.0/24"),
    ('type(cidr("192.168.0.0/24")) == net.CIDR', True),
    # cidr.go doc comment: a CIDR equals its masked form only when already canonical
    ('cidr("192.168.0.1/24") == cidr("192.168.0.1/24").masked()', False),
    ('cidr("192.168.0.1/24").ip().family()', 4),
    # apiserver v0.37 cidrContainsCIDR: Overlaps and a prefix no shorter (different families never)
    ('cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")', True),
    ('cidr("10.1.2.3/8").containsCIDR("10.9.0.0/16")', True),
    ('cidr("10.0.0.0/8").containsCIDR("::/0")', False),
    ('cidr("::/0").containsIP("1.2.3.4")', False),
    ('isCIDR("192.168.0.0/33")', False),
    ('isCIDR("::1/128")', True),
    ('isCIDR("192.168.0.0/024")', False),
)
def test_cidr_library(expr: str, expected: Any) -> None:
    assert ev(expr) == expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ('cidr("192.168.0.0/")', 'network address parse error during conversion from string: network address parse '
                                 'error during conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits '
                                 'after slash: ""'),
        ('cidr("2001:db8::/")', 'network address parse error during conversion from string: network address parse '
                                'error during conversion from string: netip.ParsePrefix("2001:db8::/"): bad bits '
                                'after slash: ""'),
        ('cidr("::ffff:1.2.3.4/120")', 'network address parse error during conversion from string: IPv4-mapped IPv6 '
                                       'address "::ffff:1.2.3.4/120" is not allowed'),
        # cidrContainsIP drops the parse error of its string argument
        ('cidr("10.0.0.0/8").containsIP("bad")', "no such overload"),
    ],
)
def test_cidr_errors_are_upstreams(expr: str, message: str) -> None:
    with pytest.raises(EvalError) as e:
        ev(expr)
    assert str(e.value) == message


def test_cidr_of_an_int_is_a_compile_error() -> None:
    with pytest.raises(CELCompileError, match=r"found no matching overload for 'cidr' applied to '\(int\)'"):
        ev("cidr(192168)")


# ----------------------------------------------------------------------------- urls.go examples


@cases(
    ('isURL("https://user:pass@example.com:80/path?query=val#fragment")', True),
    ('isURL("/absolute-path")', True),
    ('isURL("https://a:b:c/")', False),
    ('isURL("../relative-path")', False),
    ('url("/path").getScheme()', ""),
    ('url("https://example.com/").getScheme()', "https"),
    ('url("https://example.com:80/").getHost()', "example.com:80"),
    ('url("https://example.com/").getHost()', "example.com"),
    ('url("https://[::1]:80/").getHost()', "[::1]:80"),
    ('url("https://[::1]/").getHost()', "[::1]"),
    ('url("/path").getHost()', ""),
    ('url("https://example.com:80/").getHostname()', "example.com"),
    ('url("https://127.0.0.1:80/").getHostname()', "127.0.0.1"),
    ('url("https://[::1]:80/").getHostname()', "::1"),
    ('url("/path").getHostname()', ""),
    ('url("https://example.com:80/").getPort()', "80"),
    ('url("https://example.com/").getPort()', ""),
    ('url("/path").getPort()', ""),
    ('url("https://example.com/path").getEscapedPath()', "/path"),
    ('url("https://example.com/path with spaces/").getEscapedPath()', "/path%20with%20spaces/"),
    ('url("https://example.com").getEscapedPath()', ""),
    ('url("https://example.com/path?k1=a&k2=b&k2=c").getQuery()', {"k1": ["a"], "k2": ["b", "c"]}),
    ('url("https://example.com/path?key with spaces=value with spaces").getQuery()',
     {"key with spaces": ["value with spaces"]}),
    ('url("https://example.com/path?").getQuery()', {}),
    ('url("https://example.com/path").getQuery()', {}),
    # url.URL.String() decides equality: the scheme is lowered, a valid RawPath kept
    ('url("HTTP://example.com/~foo") == url("http://example.com/~foo")', True),
    ('url("http://example.com/%7Efoo") == url("http://example.com/~foo")', False),
    ('url("http://h/p#a") == url("http://h/p#b")', False),
    ('url("http://h/a?x=1;y=2").getQuery()', {}),
)
def test_urls_library(expr: str, expected: Any) -> None:
    assert ev(expr) == expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ('url("../relative-path")',
         'URL parse error during conversion from string: parse "../relative-path": invalid URI for request'),
        ('url("https://a:b:c/")',
         'URL parse error during conversion from string: parse "https://a:b:c/": invalid port ":b:c" after host'),
        ('url("")', 'URL parse error during conversion from string: parse "": empty url'),
        ('url("http://example.com/%zz")',
         'URL parse error during conversion from string: parse "http://example.com/%zz": invalid URL escape "%zz"'),
    ],
)
def test_url_errors_are_upstreams(expr: str, message: str) -> None:
    with pytest.raises(EvalError) as e:
        ev(expr)
    assert str(e.value) == message


def test_url_has_no_string_conversion_as_upstream() -> None:
    with pytest.raises(CELCompileError, match=r"found no matching overload for 'string' applied to"):
        ev('string(url("/x"))')


# ----------------------------------------------------------------------------- selectors


NIC = device_view_from_slice_device(
    "nic.example.com",
    {"name": "eth1", "attributes": {"ipv4": {"string": "10.1.2.3"}, "endpoint": {"string": "https://10.1.2.3:8443/m"}}},
)
OTHER = device_view_from_slice_device(
    "nic.example.com",
    {"name": "eth2", "attributes": {"ipv4": {"string": "192.168.0.7"}, "endpoint": {"string": "https://x:80/m"}}},
)
SUBNET_SELECTOR = (
    'isIP(device.attributes["nic.example.com"].ipv4) && '
    'cidr("10.0.0.0/8").containsIP(device.attributes["nic.example.com"].ipv4) && '
    'url(device.attributes["nic.example.com"].endpoint).getPort() == "8443"'
)


def test_subnet_selector_from_upstream_is_accepted_and_selects() -> None:
    assert selector_errors(SUBNET_SELECTOR) == []
    sel = compile_selector(SUBNET_SELECTOR)
    assert sel.max_cost == 40  # dynamic-resource-allocation v0.37.2 MaxCost
    assert sel.evaluate(NIC) is True
    assert sel.evaluate(OTHER) is False


# ----------------------------------------------------------------------------- cost


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # cost_test.go TestIPCost / TestIPIsCanonicalCost: parsing costs 0.1 per character
        ("ip('192.168.0.1')", 2),
        ("ip('2001:db8:3333:4444:5555:6666:7777:8888')", 4),
        ("ip('192.168.0.1').family()", 3),
        ("ip('2001:db8:3333:4444:5555:6666:7777:8888').isGlobalUnicast()", 5),
        ("ip('192.168.0.1') == ip('192.168.0.1')", 5),
        ("ip.isCanonical('192.168.0.1')", 3),
        ("ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", 8),
        # TestCIDRCost (the estimate's maximum)
        ("cidr('192.168.0.0/16')", 2),
        ("cidr('192.168.0.0/16').prefixLength()", 3),
        ("cidr('192.168.0.0/16').ip()", 3),
        ("cidr('192.168.0.0/16') == cidr('2001:db8::/32')", 5),
        ("cidr('192.168.0.0/16').containsCIDR(cidr('192.0.0.0/30'))", 11),
        ("cidr('192.168.0.0/16').containsCIDR('192.0.0.0/30')", 11),
        ("cidr('192.168.0.0/16').containsIP(ip('192.0.0.1'))", 7),
        ("cidr('192.168.0.0/16').containsIP('192.169.169.250')", 8),
        ("cidr('2001:db8::/32').containsIP('2001:db8:3333:4444:5555:6666:7777:8888')", 10),
        # TestURLsCost
        ("url('https:://kubernetes.io/').getHost()", 4),
        ("url('https:://kubernetes.io/') == url('https:://kubernetes.io/')", 9),
        ("url('https:://kubernetes.io/') == url('http://x.b')", 5),
        # TestStringLibrary (literal sizes, so DRA's estimate is the same)
        ("'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3),
        ("'abc 123 def 123'.replace('123', '456')", 3),
        ("'abc 123 def 123'.split(' ')", 3),
        ("'abc 123 def 123'.split(' ', 1)", 3),
        ("'abc 123 def 123'.substring(5)", 2),
        ("'  abc 123 def 123  '.trim()", 2),
        ("strings.quote('ABCDEFGHIJ abcdefghij')", 3),
    ],
)
def test_cost_estimate_matches_kubernetes(expr: str, expected: float) -> None:
    assert cost(expr) == expected


ATTR = 'device.attributes["nic.example.com"].model'


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # dynamic-resource-allocation v0.37.2 MaxCost of these selectors (64-character attributes)
        (f'{ATTR}.split("-").size() == 3', 19),
        (f'{ATTR}.split("-")[0] == "a100"', 19),
        (f'{ATTR}.split("-", 2).size() == 2', 19),
        (f'{ATTR}.lowerAscii() == "x"', 12),
        (f'{ATTR}.replace("-", "_") == "x"', 18),
        (f'{ATTR}.replace("", "__") == "x"', 18),
        (f'{ATTR}.trim() == "x"', 12),
        (f'{ATTR}.substring(1) == "x"', 12),
        (f'{ATTR}.indexOf("-") > 0', 12),
        (f'{ATTR}.charAt(1) == "x"', 6),
        (f'strings.quote({ATTR}) == "x"', 12),
        ('"%s-%d".format(["a", 1]) == "a-1"', 12),
        ('quantity("1") == quantity("2")', 3),
        ('dyn("a") == "a"', 2),
        ('device.driver.size() > 3', 4),
        ('isURL(device.attributes["nic.example.com"].endpoint)', 5),
        ('url(device.attributes["nic.example.com"].endpoint) == url("https://10.1.2.3:8443/metrics")', 17),
        ('url("https://10.1.2.3:8443/metrics") == url(device.attributes["nic.example.com"].endpoint)', 21),
        ('ip(device.attributes["nic.example.com"].ipv4) == ip("10.1.2.3")', 13),
        ('ip.isCanonical(device.attributes["nic.example.com"].ipv4)', 17),
        # string() of an attribute value may be bytes_to_string: one traversal, the size kept
        ("ip(string(device.attributes['nic.example.com'].ipv4)) == ip('10.1.2.3')", 20),
    ],
)
def test_selector_cost_matches_dra(expr: str, expected: float) -> None:
    assert compile_selector(expr).max_cost == expected


@pytest.mark.parametrize(
    "expr",
    [
        # library/cost.go join multiplies the list's size by its elements' size, which DRA's size
        # estimator cannot bound for a literal or split() list: upstream's MaxCost is ~1.8e18.
        '["a","b"].join(",") == "a,b"',
        f'{ATTR}.split("-").join("_") == "a100_sxm4_80gb"',
        # only == has a fixed price for these types; != is sized, and their size is unknown
        'ip(device.attributes["nic.example.com"].ipv4) != ip("10.1.2.3")',
        'cidr("10.0.0.0/8") != cidr("10.0.0.0/8")',
        'quantity("1") != quantity("2")',
        # an IP parsed from a string of unknown size (string(string) keeps no size in cel-go)
        "ip(string(device.driver)) == ip('10.1.2.3')",
    ],
)
def test_selectors_upstream_estimates_as_unbounded_are_forbidden(expr: str) -> None:
    assert compile_selector(expr).max_cost > COST_LIMIT
    assert [e.reason for e in selector_errors(expr)] == ["FieldValueForbidden"]


def test_format_arguments_may_mix_types_as_in_cel_go() -> None:
    # cel-go exempts format()'s arguments from the homogeneous aggregate literal check
    assert ev('"%s-%d".format(["a", 1])') == "a-1"
    assert ev('"%s".format([[1, "a"]])') == '[1, "a"]'
    with pytest.raises(CELCompileError, match="expected type 'int' but found 'string'"):
        ev('[1, "a"].size()')
