"""The structured-parameters allocator: which devices a pod's claims get on one node.

Semantics follow upstream's ``structured/internal/experimental/allocator_experimental.go``
(Kubernetes 1.37 with its default-on features): claims one after another, requests in
order, each device first-fit over pools sorted by driver and pool name (pools with binding
conditions last), slices by name, devices by index; a depth-first search with backtracking
that stops at the first full solution. ``firstAvailable`` subrequests are tried in order.
At most 32 results per claim; requests that would exceed that backtrack aggressively.

What differs is speed and explanations, not answers:

* built once per cycle (pools, per-node candidate lists per request signature, counter
  totals per pool), so asking about every node of a cluster is cheap;
* CEL results are memoised per (expression, device content) in a :class:`SelectorCache` the
  caller passes in (and keeps across cycles);
* devices within one request are tried as combinations, not permutations (upstream #133678);
  a ``matchAttribute`` constraint restricts later devices to the chosen value's group; counts
  are checked before searching and failed sub-searches are memoised;
* a claim that cannot be allocated on its own fails the node without the search across the
  pod's claims backtracking through the others' choices: constraints no choice of free
  candidates can meet (no candidate has the attribute, no value common to the requests or
  with enough devices, too few distinct values) are seen before any search; a joint search
  that does not settle within 1,000 steps searches each claim alone first;
* a step budget per call ends hopeless searches with a "gave up" reason: the same answer on
  any machine; a wall-clock limit can be added (serve) but is off by default;
* on failure, per-request counts say why (see :mod:`drasched.dra.explain`).

Where upstream's ``Allocate`` returns an error, which aborts the pod's scheduling attempt
(``statusError``) rather than ruling out one node, the outcome carries ``pod_error``: CEL
errors, a claim needing more than 32 results, ``All`` while a pool the node sees is
incomplete or invalid, ``All`` devices that a constraint rejects, unknown request shapes.
A missing DeviceClass is unschedulable (upstream's PreFilter); invalid pools only fail the
node (``ErrFailedAllocationOnNode``).
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

import msgspec

from drasched.api.resource import (
    ADMIN_ACCESS_NAMESPACE_LABEL,
    ALLOCATION_RESULTS_MAX_SIZE,
    DeviceClass,
    DeviceConstraint,
    DeviceTaint,
    DeviceToleration,
    ResourceClaim,
    decode,
)
from drasched.dra import explain as ex
from drasched.dra.allocated_state import AllocatedState
from drasched.dra.capacity import CapacityError, Consumption, consumption, policy_refusal
from drasched.dra.explain import Reason
from drasched.dra.nodes import node_selector_matches
from drasched.dra.pools import DeviceEntry, DeviceID, NodePools, Pool, PoolID, PoolIndex, qualify
from drasched.dra.selector_cache import SelectorCache

Obj = dict[str, Any]

__all__ = ["DEFAULT_STEP_BUDGET", "AllocationOutcome", "Allocator", "Features", "SelectorCache"]

_SHARE_NS: Final = uuid.UUID("6f1c1f52-6a5e-4c0e-9d8e-2b7b2d1c6a10")
#: Search steps one ``allocate`` call may take (every placement in the test suite and the
#: benchmarks' pathological cases takes under 5,000; a second or less of search on a slow
#: core); the answer after that is "gave up", whatever the machine's speed.
DEFAULT_STEP_BUDGET: Final = 20_000
#: Steps a search over several claims gets before each claim is first tried alone.
_JOINT_PROBE_STEPS: Final = 1_000
#: Failed (claim, request, state) positions one search remembers; past that it stops adding.
_SEARCH_MEMO_LIMIT: Final = 50_000


@dataclass(frozen=True)
class Features:
    """DRA feature gates that change allocation; all default on, as in Kubernetes 1.37."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_binding_and_status: bool = True
    consumable_capacity: bool = True


@dataclass
class AllocationOutcome:
    """The answer for one node.

    ``allocations[i]`` is the wire-form ``status.allocation`` for ``claims[i]`` (the existing
    one for claims that were already allocated, see ``newly_allocated``); empty when not ok.
    ``pod_error`` is set for errors that fail the pod's whole attempt (CEL runtime errors).
    """

    ok: bool
    allocations: list[Obj] = field(default_factory=list)
    newly_allocated: list[bool] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)
    pod_error: str | None = None
    elapsed: float = 0.0

    @property
    def message(self) -> str:
        """All reasons as one phrase (see :func:`drasched.dra.explain.summarize`)."""
        if self.pod_error:
            return self.pod_error
        return ex.summarize(self.reasons)


class _PodError(Exception):
    """Fails the pod's attempt, not only this node (CEL errors, disabled features)."""


class _OutOfSteps(Exception):
    """The step budget (or the optional wall-clock limit) is spent."""


_MAXED: Final = object()  # "would exceed 32 results": backtrack past this request


# ------------------------------------------------------------------------------ taints


def _tolerates(tol: DeviceToleration, taint: DeviceTaint) -> bool:
    """Upstream ``resourceclaim.ToleratesTaint``."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    op = tol.operator or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return tol.value == taint.value
    return False


def _untolerated(dev: DeviceEntry, tolerations: Sequence[DeviceToleration]) -> tuple[str, ...]:
    """Taints with effect NoSchedule/NoExecute that no toleration matches (others are ignored)."""
    out = []
    for t in dev.view.taints:
        if t.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(tol, t) for tol in tolerations):
            out.append(f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}")
    return tuple(out)


# ------------------------------------------------------------------------------ candidates


@dataclass(eq=False)
class _Cand:
    """One selectable device for one request signature on one node."""

    dev: DeviceEntry
    err: str | None = None
    tainted: tuple[str, ...] = ()
    use: Consumption | None = None
    too_small: bool = False
    unsupported: bool = False

    @property
    def static_ok(self) -> bool:
        return not (self.tainted or self.too_small or self.unsupported)


@dataclass(eq=False)
class _Candidates:
    """Per node and request signature: selectable devices, in first-fit order."""

    selectable: list[_Cand]
    usable: list[_Cand]  # ExactCount candidates: static checks passed (or CEL error pending)
    failed_class: int
    failed_request: int
    errors: list[str]
    has_multi: bool = False
    groups: dict[str, tuple[dict[Any, list[int]], list[Any]]] = field(default_factory=dict)
    suffixes: dict[str, list[int]] = field(default_factory=dict)

    def distinct_suffix(self, attr: str) -> list[int]:
        """For each position in ``usable``: how many distinct values of ``attr`` lie at or after it."""
        out = self.suffixes.get(attr)
        if out is None:
            seen: set[Any] = set()
            out = [0] * (len(self.usable) + 1)
            for i in range(len(self.usable) - 1, -1, -1):
                v = self.usable[i].dev.attribute(attr)
                if v is not None:
                    seen.add(v)
                out[i] = len(seen)
            self.suffixes[attr] = out
        return out

    def group(self, attr: str) -> tuple[dict[Any, list[int]], list[Any]]:
        """Positions in ``usable`` by attribute value, and each position's value (None: absent)."""
        g = self.groups.get(attr)
        if g is None:
            by_value: dict[Any, list[int]] = {}
            values: list[Any] = []
            for i, c in enumerate(self.usable):
                v = c.dev.attribute(attr)
                values.append(v)
                if v is not None:
                    by_value.setdefault(v, []).append(i)
            g = (by_value, values)
            self.groups[attr] = g
        return g


# ------------------------------------------------------------------------------ requests


@dataclass(eq=False)
class _ReqSpec:
    """A request or one ``firstAvailable`` subrequest as written in the claim (parsed once)."""

    name: str
    parent: str
    class_name: str
    all_mode: bool
    count: int
    admin: bool
    selectors: tuple[str, ...]
    tolerations: list[DeviceToleration]
    tolerations_raw: list[Obj]
    capacity: dict[str, str | int | float] | None
    full_name: str = ""
    base: str = ""
    sub: str = ""
    signature: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        self.full_name = f"{self.parent}/{self.name}" if self.parent else self.name
        self.base = self.parent or self.name
        self.sub = self.name if self.parent else ""
        self.signature = (self.class_name, self.selectors,
                          json.dumps([msgspec.to_builtins(t) for t in self.tolerations], sort_keys=True),
                          json.dumps(self.capacity, sort_keys=True, default=str))


class _Req:
    """A request resolved for one node within one :meth:`Allocator.allocate` call."""

    __slots__ = ("admin", "all_devices", "all_mode", "base", "cands", "capacity", "class_name", "cls",
                 "cls_raw", "count", "distinct_attrs", "extra_demand", "full_name", "match_groups", "name",
                 "parent", "spec", "sub", "tolerations", "tolerations_raw")

    def __init__(self, spec: _ReqSpec, cls: DeviceClass, cls_raw: Obj) -> None:
        self.spec = spec
        self.name = spec.name
        self.parent = spec.parent
        self.full_name = spec.full_name
        self.base = spec.base
        self.sub = spec.sub
        self.class_name = spec.class_name
        self.all_mode = spec.all_mode
        self.count = spec.count
        self.admin = spec.admin
        self.tolerations = spec.tolerations
        self.tolerations_raw = spec.tolerations_raw
        self.capacity = spec.capacity
        self.cls = cls
        self.cls_raw = cls_raw
        self.cands: _Candidates | None = None
        self.all_devices: list[_Cand] = []
        self.match_groups: list[tuple[_Constraint, str]] = []
        self.extra_demand: list[int] = []  # per match group: later same-list requests under it
        self.distinct_attrs: list[str] = []

    @property
    def n(self) -> int:
        return len(self.all_devices) if self.all_mode else self.count


@dataclass(eq=False)
class _ClaimSpec:
    """What a claim asks for, parsed once per claim object and cycle."""

    raw: Obj
    key: str
    uid: str
    slots: list[list[_ReqSpec]]
    constraints: list[DeviceConstraint]
    admin_requests: list[str]
    error: str | None = None
    shape: tuple[Any, ...] = ()


class _Constraint:
    """``matchAttribute`` / ``distinctAttribute`` over the listed requests of one claim."""

    def __init__(self, c: DeviceConstraint) -> None:
        self.requests = set(c.requests)
        self.distinct = c.match_attribute is None
        self.attr = str(c.distinct_attribute if self.distinct else c.match_attribute)
        self.value: Any = None
        self.n = 0
        self.seen: dict[Any, int] = {}

    def describe(self) -> str:
        kind = "distinctAttribute" if self.distinct else "matchAttribute"
        scope = f" across {', '.join(sorted(self.requests))}" if self.requests else ""
        return f"{kind} {self.attr}{scope}"

    def applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, dev: DeviceEntry, base: str, sub: str) -> bool:
        if not self.applies(base, sub):
            return True
        v = dev.attribute(self.attr)
        if v is None:
            return False
        if self.distinct:
            if self.seen.get(v):
                return False
            self.seen[v] = 1
            return True
        if self.n and v != self.value:
            return False
        if not self.n:
            self.value = v
        self.n += 1
        return True

    def remove(self, dev: DeviceEntry, base: str, sub: str) -> None:
        if not self.applies(base, sub):
            return
        if self.distinct:
            self.seen.pop(dev.attribute(self.attr), None)
            return
        self.n -= 1
        if not self.n:
            self.value = None

    def reset(self) -> None:
        self.value = None
        self.n = 0
        self.seen = {}

    def state(self) -> Any:
        if self.distinct:
            return frozenset(self.seen)
        return (self.n > 0, self.value)


@dataclass(eq=False)
class _Plan:
    """One claim to allocate on one node: its request slots (alternatives each) and constraints."""

    index: int
    spec: _ClaimSpec
    slots: list[list[_Req]]
    constraints: list[_Constraint]
    chosen: list[int]

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def raw(self) -> Obj:
        return self.spec.raw


@dataclass(eq=False)
class _Result:
    dev: DeviceEntry
    req: _Req
    use: Consumption | None
    multi: bool


# ------------------------------------------------------------------------------ Allocator


class Allocator:
    """Built once per scheduling cycle; :meth:`allocate` answers for one node and one pod.

    ``classes`` and ``slices`` are wire-form dicts; ``allocated_state`` is shared with the
    caller, who may ``add``/``remove`` allocations between calls (cached counter totals
    follow its per-pool versions). ``selector_cache`` is the caller's, kept across cycles (a
    fresh one when not given). ``step_budget`` bounds the search of one call, so the answer is
    the same on any machine; ``wall_time_limit`` (seconds, off by default) adds a clock on top,
    for a live scheduler that must never stall whatever the budget.
    """

    def __init__(
        self,
        classes: Iterable[Obj] | Mapping[str, Obj],
        slices: Sequence[Obj],
        allocated_state: AllocatedState | None = None,
        features: Features | None = None,
        *,
        step_budget: int = DEFAULT_STEP_BUDGET,
        wall_time_limit: float | None = None,
        index: PoolIndex | None = None,
        selector_cache: SelectorCache | None = None,
    ) -> None:
        """``index``: pools already built from the same slices (``slices`` is then unused)."""
        self.features = features or Features()
        self.state = allocated_state if allocated_state is not None else AllocatedState()
        self.step_budget = step_budget
        self.wall_time_limit = wall_time_limit
        self.selectors = selector_cache if selector_cache is not None else SelectorCache()
        items = classes.values() if isinstance(classes, Mapping) else classes
        self.classes: dict[str, tuple[DeviceClass, Obj]] = {}
        for raw in items:
            try:
                view = decode(raw, DeviceClass)
            except msgspec.ValidationError:
                continue
            self.classes[view.metadata.name] = (view, raw)
        self.index = index if index is not None else PoolIndex(list(slices))
        self._cands: dict[tuple[str, tuple[Any, ...]], _Candidates] = {}
        self._claims: dict[int, _ClaimSpec] = {}
        self._failures: dict[tuple[Any, ...], tuple[list[str], list[Reason]]] = {}
        self._counters: dict[tuple[PoolID, int], tuple[int, dict[str, dict[str, Fraction]]]] = {}
        self.stats = {"allocate_calls": 0, "search_steps": 0, "timeouts": 0}
        """``timeouts``: calls that spent their step budget (or wall-clock limit)."""

    # ------------------------------------------------------------------ public API

    def allocate(self, node: Obj, claims: Sequence[Obj],
                 namespace_labels: Mapping[str, str] | None = None) -> AllocationOutcome:
        """Allocate every not-yet-allocated claim of a pod on ``node``, or say why not.

        ``namespace_labels`` are the labels of the claims' namespace (the pod's): admin
        access needs ``resource.kubernetes.io/admin-access: "true"`` there; ``None`` means
        no labels.
        """
        started = time.monotonic()
        self.stats["allocate_calls"] += 1
        try:
            outcome = self._allocate(node, list(claims), namespace_labels or {}, started)
        except _PodError as exc:
            outcome = AllocationOutcome(False, pod_error=str(exc))
        outcome.elapsed = time.monotonic() - started
        return outcome

    def available_counters(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        """Counter totals of a pool minus what allocated devices consume (cached per version)."""
        version = self.state.pool_version(pool.id)
        key = (pool.id, pool.generation)
        hit = self._counters.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        avail = {name: dict(cs) for name, cs in pool.counter_sets.items()}
        for name in self.state.devices_in_pool(pool.id):
            d = pool.by_name.get(name)
            if d is None or not d.consumes:
                continue
            if self.state.in_use(d.id) or self.state.has_shares(d.id):
                for set_name, counters in d.consumes:
                    cs = avail.get(set_name)
                    if cs is None:
                        continue
                    for cname, v in counters.items():
                        if cname in cs:
                            cs[cname] -= v
        self._counters[key] = (version, avail)
        return avail

    # ------------------------------------------------------------------ preparation

    def _allocate(self, node: Obj, claims: list[Obj], ns_labels: Mapping[str, str],
                  started: float) -> AllocationOutcome:
        node_name = (node.get("metadata") or {}).get("name", "")
        np = self.index.for_node(node)
        reasons: list[Reason] = []
        allocations: list[Obj] = [{} for _ in claims]
        new = [False] * len(claims)
        specs: list[_ClaimSpec] = []
        for i, raw in enumerate(claims):
            existing = (raw.get("status") or {}).get("allocation")
            if existing:
                allocations[i] = existing
                md = raw.get("metadata") or {}
                key = f"{md.get('namespace', '')}/{md.get('name', '')}"
                sel = existing.get("nodeSelector")
                if sel is not None and not node_selector_matches(sel, node):
                    reasons.append(Reason(ex.CLAIM_ELSEWHERE, claim=key))
                    continue
                bad = self._tainted_allocation(existing)
                if bad:
                    reasons.append(Reason(ex.CLAIM_TAINTED, claim=key, details=bad))
                continue
            specs.append(self._claim_spec(raw))
        if reasons:
            return AllocationOutcome(False, reasons=reasons)
        if not specs:
            return AllocationOutcome(True, allocations=allocations, newly_allocated=new)
        # A node that could not take this shape of request before, with none of its pools
        # changed since, cannot take it now: answer from the failure memo.
        admin_ok = ns_labels.get(ADMIN_ACCESS_NAMESPACE_LABEL) == "true"
        memo_key = (node_name, tuple(self.state.pool_version(p.id) for p in np.pools), admin_ok,
                    tuple(sp.shape for sp in specs))
        memo = self._failures.get(memo_key)
        if memo is not None:
            return AllocationOutcome(False, reasons=ex.rename_claims(memo[1], memo[0], [sp.key for sp in specs]))
        outcome = self._allocate_specs(node, node_name, np, specs, claims, allocations, new, ns_labels, started)
        if not outcome.ok and not outcome.pod_error and not any(r.kind == ex.TIMED_OUT for r in outcome.reasons):
            if len(self._failures) > 200_000:
                self._failures.clear()
            self._failures[memo_key] = ([sp.key for sp in specs], outcome.reasons)
        return outcome

    def _allocate_specs(self, node: Obj, node_name: str, np: NodePools, specs: list[_ClaimSpec],
                        claims: list[Obj], allocations: list[Obj], new: list[bool],
                        ns_labels: Mapping[str, str], started: float) -> AllocationOutcome:
        reasons = self._missing_classes(specs)
        if reasons:
            return AllocationOutcome(False, reasons=reasons)
        plans: list[_Plan] = []
        index_of = {id(raw): i for i, raw in enumerate(claims)}
        for spec in specs:
            plan = self._plan(index_of[id(spec.raw)], spec, np, ns_labels, reasons, node_name)
            if plan is not None:
                plans.append(plan)
        if reasons:
            return AllocationOutcome(False, reasons=reasons)

        quick = self._quick_check(plans, np)
        if quick:
            return AllocationOutcome(False, reasons=quick)

        budget = _Budget(self.step_budget, None if self.wall_time_limit is None else started + self.wall_time_limit)
        try:
            search = self._search(plans, np, budget)
        except _OutOfSteps:
            self.stats["timeouts"] += 1
            return AllocationOutcome(False, reasons=[Reason(ex.TIMED_OUT, details=(budget.describe(),))])
        finally:
            self.stats["search_steps"] += budget.steps
        if isinstance(search, list):
            return AllocationOutcome(False, reasons=search)
        if not search.found:
            return AllocationOutcome(False, reasons=self._diagnose(plans, np, search.maxed))
        for p in plans:
            allocations[p.index] = self._wire(p, search.results[p.index], node_name)
            new[p.index] = True
        return AllocationOutcome(True, allocations=allocations, newly_allocated=new)

    def _search(self, plans: list[_Plan], np: NodePools, budget: _Budget) -> _Search | list[Reason]:
        """The search over all the pod's claims, run, or the reasons one claim fails alone.

        A search over several claims that does not settle within a few steps (nearly all do)
        is put aside while each claim is searched alone, so that a hopeless claim does not
        make it backtrack through every choice of the claims before it; then it starts again.
        """
        if len(plans) > 1:
            probe = _Budget(min(_JOINT_PROBE_STEPS, budget.limit), budget.deadline)
            quick = _Search(self, plans, probe)
            try:
                quick.run()
                return quick
            except _OutOfSteps:
                quick.undo_all()
            finally:
                budget.steps += probe.steps
            hopeless = self._hopeless_alone(plans, np, budget)
            if hopeless:
                return hopeless
        search = _Search(self, plans, budget)
        search.run()
        return search

    def _hopeless_alone(self, plans: list[_Plan], np: NodePools, budget: _Budget) -> list[Reason]:
        """Reasons when one claim cannot be allocated even by itself, else ``[]``.

        Claims of one pod only take devices, counters and capacity from each other and each
        has its own constraints, so a claim that fails alone fails with the others too: the
        joint search would otherwise backtrack through every choice of the claims before it
        (C(48, 20) ways for a 20-device claim on 48 devices) to learn the same thing.
        """
        for p in plans:
            solo = _Search(self, [p], budget)
            try:
                found = solo.run()
            except _PodError:
                found = True  # the joint search reaches (or not) the error as upstream would
            finally:
                solo.undo_all()
            if not found and not solo.maxed:
                return self._diagnose([p], np, False)
        return []

    def _missing_classes(self, specs: list[_ClaimSpec]) -> list[Reason]:
        """Upstream PreFilter: every request and subrequest names a DeviceClass that exists,
        whichever gets chosen; a missing one makes the pod unschedulable, an empty name (a
        request type this version does not know) fails its attempt."""
        reasons: list[Reason] = []
        for spec in specs:
            for alts in spec.slots:
                for rs in alts:
                    if not rs.class_name:
                        raise _PodError(f"claim {spec.key}, request {rs.full_name}: missing device class name "
                                        "(unsupported request type?)")
                    if rs.class_name not in self.classes:
                        reasons.append(Reason(ex.CLASS_MISSING, claim=spec.key, request=rs.full_name,
                                              class_name=rs.class_name))
        return reasons

    def _tainted_allocation(self, allocation: Obj) -> tuple[str, ...]:
        """Devices of an allocated claim now tainted NoExecute and not tolerated by the result."""
        if not self.features.device_taints:
            return ()
        out: list[str] = []
        for r in (allocation.get("devices") or {}).get("results") or []:
            dev = self.index.devices_by_id.get((r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
            if dev is None or not dev.view.taints:
                continue
            tolerations = [decode(t, DeviceToleration) for t in r.get("tolerations") or []]
            for t in dev.view.taints:
                if t.effect == "NoExecute" and not any(_tolerates(tol, t) for tol in tolerations):
                    out.append(f"{r.get('device')}: {t.key}:{t.effect}")
        return tuple(out)

    def _claim_spec(self, raw: Obj) -> _ClaimSpec:
        """Parse a claim once per cycle (cached by object identity; specs are immutable)."""
        hit = self._claims.get(id(raw))
        if hit is not None and hit.raw is raw:
            return hit
        view = decode(raw, ResourceClaim)
        md = view.metadata
        key = f"{md.namespace}/{md.name}" if md.namespace else md.name
        spec = _ClaimSpec(raw, key, md.uid, [], list(view.spec.devices.constraints), [])
        try:
            self._parse_claim(spec, view)
        except _PodError as exc:
            spec.error = str(exc)
        # Everything that decides the outcome except the claim's name: failures are memoised by it.
        spec.shape = (tuple(tuple((rs.signature, rs.name, rs.parent, rs.all_mode, rs.count, rs.admin)
                                  for rs in alts) for alts in spec.slots),
                      json.dumps([msgspec.to_builtins(c) for c in spec.constraints], sort_keys=True))
        if len(self._claims) > 100_000:
            self._claims.clear()
        self._claims[id(raw)] = spec
        return spec

    def _parse_claim(self, spec: _ClaimSpec, view: ResourceClaim) -> None:
        key = spec.key
        for i, c in enumerate(view.spec.devices.constraints):
            if c.match_attribute is None and c.distinct_attribute is None:
                raise _PodError(f"claim {key}, constraint #{i}: empty constraint (unsupported constraint type?)")
        raw_requests = ((spec.raw.get("spec") or {}).get("devices") or {}).get("requests") or []
        for ri, r in enumerate(view.spec.devices.requests):
            rraw = raw_requests[ri] if ri < len(raw_requests) else {}
            alts: list[_ReqSpec] = []
            if r.exactly is not None:
                e = r.exactly
                if e.admin_access is not None and not self.features.admin_access:
                    raise _PodError(f"claim {key}, request {r.name}: admin access is requested, "
                                    "but the feature is disabled")
                if e.admin_access:
                    spec.admin_requests.append(r.name)
                alts.append(self._req_spec(key, r.name, "", e, bool(e.admin_access),
                                           (rraw.get("exactly") or {}).get("tolerations") or []))
            elif r.first_available:
                if not self.features.prioritized_list:
                    raise _PodError(f"claim {key}, request {r.name}: has subrequests, but the "
                                    "DRAPrioritizedList feature is disabled")
                subs_raw = rraw.get("firstAvailable") or []
                for si, sr in enumerate(r.first_available):
                    sraw = subs_raw[si] if si < len(subs_raw) else {}
                    alts.append(self._req_spec(key, sr.name, r.name, sr, False, sraw.get("tolerations") or []))
            else:
                raise _PodError(f"claim {key}, request {r.name}: neither exactly nor firstAvailable set")
            spec.slots.append(alts)

    def _req_spec(self, claim_key: str, name: str, parent: str, body: Any, admin: bool,
                  tolerations_raw: list[Obj]) -> _ReqSpec:
        full = f"{parent}/{name}" if parent else name
        for i, sel in enumerate(body.selectors):
            if sel.cel is None:
                raise _PodError(f"claim {claim_key}, request {full}, selector #{i}: CEL expression empty "
                                "(unsupported selector type?)")
        mode = body.allocation_mode or "ExactCount"
        if mode not in ("ExactCount", "All"):
            raise _PodError(f"claim {claim_key}, request {full}: unsupported count mode {mode}")
        cap = dict(body.capacity.requests) if body.capacity is not None else None
        if cap is not None and not self.features.consumable_capacity:
            raise _PodError(f"claim {claim_key}, request {full}: has capacity requests, but the "
                            "DRAConsumableCapacity feature is disabled")
        return _ReqSpec(name=name, parent=parent, class_name=body.device_class_name, all_mode=mode == "All",
                        count=body.count or 1, admin=admin,
                        selectors=tuple(sel.cel.expression for sel in body.selectors if sel.cel is not None),
                        tolerations=list(body.tolerations), tolerations_raw=list(tolerations_raw),
                        capacity=cap)

    def _plan(self, index: int, spec: _ClaimSpec, np: NodePools, ns_labels: Mapping[str, str],
              reasons: list[Reason], node_name: str) -> _Plan | None:
        if spec.error:
            raise _PodError(spec.error)
        key = spec.key
        if spec.admin_requests and ns_labels.get(ADMIN_ACCESS_NAMESPACE_LABEL) != "true":
            reasons.append(Reason(ex.ADMIN_ACCESS_DENIED, claim=key, request=spec.admin_requests[0]))
            return None
        constraints = [_Constraint(c) for c in spec.constraints]
        slots: list[list[_Req]] = []
        before = len(reasons)
        for alt_specs in spec.slots:
            alts: list[_Req] = []
            for rs in alt_specs:
                found = self.classes.get(rs.class_name)
                if found is None:
                    reasons.append(Reason(ex.CLASS_MISSING, claim=key, request=rs.full_name,
                                          class_name=rs.class_name))
                    continue
                a = _Req(rs, found[0], found[1])
                self._prepare(key, a, np, node_name, reasons)
                alts.append(a)
            slots.append(alts)
        if len(reasons) > before:
            return None
        # Upstream checks the smallest possible number of results before searching ("All"
        # counts the matching devices of this node), request by request as 1.37 does; more
        # than 32 fails the pod's attempt.
        counted = 0
        for alts in (a for a in slots if a):
            least = min(len(a.all_devices) if a.all_mode else a.count for a in alts)
            if least > ALLOCATION_RESULTS_MAX_SIZE - counted:
                request = alts[0].spec.parent or alts[0].spec.name
                raise _PodError(f"claim {key}, request {request}: adding {least} devices exceeds the claim limit "
                                f"of {ALLOCATION_RESULTS_MAX_SIZE}, with {counted} already accounted for")
            counted += least
        plan = _Plan(index, spec, slots, constraints, [0] * len(slots))
        for si, alts in enumerate(slots):
            for a in alts:
                a.match_groups = [(c, c.attr) for c in constraints
                                  if not c.distinct and c.applies(a.base, a.sub)]
                a.distinct_attrs = [c.attr for c in constraints if c.distinct and c.applies(a.base, a.sub)]
                # Later single-choice requests drawing from the same candidates under the same
                # matchAttribute need the same group too: count them for pruning.
                a.extra_demand = [
                    sum(b.count for later in slots[si + 1:] if len(later) == 1
                        for b in later if not b.all_mode and not b.admin and b.cands is a.cands
                        and c.applies(b.base, b.sub))
                    for c, _ in a.match_groups]
        return plan

    def _prepare(self, claim_key: str, req: _Req, np: NodePools, node_name: str,
                 reasons: list[Reason]) -> None:
        req.cands = self._candidates(req, np, node_name)
        if req.all_mode:
            # Upstream validateDeviceRequest: "all" is unknown while a pool the node sees is
            # incomplete or invalid, which fails the pod's attempt (not only this node).
            for bad, what, kind in ((np.incomplete, "is currently being updated", "incomplete"),
                                    (np.invalid, "is currently invalid", "invalid")):
                if bad:
                    raise _PodError(f"claim {claim_key}, request {req.full_name}: asks for all devices, but "
                                    f"resource pool {bad[0]} {what} ({kind}: {bad[0].reason})")
            for c in req.cands.selectable:
                if c.err:
                    raise _PodError(f"claim {claim_key}, {c.err}")
            # Devices whose capacity cannot fit the request at all are not part of "all". Since
            # 1.37 a shared device whose remaining capacity is used up by allocated claims
            # still is: it is checked when taken, so "all" fails instead of taking the others.
            req.all_devices = [c for c in req.cands.selectable if not c.too_small]

    def _capacity_exhausted(self, c: _Cand) -> bool:
        """A shared device without room for this request next to its allocated shares."""
        d = c.dev
        if not (d.multi and self.features.consumable_capacity) or c.use is None:
            return False
        have = self.state.consumed_capacity(d.id)
        return any(have.get(name, 0) + amount > d.capacity[name].value for name, amount in c.use.amounts.items())

    def _candidates(self, req: _Req, np: NodePools, node_name: str) -> _Candidates:
        key = (node_name, req.spec.signature)
        hit = self._cands.get(key)
        if hit is not None:
            return hit
        f = self.features
        selectable: list[_Cand] = []
        failed_class = failed_request = 0
        errors: list[str] = []
        cls_name = req.class_name
        class_selectors = [s.cel.expression for s in req.cls.spec.selectors if s.cel is not None]
        for dev in np.devices:
            if not f.device_binding_and_status and dev.view.binding_conditions:
                continue
            cand: _Cand | None = _Cand(dev)
            for i, expr in enumerate(class_selectors):
                r = self.selectors.evaluate(expr, dev, f"class {cls_name}: selector #{i}")
                if r is False:
                    failed_class += 1
                    cand = None
                    break
                if r is not True:
                    errors.append(str(r))
                    assert cand is not None
                    cand.err = str(r)
                    break
            if cand is None:
                continue
            if cand.err is None:
                for i, expr in enumerate(req.spec.selectors):
                    r = self.selectors.evaluate(expr, dev, f"request {req.full_name}: selector #{i}")
                    if r is False:
                        failed_request += 1
                        cand = None
                        break
                    if r is not True:
                        errors.append(str(r))
                        cand.err = str(r)
                        break
            if cand is None:
                continue
            if f.device_taints:
                cand.tainted = _untolerated(dev, req.tolerations)
            if dev.consumes and not f.partitionable_devices:
                cand.unsupported = True
            if f.consumable_capacity and cand.err is None:
                try:
                    cand.use = consumption(dev, req.capacity)
                    cand.too_small = cand.use is None
                except CapacityError as exc:  # upstream aborts when it tries this device
                    cand.err = (f"request {req.full_name}: checking capacity for device "
                                f"{dev.driver}/{dev.pool_name}/{dev.name}: {exc}")
            selectable.append(cand)
        usable = [c for c in selectable if c.err or c.static_ok]
        out = _Candidates(selectable, usable, failed_class, failed_request, errors,
                          has_multi=f.consumable_capacity and any(c.dev.multi for c in usable))
        self._cands[key] = out
        return out

    def _free_for(self, req: _Req, enough: int) -> int:
        """Usable devices not taken by allocated claims, counted up to ``enough``."""
        assert req.cands is not None
        if req.admin:
            return len(req.cands.usable)
        in_use = self.state.in_use
        free = 0
        for c in req.cands.usable:
            if c.err or not in_use(c.dev.id):
                free += 1
                if free >= enough:
                    break
        return free

    def _quick_check(self, plans: list[_Plan], np: NodePools) -> list[Reason]:
        """Cheap impossibility checks before any search: enough free devices per request, and
        constraints that some choice of the free candidates can meet."""
        for p in plans:
            unmet = tuple(c.describe() for c in p.constraints if not self._constraint_possible(p, c))
            if unmet:  # named alone, unless a request lacks devices whatever the constraints
                return [Reason(ex.CONSTRAINT, claim=p.key, details=unmet) if r.kind == ex.CONSTRAINT else r
                        for r in self._diagnose(plans, np, False)]
            # Requests over the same candidate list compete for the same devices.
            demand: dict[int, tuple[_Req, int]] = {}
            for alts in p.slots:
                if not any(self._could_fit(a) for a in alts):
                    return self._diagnose(plans, np, False)
                a = alts[0]
                if (len(alts) == 1 and not a.all_mode and not a.admin and a.cands is not None
                        and not a.cands.has_multi and not a.cands.errors):
                    first, want = demand.get(id(a.cands), (a, 0))
                    demand[id(a.cands)] = (first, want + a.count)
            for first, want in demand.values():
                if want > first.count and self._free_for(first, want) < want:
                    return self._diagnose(plans, np, False)
        return []

    def _constraint_possible(self, p: _Plan, con: _Constraint) -> bool:
        """Whether the free candidates of the requests ``con`` binds could satisfy it.

        Only single-choice ExactCount requests without shared devices or CEL errors are
        judged (the search decides the rest): every device must have the attribute; for
        ``matchAttribute`` one value must be common to all the requests, with enough free
        devices of it; for ``distinctAttribute`` there must be enough distinct values.
        """
        bound = [alts[0] for alts in p.slots if len(alts) == 1 and con.applies(alts[0].base, alts[0].sub)]
        if not bound:
            return True
        if any(a.all_mode or a.cands is None or a.cands.has_multi or a.cands.errors for a in bound):
            return True
        per_list: dict[int, tuple[_Req, int]] = {}
        for a in bound:
            first, want = per_list.get(id(a.cands), (a, 0))
            per_list[id(a.cands)] = (first, want + a.count)
        free_values: dict[int, dict[Any, int]] = {}
        for key, (a, _) in per_list.items():
            assert a.cands is not None
            counts: dict[Any, int] = {}
            for c in a.cands.usable:
                if a.admin or not self.state.in_use(c.dev.id):
                    v = c.dev.attribute(con.attr)
                    if v is not None:
                        counts[v] = counts.get(v, 0) + 1
            free_values[key] = counts
        if con.distinct:
            union: set[Any] = set()
            for key, (_, want) in per_list.items():
                if len(free_values[key]) < want:
                    return False
                union.update(free_values[key])
            return len(union) >= sum(a.count for a in bound)
        common = set.intersection(*(set(v) for v in free_values.values()))
        return any(all(free_values[key][v] >= want for key, (_, want) in per_list.items()) for v in common)

    def _could_fit(self, a: _Req) -> bool:
        assert a.cands is not None
        if a.all_mode:
            return bool(a.all_devices)
        if a.cands.has_multi or a.cands.errors:
            # A shared device can serve several devices of one request; a CEL error must be
            # reached by the search (as upstream would) to fail the pod.
            return bool(a.cands.usable)
        return self._free_for(a, a.count) >= a.count

    # ------------------------------------------------------------------ explanations

    def _diagnose(self, plans: list[_Plan], np: NodePools, maxed: bool) -> list[Reason]:
        reasons: list[Reason] = []
        pool_notes = tuple(f"resource pool {p} incomplete" for p in np.incomplete)
        all_fit = True
        for p in plans:
            for alts in p.slots:
                slot_reasons = []
                for a in alts:
                    r = self._diagnose_request(p, a, pool_notes)
                    if r is None:
                        break
                    slot_reasons.append(r)
                else:
                    all_fit = False
                    reasons.extend(slot_reasons)
        if not all_fit:
            reasons.extend(Reason(ex.POOL_INVALID, details=(f"{pl}: {pl.reason}",)) for pl in np.invalid)
            return reasons
        if maxed:
            return [Reason(ex.TOO_MANY_RESULTS, claim=p.key) for p in plans]
        constrained = [c.describe() for p in plans for c in p.constraints]
        if constrained:
            reasons.append(Reason(ex.CONSTRAINT, claim=plans[0].key, details=tuple(constrained)))
        else:
            reasons.append(Reason(ex.COMBINATION, claim=", ".join(p.key for p in plans)))
        reasons.extend(Reason(ex.POOL_INVALID, details=(f"{pl}: {pl.reason}",)) for pl in np.invalid)
        return reasons

    def _diagnose_request(self, p: _Plan, a: _Req, pool_notes: tuple[str, ...]) -> Reason | None:
        """Counts for one request against allocated state alone; ``None`` if it fits by itself.

        Shared counters are charged cumulatively: for All in list order (every device is
        needed), for ExactCount smallest consumers first (the most devices that fit together).
        """
        if a.cands is None:
            return Reason(ex.CLASS_MISSING, claim=p.key, request=a.full_name, class_name=a.class_name)
        counts: dict[str, int] = {ex.FAILED_CLASS_SELECTOR: a.cands.failed_class,
                                  ex.FAILED_REQUEST_SELECTOR: a.cands.failed_request}
        details: list[str] = list(pool_notes)
        listing = a.all_devices if a.all_mode else a.cands.selectable
        possible: list[_Cand] = []
        for c in listing:
            outcome = self._device_outcome(a, c, details)
            if outcome is None:
                possible.append(c)
            else:
                counts[outcome] = counts.get(outcome, 0) + 1
        if not a.all_mode:
            possible.sort(key=lambda c: sum((sum(v.values(), Fraction(0)) for _, v in c.dev.consumes), Fraction(0)))
        used: dict[PoolID, dict[tuple[str, str], Fraction]] = {}
        free = 0
        unbounded = False
        for c in possible:
            if self._counters_fit(c.dev, used, details):
                free += 1
                unbounded |= c.dev.multi and self.features.consumable_capacity
            else:
                counts[ex.COUNTERS_EXHAUSTED] = counts.get(ex.COUNTERS_EXHAUSTED, 0) + 1
        need = a.n
        if a.all_mode:
            for c in a.cands.selectable:
                if c.too_small:
                    k = _too_small(a, c, details)
                    counts[k] = counts.get(k, 0) + 1
            if listing and free == len(listing):
                return None
        elif free >= need or (unbounded and free):
            return None  # a shared device can serve several devices of one request
        return Reason(ex.INSUFFICIENT, claim=p.key, request=a.full_name, class_name=a.class_name,
                      needed=max(need, 1), counts={k: v for k, v in counts.items() if v},
                      details=tuple(details), free=free)

    def _device_outcome(self, a: _Req, c: _Cand, details: list[str]) -> str | None:
        """Why one device cannot serve the request given allocated state (counters aside)."""
        d = c.dev
        if c.unsupported:
            return ex.UNSUPPORTED
        if c.tainted:
            for t in c.tainted:
                if t not in details:
                    details.append(t)
            return ex.TAINTED
        if c.too_small:
            return _too_small(a, c, details)
        if not a.admin and self.state.in_use(d.id):
            return ex.IN_USE
        if self._capacity_exhausted(c):
            return ex.CAPACITY_EXHAUSTED
        return None

    def _counters_fit(self, d: DeviceEntry, used: dict[PoolID, dict[tuple[str, str], Fraction]],
                      details: list[str]) -> bool:
        """Charge ``d``'s counters to ``used`` if they fit next to allocated devices."""
        multi = d.multi and self.features.consumable_capacity
        if not d.consumes or not self.features.partitionable_devices or (multi and self.state.has_shares(d.id)):
            return True
        avail = self.available_counters(d.pool)
        u = used.setdefault(d.pool.id, {})
        for set_name, counters in d.consumes:
            for cname, v in counters.items():
                if u.get((set_name, cname), 0) + v > avail.get(set_name, {}).get(cname, 0):
                    note = f"counter set {set_name}"
                    if note not in details:
                        details.append(note)
                    return False
        for set_name, counters in d.consumes:
            for cname, v in counters.items():
                u[(set_name, cname)] = u.get((set_name, cname), 0) + v
        return True

    # ------------------------------------------------------------------ results

    def _wire(self, plan: _Plan, results: list[_Result], node_name: str) -> Obj:
        f = self.features
        claim_id = plan.spec.uid or plan.key
        out_results: list[Obj] = []
        for i, r in enumerate(results):
            d = r.dev
            res: Obj = {"request": r.req.full_name, "driver": d.driver, "pool": d.pool_name, "device": d.name}
            if r.req.admin:
                res["adminAccess"] = True
            if r.req.tolerations_raw:
                res["tolerations"] = copy.deepcopy(r.req.tolerations_raw)
            if f.device_binding_and_status:
                if d.view.binding_conditions:
                    res["bindingConditions"] = list(d.view.binding_conditions)
                if d.view.binding_failure_conditions:
                    res["bindingFailureConditions"] = list(d.view.binding_failure_conditions)
            if r.multi:
                res["shareID"] = str(uuid.uuid5(_SHARE_NS, f"{claim_id}/{r.req.full_name}/{i}/"
                                                          f"{d.driver}/{d.pool_name}/{d.name}"))
                if r.use is not None and r.use.wire:
                    res["consumedCapacity"] = dict(r.use.wire)
            out_results.append(res)
        config: list[Obj] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for si, alts in enumerate(plan.slots):
            a = alts[plan.chosen[si]]
            cls_name = a.class_name
            if cls_name in class_ranges:
                lo, hi = class_ranges[cls_name]
                for j in range(lo, hi):
                    config[j]["requests"].append(a.full_name)
                continue
            lo = len(config)
            for cfg in ((a.cls_raw.get("spec") or {}).get("config") or []):
                config.append(_config_entry("FromClass", [a.full_name], cfg))
            class_ranges[cls_name] = (lo, len(config))
        chosen_names = set()
        for si, alts in enumerate(plan.slots):
            a = alts[plan.chosen[si]]
            chosen_names.add(a.base)
            if a.parent:
                chosen_names.add(a.full_name)
        for cfg in ((plan.raw.get("spec") or {}).get("devices") or {}).get("config") or []:
            reqs = cfg.get("requests") or []
            if reqs and not any(r in chosen_names for r in reqs):
                continue
            config.append(_config_entry("FromClaim", reqs, cfg))
        _widen_covering(config, [(alts[plan.chosen[si]].base, alts[plan.chosen[si]].full_name)
                                 for si, alts in enumerate(plan.slots)])
        alloc: Obj = {"devices": {"results": out_results}}
        if config:
            alloc["devices"]["config"] = config
        sel = _node_selector([r.dev for r in results], node_name)
        if sel is not None:
            alloc["nodeSelector"] = sel
        return alloc


def _widen_covering(config: list[Obj], chosen: list[tuple[str, str]]) -> None:
    """Drop ``requests`` from a config that covers every request of the claim (empty means
    all), as upstream's allocator does since 1.37: a request is covered when the config names
    it or the subrequest chosen for it (``chosen``: (request, chosen name) per request).
    Counting names is not enough: a config naming two subrequests of one request would
    otherwise be widened to a claim with two requests (kubernetes/kubernetes#139803)."""
    for entry in config:
        names = entry.get("requests")
        if names and all(base in names or full in names for base, full in chosen):
            del entry["requests"]


def _config_entry(source: str, requests: list[str], cfg: Obj) -> Obj:
    """A ``DeviceAllocationConfiguration`` as upstream serialises it: source, requests
    (omitted when empty: the config applies to every request), then the configuration."""
    entry: Obj = {"source": source}
    if requests:
        entry["requests"] = list(requests)
    entry.update((k, copy.deepcopy(v)) for k, v in cfg.items() if k not in ("source", "requests"))
    return entry


def _node_selector(devices: list[DeviceEntry], node_name: str) -> Obj | None:
    """Upstream ``createNodeSelector``: pin to the node when any device is node-local or binds
    to the node; else merge the single-term selectors; ``None`` when available everywhere."""
    fields: list[Obj] = []
    exprs: list[Obj] = []
    for d in devices:
        if d.node_name or d.view.binds_to_node:
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
        sel = d.node_selector
        if sel is None or len(sel.node_selector_terms) != 1:
            continue
        term = sel.node_selector_terms[0]
        for src, dst in ((term.match_fields, fields), (term.match_expressions, exprs)):
            for req in src:
                item = msgspec.to_builtins(req)
                if not any(_same_requirement(item, x) for x in dst):
                    dst.append(item)
    if not fields and not exprs:
        return None
    term_out: Obj = {}
    if exprs:
        term_out["matchExpressions"] = exprs
    if fields:
        term_out["matchFields"] = fields
    return {"nodeSelectorTerms": [term_out]}


def _same_requirement(a: Obj, b: Obj) -> bool:
    return (a.get("key") == b.get("key") and a.get("operator") == b.get("operator")
            and set(a.get("values") or []) == set(b.get("values") or []))


# ------------------------------------------------------------------------------ the search


class _Budget:
    """Steps left to one ``allocate`` call (shared by its searches), and an optional deadline."""

    __slots__ = ("deadline", "limit", "steps")

    def __init__(self, limit: int, deadline: float | None) -> None:
        self.limit = limit
        self.deadline = deadline
        self.steps = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.limit:
            raise _OutOfSteps
        if self.deadline is not None and not self.steps & 1023 and time.monotonic() > self.deadline:
            raise _OutOfSteps

    def describe(self) -> str:
        if self.steps > self.limit:
            return f"after {self.limit} search steps"
        return f"after {self.steps} search steps, at the wall-clock limit"


class _Search:
    """One depth-first search over a pod's claims on one node (upstream ``allocateOne``)."""

    def __init__(self, alloc: Allocator, plans: list[_Plan], budget: _Budget) -> None:
        self.a = alloc
        self.state = alloc.state
        self.features = alloc.features
        self.plans = plans
        self.budget = budget
        self.maxed = False
        self.excl: dict[DeviceID, set[int]] = {}
        self.shares: dict[DeviceID, int] = {}
        self.cap: dict[DeviceID, dict[str, Fraction]] = {}
        self.counters: dict[PoolID, dict[tuple[str, str], Fraction]] = {}
        self.results: dict[int, list[_Result]] = {p.index: [] for p in plans}
        self.failed: set[Any] = set()

    def run(self) -> bool:
        r = self._slot(0, 0)
        if r is _MAXED:
            self.maxed = True
        self.found = r is True
        return self.found

    # -------------------------------------------------------------- recursion

    def _tick(self) -> None:
        self.budget.tick()

    def undo_all(self) -> None:
        """Give back everything taken (constraint state included), as if never searched."""
        for p in self.plans:
            for c in p.constraints:
                c.reset()
            p.chosen = [0] * len(p.slots)

    def _memo_key(self, pi: int, si: int) -> Any:
        claim = self.plans[pi].index
        return (pi, si,
                frozenset(self.excl),
                frozenset(d for d, s in self.excl.items() if claim in s),
                frozenset((d, tuple(sorted(v.items()))) for d, v in self.cap.items()),
                frozenset(self.shares),
                tuple(c.state() for c in self.plans[pi].constraints),
                len(self.results[claim]))

    def _slot(self, pi: int, si: int) -> Any:
        if pi >= len(self.plans):
            return True
        plan = self.plans[pi]
        if si >= len(plan.slots):
            r = self._slot(pi + 1, 0)
            return False if r is _MAXED else r
        key = self._memo_key(pi, si)
        if key in self.failed:
            return False
        alts = plan.slots[si]
        if len(alts) == 1 and not alts[0].parent:
            r = self._request(pi, si, alts[0], 0, 0)
        else:
            all_maxed = True
            r = False
            for ai, a in enumerate(alts):
                ra = self._request(pi, si, a, 0, 0)
                if ra is _MAXED:
                    continue
                all_maxed = False
                if ra is True:
                    plan.chosen[si] = ai
                    return True
            r = _MAXED if all_maxed else False
        if r is False and len(self.failed) < _SEARCH_MEMO_LIMIT:
            self.failed.add(key)
        return r

    def _request(self, pi: int, si: int, req: _Req, k: int, start: int) -> Any:
        if req.all_mode and not req.all_devices:
            return False
        n = req.n
        if k >= n:
            return self._slot(pi, si + 1)
        claim = self.plans[pi].index
        if len(self.results[claim]) + n - k > ALLOCATION_RESULTS_MAX_SIZE:
            return _MAXED
        self._tick()
        if req.all_mode:
            c = req.all_devices[k]
            undo = self._take(pi, req, c, must=True)
            if undo is None:
                return False
            r = self._request(pi, si, req, k + 1, 0)
            if r is not True:
                self._release(pi, req, undo)
            return r
        cands = req.cands
        assert cands is not None
        usable = cands.usable
        need = n - k
        exact = not cands.has_multi  # every device at most once: counting prunes are sound
        positions: Sequence[int] = range(start, len(usable))
        # matchAttribute: once a value is fixed, only that value's group can follow; before,
        # a device whose group is too small for this request cannot start a solution.
        first_group: tuple[dict[Any, list[int]], list[Any]] | None = None
        first_extra = 0
        for (con, attr), extra in zip(req.match_groups, req.extra_demand):
            if con.n:
                group = cands.group(attr)[0].get(con.value, [])
                lo = bisect_left(group, start)
                if exact and len(group) - lo < need:
                    return False
                if exact and extra and k == 0:
                    free = sum(1 for g in group if not self._taken(usable[g].dev, req.admin))
                    if free < need + extra:
                        return False
                positions = group[lo:]
                first_group = None
                break
            if first_group is None:
                first_group = cands.group(attr)
                first_extra = extra
        # distinctAttribute: fewer distinct values left than devices needed cannot work.
        suffixes = [cands.distinct_suffix(attr) for attr in req.distinct_attrs] if exact else []
        state = self.state
        excl = self.excl
        admin = req.admin
        for pos in positions:
            if exact and (len(usable) - pos < need or any(sfx[pos] < need for sfx in suffixes)):
                break
            c = usable[pos]
            d = c.dev
            multi = d.multi and self.features.consumable_capacity
            if not admin and (state.in_use(d.id) or (not multi and d.id in excl)):
                continue
            if c.err:
                raise _PodError(f"claim {self.plans[pi].key}, {c.err}")
            if first_group is not None:
                v = first_group[1][pos]
                if v is None:
                    continue
                group = first_group[0][v]
                if exact and (len(group) - bisect_left(group, pos) < need or len(group) < need + first_extra):
                    continue
            undo = self._take(pi, req, c)
            if undo is None:
                continue
            r = self._request(pi, si, req, k + 1, pos if multi else pos + 1)
            if r is True:
                return True
            self._release(pi, req, undo)
            if r is _MAXED:
                return _MAXED
        return False

    def _taken(self, d: DeviceEntry, admin: bool) -> bool:
        """Exclusively in use (allocated or in this attempt); shares and admin access never are."""
        if admin:
            return False
        if d.multi and self.features.consumable_capacity:
            return self.state.in_use(d.id)
        return d.id in self.excl or self.state.in_use(d.id)

    # -------------------------------------------------------------- one device

    def _take(self, pi: int, req: _Req, c: _Cand, must: bool = False) -> tuple[Any, ...] | None:
        """Upstream ``allocateDevice``: availability, counters, taints, constraints, capacity.

        ``must`` (allocation mode All): a constraint that rejects the device is an error
        ("cannot add device ... because a claim constraint would not be satisfied").
        """
        d = c.dev
        f = self.features
        claim = self.plans[pi].index
        multi = d.multi and f.consumable_capacity
        holders = self.excl.get(d.id)
        if not multi and req.admin and holders and claim in holders:
            return None
        if not req.admin and (self.state.in_use(d.id) or (not multi and holders)):
            return None
        if c.unsupported:
            return None
        if f.consumable_capacity and c.use is None:
            return None
        took_counters = False
        if d.consumes and f.partitionable_devices:
            in_use_shared = multi and (self.state.has_shares(d.id) or self.shares.get(d.id))
            if not in_use_shared:
                if not self._take_counters(d):
                    return None
                took_counters = True
        if f.device_taints and c.tainted:
            if took_counters:
                self._release_counters(d)
            return None
        cons = self.plans[pi].constraints
        base, sub = req.base, req.sub
        for i, con in enumerate(cons):
            if not con.add(d, base, sub):
                if must:
                    raise _PodError(f"claim {self.plans[pi].key}, request {req.name}: cannot add device "
                                    f"{d.driver}/{d.pool_name}/{d.name} because a claim constraint would not "
                                    f"be satisfied ({con.describe()})")
                for j in range(i):
                    cons[j].remove(d, base, sub)
                if took_counters:
                    self._release_counters(d)
                return None
        if multi and c.use is not None:
            have = self.state.consumed_capacity(d.id)
            mine = self.cap.get(d.id, {})
            for name, amount in c.use.amounts.items():
                if have.get(name, 0) + mine.get(name, 0) + amount > d.capacity[name].value:
                    for con in cons:
                        con.remove(d, base, sub)
                    if took_counters:
                        self._release_counters(d)
                    return None
        if multi:
            self.shares[d.id] = self.shares.get(d.id, 0) + 1
            if c.use is not None:
                mine = self.cap.setdefault(d.id, {})
                for name, amount in c.use.amounts.items():
                    mine[name] = mine.get(name, 0) + amount
        else:
            self.excl.setdefault(d.id, set()).add(claim)
        self.results[claim].append(_Result(d, req, c.use, multi))
        return (c, multi, took_counters)

    def _release(self, pi: int, req: _Req, undo: tuple[Any, ...]) -> None:
        c, multi, took_counters = undo
        d = c.dev
        claim = self.plans[pi].index
        self.results[claim].pop()
        for con in self.plans[pi].constraints:
            con.remove(d, req.base, req.sub)
        if multi:
            n = self.shares[d.id] - 1
            if n:
                self.shares[d.id] = n
            else:
                del self.shares[d.id]
            if c.use is not None:
                mine = self.cap[d.id]
                for name, amount in c.use.amounts.items():
                    mine[name] -= amount
                if all(v == 0 for v in mine.values()):
                    del self.cap[d.id]
        else:
            holders = self.excl[d.id]
            holders.discard(claim)
            if not holders:
                del self.excl[d.id]
        if took_counters:
            self._release_counters(d)

    def _take_counters(self, d: DeviceEntry) -> bool:
        avail = self.a.available_counters(d.pool)
        used = self.counters.setdefault(d.pool.id, {})
        for set_name, counters in d.consumes:
            cs = avail.get(set_name, {})
            for cname, v in counters.items():
                if used.get((set_name, cname), 0) + v > cs.get(cname, 0):
                    return False
        for set_name, counters in d.consumes:
            for cname, v in counters.items():
                used[(set_name, cname)] = used.get((set_name, cname), 0) + v
        return True

    def _release_counters(self, d: DeviceEntry) -> None:
        used = self.counters[d.pool.id]
        for set_name, counters in d.consumes:
            for cname, v in counters.items():
                used[(set_name, cname)] -= v


def _too_small(a: _Req, c: _Cand, details: list[str]) -> str:
    """Why a device cannot serve a request's capacity: it lacks a capacity asked for, its
    ``requestPolicy`` refuses the amount (named in ``details``), or it has too little."""
    if any(qualify(name, c.dev.driver) not in c.dev.capacity for name in a.capacity or ()):
        return ex.LACKS_CAPACITY
    refusal = policy_refusal(c.dev, a.capacity)
    if refusal is not None:
        if refusal not in details:
            details.append(refusal)
        return ex.POLICY_REFUSED
    return ex.INSUFFICIENT_CAPACITY
