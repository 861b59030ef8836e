"""Allocator benchmarks: ``python -m tests.bench.bench_allocator [--quick]``.

Workloads (one Allocator per run, as one scheduling cycle would build it):

* ``place``: 500 nodes x 8 GPUs, 5,000 single-device claims placed one after another
  (nodes tried from a rotating start, as kube-scheduler's nextStartNodeIndex does);
* ``partitionable``: 500 nodes, 4 GPUs each split into 1x80Gi, 2x40Gi, 4x20Gi partitions
  sharing a memory counter; 8,000 claims for 20Gi partitions;
* ``match4``: 4 NUMA groups of 4 GPUs per node, claims for 4 GPUs with matchAttribute;
* ``pathological``: kubernetes#131730-style searches that must fail (N devices asked on a
  node with N-1; matchAttribute groups one device short; a hopeless distinct+match case
  that runs into the time budget);
* ``all``: allocationMode All over 32 of 512 devices in a 4-slice pool.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from drasched.dra.allocated_state import AllocatedState
from drasched.dra.allocator import DEFAULT_STEP_BUDGET, Allocator

Obj = dict[str, Any]
D = "gpu.example.com"


def _node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}}}


def _class() -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": D},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{D}"'}}]}}


def _slice(name: str, node: str, devices: list[Obj], pool: str | None = None, count: int = 1,
           **spec: Any) -> Obj:
    s: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
              "spec": {"driver": D, "nodeName": node, "pool": {"name": pool or node, "generation": 1,
                                                                "resourceSliceCount": count}, **spec}}
    if devices:
        s["spec"]["devices"] = devices
    return s


def _claim(name: str, *requests: Obj, constraints: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": devices}}


def _req(name: str = "gpu", count: int = 1, selectors: list[str] | None = None, **extra: Any) -> Obj:
    body: Obj = {"deviceClassName": D, "count": count, **extra}
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": body}


def _attrs(**kv: Any) -> Obj:
    return {k: ({"int": v} if isinstance(v, int) else {"string": v}) for k, v in kv.items()}


def place(nodes: list[Obj], slices: list[Obj], claims: list[Obj]) -> dict[str, float]:
    """Place claims one after another, first fit from a rotating start node."""
    t0 = time.perf_counter()
    state = AllocatedState()
    alloc = Allocator([_class()], slices, state)
    build = time.perf_counter() - t0
    placed = calls = failed_calls = 0
    ok_time = fail_time = 0.0
    start = 0
    t1 = time.perf_counter()
    for c in claims:
        for i in range(len(nodes)):
            node = nodes[(start + i) % len(nodes)]
            calls += 1
            t = time.perf_counter()
            out = alloc.allocate(node, [c])
            if out.ok:
                state.add(out.allocations[0])
                ok_time += time.perf_counter() - t
                placed += 1
                start = (start + i + 1) % len(nodes)
                break
            fail_time += time.perf_counter() - t
            failed_calls += 1
    elapsed = time.perf_counter() - t1
    return {"build_s": build, "placed": placed, "unplaced": len(claims) - placed, "seconds": elapsed,
            "allocations_per_s": placed / ok_time if ok_time else 0.0,
            "failed_calls": failed_calls, "failed_calls_per_s": failed_calls / fail_time if fail_time else 0.0,
            "claims_per_s_overall": len(claims) / elapsed}


def bench_place(n_nodes: int = 500, per_node: int = 8, n_claims: int = 5000) -> dict[str, float]:
    nodes = [_node(f"node-{i:03d}") for i in range(n_nodes)]
    slices = [_slice(f"node-{i:03d}-gpus", f"node-{i:03d}",
                     [{"name": f"gpu-{j}", "attributes": _attrs(model="a100", index=j),
                       "capacity": {"memory": {"value": "80Gi"}}} for j in range(per_node)])
              for i in range(n_nodes)]
    claims = [_claim(f"c{k}", _req(selectors=[f'device.attributes["{D}"].model == "a100"']))
              for k in range(n_claims)]
    return place(nodes, slices, claims)


def bench_partitionable(n_nodes: int = 500, n_claims: int = 8000) -> dict[str, float]:
    nodes = [_node(f"node-{i:03d}") for i in range(n_nodes)]
    slices: list[Obj] = []
    for i in range(n_nodes):
        name = f"node-{i:03d}"
        sets = [{"name": f"gpu-{g}", "counters": {"memory": {"value": "80Gi"}}} for g in range(4)]
        devs = []
        for g in range(4):
            for size, n in (("80Gi", 1), ("40Gi", 2), ("20Gi", 4)):
                for k in range(n):
                    devs.append({"name": f"gpu-{g}-{size.lower()}-{k}", "attributes": _attrs(profile=size),
                                 "consumesCounters": [{"counterSet": f"gpu-{g}",
                                                       "counters": {"memory": {"value": size}}}]})
        slices.append(_slice(f"{name}-counters", name, [], count=2, sharedCounters=sets))
        slices.append(_slice(f"{name}-devices", name, devs, count=2))
    claims = [_claim(f"c{k}", _req(selectors=[f'device.attributes["{D}"].profile == "20Gi"']))
              for k in range(n_claims)]
    return place(nodes, slices, claims)


def bench_match4(n_nodes: int = 200) -> dict[str, float]:
    nodes = [_node(f"node-{i:03d}") for i in range(n_nodes)]
    slices = [_slice(f"node-{i:03d}-gpus", f"node-{i:03d}",
                     [{"name": f"gpu-{j}", "attributes": _attrs(numa=j % 4)} for j in range(16)])
              for i in range(n_nodes)]
    claims = [_claim(f"c{k}", _req(count=4), constraints=[{"matchAttribute": f"{D}/numa"}])
              for k in range(n_nodes * 4)]
    return place(nodes, slices, claims)


def _one(slices: list[Obj], claim: Obj, step_budget: int = DEFAULT_STEP_BUDGET) -> dict[str, Any]:
    """One cold allocation (a fresh allocator, so a fresh selector cache)."""
    alloc = Allocator([_class()], slices, AllocatedState(), step_budget=step_budget)
    t0 = time.perf_counter()
    out = alloc.allocate(_node("node-1"), [claim])
    return {"seconds": time.perf_counter() - t0, "ok": out.ok, "steps": alloc.stats["search_steps"],
            "why": out.message[:90]}


def bench_pathological() -> dict[str, dict[str, Any]]:
    res: dict[str, dict[str, Any]] = {}
    devs31 = [{"name": f"gpu-{j}", "attributes": _attrs(numa=j % 4)} for j in range(31)]
    res["32 asked, 31 present"] = _one([_slice("s", "node-1", devs31)], _claim("c", _req(count=32)))
    res["32 asked, 31 present, matchAttribute"] = _one(
        [_slice("s", "node-1", devs31)], _claim("c", _req(count=32), constraints=[{"matchAttribute": f"{D}/numa"}]))
    groups7 = [{"name": f"gpu-{j}", "attributes": _attrs(group=j // 7)} for j in range(63)]
    res["8 asked, 9 groups of 7, matchAttribute"] = _one(
        [_slice("s", "node-1", groups7)], _claim("c", _req(count=8), constraints=[{"matchAttribute": f"{D}/group"}]))
    res["4+4 across requests, 9 groups of 7"] = _one(
        [_slice("s", "node-1", groups7)],
        _claim("c", _req("a", count=4), _req("b", count=4), constraints=[{"matchAttribute": f"{D}/group"}]))
    many = [{"name": f"gpu-{j}", "attributes": _attrs(group=j % 16)} for j in range(128)]
    res["3 requests x 3, 16 groups of 8, matchAttribute + in-request"] = _one(
        [_slice("s", "node-1", many)],
        _claim("c", _req("a", count=3), _req("b", count=3), _req("c", count=3),
               constraints=[{"matchAttribute": f"{D}/group"}]))
    colors = [{"name": f"gpu-{j}", "attributes": _attrs(numa=j % 2, color=f"c{(j // 2) % 7 + j % 2}")}
              for j in range(64)]
    res["distinct+match hopeless (default step budget)"] = _one(
        [_slice("s", "node-1", colors)],
        _claim("c", _req(count=8), constraints=[{"distinctAttribute": f"{D}/color"},
                                                {"matchAttribute": f"{D}/numa"}]))
    return res


def bench_all() -> dict[str, Any]:
    slices = [_slice(f"s{k}", "node-1", [{"name": f"dev-{k}-{j}", "attributes": _attrs(
        model="a100" if j % 16 == 0 else "t4")} for j in range(128)], pool="big", count=4) for k in range(4)]
    claim = _claim("c", _req(allocationMode="All", count=None,
                             selectors=[f'device.attributes["{D}"].model == "a100"']))
    claim["spec"]["devices"]["requests"][0]["exactly"].pop("count")
    cold = _one(slices, claim)
    alloc = Allocator([_class()], slices, AllocatedState())
    alloc.allocate(_node("node-1"), [claim])
    t0 = time.perf_counter()
    n = 50
    for _ in range(n):
        out = alloc.allocate(_node("node-1"), [claim])
    warm = (time.perf_counter() - t0) / n
    return {"cold_seconds": cold["seconds"], "warm_seconds": warm, "ok": out.ok,
            "devices": len(out.allocations[0]["devices"]["results"]) if out.ok else 0}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4f}" if v < 10 else f"{v:,.0f}"
    return str(v)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (for a smoke run)")
    args = ap.parse_args(argv)
    scale = 10 if args.quick else 1
    runs: list[tuple[str, Callable[[], Any]]] = [
        ("place 500x8, 5000 claims", lambda: bench_place(500 // scale, 8, 5000 // scale)),
        ("partitionable 500 nodes, 8000 claims", lambda: bench_partitionable(500 // scale, 8000 // scale)),
        ("matchAttribute over 4 groups", lambda: bench_match4(200 // scale)),
        ("All over a 512-device pool", bench_all),
    ]
    for name, fn in runs:  # each run builds its own allocators: selector results start cold
        out = fn()
        print(f"{name}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in out.items()))
    for name, r in bench_pathological().items():
        print(f"pathological {name}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in r.items()))


if __name__ == "__main__":
    main()
