"""Pod-level resources (KEP-2837, beta and on by default since 1.34) in a pod's requests.

Upstream ``k8s.io/component-helpers/resource`` helpers.go ``PodRequests``: the containers'
aggregate, then ``applyPodLevelResources`` puts each pod-level request the feature supports
(``IsSupportedPodLevelResource``: cpu, memory, hugepages-*) in place of that sum, then
``spec.overhead`` is added. ``pkg/api/pod`` util.go ``DefaultPodLevelResources`` (1.37,
PodLevelResourcesFixDefaulting) fills missing pod-level requests at create.
"""

from __future__ import annotations

from typing import Any

from drasched.api.pod_resources import default_pod_level_resources
from drasched.scheduler.podinfo import parse_pod
from drasched.scheduler.resources import pod_requests

Obj = dict[str, Any]


def _spec(pod_level: Obj | None = None, *containers: Obj, **more: Any) -> Obj:
    spec: Obj = {"containers": [{"name": f"c{i}", "image": "x", "resources": c} for i, c in enumerate(containers)],
                 **more}
    if pod_level is not None:
        spec["resources"] = pod_level
    return spec


def test_pod_level_requests_replace_the_containers_sum_for_cpu_and_memory() -> None:
    spec = _spec({"requests": {"cpu": "1", "memory": "100Mi"}},
                 {"requests": {"cpu": "500m", "memory": "50Mi", "example.com/nic": "1"}}, {})
    assert pod_requests(spec) == {"cpu": 1000.0, "memory": 100 * 2**20, "example.com/nic": 1.0, "pods": 1.0}


def test_unsupported_pod_level_names_are_ignored_and_overhead_is_added() -> None:
    # validation refuses such a name; PodRequests skips it all the same (applyPodLevelResources)
    spec = _spec({"requests": {"cpu": "2", "example.com/nic": "4"}}, {"requests": {"cpu": "1", "example.com/nic": "1"}},
                 overhead={"cpu": "250m"})
    assert pod_requests(spec) == {"cpu": 2250.0, "example.com/nic": 1.0, "pods": 1.0}


def test_pods_of_one_template_with_different_pod_level_requests_do_not_share_a_memo() -> None:
    a = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "d"},
         "spec": _spec({"requests": {"cpu": "2"}}, {"requests": {"cpu": "1"}})}
    b = {**a, "metadata": {"name": "b", "namespace": "d"}, "spec": _spec(None, {"requests": {"cpu": "1"}})}
    assert parse_pod("d/b", b, {}).requests["cpu"] == 1000.0
    assert parse_pod("d/a", a, {}).requests["cpu"] == 2000.0


def test_defaulting_fills_requests_from_containers_then_from_pod_limits() -> None:
    spec = _spec({"limits": {"cpu": "2", "memory": "1Gi"}}, {"requests": {"cpu": "500m"}}, {"limits": {"cpu": "1"}})
    default_pod_level_resources(spec)
    # cpu: the containers' aggregate (500m + 1, a limit defaulting its request); memory: the pod-level limit
    assert spec["resources"]["requests"] == {"cpu": "1500m", "memory": "1Gi"}
    assert pod_requests(spec)["memory"] == 2**30


def test_defaulting_leaves_a_pod_without_pod_level_resources_alone() -> None:
    spec = _spec(None, {"requests": {"cpu": "1"}})
    default_pod_level_resources(spec)
    assert "resources" not in spec
