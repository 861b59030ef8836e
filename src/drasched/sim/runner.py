"""The embedded runner: manifests in, every controller run to quiescence, final objects out."""

from __future__ import annotations

import copy
import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.api.job_strategy import restorable_job
from drasched.api.kai_install import kai_priority_classes
from drasched.control import Controller
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.sim.progress import Progress
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]

BUILTIN_NAMESPACES = ("default", "kube-system")

RUN_GC_THRESHOLDS = (50_000, 20, 10)
"""The collector's thresholds while an embedded run loads and runs (the default's first is 700).

Every store write decodes and copies objects, allocating thousands of dicts and lists a pod,
all freed by reference counting (JSON trees hold no cycles); at the default thresholds the
collector walks the young objects every 700 allocations and the whole heap every few
thousand, about a fifth of an embedded run's CPU at 500 nodes (BENCHMARKS.md). Cycles are
still collected, only less often: what a run outputs does not change."""


@contextmanager
def collector_thresholds(thresholds: tuple[int, int, int] = RUN_GC_THRESHOLDS) -> Iterator[None]:
    """Run the body with the collector's thresholds set to ``thresholds``, then restore them."""
    before = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)


class SimulationError(Exception):
    """The input could not be loaded; ``errors`` lists every problem, one per object."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass
class SimResult:
    store: MemoryStore
    context: SimContext
    rounds: int
    quiescent: bool
    objects: list[Obj] = field(default_factory=list)

    @property
    def decisions(self) -> list[dict[str, str]]:
        return [d.to_dict() for d in self.context.decisions]


def default_controllers() -> list[Controller]:
    """The control plane of an embedded run, in the order one round runs them."""
    from drasched.sim.registry import build_default_controllers

    return build_default_controllers()


def load_into(store: MemoryStore, objects: Sequence[Obj], sources: Sequence[str] | None = None) -> None:
    """Create ``objects`` in dependency order; collect every failure, then raise them together.

    An object given twice with the same content is created once (``kubectl apply`` leaves the
    repeat "unchanged"); a repeat with other content is refused as the store refuses it,
    naming where the first was given."""
    for ns in BUILTIN_NAMESPACES:
        if store.peek(kinds.NAMESPACE, ns) is None and not any(
            o.get("kind") == "Namespace" and (o.get("metadata") or {}).get("name") == ns for o in objects
        ):
            store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    # KAI's PriorityClasses, which a cluster running KAI has and its users' manifests name
    existing = {o["metadata"]["name"] for o in store.list_shared(kinds.PRIORITY_CLASS).items}
    for pc in kai_priority_classes(objects, existing):
        store.create(pc)
    errors: list[str] = []
    indexed = []
    first: dict[tuple[str, str, str, str], int] = {}
    repeats: dict[int, int] = {}  # a differing repeat's index -> the first's
    for i, obj in enumerate(objects):
        try:
            rt = kinds.for_object(obj)
        except ApiError as exc:
            errors.append(f"{_where(sources, i)}{exc.message}")
            continue
        md = obj.get("metadata") or {}
        name = md.get("name")
        if isinstance(name, str) and name:  # compared before any create, which may fill fields in
            ns = (md.get("namespace") or "default") if rt.namespaced else ""
            j = first.setdefault((rt.api_version, rt.kind, str(ns), name), i)
            if j != i:
                if objects[j] == obj:
                    continue
                repeats[i] = j
        indexed.append((kinds.order_index(rt), i, obj))
    for _, i, obj in sorted(indexed, key=lambda t: (t[0], t[1])):
        try:
            store.restore(obj)
        except ApiError as exc:
            md = obj.get("metadata") or {}
            obj_ns = md.get("namespace") or ""
            first_at = f" (first given at {sources[repeats[i]]})" if sources and i in repeats else ""
            errors.append(f"{_where(sources, i)}{obj.get('kind')} {obj_ns + '/' if obj_ns else ''}{md.get('name')}: "
                          f"{exc.message}{first_at}")
    if errors:
        raise SimulationError(errors)


def apply_into(store: MemoryStore, objects: Sequence[Obj], sources: Sequence[str] | None = None) -> None:
    """A later step's objects, as ``kubectl apply`` writes them into a running cluster: one
    that does not exist yet is created (:func:`load_into`), one that does is updated with the
    fields given (labels, annotations and every top-level field but ``status`` replaced, the
    status subresource written when the object carries one; what the store refuses, such as a
    change to an immutable field, is an error naming the object). A repeat identical to what
    is stored changes nothing ("unchanged")."""
    errors: list[str] = []
    new: list[Obj] = []
    new_sources: list[str] = []
    for i, obj in enumerate(objects):
        try:
            rt = kinds.for_object(obj)
        except ApiError as exc:
            errors.append(f"{_where(sources, i)}{exc.message}")
            continue
        md = obj.get("metadata") or {}
        namespace = (md.get("namespace") or "default") if rt.namespaced else None
        current = store.peek(rt, str(md.get("name") or ""), namespace) if md.get("name") else None
        if current is None:
            new.append(obj)
            new_sources.append(sources[i] if sources else "")
            continue
        try:
            _update_as_applied(store, rt, current, obj)
        except ApiError as exc:
            errors.append(f"{_where(sources, i)}{obj.get('kind')} {namespace + '/' if namespace else ''}"
                          f"{md.get('name')}: {exc.message}")
    try:
        load_into(store, new, new_sources if sources else None)
    except SimulationError as exc:
        errors += exc.errors
    if errors:
        raise SimulationError(errors)


def _update_as_applied(store: MemoryStore, rt: kinds.ResourceType, current: Obj, obj: Obj) -> None:
    md = obj.get("metadata") or {}
    updated = copy.deepcopy(current)
    for key in ("labels", "annotations"):
        if key in md:
            updated["metadata"][key] = copy.deepcopy(md[key])
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            updated[key] = copy.deepcopy(value)
    if updated != current:
        updated = store.update(updated)
    if rt.has_status and obj.get("status") and updated.get("status") != obj["status"]:
        updated["status"] = copy.deepcopy(obj["status"])
        store.update_status(updated)


def _where(sources: Sequence[str] | None, i: int) -> str:
    return f"{sources[i]}: " if sources else ""


class Simulation:
    """An embedded control plane that can be fed more objects between runs (benchmarks do)."""

    def __init__(self, controllers: Sequence[Controller] | None = None, *, seed: int = 0) -> None:
        self.clock = VirtualClock()
        self.store = MemoryStore(clock=self.clock.now, seed=seed)
        self.ctx = SimContext(self.store, self.clock)
        self.controllers = list(controllers) if controllers is not None else default_controllers()
        self.rounds = 0

    def load(self, objects: Sequence[Obj], sources: Sequence[str] | None = None) -> None:
        load_into(self.store, objects, sources)

    def apply(self, objects: Sequence[Obj], sources: Sequence[str] | None = None) -> None:
        """A later step: create or update ``objects`` as ``kubectl apply`` does (:func:`apply_into`)."""
        apply_into(self.store, objects, sources)

    def settle(self, max_rounds: int = 100_000) -> bool:
        """Run rounds until every controller is idle, without moving virtual time on (a user's
        next ``kubectl apply`` comes seconds later, before any pod's run ends); False if
        ``max_rounds`` ran out first."""
        for _ in range(max_rounds):
            self.rounds += 1
            if not any([c.reconcile(self.ctx) for c in self.controllers]):
                return True
        return False

    def result(self, quiescent: bool) -> SimResult:
        """The run's outcome: the final objects as output writes them, and the decisions."""
        result = SimResult(self.store, self.ctx, self.rounds, quiescent)
        result.objects = [_for_output(o) for o in self.store.all_objects()]
        return result

    def run(self, max_rounds: int = 100_000, on_quiet: Callable[[], None] | None = None,
            on_round: Callable[[], None] | None = None) -> bool:
        """Run rounds until no controller has work left; False if ``max_rounds`` ran out first.

        ``on_quiet`` is called whenever every controller is idle, before virtual time moves on
        (the HTML report samples the cluster there); ``on_round`` after every round (progress)."""
        for _ in range(max_rounds):
            self.rounds += 1
            progressed = False
            for c in self.controllers:
                if c.reconcile(self.ctx):
                    progressed = True
            if on_round is not None:
                on_round()
            if progressed:
                continue
            if on_quiet is not None:
                on_quiet()
            wake = self.ctx.next_wakeup()
            if wake is None:
                return True
            self.clock.advance_to(wake)
        return False


Step = tuple[Sequence[Obj], Sequence[str] | None]
"""Objects applied together, with where each was given (``simulate --sequential``: one file)."""


def apply_steps(sim: Simulation, later: Sequence[Step], max_rounds: int) -> bool:
    """Each later step applied once the control plane has settled on what came before (virtual
    time standing still, as ``kubectl apply`` runs one file after another); False if the round
    limit ran out while settling."""
    for objects, sources in later:
        if not sim.settle(max_rounds):
            return False
        sim.apply(objects, sources)
    return True


def simulate(
    objects: Sequence[Obj],
    controllers: Sequence[Controller] | None = None,
    *,
    sources: Sequence[str] | None = None,
    max_rounds: int = 100_000,
    seed: int = 0,
    progress: Progress | None = None,
    later: Sequence[Step] = (),
) -> SimResult:
    """Run the embedded control plane over ``objects`` until nothing is left to do;
    ``progress`` shows how far it got (on a terminal). ``later`` steps are applied one by one
    once the run has settled on the objects before them (:func:`apply_steps`)."""
    sim = Simulation(controllers, seed=seed)
    with collector_thresholds():
        if progress is None or not progress.enabled:
            sim.load(objects, sources)
            if not apply_steps(sim, later, max_rounds):
                return sim.result(False)
            return sim.result(sim.run(max_rounds))
        try:
            sim.load(objects, sources)
            progress.loaded(len(objects), sim.clock.now())
            if not apply_steps(sim, later, max_rounds):
                return sim.result(False)
            return sim.result(sim.run(max_rounds, on_round=lambda: progress.tick(sim.store, sim.clock.now(),
                                                                                  sim.rounds)))
        finally:
            progress.done()


def _for_output(obj: Obj) -> Obj:
    """Drop the store's resourceVersion: the output restores a cluster, where the server sets it
    (and a Job keeps its generated selector by hand, see :func:`restorable_job`)."""
    obj.get("metadata", {}).pop("resourceVersion", None)
    return restorable_job(obj)
