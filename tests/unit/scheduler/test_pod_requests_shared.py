"""Pods of one template share their parsed requests, and nothing else changes.

A large cluster has many pods per template; parsing each pod's quantities again was a third of
parsing a pod. The shared dict must give every pod exactly upstream's ``PodRequests``
(containers summed, init containers as a max, overhead added), and a malformed pod must still
be reported as one.
"""

from __future__ import annotations

from typing import Any

import pytest

from drasched.quantity import QuantityError
from drasched.scheduler.podinfo import parse_pod
from drasched.scheduler.resources import pod_requests, to_units

Obj = dict[str, Any]


def _pod(name: str, *containers: Obj, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": f"c{i}", "image": "x", **c} for i, c in enumerate(containers)],
                     **spec}}


def _res(requests: Obj | None = None, limits: Obj | None = None) -> Obj:
    out: Obj = {}
    if requests is not None:
        out["requests"] = requests
    if limits is not None:
        out["limits"] = limits
    return {"resources": out}


def test_pods_of_one_template_share_one_requests_dict_equal_to_upstreams() -> None:
    a = parse_pod("default/a", _pod("a", _res({"cpu": "2", "memory": "1Gi"}, {"nvidia.com/gpu": "1"})), {})
    b = parse_pod("default/b", _pod("b", _res({"cpu": "2", "memory": "1Gi"}, {"nvidia.com/gpu": "1"})), {})
    assert a.requests is b.requests
    assert a.requests == {"cpu": 2000.0, "memory": float(2**30), "nvidia.com/gpu": 1.0, "pods": 1.0}


def test_requests_and_limits_are_told_apart() -> None:
    # requests cpu 1 with limit 2 asks 1; a limit of 2 alone asks 2 (the API server defaults it).
    one = parse_pod("default/a", _pod("a", _res({"cpu": "1"}, {"cpu": "2"})), {})
    two = parse_pod("default/b", _pod("b", _res(None, {"cpu": "2"})), {})
    assert (one.requests["cpu"], two.requests["cpu"]) == (1000.0, 2000.0)


def test_init_containers_and_overhead_are_counted_as_upstream_does() -> None:
    plain = _pod("a", _res({"cpu": "1"}))
    with_init = _pod("b", _res({"cpu": "1"}), initContainers=[{"name": "i", "image": "x", **_res({"cpu": "3"})}])
    with_overhead = _pod("c", _res({"cpu": "1"}), overhead={"cpu": "250m"})
    got = [parse_pod(f"default/{o['metadata']['name']}", o, {}).requests["cpu"]
           for o in (plain, with_init, with_overhead)]
    assert got == [1000.0, 3000.0, 1250.0]
    assert got == [pod_requests(o["spec"])["cpu"] for o in (plain, with_init, with_overhead)]


def test_containers_in_another_split_are_another_template() -> None:
    split = parse_pod("default/a", _pod("a", _res({"cpu": "1"}), _res({"cpu": "2"})), {})
    whole = parse_pod("default/b", _pod("b", _res({"cpu": "3"})), {})
    bare = parse_pod("default/c", _pod("c", {}, _res({"cpu": "3"})), {})
    assert split.requests == whole.requests == bare.requests  # equal sums ...
    assert split.requests is not whole.requests  # ... from different templates


def test_a_malformed_quantity_is_still_the_pods_error() -> None:
    for bad in ("lots", {"nested": "1"}, ["1"]):
        p = parse_pod("default/a", _pod("a", _res({"cpu": bad})), {})
        assert p.error is not None and "malformed resource request" in p.error, bad
        assert p.requests == {"pods": 1.0}


def test_a_boolean_quantity_is_refused_even_after_the_number_it_hashes_like() -> None:
    """``True == 1`` and both hash alike: a cache keyed on the value alone answered 1000m for
    ``cpu: true`` once ``cpu: 1`` had been read; the API server refuses a boolean quantity."""
    assert to_units("cpu", 1) == 1000.0
    with pytest.raises(QuantityError):
        to_units("cpu", True)
