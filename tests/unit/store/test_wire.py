"""tree_copy and clone: the memory store's own copy of a request body, made before the decoder
runs, and the copies it hands out."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import BadRequest
from drasched.store.memory import MemoryStore
from drasched.store.wire import clone, tree_copy


def test_a_copy_shares_no_dict_or_list_with_the_body() -> None:
    body: dict[str, Any] = {"spec": {"containers": [{"name": "a", "args": ["x"]}]}, "n": 1}
    copied = tree_copy(body)
    copied["spec"]["containers"][0]["args"].append("y")
    copied["spec"]["containers"][0]["name"] = "b"
    assert body == {"spec": {"containers": [{"name": "a", "args": ["x"]}]}, "n": 1}


def test_values_json_cannot_carry_are_kept_for_the_decoder_to_refuse() -> None:
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    odd = object()
    copied = tree_copy({"a": b"bin", "b": when, "c": [odd], "d": (1, 2), "e": {1: "x"}, "f": float("nan")})
    assert copied["a"] == b"bin" and copied["b"] is when and copied["c"][0] is odd
    assert copied["d"] == (1, 2) and copied["e"] == {1: "x"} and copied["f"] != copied["f"]


@pytest.mark.parametrize("value", [b"binary", datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), object()])
def test_the_memory_store_refuses_a_body_with_a_value_json_cannot_carry(value: object) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i"}], "nodeSelector": {"zone": value}}}
    with pytest.raises(BadRequest, match=r"spec\.nodeSelector\.zone"):
        MemoryStore(auto_namespaces=True).create(pod)


def test_what_the_store_hands_out_shares_no_dict_or_list_with_what_it_stored() -> None:
    store = MemoryStore(auto_namespaces=True)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "labels": {"a": "b"}},
           "spec": {"containers": [{"name": "c", "image": "i", "args": ["x"]}]}}
    created = store.create(pod)
    created["metadata"]["labels"]["a"] = "changed"
    created["spec"]["containers"][0]["args"].append("y")
    got = store.get(kinds.POD, "p", "default")
    assert got["metadata"]["labels"] == {"a": "b"} and got["spec"]["containers"][0]["args"] == ["x"]
    got["spec"]["containers"].clear()
    assert store.get(kinds.POD, "p", "default")["spec"]["containers"][0]["name"] == "c"


def test_a_copy_keeps_every_json_type_as_it_is() -> None:
    value = {"i": 1, "f": 1.0, "z": -0.0, "b": True, "n": None, "big": 2**70, "s": "x", "l": [1.5, {"k": []}]}
    copied = clone(value)
    assert repr(copied) == repr(value) and copied is not value and copied["l"][1] is not value["l"][1]
