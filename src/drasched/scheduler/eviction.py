"""What a cycle's disruptive actions decided: evictions, nominations, room held for moved pods.

Pure data. The session carries one :class:`EvictionState`; the cycle turns it into its
result and the scheduler controller (the only module doing I/O) calls the eviction API,
records the events and writes ``status.nominatedNodeName``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from drasched.scheduler.accounting import QueueUsage
from drasched.scheduler.podinfo import PodInfo

RECLAIM = "reclaim"
PREEMPT = "preempt"
CONSOLIDATE = "consolidate"
EVENT_REASONS = {RECLAIM: "Reclaimed", PREEMPT: "Preempted", CONSOLIDATE: "Consolidated"}
"""The Event reason on a victim, per action (upstream's preemption uses ``Preempted``)."""
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
"""The victim's ``DisruptionTarget`` reason, whatever the action: upstream's only reason for a
scheduler (``v1.PodReasonPreemptionByScheduler``)."""
DISRUPTION_MESSAGES = {
    PREEMPT: "preempting to accommodate a higher priority pod",
    RECLAIM: "reclaiming resources to accommodate a pod of another queue",
    CONSOLIDATE: "consolidating to accommodate a pending pod",
}
"""After ``<schedulerName>: ``; the preempt one is upstream's (preemption.go ``prepareCandidate``)."""


@dataclass(frozen=True, slots=True)
class Eviction:
    """One pod to evict, for whom and why."""

    victim: PodInfo
    node: str
    preemptor: PodInfo
    action: str
    reason: str

    def message(self) -> str:
        """The victim's Event message: it names the preemptor and the reason."""
        return (f"evicted by drasched on node {self.node} to make room for pod "
                f"{self.preemptor.namespace}/{self.preemptor.name}: {self.reason}")


def nominated_message(node: str) -> str:
    """The PodScheduled=False message of a preemptor waiting for its victims (stable across cycles)."""
    return f"nominated to node {node}: waiting for the pods evicted for it to terminate"


@dataclass
class EvictionState:
    """Per session; every change goes through the session's journal (see ``release.py``)."""

    status_delta: QueueUsage
    """Added to the session's allocated usage to report queue status: evicted pods still run
    until they are gone, nominated pods are not bound yet."""
    budget: int
    """Victim-set simulations left in this cycle."""
    evictions: list[Eviction] = field(default_factory=list)
    evicted_gangs: set[str] = field(default_factory=set)
    released: dict[str, int] = field(default_factory=dict)
    """Pod key -> releases in force (``release.Release``): victims being evicted, and terminating
    pods whose room a nominated preemptor takes. The inter-pod filters count them nowhere while
    released (upstream's ``RemovePod`` in the preemption dry run)."""
    released_version: int = 0
    """Changes of :attr:`released`, for readers that follow it."""
    nominated: dict[str, str] = field(default_factory=dict)
    """Pod key -> node name: preemptors holding room until their victims are gone (no BindRequest)."""
    ghosts: set[str] = field(default_factory=set)
    """Pod keys of moved pods whose placement holds room for their replacement (nothing is written)."""
    wake_at: datetime | None = None
    """When a pod protected by its queue's minRuntime becomes a possible victim."""
    avoid: frozenset[str] = frozenset()
    """Pod uids not to choose as victims (the eviction API refused them lately)."""
    victims: object | None = None
    """The cycle's ``victims.VictimIndex``, built on first use."""

    def held(self, pod_key: str) -> bool:
        """Placed in the session without a BindRequest."""
        return pod_key in self.nominated or pod_key in self.ghosts

    def note_wake(self, when: datetime) -> None:
        if self.wake_at is None or when < self.wake_at:
            self.wake_at = when
