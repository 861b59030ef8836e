"""What a simulation ended with, in the terms a what-if compares: placements, queues, GPUs, time."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from drasched.sim.clock import DEFAULT_START
from drasched.sim.runner import SimResult

Obj = dict[str, Any]

NOT_ACCELERATORS = ("cpu", "memory", "pods", "ephemeral-storage")


def object_key(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    return f"{md['namespace']}/{md.get('name')}" if md.get("namespace") else str(md.get("name"))


def _is_accelerator(resource: str) -> bool:
    return resource not in NOT_ACCELERATORS and not resource.startswith("hugepages-")


@dataclass
class Outcome:
    """The end state of one run."""

    placements: dict[str, str | None] = field(default_factory=dict)
    """pod namespace/name -> node, None while pending."""
    queues: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    """queue -> resource -> (allocated, fair share), as the queue status reports them."""
    devices_total: int = 0
    devices_used: int = 0
    last_placement_s: float | None = None
    """Virtual seconds from the start of the run to the last bind; None when nothing was bound."""

    @property
    def pending(self) -> list[str]:
        return sorted(k for k, node in self.placements.items() if node is None)

    @property
    def utilization(self) -> float:
        return self.devices_used / self.devices_total if self.devices_total else 0.0


def outcome_of(result: SimResult) -> Outcome:
    out = Outcome()
    for o in result.objects:
        kind = o.get("kind")
        if kind == "Pod":
            out.placements[object_key(o)] = (o.get("spec") or {}).get("nodeName") or None
        elif kind == "Queue":
            st = o.get("status") or {}
            allocated, share = st.get("allocated") or {}, st.get("fairShare") or {}
            out.queues[object_key(o)] = {r: (str(allocated.get(r, "0")), str(share.get(r, "0")))
                                         for r in sorted(set(allocated) | set(share))}
    out.devices_total, out.devices_used = device_counts(result.objects)
    binds = [d["time"] for d in result.decisions if d["action"] == "bind"]
    if binds:
        last = datetime.fromisoformat(max(binds).replace("Z", "+00:00"))
        out.last_placement_s = (last - DEFAULT_START).total_seconds()
    return out


def device_counts(objects: list[Obj]) -> tuple[int, int]:
    """(devices in the cluster, devices held): DRA devices in slices and claims, plus the
    device-plugin resources of nodes' allocatable and of the bound pods still running."""
    total = used = 0
    for o in objects:
        kind, spec, status = o.get("kind"), o.get("spec") or {}, o.get("status") or {}
        if kind == "ResourceSlice":
            total += len(spec.get("devices") or [])
        elif kind == "ResourceClaim":
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
            used += len({(r.get("driver"), r.get("pool"), r.get("device")) for r in results})
        elif kind == "Node":
            total += sum(int(float(str(q))) for r, q in (status.get("allocatable") or {}).items()
                         if _is_accelerator(r) and str(q).replace(".", "", 1).isdigit())
        elif (kind == "Pod" and spec.get("nodeName") and status.get("phase") not in ("Succeeded", "Failed")
              and not status.get("extendedResourceClaimStatus")):  # else its claim holds the devices
            for c in spec.get("containers") or []:
                for r, q in ((c.get("resources") or {}).get("requests") or {}).items():
                    if _is_accelerator(r) and str(q).isdigit():
                        used += int(str(q))
    return total, used
