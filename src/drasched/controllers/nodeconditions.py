"""Which taints a Node's conditions call for: the node lifecycle controller's decisions, pure.

Ports of the parts of upstream's ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``
that decide (kube-controller-manager's ``node-lifecycle-controller``); the loop that applies
them is :mod:`drasched.controllers.nodelifecycle`.

* ``doNoScheduleTaintingPass`` (TaintNodesByCondition): each condition of
  ``nodeConditionToTaintKeyStatusMap`` in its status gets its ``NoSchedule`` taint (``Ready``
  False -> ``node.kubernetes.io/not-ready``, Unknown -> ``node.kubernetes.io/unreachable``;
  ``MemoryPressure``, ``DiskPressure``, ``PIDPressure``, ``NetworkUnavailable`` True -> theirs),
  ``spec.unschedulable`` gets ``node.kubernetes.io/unschedulable:NoSchedule``; such taints
  that no longer apply go.
* Taint based eviction (``processTaintBaseEviction``, ``doNoExecuteTaintingPass``):
  ``Ready`` False or Unknown gets ``not-ready`` or ``unreachable`` with ``NoExecute`` (one
  replaces the other at once; a new one waits for its zone's rate limiter), ``Ready`` True
  removes both (``markNodeAsReachable``).
* Zones (``ComputeZoneState``, ``handleDisruption``): a zone with no ready node is fully
  disrupted; one with more than 2 unready nodes and at least 55 % unready partially, where a
  zone of at most 50 nodes taints no more nodes NoExecute; when every zone is fully disrupted
  no node is tainted NoExecute and those taints are removed ("master disruption mode").

One deliberate difference: a node that never reported a ``Ready`` condition. Upstream takes it
as ``Unknown`` once ``nodeStartupGracePeriod`` (60 s) has passed, writes that to its status and
taints it unreachable. A node written by hand in a manifest (most scenario files) has no kubelet
to report anything, so it is taken as ready: never tainted NoExecute, counted ready in its zone,
and a node with no conditions at all keeps whatever condition taints it was written with. Its
``spec.unschedulable`` is still turned into the taint. In the same way conditions are taken as
what the kubelet keeps reporting: nothing goes ``Unknown`` for want of heartbeats.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from drasched.api.meta import format_time

Obj = dict[str, Any]

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
PID_PRESSURE = "node.kubernetes.io/pid-pressure"
NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"

CONDITION_TAINTS: Mapping[str, Mapping[str, str]] = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": MEMORY_PRESSURE},
    "DiskPressure": {"True": DISK_PRESSURE},
    "NetworkUnavailable": {"True": NETWORK_UNAVAILABLE},
    "PIDPressure": {"True": PID_PRESSURE},
}
"""Upstream ``nodeConditionToTaintKeyStatusMap``: condition type -> status -> taint key."""

CONDITION_TAINT_KEYS = frozenset(key for by_status in CONDITION_TAINTS.values() for key in by_status.values())
"""Upstream ``taintKeyToNodeConditionMap``'s keys: the taints this controller owns with the unschedulable one."""

EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"
"""Upstream ``labelNodeDisruptionExclusion``: a node so labelled does not count in its zone's state."""

EVICTION_QPS = 0.1
"""kube-controller-manager's ``--node-eviction-rate``: nodes tainted NoExecute per second per zone."""
SECONDARY_EVICTION_QPS = 0.01
"""``--secondary-node-eviction-rate``: the same in a partially disrupted zone above the threshold below."""
LARGE_CLUSTER_THRESHOLD = 50
"""``--large-cluster-size-threshold``: a partially disrupted zone this small taints no node NoExecute."""
UNHEALTHY_ZONE_THRESHOLD = 0.55
"""``--unhealthy-zone-threshold``: the share of unready nodes (more than 2) that disrupts a zone partially."""

NORMAL, PARTIAL, FULL = "Normal", "PartialDisruption", "FullDisruption"


def conditions(node: Obj) -> list[Obj]:
    return [c for c in (node.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]


def condition_status(node: Obj, kind: str) -> str | None:
    """The status of the node's first condition of type ``kind`` (upstream ``GetNodeCondition``), None without one."""
    return next((str(c.get("status")) for c in conditions(node) if c.get("type") == kind), None)


def _matches(a: Obj, b: Obj) -> bool:
    """Upstream ``Taint.MatchTaint``: same key and effect."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def _has(taints: Iterable[Obj], key: str, effect: str) -> bool:
    return any(t.get("key") == key and t.get("effect") == effect for t in taints)


def taints_of(node: Obj) -> list[Obj]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]


def no_schedule_changes(node: Obj) -> tuple[list[Obj], list[Obj]]:
    """``doNoScheduleTaintingPass``: the NoSchedule taints to add and to remove (``TaintSetDiff``
    of the ones the conditions and ``spec.unschedulable`` call for against the node's NoSchedule
    taints with the keys this controller owns). A node with no conditions keeps its condition
    taints (see the module's note): only the unschedulable one is reconciled there."""
    reported = bool(conditions(node))
    want: list[Obj] = []
    if reported:
        for c in conditions(node):
            key = CONDITION_TAINTS.get(str(c.get("type")), {}).get(str(c.get("status")))
            if key is not None:
                want.append({"key": key, "effect": NO_SCHEDULE})
    if (node.get("spec") or {}).get("unschedulable"):
        want.append({"key": UNSCHEDULABLE, "effect": NO_SCHEDULE})
    owned = {UNSCHEDULABLE, *(CONDITION_TAINT_KEYS if reported else ())}
    have = [t for t in taints_of(node) if t.get("effect") == NO_SCHEDULE and t.get("key") in owned]
    add = [t for t in want if not any(_matches(t, h) for h in have)]
    remove = [h for h in have if not any(_matches(h, t) for t in want)]
    return _unique(add), remove


def _unique(taints: list[Obj]) -> list[Obj]:
    out: list[Obj] = []
    for t in taints:
        if not any(_matches(t, o) for o in out):
            out.append(t)
    return out


@dataclass(frozen=True)
class NoExecuteStep:
    """What taint based eviction does to one node now: the taint key to add (None: none), the
    keys whose NoExecute taint goes, and whether the add waits for the zone's rate limiter."""

    add: str | None = None
    remove: tuple[str, ...] = ()
    rate_limited: bool = False


def no_execute_step(node: Obj, *, master_disruption: bool = False) -> NoExecuteStep:
    """``processTaintBaseEviction`` for the node's ``Ready`` condition: False -> not-ready,
    Unknown -> unreachable (swapped at once when the other is there, else queued for the rate
    limiter), True -> neither; none at all -> nothing (never reported, see the module's note).
    In master disruption mode every such taint goes and none comes (``markNodeAsReachable``)."""
    status = condition_status(node, "Ready")
    if status is None:
        return NoExecuteStep()
    taints = taints_of(node)
    present = tuple(k for k in (NOT_READY, UNREACHABLE) if _has(taints, k, NO_EXECUTE))
    if master_disruption or status == "True":
        return NoExecuteStep(remove=present)
    key = CONDITION_TAINTS["Ready"].get(status)
    if key is None:
        return NoExecuteStep()  # a status upstream's switch does not know: left as it is
    opposite = UNREACHABLE if key == NOT_READY else NOT_READY
    if opposite in present:
        return NoExecuteStep(add=key, remove=(opposite,))
    if key in present:
        return NoExecuteStep()
    return NoExecuteStep(add=key, rate_limited=True)


def apply_taints(taints: Sequence[Obj], add: Iterable[Obj], remove: Iterable[Obj], now: datetime) -> list[Obj]:
    """``SwapNodeControllerTaint``: each added taint stamped ``timeAdded`` now replaces the one of
    its key and effect in place or comes last (``AddOrUpdateTaint``), then the removed go
    (``RemoveTaint``, by key and effect)."""
    out = [dict(t) for t in taints]
    for taint in add:
        new = {**taint, "timeAdded": format_time(now)}
        at = next((i for i, t in enumerate(out) if _matches(t, new)), None)
        if at is None:
            out.append(new)
        else:
            out[at] = new
    gone = list(remove)
    return [t for t in out if not any(_matches(t, g) for g in gone)]


def zone_key(node: Obj) -> str:
    """Upstream ``GetZoneKey``: region and zone (the beta labels first), "" with neither."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def counts_ready(node: Obj) -> bool:
    """Ready for the zone's state: ``Ready`` True, or never reported (taken as ready here)."""
    return condition_status(node, "Ready") in (None, "True")


def zone_state(ready: int, not_ready: int) -> str:
    """Upstream ``ComputeZoneState``."""
    if ready == 0 and not_ready > 0:
        return FULL
    if not_ready > 2 and not_ready / (ready + not_ready) >= UNHEALTHY_ZONE_THRESHOLD:
        return PARTIAL
    return NORMAL


@dataclass
class Zones:
    """Each zone's state and size, from the nodes not excluded from disruption checks."""

    states: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def master_disruption(self) -> bool:
        """Every zone fully disrupted: upstream stops taint based eviction altogether."""
        return bool(self.states) and all(s == FULL for s in self.states.values())

    def tainting_qps(self, zone: str) -> float:
        """``setLimiterInZone``: how many nodes a second the zone may taint NoExecute."""
        state = self.states.get(zone, NORMAL)
        if state == PARTIAL:
            return SECONDARY_EVICTION_QPS if self.sizes.get(zone, 0) > LARGE_CLUSTER_THRESHOLD else 0.0
        return EVICTION_QPS  # Normal, and FullDisruption of one zone while another has a ready node


def zones(nodes: Iterable[Obj]) -> Zones:
    """``monitorNodeHealth``'s ``zoneToNodeConditions`` and ``handleDisruption``'s new states."""
    counts: dict[str, list[int]] = {}
    for node in nodes:
        if EXCLUDE_DISRUPTION in ((node.get("metadata") or {}).get("labels") or {}):
            continue
        c = counts.setdefault(zone_key(node), [0, 0])
        c[0 if counts_ready(node) else 1] += 1
    return Zones({z: zone_state(r, n) for z, (r, n) in counts.items()}, {z: r + n for z, (r, n) in counts.items()})
