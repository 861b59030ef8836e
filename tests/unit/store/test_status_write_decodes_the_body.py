"""A status write's body is decoded whole, as the API server decodes it (a wrongly typed spec
in a status update is a 400 BadRequest, k8s.io/apiserver/pkg/endpoints/handlers/rest.go
``transformDecodeError``), even though the write keeps the stored spec. A spec that Python
calls equal to the stored one (``True == 1``, ``1.0 == 1``) is not the same JSON: a store
that skipped decoding "unchanged" fields would have to tell them apart, as these cases do.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from drasched.api.errors import BadRequest
from drasched.store.memory import MemoryStore


def claim() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}}]},
                     "future": {"x": None}}}


def stored_claim() -> tuple[MemoryStore, dict[str, Any]]:
    store = MemoryStore(auto_namespaces=True)
    return store, store.create(claim())


def test_a_status_write_with_the_stored_spec_succeeds_and_keeps_it() -> None:
    store, current = stored_claim()
    current["metadata"]["labels"] = {"ignored": "by a claim's status write"}
    written = store.update_status(current)
    assert written["spec"] == current["spec"] and written["spec"]["future"] == {"x": None}
    assert "labels" not in written["metadata"]
    assert int(written["metadata"]["resourceVersion"]) > int(current["metadata"]["resourceVersion"])


@pytest.mark.parametrize("change, field", [
    (lambda spec: spec["devices"]["requests"][0]["exactly"].__setitem__("count", True),
     "spec.devices.requests[0].exactly.count: expected integer, got boolean"),
    (lambda spec: spec["devices"]["requests"][0]["exactly"].__setitem__("count", 2**70),
     "spec.devices.requests[0].exactly.count: expected an integer that fits in 64 bits"),
    (lambda spec: spec["future"].__setitem__("x", math.nan),
     "spec.future.x: expected a finite number"),
    (lambda spec: spec["devices"].__setitem__("requests", "gpu"),
     "spec.devices.requests: expected array, got string"),
])
def test_a_status_write_with_a_wrongly_typed_spec_is_refused_though_equal_in_python(change: Any, field: str) -> None:
    store, current = stored_claim()
    change(current["spec"])
    with pytest.raises(BadRequest, match=f"cannot be handled as a ResourceClaim: {field}".replace("[", r"\[")
                       .replace("]", r"\]").replace(".", r"\.")):
        store.update_status(current)


def test_a_whole_number_float_in_a_status_write_spec_is_accepted_as_the_decoder_normalises_it() -> None:
    store, current = stored_claim()
    current["spec"]["devices"]["requests"][0]["exactly"]["count"] = 1.0
    assert store.update_status(current)["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
