"""An embedded run sampled each time virtual time is about to move: what the HTML report charts.

The loop is :meth:`drasched.sim.runner.Simulation.run`'s, with one sample taken whenever
the controllers are quiet and the clock would advance, and one at the end: the cluster is
settled at those points, so queue statuses and allocations are current, and between two
of them nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from drasched.plan.outcome import device_counts, object_key
from drasched.sim.clock import DEFAULT_START
from drasched.sim.runner import SimResult, Simulation, Step, apply_steps

Obj = dict[str, Any]


@dataclass
class Sample:
    seconds: float
    """Virtual seconds since the start of the run."""
    queues: dict[str, dict[str, tuple[float, float, float | None]]]
    """queue -> resource -> (allocated, fair share, quota)."""
    devices_used: int
    devices_total: int
    pending: int


@dataclass
class Timeline:
    result: SimResult
    samples: list[Sample] = field(default_factory=list)
    peak_objects: list[Obj] = field(default_factory=list)
    """The cluster when most devices were held (for the node x device map)."""
    peak_seconds: float = 0.0


_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def _number(text: Any) -> float:
    """A Quantity as a float, for charts only (accounting uses exact quantities)."""
    s = str(text).strip()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if s.endswith(suffix) and s[: -len(suffix)]:
            s, scale = s[: -len(suffix)], _SUFFIXES[suffix]
            break
    else:
        scale = 1.0
    try:
        return float(s) * scale
    except ValueError:
        return 0.0


def _sample(seconds: float, objects: list[Obj]) -> Sample:
    queues: dict[str, dict[str, tuple[float, float, float | None]]] = {}
    for q in (o for o in objects if o.get("kind") == "Queue"):
        st, spec = q.get("status") or {}, (q.get("spec") or {}).get("resources") or {}
        allocated, share = st.get("allocated") or {}, st.get("fairShare") or {}
        queues[object_key(q)] = {
            r: (_number(allocated.get(r, 0)), _number(share.get(r, 0)),
                _number((spec.get(r) or {})["quota"]) if (spec.get(r) or {}).get("quota") is not None else None)
            for r in sorted(set(allocated) | set(share) | set(spec))}
    total, used = device_counts(objects)
    pending = sum(1 for o in objects if o.get("kind") == "Pod" and not (o.get("spec") or {}).get("nodeName"))
    return Sample(seconds, queues, used, total, pending)


def _seconds(sim: Simulation) -> float:
    return (sim.clock.now() - DEFAULT_START).total_seconds()


def run_sampled(objects: Sequence[Obj], *, sources: Sequence[str] | None = None, max_rounds: int = 100_000,
                seed: int = 0, later: Sequence[Step] = ()) -> Timeline:
    """Simulate ``objects`` (then the ``later`` steps) as ``simulate`` does, sampling the
    cluster at every quiet point."""
    sim = Simulation(seed=seed)
    sim.load(objects, sources)
    timeline = Timeline(SimResult(sim.store, sim.ctx, 0, False))
    settled = apply_steps(sim, later, max_rounds)  # at the start's instant: the samples begin after
    peak_used = -1

    def sample() -> None:
        nonlocal peak_used
        current = sim.store.all_objects()
        s = _sample(_seconds(sim), current)
        timeline.samples.append(s)
        if s.devices_used > peak_used:
            peak_used = s.devices_used
            timeline.peak_objects, timeline.peak_seconds = current, s.seconds

    quiescent = settled and sim.run(max_rounds, on_quiet=sample)
    if not quiescent:
        sample()  # the round limit: the state it stopped in
    timeline.result = sim.result(quiescent)
    return timeline


def bind_times(result: SimResult) -> dict[str, datetime]:
    """pod namespace/name -> when it was bound (the binder's decision)."""
    out: dict[str, datetime] = {}
    for d in result.decisions:
        if d["action"] == "bind" and d["object"].startswith("BindRequest/"):
            key = d["object"].split("/", 1)[1]
            out.setdefault(key, datetime.fromisoformat(d["time"].replace("Z", "+00:00")))
    return out
