"""DeviceTaintRule taints on devices, for allocation and eviction.

Upstream: ``ruleMatchesDevice`` and ``claimEvictionTime`` in
pkg/controller/devicetainteviction/device_taint_eviction.go; the allocator sees rule taints
patched into the slices (staging/src/k8s.io/dynamic-resource-allocation/resourceslice/tracker).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from drasched.dra.pools import PoolIndex
from drasched.dra.taintrules import claim_eviction, parse_rules, slice_taints, taints_for

Obj = dict[str, Any]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def rule(name: str, selector: Obj | None, effect: str = "NoExecute", key: str = "example.com/bad",
         added: str = "2026-01-01T00:00:00Z") -> Obj:
    spec: Obj = {"taint": {"key": key, "value": "v", "effect": effect, "timeAdded": added}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
            "metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec}


def slice_(devices: list[Obj], pool: str = "n1", generation: int = 1, name: str = "s") -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "pool": {"name": pool, "generation": generation,
                                                          "resourceSliceCount": 1},
                     "nodeName": pool, "devices": devices}}


def allocation(device: str = "gpu-0", tolerations: list[Obj] | None = None) -> Obj:
    result: Obj = {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": device}
    if tolerations is not None:
        result["tolerations"] = tolerations
    return {"devices": {"results": [result]}}


def test_rule_without_selector_matches_nothing_empty_selector_everything_ruleMatchesDevice() -> None:
    rules = parse_rules([rule("none", None), rule("all", {})])
    assert [r.rule_name for r in rules if r.matches("d", "p", "x")] == ["all"]


def test_every_set_selector_field_must_equal_ruleMatchesDevice() -> None:
    (r,) = parse_rules([rule("r", {"driver": "gpu.example.com", "device": "gpu-1"})])
    assert r.matches("gpu.example.com", "any-pool", "gpu-1")
    assert not r.matches("gpu.example.com", "any-pool", "gpu-0")
    assert not r.matches("other.example.com", "any-pool", "gpu-1")


def test_allocator_sees_rule_taints_after_the_slices_own() -> None:
    idx = PoolIndex([slice_([{"name": "gpu-0", "taints": [{"key": "own", "effect": "NoSchedule"}]},
                             {"name": "gpu-1"}])],
                    parse_rules([rule("r", {"device": "gpu-0"}, effect="NoSchedule")]))
    taints = {d.name: [t.key for t in d.view.taints] for d in idx.pools[("gpu.example.com", "n1")].devices}
    assert taints == {"gpu-0": ["own", "example.com/bad"], "gpu-1": []}


def test_untolerated_noexecute_evicts_at_time_added() -> None:
    ev = claim_eviction(allocation(), {}, parse_rules([rule("r", {"device": "gpu-0"})]))
    assert ev is not None and ev.when == T0
    assert ev.taints == ("example.com/bad=v:NoExecute (rule r)",) and ev.rule_uids == {"uid-r"}


def test_noschedule_and_none_never_evict() -> None:
    rules = parse_rules([rule("a", {}, effect="NoSchedule"), rule("b", {}, effect="None")])
    assert claim_eviction(allocation(), {}, rules) is None


def test_toleration_without_seconds_tolerates_for_good() -> None:
    tol = [{"key": "example.com/bad", "operator": "Exists", "effect": "NoExecute"}]
    assert claim_eviction(allocation(tolerations=tol), {}, parse_rules([rule("r", {})])) is None


def test_smallest_toleration_seconds_counts_and_negative_is_zero_claimEvictionTime() -> None:
    tols = [{"key": "example.com/bad", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 600},
            {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
    ev = claim_eviction(allocation(tolerations=tols), {}, parse_rules([rule("r", {})]))
    assert ev is not None and ev.when == T0 + timedelta(seconds=300)
    negative = [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5}]
    ev = claim_eviction(allocation(tolerations=negative), {}, parse_rules([rule("r", {})]))
    assert ev is not None and ev.when == T0


def test_only_noexecute_tolerations_count_for_eviction_as_upstream() -> None:
    # claimEvictionTime: `toleration.Effect == NoExecute && ToleratesTaint(...)`; a toleration
    # of every effect lets the allocator place the claim but does not stop the eviction.
    tol = [{"key": "example.com/bad", "operator": "Exists"}]
    ev = claim_eviction(allocation(tolerations=tol), {}, parse_rules([rule("r", {})]))
    assert ev is not None and ev.when == T0


def test_slice_taints_from_the_newest_generation_evict_too() -> None:
    old = slice_([{"name": "gpu-0", "taints": [{"key": "old", "effect": "NoExecute",
                                                "timeAdded": "2026-01-01T00:00:00Z"}]}], name="a")
    new = slice_([{"name": "gpu-0", "taints": [{"key": "new", "effect": "NoExecute",
                                                "timeAdded": "2026-01-01T00:01:00Z"}]}], generation=2, name="b")
    taints = slice_taints([old, new])
    assert [t.key for t in taints[("gpu.example.com", "n1", "gpu-0")]] == ["new"]
    ev = claim_eviction(allocation(), taints, [])
    assert ev is not None and ev.when == T0 + timedelta(minutes=1)
    assert ev.taints == ("new=:NoExecute (gpu.example.com/n1/gpu-0)",) and not ev.rule_uids


def test_taints_for_lists_matching_rules_in_name_order() -> None:
    rules = parse_rules([rule("z", {}, key="z"), rule("a", {"pool": "n1"}, key="a"), rule("m", {"pool": "n2"})])
    assert [t.key for t in taints_for(rules, "gpu.example.com", "n1", "gpu-0")] == ["a", "z"]
