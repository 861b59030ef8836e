"""The decoder's fast path (``api/decode_fast.py``) may only say "well typed" where the general
walk refuses nothing and changes nothing: otherwise a refusal would be lost, or a body stored
without the normalising the API server's decoder does (``null`` dropped, ``1.0`` made ``1``).

Upstream: a body that does not decode into its Go type is a 400 BadRequest
(k8s.io/apiserver/pkg/endpoints/handlers/rest.go, ``transformDecodeError``).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drasched.api import kinds
from drasched.api.decode import MAX_DEPTH, decode_object, type_errors
from drasched.api.decode_fast import FAST_DEPTH, well_typed
from drasched.api.errors import BadRequest
from drasched.api.shapes import shape_for
from drasched.bench.workloads import claim_template_workload
from drasched.sim.runner import simulate
from tests.fuzz.parity import case, served_type

Obj = dict[str, Any]


def _strict(value: Any) -> str:
    """Equality that tells ``1`` from ``1.0`` and ``True``, and sees key order."""
    return repr(value)


def _agrees(obj: Obj, rt: kinds.ResourceType | None = None) -> bool:
    """Whether the fast path's answer for ``obj`` is one the walk bears out; True if it said yes."""
    shape = shape_for(rt or kinds.for_object(obj))
    before = _strict(obj)
    fast = well_typed(obj, shape)
    assert _strict(obj) == before, "the fast path changed the body"
    walked = copy.deepcopy(obj)
    errors = type_errors(walked, shape)
    if fast:
        assert errors == [], f"fast path accepted what the walk refuses: {errors}"
        assert _strict(walked) == before, "fast path accepted what the walk normalises"
    return fast


def _settled_objects() -> list[Obj]:
    result = simulate(claim_template_workload(4).all_objects)
    return [o for o in result.store.all_objects() if o.get("kind") in ("Pod", "ResourceClaim", "BindRequest",
                                                                        "Event", "Node", "ResourceSlice")]


SETTLED = _settled_objects()


def test_every_object_an_embedded_run_stores_takes_the_fast_path() -> None:
    kinds_seen = set()
    for obj in SETTLED:
        assert _agrees(obj), f"{obj['kind']} {obj['metadata']['name']} fell back to the walk"
        kinds_seen.add(obj["kind"])
    assert kinds_seen == {"Pod", "ResourceClaim", "BindRequest", "Event", "Node", "ResourceSlice"}


ODD_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 1.5, -0.0, 2**31 - 1, 2**31, -(2**31) - 1, 2**63, 2**70,
    float("nan"), float("inf"), "", "x", "2026-12-02T05:00:00Z", "yesterday", "1Gi", "80 Gi", "100m",
    [], {}, [None], ["x", None], [1, "a"], {"a": None}, {"a": 1.0}, {1: "x"}, {True: "y"}, (1, 2),
    {"a": {"b": [1, 2.0, {"c": None}]}}, b"bytes", {1, 2},
]


def _paths(value: Any, trail: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [trail]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*trail, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*trail, i))
    return out


def _replace(obj: Obj, path: tuple[Any, ...], value: Any) -> Obj:
    new = copy.deepcopy(obj)
    target: Any = new
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = copy.deepcopy(value)
    return new


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_a_stored_object_with_one_field_replaced_is_judged_as_the_walk_judges_it(data: st.DataObject) -> None:
    obj = data.draw(st.sampled_from(SETTLED))
    path = data.draw(st.sampled_from([p for p in _paths(obj) if p]))
    value = data.draw(st.sampled_from(ODD_VALUES))
    _agrees(_replace(obj, path, value), kinds.for_object(obj))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_new_unknown_field_of_any_json_tree_is_judged_as_the_walk_judges_it(data: st.DataObject) -> None:
    leaves = st.sampled_from(ODD_VALUES[:23])
    tree = st.recursive(leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "b", "c"]), kids, max_size=3), max_leaves=10)
    obj = copy.deepcopy(data.draw(st.sampled_from(SETTLED)))
    parent = data.draw(st.sampled_from([p for p in _paths(obj) if _is_dict_at(obj, p)]))
    target: Any = obj
    for step in parent:
        target = target[step]
    target["zzUnknown"] = data.draw(tree)
    _agrees(obj)


def _is_dict_at(obj: Obj, path: tuple[Any, ...]) -> bool:
    target: Any = obj
    for step in path:
        target = target[step]
    return isinstance(target, dict)


@pytest.mark.parametrize("seed", range(0, 400, 4))
def test_the_parity_runs_broken_objects_are_judged_as_the_walk_judges_them(seed: int) -> None:
    c = case(seed)
    rt = served_type(c.original[c.index])
    assert rt is not None
    _agrees(c.docs[c.index], rt)


def test_nesting_below_the_fast_paths_depth_is_left_to_the_walk_which_words_the_error() -> None:
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH + 1):
        deep = {"a": deep}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                         "annotations": {}}, "zz": deep}
    assert not well_typed(pod, shape_for(kinds.POD))
    with pytest.raises(BadRequest, match=f"at most {MAX_DEPTH} levels of nesting"):
        decode_object(pod)
    shallow: Any = 1
    for _ in range(FAST_DEPTH - 2):
        shallow = [shallow]
    assert well_typed({"apiVersion": "v1", "kind": "Pod", "zz": shallow}, shape_for(kinds.POD))
