"""Device selectors are compiled when a DeviceClass, ResourceClaim or ResourceClaimTemplate is
written, and refused alike by the memory store and a real kube-apiserver.

Upstream: pkg/apis/resource/validation validateCELSelector (CELSelectorExpressionMaxLength,
CELSelectorExpressionMaxCost = 1,000,000, "too complex, exceeds cost limit") on top of
k8s.io/dynamic-resource-allocation/cel CompileCELExpression ("compilation failed: ...",
"must evaluate to bool or the unknown type, not ...").
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import Invalid
from drasched.store.base import ClusterStore, Obj

GOOD = 'device.driver == "gpu.example.com"'
FIVE_HUNDRED = "[" + ",".join(str(i) for i in range(500)) + "]"
TOO_COSTLY = f"{FIVE_HUNDRED}.map(x, {FIVE_HUNDRED}.map(y, {FIVE_HUNDRED})).size() > 0"


def _selectors(expression: str) -> list[Obj]:
    return [{"cel": {"expression": expression}}]


def device_class(name: str, expression: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": _selectors(expression)},
    }


def _claim_spec(expression: str, first_available: bool) -> Obj:
    body: dict[str, Any] = {"deviceClassName": "gpu.example.com", "selectors": _selectors(expression)}
    if first_available:
        request: Obj = {"name": "gpu", "firstAvailable": [{"name": "any", **body}]}
    else:
        request = {"name": "gpu", "exactly": {**body, "allocationMode": "ExactCount", "count": 1}}
    return {"devices": {"requests": [request]}}


def claim(ns: str, name: str, expression: str, first_available: bool = False) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": _claim_spec(expression, first_available),
    }


def claim_template(ns: str, name: str, expression: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": _claim_spec(expression, False)},
    }


CLASS_FIELD = "spec.selectors[0].cel.expression"
CLAIM_FIELD = "spec.devices.requests[0].exactly.selectors[0].cel.expression"
SUBREQUEST_FIELD = "spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression"
TEMPLATE_FIELD = "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression"


def _refusal(store: ClusterStore, obj: Obj) -> tuple[str, str]:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    assert e.value.code == 422
    (cause,) = [c for c in e.value.causes if c.field.endswith("cel.expression")]
    return cause.field, cause.message


def test_type_error_in_a_class_selector_is_refused(store: ClusterStore) -> None:
    # Accepted, it would match no device and be reported as "0 free": a wrong diagnosis.
    name = "cel-type-error.example.com"
    field, message = _refusal(store, device_class(name, "device.driver == 1"))
    assert field == CLASS_FIELD
    assert message.startswith('Invalid value: "device.driver == 1": compilation failed: ERROR: <input>:1:15: ')
    assert "found no matching overload for '_==_' applied to '(string, int)'" in message


def test_non_bool_result_in_a_claim_is_refused(store: ClusterStore, ns: str) -> None:
    field, message = _refusal(store, claim(ns, "c", "device.driver"))
    assert field == CLAIM_FIELD
    assert message == 'Invalid value: "device.driver": must evaluate to bool or the unknown type, not string'


def test_syntax_error_in_a_subrequest_is_refused(store: ClusterStore, ns: str) -> None:
    field, message = _refusal(store, claim(ns, "c", "device.driver ==", first_available=True))
    assert field == SUBREQUEST_FIELD
    expected = 'Invalid value: "device.driver ==": compilation failed: ERROR: <input>:1:17: Syntax error'
    assert message.startswith(expected)


def test_regex_re2_cannot_run_is_refused(store: ClusterStore, ns: str) -> None:
    field, message = _refusal(store, claim(ns, "c", 'device.driver.matches("(a)\\\\1")'))
    assert field == CLAIM_FIELD
    assert "compilation failed" in message


def test_selector_over_the_cost_limit_is_forbidden(store: ClusterStore, ns: str) -> None:
    field, message = _refusal(store, claim_template(ns, "t", TOO_COSTLY))
    assert field == TEMPLATE_FIELD
    assert message == "Forbidden: too complex, exceeds cost limit"


def test_selector_over_10_kib_is_too_long(store: ClusterStore, ns: str) -> None:
    expression = GOOD + " " * (10 * 1024 - len(GOOD) + 1)
    field, message = _refusal(store, claim(ns, "c", expression))
    assert field == CLAIM_FIELD
    assert message == "Too long: may not be more than 10240 bytes"


def test_selectors_within_the_limits_are_accepted(store: ClusterStore, ns: str) -> None:
    bounded = 'device.attributes["gpu.example.com"].all(k, k.size() < 64) && ' + GOOD
    store.create(claim(ns, "c", bounded))
    store.create(claim(ns, "exactly-10-kib", GOOD + " " * (10 * 1024 - len(GOOD))))
    assert store.get(kinds.RESOURCE_CLAIM, "c", ns)["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0][
        "cel"
    ]["expression"] == bounded


# Messages as kube-apiserver 1.36.3 and 1.37.2 write them (cel-go's positions: an operator's token, a
# select's '.', a call's '('; ANTLR's syntax errors), checked word for word on both stores.
EXACT = [
    ('!-device.driver.size() == 1', "1:3: Syntax error: no viable alternative at input '-device'", 2),
    ("-!true", "1:2: Syntax error: no viable alternative at input '-!'", 1),
    ("!-1 == 1", "1:1: found no matching overload for '!_' applied to '(int)'", 0),
    ('true ? dyn(true) : false', None, 0),
    ('[device.attributes["gpu.example.com"].model, true][0]', "1:46: expected type 'any' but found 'bool'", 45),
    ('device.attributes["gpu.example.com"].model.exists(v, v == 1)',
     "1:37: expression of type 'any' cannot be range of a comprehension (must be list, map, or dynamic)", 36),
    ('"%d".format(["x"]) == "a"',
     '1:14: error during formatting: decimal clause can only be used on integers, was given string', 13),
    ('"%s %s".format([device.driver]) == "a"', '1:15: index 1 out of range', 14),
    ('device.driver.matches("(?=a)")', '1:23: invalid matches argument', 22),
    ('device.nope == "a"', "1:7: undefined field 'nope'", 6),
    ('device.driver.startsWith(1)', "1:25: found no matching overload for 'startsWith' applied to 'string.(int)'", 24),
    ('quantity(1).isInteger()', "1:9: found no matching overload for 'quantity' applied to '(int)'", 8),
    ('(device.driver', "1:15: Syntax error: missing ')' at '<EOF>'", 14),
    ('device.', "1:8: Syntax error: no viable alternative at input '.'", 7),
    ('device.attributes["a"].all(x, x.nope)', "1:32: type 'string' does not support field selection", 31),
    ('has(device.nope)', "1:4: undefined field 'nope'", 3),
    ('[1].all(1, true)', '1:9: argument must be a simple name', 8),
    ('device.driver in 1', "1:15: found no matching overload for '@in' applied to '(string, int)'", 14),
    ('-"a" == "b"', "1:1: found no matching overload for '-_' applied to '(string)'", 0),
    ('device.driver[0] == "a"', "1:14: found no matching overload for '_[_]' applied to '(string, int)'", 13),
    ('cel.bind(x, 1, y)', "1:16: undeclared reference to 'y' (in container '')", 15),
    ('semver("1.0.0").major() == 1u', "1:25: found no matching overload for '_==_' applied to '(int, uint)'", 24),
]


@pytest.mark.parametrize(("expression", "detail", "dots"), EXACT)
def test_compile_errors_word_for_word(store: ClusterStore, expression: str, detail: str | None, dots: int) -> None:
    field, message = _refusal(store, device_class("cel-exact.example.com", expression))
    assert field == CLASS_FIELD
    quoted = json.dumps(expression)
    if detail is None:  # the result type is dyn: only bool and google.protobuf.Any are allowed
        assert message == f"Invalid value: {quoted}: must evaluate to bool or the unknown type, not dyn"
        return
    assert message == (f"Invalid value: {quoted}: compilation failed: ERROR: <input>:{detail}\n"
                       f" | {expression}\n | {'.' * dots}^")


@pytest.mark.parametrize("expression", ['matches(device.driver, "(?=a)")', 'device.driver.find("(?=a)") == ""'])
def test_constant_regex_outside_the_validator_is_an_internal_error(store: ClusterStore, expression: str) -> None:
    field, message = _refusal(store, device_class("cel-internal.example.com", expression))
    assert field == CLASS_FIELD
    assert message == ("Internal error: program instantiation failed: error parsing regexp: "
                       "invalid or unsupported Perl syntax: `(?=`")


def test_format_of_an_attribute_value_is_refused(store: ClusterStore) -> None:
    # Attribute values are declared as google.protobuf.Any: "%s" cannot format them.
    expression = '"%s".format([device.attributes["gpu.example.com"].model]) == "a"'
    _, message = _refusal(store, device_class("cel-format.example.com", expression))
    assert ("<input>:1:50: error during formatting: string clause can only be used on strings, bools, bytes, "
            "ints, doubles, maps, lists, types, durations, and timestamps, was given google.protobuf.Any") in message


# Cost estimates at the edge of the limit (kube-apiserver 1.36.3 accepts the first, refuses the second).
def _ints(n: int) -> str:
    return "[" + ",".join(str(i) for i in range(n)) + "]"


COST_EDGES = [
    (f"{_ints(574)}.all(x, {_ints(574)}.all(y, true))", f"{_ints(577)}.all(x, {_ints(577)}.all(y, true))"),
    (f"{_ints(275)}.map(x, {_ints(275)}.map(y, y)).size() > 0",
     f"{_ints(277)}.map(x, {_ints(277)}.map(y, y)).size() > 0"),
    (f"{_ints(375)}.exists(x, {_ints(375)}.exists(y, y == x))",
     f"{_ints(380)}.exists(x, {_ints(380)}.exists(y, y == x))"),
    (f"{_ints(707)}.sort().size() > 0", f"{_ints(708)}.sort().size() > 0"),
    (f"{_ints(700)}.sortBy(x, x).size() > 0", f"{_ints(705)}.sortBy(x, x).size() > 0"),
    (f"{_ints(245)}.filter(x, {_ints(245)}.filter(y, y > x).size() > 0).size() > 0",
     f"{_ints(250)}.filter(x, {_ints(250)}.filter(y, y > x).size() > 0).size() > 0"),
    ('device.attributes["gpu.example.com"].all(a, device.attributes["gpu.example.com"].all(b, '
     'device.attributes["gpu.example.com"].all(c, true)))',
     'device.attributes["gpu.example.com"].all(a, device.attributes["gpu.example.com"].all(b, '
     'device.attributes["gpu.example.com"].all(c, device.attributes["gpu.example.com"].all(d, true))))'),
    ('device.attributes["gpu.example.com"].model.join(",") == "a"', '["a"].join() == "a"'),  # dyn vs list
    ("1 == -dyn(1)", "-dyn(1) == -dyn(2)"),  # the smaller operand's size; an unknown one is unbounded
    ('[1, 2].min() == 1', '["a"].min() == "a"'),  # a list of strings is scanned at a cost nothing bounds
    ('quantity("1") == quantity("2")', 'quantity("1") == device.attributes["gpu.example.com"].cores[0]'),
]


# Accepted by kube-apiserver 1.36.3 (null is a Quantity, Semver or device value; an even run of
# '!' cancels out; dyn() keeps its argument's size; a device compares at no cost).
ACCEPTED = [
    'device.capacity["gpu.example.com"].memory != null',
    '!!semver("1.2.3") == dyn(1)',
    "dyn([1, 2]).all(x, x == 1)",
    "cel.bind(d, device, d == d)",
    "optional.of(1) == optional.of(1)",
    'true ? device.attributes["gpu.example.com"].model : false',
]


@pytest.mark.parametrize("expression", ACCEPTED)
def test_selectors_the_api_server_accepts(store: ClusterStore, expression: str) -> None:
    store.create(device_class(f"cel-ok-{uuid.uuid4().hex[:8]}.example.com", expression))


@pytest.mark.parametrize(("accepted", "refused"), COST_EDGES)
def test_estimated_cost_at_the_edge_of_the_limit(store: ClusterStore, accepted: str, refused: str) -> None:
    store.create(device_class(f"cel-edge-{uuid.uuid4().hex[:8]}.example.com", accepted))
    _, message = _refusal(store, device_class("cel-edge-refused.example.com", refused))
    assert message == "Forbidden: too complex, exceeds cost limit"
