"""The memory store's eviction subresource and the PodDisruptionBudget arithmetic behind it.

The contract suite checks the common case on both stores; these are the budget rules the
real server can only show with a disruption controller running (percentages,
maxUnavailable, unhealthy pods, several budgets).
"""

from __future__ import annotations

from typing import Any

import pytest

from drasched.api import disruption, kinds
from drasched.api.errors import ApiError, NotFound, TooManyRequests
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]


def _store(*pods: tuple[str, bool], app: str = "web") -> MemoryStore:
    """Pods ``(name, ready)``, all bound and Running with label app."""
    store = MemoryStore(auto_namespaces=True)
    for name, ready in pods:
        store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns",
                      "labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
        store.bind("ns", name, "n1")
        store.patch(kinds.POD, name, "ns", {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]}}, subresource="status")
    return store


def _pdb(store: MemoryStore, name: str = "web", selector: Obj | None = None, **spec: Any) -> None:
    store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                  "metadata": {"name": name, "namespace": "ns"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}} if selector is None else selector, **spec}})


def _gone_or_going(store: MemoryStore, name: str) -> bool:
    try:
        return bool(store.get(kinds.POD, name, "ns")["metadata"].get("deletionTimestamp"))
    except NotFound:
        return True


def test_max_unavailable_as_a_percentage_is_rounded_up() -> None:
    store = _store(("a", True), ("b", True), ("c", True))
    _pdb(store, maxUnavailable="34%")  # ceil(3 * 0.34) = 2 may be unavailable
    store.evict("ns", "a")
    store.evict("ns", "b")
    with pytest.raises(TooManyRequests) as e:
        store.evict("ns", "c")
    assert e.value.causes[0].reason == "DisruptionBudget"
    assert e.value.causes[0].message == "The disruption budget web needs 1 healthy pods and has 1 currently"


def test_min_available_percentage_and_pods_being_deleted_still_count_as_expected() -> None:
    store = _store(("a", True), ("b", True), ("c", True), ("d", True))
    _pdb(store, minAvailable="50%")
    store.evict("ns", "a")
    store.evict("ns", "b")
    with pytest.raises(TooManyRequests):
        store.evict("ns", "c")
    assert _gone_or_going(store, "a") and _gone_or_going(store, "b") and not _gone_or_going(store, "c")


def test_unhealthy_pods_go_while_the_budget_holds_or_always_with_always_allow() -> None:
    store = _store(("a", True), ("b", False))
    _pdb(store, minAvailable=1)
    store.evict("ns", "b")  # healthy 1 >= desired 1: an unhealthy pod may go (IfHealthyBudget)
    store = _store(("a", False), ("b", False))
    _pdb(store, minAvailable=1)
    with pytest.raises(TooManyRequests):
        store.evict("ns", "a")  # healthy 0 < desired 1
    store = _store(("a", False), ("b", False))
    _pdb(store, minAvailable=1, unhealthyPodEvictionPolicy="AlwaysAllow")
    store.evict("ns", "a")
    assert _gone_or_going(store, "a")


def test_selectors_a_null_one_matches_nothing_an_empty_one_everything() -> None:
    store = _store(("a", True))
    store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                  "metadata": {"name": "none", "namespace": "ns"}, "spec": {"minAvailable": 1}})
    store.evict("ns", "a")  # the budget without a selector covers no pod
    store = _store(("a", True))
    _pdb(store, selector={}, minAvailable=1)
    with pytest.raises(TooManyRequests):
        store.evict("ns", "a")


def test_two_budgets_on_one_pod_is_an_error_as_upstream() -> None:
    store = _store(("a", True), ("b", True))
    _pdb(store, "one", minAvailable=0)
    _pdb(store, "two", minAvailable=0)
    with pytest.raises(ApiError) as e:
        store.evict("ns", "a")
    assert e.value.code == 500 and "more than one PodDisruptionBudget" in str(e.value)


def test_budget_numbers() -> None:
    pods = [{"metadata": {"namespace": "ns", "labels": {"app": "web"}},
             "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True"}]}}
            for phase in ("Running", "Running", "Pending", "Succeeded")]
    pdb = {"metadata": {"name": "web", "namespace": "ns"},
           "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    b = disruption.budget(pdb, pods)
    assert (b.expected, b.healthy, b.desired, b.allowed) == (3, 2, 2, 0)
    other_ns = {"metadata": {"name": "web", "namespace": "other"}, "spec": pdb["spec"]}
    assert disruption.budget(other_ns, pods).expected == 0
