"""The pod admission plugins kube-apiserver runs by default beside Priority, on both stores:
RuntimeClass (plugin/pkg/admission/runtimeclass/admission.go: overhead, node selector and
tolerations copied from the class, its refusals word for word) and DefaultTolerationSeconds
(plugin/pkg/admission/defaulttolerationseconds/admission.go: not-ready and unreachable for 300 s),
in the server's order (Priority, DefaultTolerationSeconds, RuntimeClass; validation; RuntimeClass's
validating half). Also RuntimeClass objects themselves (pkg/apis/node/validation).

RuntimeClasses are cluster-scoped and the kube cluster is shared by the session: each test names
its classes uniquely and deletes them. The plugin finds a class just created (it asks the server
when its informer has not seen it), so nothing here waits for an informer.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError, Forbidden, Invalid, NotFound
from drasched.store.base import ClusterStore, Obj

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
               "tolerationSeconds": 300}
LABEL_REGEX = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
               "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def runtime_class(name: str, **fields: Any) -> Obj:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
            "handler": "kata", **fields}


def pod(ns: str, name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "main", "image": "registry.example/app:1"}], **spec}}


@contextlib.contextmanager
def classes(store: ClusterStore, *objs: Obj) -> Iterator[list[Obj]]:
    """Create cluster-scoped RuntimeClasses for one test, and delete them after."""
    created: list[Obj] = []
    try:
        for obj in objs:
            created.append(store.create(obj))
        yield created
    finally:
        for obj in objs:
            with contextlib.suppress(NotFound):
                store.delete(kinds.RUNTIME_CLASS, obj["metadata"]["name"])


def refused(store: ClusterStore, obj: Obj) -> ApiError:
    with pytest.raises(ApiError) as caught:
        store.create(obj)
    return caught.value


# ---- RuntimeClass: what it sets ------------------------------------------------------------------


def test_runtime_class_sets_overhead_merges_node_selector_and_tolerations(store: ClusterStore, ns: str) -> None:
    """setOverhead and setScheduling, after DefaultTolerationSeconds: the pod's tolerations in
    order, the defaults, then the class's not already covered (DoTolerationsMerge)."""
    name = unique("kata")
    rc = runtime_class(name, overhead={"podFixed": {"cpu": "250m", "memory": "512Mi"}},
                       scheduling={"nodeSelector": {"runtime": "kata"},
                                   "tolerations": [{"key": "kata", "operator": "Exists", "effect": "NoSchedule"},
                                                   {"key": "x", "value": "y"}]})
    with classes(store, rc):
        spec = store.create(pod(ns, "p", runtimeClassName=name, nodeSelector={"zone": "a"},
                                tolerations=[{"key": "b", "operator": "Exists"},
                                             {"key": "kata", "operator": "Exists", "effect": "NoSchedule"}]))["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "512Mi"}
    assert spec["nodeSelector"] == {"zone": "a", "runtime": "kata"}
    assert spec["tolerations"] == [{"key": "b", "operator": "Exists"},
                                   {"key": "kata", "operator": "Exists", "effect": "NoSchedule"},
                                   NOT_READY, UNREACHABLE, {"key": "x", "value": "y"}]


TOLERATION_MERGES = {
    # a class tolerating everything covers every toleration of the pod, the defaults too
    "exists-covers-all": ([{"operator": "Exists"}], [{"key": "a", "operator": "Exists"}], [{"operator": "Exists"}]),
    # an effect-less Equal toleration covers the pod's NoSchedule one (the pod's goes, the class's stays last)
    "class-covers-pod": ([{"key": "x", "value": "y"}],
                         [{"key": "x", "operator": "Equal", "value": "y", "effect": "NoSchedule"},
                          {"key": "z", "operator": "Exists"}],
                         [{"key": "z", "operator": "Exists"}, NOT_READY, UNREACHABLE, {"key": "x", "value": "y"}]),
    # an empty operator is Equal only on the covering side: neither covers the other
    "empty-operator": ([{"key": "x", "value": "y"}], [{"key": "x", "value": "y", "effect": "NoSchedule"}],
                       [{"key": "x", "value": "y", "effect": "NoSchedule"}, NOT_READY, UNREACHABLE,
                        {"key": "x", "value": "y"}]),
    "pod-covers-class": ([{"key": "kata", "operator": "Exists", "effect": "NoSchedule"}],
                         [{"key": "kata", "operator": "Exists"}],
                         [{"key": "kata", "operator": "Exists"}, NOT_READY, UNREACHABLE]),
    # fewer seconds are covered by more: the default 300 s stays, the class's 100 s goes
    "shorter-seconds": ([{**NOT_READY, "tolerationSeconds": 100}], [], [NOT_READY, UNREACHABLE]),
    # no seconds cover any: the default goes, the class's comes last
    "forever": ([{k: v for k, v in NOT_READY.items() if k != "tolerationSeconds"}], [],
                [UNREACHABLE, {k: v for k, v in NOT_READY.items() if k != "tolerationSeconds"}]),
    # a pod's duplicates are merged into one (without a class they stay: see below)
    "duplicates": ([{"key": "d", "operator": "Exists"}], [{"key": "p", "operator": "Exists"}] * 2,
                   [{"key": "p", "operator": "Exists"}, NOT_READY, UNREACHABLE, {"key": "d", "operator": "Exists"}]),
}


@pytest.mark.parametrize("case", sorted(TOLERATION_MERGES))
def test_runtime_class_tolerations_merge_as_upstream(store: ClusterStore, ns: str, case: str) -> None:
    from_class, own, want = TOLERATION_MERGES[case]
    name = unique("merge")
    with classes(store, runtime_class(name, scheduling={"tolerations": from_class})):
        spec = store.create(pod(ns, "p", runtimeClassName=name, **({"tolerations": own} if own else {})))["spec"]
    assert spec["tolerations"] == want


def test_runtime_class_without_overhead_or_scheduling_changes_nothing(store: ClusterStore, ns: str) -> None:
    """An empty node selector and an empty overhead set nothing either."""
    name = unique("runc")
    with classes(store, runtime_class(name, overhead={}, scheduling={"nodeSelector": {}})):
        spec = store.create(pod(ns, "p", runtimeClassName=name))["spec"]
    assert "overhead" not in spec and "nodeSelector" not in spec
    assert spec["tolerations"] == [NOT_READY, UNREACHABLE] and spec["runtimeClassName"] == name


def test_an_equal_overhead_is_taken_in_the_class_s_form(store: ClusterStore, ns: str) -> None:
    """The pod's overhead is compared quantity by quantity; an empty one is filled in."""
    name = unique("ov")
    with classes(store, runtime_class(name, overhead={"podFixed": {"cpu": "250m", "memory": "512Mi"}})):
        same = store.create(pod(ns, "same", runtimeClassName=name, overhead={"cpu": "0.25", "memory": "512Mi"}))
        empty = store.create(pod(ns, "empty", runtimeClassName=name, overhead={}))
    assert same["spec"]["overhead"] == empty["spec"]["overhead"] == {"cpu": "250m", "memory": "512Mi"}


# ---- RuntimeClass: what it refuses (403, before validation unless said) ----------------------------


def test_a_missing_runtime_class_is_forbidden(store: ClusterStore, ns: str) -> None:
    """Mutating admission runs before validation: the invalid pod is refused for its class first,
    and a generated name is named by its prefix."""
    missing = unique("missing")
    err = refused(store, pod(ns, "p", runtimeClassName=missing))
    assert isinstance(err, Forbidden)
    assert str(err) == f'pods "p" is forbidden: pod rejected: RuntimeClass "{missing}" not found'
    obj = pod(ns, "", runtimeClassName=missing, containers=[])
    obj["metadata"] = {"generateName": "worker-", "namespace": ns}
    err = refused(store, obj)
    assert str(err) == f'pods "worker-" is forbidden: pod rejected: RuntimeClass "{missing}" not found'


def test_priority_is_admitted_before_the_runtime_class(store: ClusterStore, ns: str) -> None:
    err = refused(store, pod(ns, "p", runtimeClassName=unique("missing"), priorityClassName="nope"))
    assert str(err) == 'pods "p" is forbidden: no PriorityClass with name nope was found'


def test_a_conflicting_node_selector_is_forbidden(store: ClusterStore, ns: str) -> None:
    name = unique("sel")
    with classes(store, runtime_class(name, scheduling={"nodeSelector": {"runtime": "kata"}})):
        err = refused(store, pod(ns, "p", runtimeClassName=name, nodeSelector={"runtime": "runc"}))
        same = store.create(pod(ns, "same", runtimeClassName=name, nodeSelector={"runtime": "kata"}))
    assert isinstance(err, Forbidden)
    assert str(err) == ('pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; '
                        "pod.spec.nodeSelector[runtime] = runc")
    assert same["spec"]["nodeSelector"] == {"runtime": "kata"}


def test_an_overhead_other_than_the_class_s_is_forbidden(store: ClusterStore, ns: str) -> None:
    name, bare = unique("ov"), unique("bare")
    with classes(store, runtime_class(name, overhead={"podFixed": {"cpu": "250m"}}), runtime_class(bare)):
        differs = refused(store, pod(ns, "differs", runtimeClassName=name, overhead={"cpu": "1"}))
        without = refused(store, pod(ns, "without", runtimeClassName=bare, overhead={"cpu": "1"}))
    assert str(differs) == ('pods "differs" is forbidden: pod rejected: Pod\'s Overhead doesn\'t match '
                            "RuntimeClass's defined Overhead")
    assert str(without) == 'pods "without" is forbidden: pod rejected: Pod Overhead set without corresponding ' \
                           "RuntimeClass defined Overhead"


def test_an_overhead_without_a_class_is_refused_after_validation(store: ClusterStore, ns: str) -> None:
    """The validating half runs after the pod's validation: an invalid pod is 422 first; an empty
    overhead counts as one set."""
    assert isinstance(refused(store, pod(ns, "invalid", overhead={"cpu": "1"}, containers=[])), Invalid)
    err = refused(store, pod(ns, "empty", overhead={}))
    assert isinstance(err, Forbidden)
    assert str(err) == 'pods "empty" is forbidden: pod rejected: Pod Overhead set without corresponding ' \
                       "RuntimeClass defined Overhead"


# ---- DefaultTolerationSeconds ----------------------------------------------------------------------


def test_every_new_pod_tolerates_not_ready_and_unreachable_for_300_seconds(store: ClusterStore, ns: str) -> None:
    spec = store.create(pod(ns, "plain"))["spec"]
    assert spec["tolerations"] == [NOT_READY, UNREACHABLE]
    spec = store.create(pod(ns, "own", tolerations=[{"key": "gpu", "operator": "Exists"}]))["spec"]
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}, NOT_READY, UNREACHABLE]


@pytest.mark.parametrize(("own", "added"), [
    ([{**NOT_READY, "tolerationSeconds": 60}], [UNREACHABLE]),  # its own seconds stay
    ([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}], [NOT_READY]),  # an empty effect is any
    ([{"operator": "Exists"}], []),  # an empty key is any taint
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
     [NOT_READY, UNREACHABLE]),
], ids=["not-ready-60s", "unreachable-any-effect", "everything", "not-ready-no-schedule"])
def test_a_pod_that_tolerates_a_node_taint_keeps_its_own(store: ClusterStore, ns: str, own: list[Obj],
                                                         added: list[Obj]) -> None:
    assert store.create(pod(ns, "p", tolerations=own))["spec"]["tolerations"] == [*own, *added]


def test_duplicate_tolerations_stay_without_a_runtime_class(store: ClusterStore, ns: str) -> None:
    own = [{"key": "p", "operator": "Exists"}] * 2
    assert store.create(pod(ns, "p", tolerations=own))["spec"]["tolerations"] == [*own, NOT_READY, UNREACHABLE]


def test_an_update_gets_the_default_tolerations_back(store: ClusterStore, ns: str) -> None:
    """The plugin admits updates too: tolerations written without the defaults get them appended."""
    current = store.create(pod(ns, "p"))
    current["spec"]["tolerations"] = [{"key": "a", "operator": "Exists"}]
    assert store.update(current)["spec"]["tolerations"] == [{"key": "a", "operator": "Exists"}, NOT_READY, UNREACHABLE]


# ---- RuntimeClass objects ----------------------------------------------------------------------------


RUNTIME_CLASS_RULES: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "handler-missing": ({"handler": None}, [("handler", "Required value")]),
    "handler-empty": ({"handler": ""}, [("handler", "Required value")]),
    "handler-upper": ({"handler": "Kata_X"}, [("handler", f'Invalid value: "Kata_X": {LABEL_REGEX}')]),
    "handler-dots": ({"handler": "a.b"}, [("handler", 'Invalid value: "a.b": must not contain dots')]),
    "handler-long-dots": ({"handler": "a" * 64 + ".b"}, [
        ("handler", f'Invalid value: "{"a" * 64}.b": must be no more than 63 bytes'),
        ("handler", f'Invalid value: "{"a" * 64}.b": must not contain dots')]),
    "overhead-negative": ({"overhead": {"podFixed": {"cpu": "-1"}}},
                          [("overhead.limits[cpu]", 'Invalid value: "-1": must be greater than or equal to 0')]),
    "overhead-unknown": ({"overhead": {"podFixed": {"foo": "1"}}}, [
        ("overhead.limits[foo]", 'Invalid value: "foo": must be a standard resource type or fully qualified'),
        ("overhead.limits[foo]", 'Invalid value: "foo": must be a standard resource for containers')]),
    "overhead-pods": ({"overhead": {"podFixed": {"pods": "1"}}},
                      [("overhead.limits[pods]", 'Invalid value: "pods": must be a standard resource for containers')]),
    "overhead-fractional-gpu": ({"overhead": {"podFixed": {"nvidia.com/gpu": "0.5"}}},
                                [("overhead.limits[nvidia.com/gpu]", 'Invalid value: "500m": must be an integer')]),
    "overhead-hugepages-alone": ({"overhead": {"podFixed": {"hugepages-2Mi": "2Mi"}}},
                                 [("overhead", "Forbidden: HugePages require cpu or memory")]),
    "toleration-operator": ({"scheduling": {"tolerations": [{"key": "k", "operator": "Maybe"}]}},
                            [("scheduling.tolerations[0].operator",
                              'Unsupported value: "Maybe": supported values: "Equal", "Exists"')]),
    "toleration-seconds-without-no-execute": (
        {"scheduling": {"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}]}},
        [("scheduling.tolerations[0].effect",
          "Invalid value: \"\": effect must be 'NoExecute' when `tolerationSeconds` is set")]),
    "toleration-duplicate": (
        {"scheduling": {"tolerations": [
            {"key": "d", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
            {"key": "d", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 6}]}},
        [("scheduling.tolerations[1]", 'Duplicate value: {"Key":"d","Operator":"Exists","Value":"",'
                                       '"Effect":"NoExecute","TolerationSeconds":6}')]),
}


@pytest.mark.parametrize("case", sorted(RUNTIME_CLASS_RULES))
def test_a_runtime_class_is_validated_as_the_server_does(store: ClusterStore, case: str) -> None:
    fields, want = RUNTIME_CLASS_RULES[case]
    obj = {k: v for k, v in {**runtime_class(unique(case)), **fields}.items() if v is not None}
    try:
        err = refused(store, obj)
    finally:
        with contextlib.suppress(NotFound):
            store.delete(kinds.RUNTIME_CLASS, obj["metadata"]["name"])
    assert isinstance(err, Invalid), err
    assert [(c.field, c.message) for c in err.causes] == want


def test_a_runtime_class_s_handler_is_immutable_and_it_has_no_generation(store: ClusterStore) -> None:
    name = unique("immutable")
    with classes(store, runtime_class(name, overhead={"podFixed": {"cpu": "1"}})) as (created,):
        assert "generation" not in created["metadata"]
        changed = store.update({**created, "overhead": {"podFixed": {"cpu": "2"}}})
        assert changed["overhead"] == {"podFixed": {"cpu": "2"}}
        with pytest.raises(Invalid) as caught:
            store.update({**changed, "handler": "runc"})
    assert [(c.field, c.message) for c in caught.value.causes] == [
        ("handler", "Invalid value: null: field is immutable")]
