"""The optimised search against a plain transcription of upstream's allocateOne.

Random small inputs (devices with NUMA/color attributes, taints, shared counters; claims with
counts, firstAvailable, matchAttribute and distinctAttribute): the pruned combination search
must find exactly the first solution the exhaustive permutation search finds, or none.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from drasched.dra.allocated_state import AllocatedState
from drasched.dra.allocator import Allocator
from tests.unit.dra.dra_builders import DRIVER, claim, device, device_class, node, rslice

Obj = dict[str, Any]


@dataclass
class Dev:
    name: str
    numa: int | None
    color: str | None
    tainted: bool
    mem: int


@dataclass
class Req:
    name: str
    alts: list[tuple[str, int]]  # (subrequest name or "", count)
    tolerates: bool


@dataclass
class Claim:
    requests: list[Req]
    constraints: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (kind, attr, requests)


def reference(devs: list[Dev], claims: list[Claim], capacity: int) -> list[list[tuple[str, str]]] | None:
    """Upstream allocateOne, transcribed: every device from the start, first full solution wins."""
    used: set[str] = set()
    results: list[list[tuple[str, str, str, Dev]]] = [[] for _ in claims]  # (base, sub, full, dev)
    mem = [0]

    def applies(names: list[str], base: str, sub: str) -> bool:
        return not names or base in names or (bool(sub) and f"{base}/{sub}" in names)

    def fits(ci: int, base: str, sub: str, d: Dev) -> bool:
        for kind, attr, names in claims[ci].constraints:
            if not applies(names, base, sub):
                continue
            mine = getattr(d, attr)
            if mine is None:
                return False
            others = [getattr(x[3], attr) for x in results[ci] if applies(names, x[0], x[1])]
            if kind == "match" and others and others[0] != mine:
                return False
            if kind == "distinct" and mine in others:
                return False
        return True

    def one(ci: int, ri: int, ai: int, k: int, in_alt: bool) -> bool:
        if ci == len(claims):
            return True
        c = claims[ci]
        if ri == len(c.requests):
            return one(ci + 1, 0, 0, 0, False)
        req = c.requests[ri]
        if not in_alt and len(req.alts) > 1:
            return any(one(ci, ri, a, 0, True) for a in range(len(req.alts)))
        sub, count = req.alts[ai]
        if k == count:
            return one(ci, ri + 1, 0, 0, False)
        for d in devs:
            if d.name in used or (d.tainted and not req.tolerates) or mem[0] + d.mem > capacity:
                continue
            if not fits(ci, req.name, sub, d):
                continue
            used.add(d.name)
            mem[0] += d.mem
            results[ci].append((req.name, sub, f"{req.name}/{sub}" if sub else req.name, d))
            if one(ci, ri, ai, k + 1, in_alt):
                return True
            results[ci].pop()
            mem[0] -= d.mem
            used.discard(d.name)
        return False

    if not one(0, 0, 0, 0, False):
        return None
    return [[(full, d.name) for _, _, full, d in r] for r in results]


def build(rng: random.Random) -> tuple[list[Dev], list[Claim], int]:
    devs = [Dev(f"d{i}", rng.choice([0, 1, 2, None]) if rng.random() < 0.9 else None,
                rng.choice(["r", "g", "b"]) if rng.random() < 0.9 else None,
                rng.random() < 0.15, rng.choice([0, 1, 2])) for i in range(rng.randint(3, 8))]
    claims = []
    for ci in range(rng.randint(1, 2)):
        reqs = []
        for ri in range(rng.randint(1, 3)):
            if rng.random() < 0.25:
                alts = [(f"s{j}", rng.randint(1, 3)) for j in range(2)]
            else:
                alts = [("", rng.randint(1, 2))]
            reqs.append(Req(f"r{ci}{ri}", alts, rng.random() < 0.3))
        cons = []
        for _ in range(rng.randint(0, 2)):
            kind = rng.choice(["match", "distinct"])
            attr = "numa" if kind == "match" else "color"
            names = [] if rng.random() < 0.5 else [rng.choice(reqs).name]
            cons.append((kind, attr, names))
        claims.append(Claim(reqs, cons))
    return devs, claims, rng.choice([2, 4, 100])


def to_objects(devs: list[Dev], claims: list[Claim], capacity: int) -> tuple[list[Obj], list[Obj]]:
    counters = rslice("counters", [], node_name="node-1", pool="node-1", count=2,
                      sharedCounters=[{"name": "mem", "counters": {"m": {"value": str(capacity)}}}])
    devices = []
    for d in devs:
        attrs: dict[str, Any] = {}
        if d.numa is not None:
            attrs["numa"] = d.numa
        if d.color is not None:
            attrs["color"] = d.color
        extra: Obj = {"consumesCounters": [{"counterSet": "mem", "counters": {"m": {"value": str(d.mem)}}}]}
        if d.tainted:
            extra["taints"] = [{"key": "bad", "effect": "NoSchedule"}]
        devices.append(device(d.name, attrs, **extra))
    slices = [counters, rslice("devices", devices, node_name="node-1", pool="node-1", count=2)]
    tol = [{"key": "bad", "operator": "Exists"}]
    out = []
    for ci, c in enumerate(claims):
        reqs = []
        for r in c.requests:
            if len(r.alts) == 1:
                body: Obj = {"deviceClassName": DRIVER, "count": r.alts[0][1]}
                if r.tolerates:
                    body["tolerations"] = tol
                reqs.append({"name": r.name, "exactly": body})
            else:
                extra = {"tolerations": tol} if r.tolerates else {}
                subs = [{"name": s, "deviceClassName": DRIVER, "count": n, **extra} for s, n in r.alts]
                reqs.append({"name": r.name, "firstAvailable": subs})
        cons = [{"requests": names, ("matchAttribute" if kind == "match" else "distinctAttribute"): f"{DRIVER}/{attr}"}
                if names else {("matchAttribute" if kind == "match" else "distinctAttribute"): f"{DRIVER}/{attr}"}
                for kind, attr, names in c.constraints]
        out.append(claim(f"c{ci}", *reqs, constraints=cons or None))
    return slices, out


@pytest.mark.parametrize("seed", range(400))
def test_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    devs, claims, capacity = build(rng)
    want = reference(devs, claims, capacity)
    slices, objs = to_objects(devs, claims, capacity)
    out = Allocator([device_class()], slices, AllocatedState()).allocate(node("node-1"), objs)
    assert out.pod_error is None
    if want is None:
        assert not out.ok, out.allocations
        assert out.reasons
    else:
        assert out.ok, out.message
        got = [[(r["request"], r["device"]) for r in a["devices"]["results"]] for a in out.allocations]
        assert got == want
