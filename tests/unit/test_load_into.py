"""``load_into``: the same object given twice to an embedded run, without the manifest reader."""

from __future__ import annotations

import pytest

from drasched.sim.runner import Simulation, SimulationError


def node(**labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": labels}}


def test_an_identical_repeat_is_created_once() -> None:
    sim = Simulation(controllers=[])
    sim.load([node(a="b"), node(a="b")], ["a.yaml: document 0", "b.yaml: document 0"])
    assert [o["metadata"]["name"] for o in sim.store.all_objects() if o["kind"] == "Node"] == ["n1"]


def test_a_repeat_with_other_content_is_refused_naming_the_first() -> None:
    with pytest.raises(SimulationError) as err:
        Simulation(controllers=[]).load([node(a="b"), node(a="c")], ["a.yaml: document 0", "b.yaml: document 0"])
    assert err.value.errors == ['b.yaml: document 0: Node n1: nodes "n1" already exists '
                                "(first given at a.yaml: document 0)"]


def test_a_pod_given_with_and_without_its_default_namespace_is_a_repeat() -> None:
    ns = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
          "spec": {"containers": [{"name": "c", "image": "x"}]}}
    bare = {**ns, "metadata": {"name": "p"}}
    with pytest.raises(SimulationError, match=r"already exists \(first given at one\)"):
        Simulation(controllers=[]).load([ns, bare], ["one", "two"])
