"""Device selectors are compiled when a DeviceClass, ResourceClaim or ResourceClaimTemplate is
written, and refused alike by the memory store and a real kube-apiserver.

Upstream: pkg/apis/resource/validation validateCELSelector (CELSelectorExpressionMaxLength,
CELSelectorExpressionMaxCost = 1,000,000, "too complex, exceeds cost limit") on top of
k8s.io/dynamic-resource-allocation/cel CompileCELExpression ("compilation failed: ...",
"must evaluate to bool or the unknown type, not ...").
"""

from __future__ import annotations

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
