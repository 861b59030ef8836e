"""Hold a workload's pod until it has its implicit PodGroup (upstream's PreEnqueue, as a pre-filter).

In ``drasched serve`` a Job's pods come from kube-controller-manager one by one, and the
implicit-gang controller labels each with its Job's PodGroup a moment later
(``drasched.controllers.workloads.gangs``). A pod the scheduler saw before that would be
placed alone, and the Job's gang partly. This plugin rejects every node for such a pod
(:func:`drasched.api.implicitgang.awaited_gang` decides which pods), so it stays pending with
``PodScheduled=False`` saying what it waits for, and is tried as part of its gang once
labelled. Embedded runs never see a held pod: the implicit-gang controller runs before the
scheduler in every round.

The same hold covers a ReplicaSet's pod in a KAI queue that names no PriorityClass until the
controller has written its top owner's kind, which sets KAI's default class
(:func:`drasched.api.implicitgang.awaited_top_owner`): placed before that, it would run at the
wrong priority.

A pod held here fits no node, so no preemption or reclaim is tried for it.

Disabled (``plugins: {implicitGangGate: {enabled: false}}``): such pods are scheduled on
their own until their label arrives.
"""

from __future__ import annotations

from typing import Any

from drasched.api.implicitgang import awaited_gang, awaited_top_owner
from drasched.scheduler.framework.api import ADD, UPDATE, ClusterEvent, NodeCheck
from drasched.scheduler.podinfo import PodInfo


def waiting_message(workload: str) -> str:
    """The reason counted on every node for a held pod (``workload``: ``Job default/train``)."""
    return f"waiting for the pod's implicit PodGroup ({workload})"


def top_owner_message(owner: str) -> str:
    """The reason for a pod held until its top owner is known (``owner``: ``ReplicaSet default/web-5d8``)."""
    return (f"waiting for the pod's top owner to be read ({owner} and its owners): KAI's default PriorityClass "
            "follows its kind")


def held_because(pod: PodInfo) -> str | None:
    """Why the pod is held, or None."""
    workload = awaited_gang(pod.obj)
    if workload is not None:
        return waiting_message(workload)
    owner = awaited_top_owner(pod.obj)
    return top_owner_message(owner) if owner is not None else None


class ImplicitGangGate:
    """A static filter that passes no node while the pod waits for its implicit PodGroup."""

    name = "implicitGangGate"

    def events(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent("Pod", UPDATE), ClusterEvent("PodGroup", ADD))

    def signature(self, pod: PodInfo) -> Any:
        return held_because(pod)

    def prepare(self, pod: PodInfo) -> NodeCheck | None:
        message = held_because(pod)
        if message is None:
            return None
        return lambda node: message
