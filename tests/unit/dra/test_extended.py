"""KEP-5004 naming and class mapping, with upstream's rules (docs/design.md records them)."""

from __future__ import annotations

from typing import Any

from drasched.dra.extended import (
    DeviceClassByResource,
    pod_dra_resources,
    special_claim_requests,
)


def dc(name: str, ts: str = "2026-01-01T00:00:00Z", explicit: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if explicit:
        spec["extendedResourceName"] = explicit
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "creationTimestamp": ts}, "spec": spec}


def pod(containers: list[dict[str, Any]], inits: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": containers, "initContainers": inits or []}}


def ctr(name: str, requests: dict[str, Any], sidecar: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "i", "resources": {"requests": requests}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


GPU = DeviceClassByResource.build([dc("gpu.example.com", explicit="nvidia.com/gpu")])


def test_every_class_serves_its_implicit_name() -> None:
    idx = DeviceClassByResource.build([dc("a"), dc("b", explicit="example.com/b")])
    assert idx.class_for("deviceclass.resource.kubernetes.io/a") == "a"
    assert idx.class_for("deviceclass.resource.kubernetes.io/b") == "b"
    assert idx.class_for("example.com/b") == "b"
    assert idx.class_for("example.com/a") is None


def test_same_explicit_name_later_created_wins() -> None:
    idx = DeviceClassByResource.build([
        dc("old", "2026-01-01T00:00:00Z", "nvidia.com/gpu"),
        dc("new", "2026-02-01T00:00:00Z", "nvidia.com/gpu"),
    ])
    assert idx.class_for("nvidia.com/gpu") == "new"
    assert idx.shadowed["nvidia.com/gpu"] == ["old"]
    # the loser still serves its implicit name
    assert idx.class_for("deviceclass.resource.kubernetes.io/old") == "old"


def test_same_explicit_name_same_time_lexicographic_first_wins() -> None:
    idx = DeviceClassByResource.build([dc("zeta", explicit="x.com/r"), dc("alpha", explicit="x.com/r")])
    assert idx.class_for("x.com/r") == "alpha"


def test_request_index_counts_cpu_and_memory() -> None:
    # Upstream's request naming: cpu, memory and nvidia.com/gpu -> the gpu is key 2 of the sorted keys.
    p = pod([ctr("main", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"})])
    out = special_claim_requests(p, ["nvidia.com/gpu"], GPU)
    assert out.device_requests == [{"name": "container-0-request-2", "exactly": {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}}]
    assert out.mappings == [{"containerName": "main", "resourceName": "nvidia.com/gpu",
                             "requestName": "container-0-request-2"}]


def test_container_index_runs_over_init_then_regular_containers() -> None:
    p = pod([ctr("a", {"nvidia.com/gpu": "1"}), ctr("b", {"cpu": "1", "nvidia.com/gpu": "1"})],
            inits=[ctr("setup", {"cpu": "1"})])
    out = special_claim_requests(p, ["nvidia.com/gpu"], GPU)
    assert [r["name"] for r in out.device_requests] == ["container-1-request-0", "container-2-request-1"]


def test_init_container_reuses_following_long_lived_requests() -> None:
    # init asks 2; the two app containers after it ask 1 each: the init container maps to both
    p = pod([ctr("a", {"nvidia.com/gpu": "1"}), ctr("b", {"nvidia.com/gpu": "1"})],
            inits=[ctr("init", {"nvidia.com/gpu": "2"})])
    out = special_claim_requests(p, ["nvidia.com/gpu"], GPU)
    assert [r["name"] for r in out.device_requests] == ["container-1-request-0", "container-2-request-0"]
    init_maps = [m["requestName"] for m in out.mappings if m["containerName"] == "init"]
    assert init_maps == ["container-1-request-0", "container-2-request-0"]


def test_init_container_remainder_gets_its_own_request() -> None:
    p = pod([ctr("a", {"nvidia.com/gpu": "1"})], inits=[ctr("init", {"nvidia.com/gpu": "3"})])
    out = special_claim_requests(p, ["nvidia.com/gpu"], GPU)
    by_name = {r["name"]: r["exactly"]["count"] for r in out.device_requests}
    assert by_name == {"container-0-request-0": 2, "container-1-request-0": 1}


def test_several_init_remainders_collapse_to_the_largest() -> None:
    p = pod([ctr("a", {"nvidia.com/gpu": "1"})],
            inits=[ctr("i1", {"nvidia.com/gpu": "2"}), ctr("i2", {"nvidia.com/gpu": "4"})])
    out = special_claim_requests(p, ["nvidia.com/gpu"], GPU)
    by_name = {r["name"]: r["exactly"]["count"] for r in out.device_requests}
    assert by_name == {"container-1-request-0": 3, "container-2-request-0": 1}
    i1 = [m["requestName"] for m in out.mappings if m["containerName"] == "i1"]
    assert i1 == ["container-2-request-0", "container-1-request-0"]


def test_sidecar_is_long_lived() -> None:
    p = pod([ctr("a", {"nvidia.com/gpu": "1"})], inits=[ctr("side", {"nvidia.com/gpu": "1"}, sidecar=True)])
    out = special_claim_requests(p, ["nvidia.com/gpu"], GPU)
    assert [r["name"] for r in out.device_requests] == ["container-0-request-0", "container-1-request-0"]
    assert pod_dra_resources(p, GPU) == {"nvidia.com/gpu": 2}


def test_pod_effective_count_is_max_of_init_and_sum() -> None:
    p = pod([ctr("a", {"nvidia.com/gpu": "1"}), ctr("b", {"nvidia.com/gpu": "1"})],
            inits=[ctr("init", {"nvidia.com/gpu": "3"})])
    assert pod_dra_resources(p, GPU) == {"nvidia.com/gpu": 3}
    assert pod_dra_resources(pod([ctr("a", {"example.com/other": "1"})]), GPU) == {}
