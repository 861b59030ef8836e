"""``drasched explain``: each node's reason for a pending pod, in the PodScheduled message's words."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from drasched.api.foreign import translate
from drasched.api.manifest import dump_yaml
from drasched.cli import main
from drasched.plan.explain import ExplainError, explain
from drasched.sim.runner import simulate
from tests.scenarios.runner import load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _manifests(case: str) -> list[dict]:
    return load_scenario(SCENARIOS / case).manifests


def test_a_device_taint_is_named_on_the_node() -> None:
    e = explain(_manifests("dra/088-taint-untolerated-blocks-count.yaml"), "default/pod-a")
    assert e.nodes == {"node-1": "not enough gpu.example.com devices: 1 tainted, 1 free, need 2 "
                                 "(example.com/unhealthy=true:NoSchedule)"}
    assert e.nodes["node-1"] in e.message


def test_an_exhausted_counter_is_named_with_its_counter_set() -> None:
    e = explain(_manifests("dra/096-partitions-exhaust-counters.yaml"), "default/pod-a")
    assert "counters exhausted" in e.nodes["node-1"] and "counter set gpu-0-counters" in e.nodes["node-1"]
    assert e.nodes["node-1"] in e.message


def test_a_gang_pod_names_its_gang_and_each_nodes_reason() -> None:
    e = explain(_manifests("scheduler/004-gang-all-or-nothing.yaml"), "default/big-1")
    assert e.gang is not None and "pod group default/big needs 3 pods" in e.gang
    assert e.nodes == {"n1": "Insufficient nvidia.com/gpu", "n2": "Insufficient nvidia.com/gpu"}
    assert e.message.startswith("pod group default/big") and "2 Insufficient nvidia.com/gpu" in e.message
    assert any(h.startswith("n1: room once one of these leaves it: default/small-1") for h in e.hints)


def test_a_queue_limit_holds_on_every_node_and_says_how_full_the_queue_is() -> None:
    e = explain(_manifests("scheduler/001-fair-share-three-levels.yaml"), "default/a-5")
    assert e.everywhere == "queue team-a over its limit for nvidia.com/gpu"
    assert e.nodes == {}
    assert e.hints == ["queue team-a holds 3 of its limit 3 for nvidia.com/gpu: raise the limit by what the pod "
                       "asks, or let the queue's running pods finish"]


def test_a_gang_held_by_its_queue_limit_names_the_limit() -> None:
    """The gang's message ends its sentence after the resource name; the period is not part of it."""
    def pod(name: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default",
                             "labels": {"drasched.io/pod-group": "g", "drasched.io/queue": "team-b"}},
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}
    manifests = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "8"}}},
        {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "team-b"},
         "spec": {"resources": {"nvidia.com/gpu": {"quota": "2", "limit": "3"}}}},
        {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
         "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 2, "queue": "team-b"}},
        pod("g-0"), pod("g-1")]
    e = explain(manifests, "default/g-0")
    assert any(h.startswith("queue team-b holds 0 of its limit 3 for nvidia.com/gpu: raise the limit") for h in e.hints)


def test_a_simulate_output_explains_as_its_input_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = simulate(_manifests("dra/088-taint-untolerated-blocks-count.yaml"))
    out = tmp_path / "out.yaml"
    out.write_text(dump_yaml(result.objects), encoding="utf-8")
    assert main(["explain", "default/pod-a", str(out)]) == 0
    text = capsys.readouterr().out
    assert "  node-1: not enough gpu.example.com devices: 1 tainted" in text


def test_a_bound_pod_says_where_and_an_unknown_pod_is_an_error() -> None:
    manifests = _manifests("scheduler/004-gang-all-or-nothing.yaml")
    assert explain(manifests, "default/small-1").lines()[0].startswith("pod default/small-1 is bound to n")
    with pytest.raises(ExplainError):
        explain(manifests, "default/nobody")


def test_a_device_in_use_names_the_claim_and_pod_holding_it() -> None:
    e = explain(_manifests("dra/020-second-pod-finds-device-in-use.yaml"), "default/pod-b")
    assert e.nodes == {"node-1": "not enough gpu.example.com devices: 1 in use, 0 free, need 1"}
    assert "node-1: devices in use: gpu-0 by claim default/claim-a (default/pod-a)" in e.hints


_NODE = """
apiVersion: v1
kind: Node
metadata: {name: n}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n-gpus}
spec:
  driver: gpu.example.com
  nodeName: n
  pool: {name: n, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}]
"""


def _pod(name: str, *, limits: dict | None = None, claim: str | None = None) -> dict:
    ctr: dict = {"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    spec: dict = {"schedulerName": "drasched", "containers": [ctr]}
    if limits:
        ctr["resources"]["limits"] = limits
    if claim:
        ctr["resources"]["claims"] = [{"name": "c"}]
        spec["resourceClaims"] = [{"name": "c", "resourceClaimName": claim}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _claim(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


def test_the_room_hint_names_only_pods_holding_what_is_missing() -> None:
    objs = [*yaml.safe_load_all(_NODE), _claim("held"), _claim("wanted"),
            _pod("a-holder", claim="held"), _pod("a-bystander"), _pod("b-waiting", claim="wanted")]
    e = explain(objs, "default/b-waiting")
    assert e.nodes == {"n": "not enough gpu.example.com devices: 1 in use, 0 free, need 1"}
    assert e.hints[0] == "n: room once one of these leaves it: default/a-holder"  # not default/a-bystander
    assert e.hints[1].startswith("n: devices in use: gpu-0 by claim default/held")


def test_no_room_hint_for_a_resource_nothing_provides() -> None:
    # pod0 holds the class's implicit extended resource; pod1 asks for a name no node or class provides.
    objs = [*yaml.safe_load_all(_NODE),
            _pod("pod0", limits={"deviceclass.resource.kubernetes.io/gpu.example.com": "1"}),
            _pod("pod1", limits={"example.com/gpu": "1"})]
    e = explain(objs, "default/pod1")
    assert e.nodes == {"n": "Insufficient example.com/gpu"}
    assert e.hints == ["no node and no DeviceClass provides example.com/gpu: no pod leaving makes room for it"]


def test_a_gated_pod_names_its_gates_and_tries_no_node() -> None:
    # upstream: the API server gives a gated pod PodScheduled=False, reason SchedulingGated
    # (pkg/registry/core/pod/strategy.go, applySchedulingGatedCondition); no scheduler tries it
    e = explain(_manifests("scheduler/072-scheduling-gated-pod.yaml"), "default/test-pod")
    assert e.message == "Scheduling is blocked due to non-empty scheduling gates"
    assert e.gates == ["example.com/foo", "example.com/bar"] and e.nodes == {} and e.gang is None
    lines = e.lines()
    assert lines[0] == "pod default/test-pod is pending: Scheduling is blocked due to non-empty scheduling gates"
    assert "scheduling gates example.com/foo, example.com/bar" in lines[1]
    assert not any("held back by its gang or queue" in line for line in lines)


def test_a_pod_in_a_kai_parent_queue_is_held_on_every_node_by_its_queue() -> None:
    """KAI schedules only leaf queues' workloads (jobs_order_by_queues.go): no node is worth listing."""
    e = explain(translate(_manifests("kai/010-kai-parent-queue-takes-no-workloads.yaml")).kept, "default/gpu-pod")
    assert e.everywhere is not None and e.everywhere.startswith(
        'queue "default-parent-queue" is not a leaf queue (its child queues: default-queue)')
    assert e.nodes == {}
    assert e.everywhere in e.message
