"""The decoder settles common leaves (ints, booleans, times, quantities) without a stack entry
of their own, and remembers which time and quantity strings parse: what it refuses and how it
normalises must be what the long way refuses, on the first object and every later one.

Upstream: a body that does not decode into its Go type is a 400 BadRequest
(k8s.io/apiserver/pkg/endpoints/handlers/rest.go, ``transformDecodeError``); metav1.Time and
resource.Quantity are parsed while decoding, so a malformed one is refused there.
"""

from __future__ import annotations

import gc
import pickle
import subprocess
import sys
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.decode import MAX_DEPTH, decode_object
from drasched.api.errors import BadRequest
from drasched.sim.runner import RUN_GC_THRESHOLDS, simulate


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def test_a_malformed_time_is_refused_every_time_it_is_sent() -> None:
    for _ in range(3):  # the second and third decode answer from what the first learned
        obj = pod()
        obj["metadata"]["creationTimestamp"] = "yesterday"
        with pytest.raises(BadRequest, match=r'metadata.creationTimestamp: expected a time in RFC 3339'):
            decode_object(obj)
    good = pod()
    good["metadata"]["creationTimestamp"] = "2026-12-02T05:00:00Z"
    decode_object(good)
    decode_object(good)


def test_a_malformed_quantity_is_refused_every_time_it_is_sent() -> None:
    for _ in range(3):
        obj = pod()
        obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "80 Gi", "memory": "1Gi"}}
        with pytest.raises(BadRequest, match=r"spec.containers\[0\].resources.requests.cpu: expected a quantity"):
            decode_object(obj)


def test_an_int32_list_item_beyond_int32_is_refused_and_a_boolean_is_not_an_integer() -> None:
    with pytest.raises(BadRequest, match=r"spec.priority: expected an integer that fits in 32 bits"):
        decode_object(pod(priority=2**31))
    with pytest.raises(BadRequest, match=r"spec.priority: expected integer, got boolean"):
        decode_object(pod(priority=True))
    ok = pod(priority=2**31 - 1)
    decode_object(ok)
    assert ok["spec"]["priority"] == 2**31 - 1


def test_a_leaf_one_level_past_the_deepest_nesting_is_still_refused() -> None:
    for leaf in (1, True, "x"):
        nested: Any = leaf
        for _ in range(MAX_DEPTH - 1):
            nested = [nested]
        obj = pod(extra=nested)  # the outer list at depth 2, the inner at MAX_DEPTH, the leaf past it
        if isinstance(leaf, str):
            decode_object(obj)  # a string leaf was never depth-checked: unchanged
            continue
        with pytest.raises(BadRequest, match=f"at most {MAX_DEPTH} levels of nesting"):
            decode_object(obj)


def test_a_resource_type_pickled_under_another_hash_seed_finds_its_entries() -> None:
    code = "import pickle, sys; from drasched.api import kinds; sys.stdout.buffer.write(pickle.dumps(kinds.POD))"
    data = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          env={"PYTHONHASHSEED": "12345", "PATH": ""}).stdout
    other = pickle.loads(data)
    assert other == kinds.POD and hash(other) == hash(kinds.POD)
    assert {kinds.POD: "pods"}[other] == "pods"
    assert other != kinds.NODE and kinds.order_index(other) == kinds.order_index(kinds.POD)


def test_simulate_leaves_the_collectors_thresholds_as_it_found_them() -> None:
    before = gc.get_threshold()
    assert before != RUN_GC_THRESHOLDS
    result = simulate([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}])
    assert [o["metadata"]["name"] for o in result.objects if o["kind"] == "Node"] == ["n"]
    assert gc.get_threshold() == before
