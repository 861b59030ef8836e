"""Gangs: a PodGroup and its pods, or the implicit group of one pod without a group.

A group is built from its members alone (plus its PodGroup object), so the snapshot
builder can rebuild just the groups whose pods or PodGroup changed.

In a KAI queue two of KAI's rules hold (:func:`_kai_rules`): a parent queue takes no gang, and
a gang whose workload names no PriorityClass runs at the class KAI's pod grouper gives the kind of
its top owner (``inference`` for a Deployment, ``build`` for a Kubeflow Notebook, else ``train``).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drasched.api.foreign import group_kind, kai_default_priority_class
from drasched.scheduler.claims import ClaimEntry, claim_entries
from drasched.scheduler.constants import DEFAULT_QUEUE
from drasched.scheduler.foreign_intake import claim_consumer
from drasched.scheduler.podinfo import PodInfo, names_class
from drasched.scheduler.queues import QueueInfo, not_a_leaf

Obj = dict[str, Any]


@dataclass(eq=False, slots=True)
class GroupInfo:
    """A gang: a PodGroup, or the implicit group of one pod without the label (slots: a large
    cluster has one per bound pod without a group)."""

    key: str
    namespace: str
    name: str
    obj: Obj | None
    implicit: bool
    min_member: int
    queue: str
    priority: int
    created: str
    required_key: str | None
    preferred_key: str | None
    claim_entries: tuple[ClaimEntry, ...]
    pods: list[PodInfo] = field(default_factory=list)
    pending: list[PodInfo] = field(default_factory=list)
    placed: int = 0
    blocked: str | None = None
    """Why none of its pods can be scheduled now (missing PodGroup or queue, too few pods)."""
    label_mismatch: list[PodInfo] = field(default_factory=list)
    movable: bool = True
    """Every running pod has a controller owner (:func:`movable`): consolidation may move the gang."""
    default_class: str | None = None
    """KAI's default PriorityClass the gang runs at, named by nothing else (:func:`_kai_rules`)."""
    top_owner: str | None = None
    """``Kind.group`` of the workload whose kind chose :attr:`default_class`."""

    @property
    def ref(self) -> Obj:
        """The ``reservedFor`` entry for group claims."""
        md = (self.obj or {}).get("metadata") or {}
        api_group, resource = claim_consumer(self.obj)  # an upstream PodGroup's claims are reserved for it
        return {"apiGroup": api_group, "resource": resource, "name": self.name, "uid": md.get("uid", "")}


def group_key(pod: PodInfo) -> str:
    """The key of the group a pod belongs to: its PodGroup's ``namespace/name``, or ``pod:<key>``."""
    return f"{pod.namespace}/{pod.group_label}" if pod.group_label else f"pod:{pod.key}"


def member_order(pod: PodInfo) -> tuple[str, str]:
    """Members in creation order: the first one sets an implicit group's queue and priority."""
    return (pod.created, pod.key)


def movable(pods: Sequence[PodInfo]) -> bool:
    """Whether every running pod of ``pods`` has a controller owner that recreates it elsewhere
    (kept with the group, so consolidation need not read every gang's pods each cycle)."""
    for p in pods:  # noqa: SIM110 - a loop, not all(generator): this runs for every group of a full build
        if not p.controlled and p.node_name and not p.terminal and not p.deleting:
            return False
    return True


def build_group(key: str, members: Sequence[PodInfo], pod_group: Obj | None, assumed: Container[str],
                priority_of_class: Mapping[str, int], queues: Mapping[str, QueueInfo], topology: bool) -> GroupInfo:
    """The group ``key`` of ``members`` (in :func:`member_order`); ``assumed``: pods a pending
    BindRequest places; ``topology`` False drops topology constraints (the plugin is disabled)."""
    g = _new_group(key, members[0], pod_group, priority_of_class)
    for p in members:
        g.pods.append(p)
        if p.phase != "Failed" and (p.node_name or p.key in assumed):
            g.placed += 1
        elif not p.node_name and p.key not in assumed and not p.deleting and not p.terminal and not p.gated:
            g.pending.append(p)
    _finish_group(g)
    g.movable = movable(g.pods)
    if not topology:
        g.required_key = g.preferred_key = None
    if g.queue not in queues and g.blocked is None:
        g.blocked = f'queue "{g.queue}" does not exist'
    _kai_rules(g, queues, priority_of_class)
    return g


def lone_pod_group(key: str, p: PodInfo, assumed: Container[str], queues: Mapping[str, QueueInfo],
                   priority_of_class: Mapping[str, int]) -> GroupInfo:
    """What :func:`build_group` gives the implicit group of pod ``p`` alone (no group label),
    made directly: a large cluster has one per bound pod without a group, built on every full build."""
    queue = p.queue_label or DEFAULT_QUEUE
    placed = 0
    pending: list[PodInfo] = []
    if p.phase != "Failed" and (p.node_name or p.key in assumed):
        placed = 1
    elif not p.node_name and p.key not in assumed and not p.deleting and not p.terminal and not p.gated:
        pending.append(p)
    blocked = None if queue in queues else f'queue "{queue}" does not exist'
    g = GroupInfo(key, p.namespace, p.name, None, True, 1, queue, p.priority, p.created, None, None, (), [p],
                  pending, placed, blocked, [],
                  p.controlled or not p.node_name or p.terminal or p.deleting)  # movable
    _kai_rules(g, queues, priority_of_class)
    return g


def _kai_rules(g: GroupInfo, queues: Mapping[str, QueueInfo], priority_of_class: Mapping[str, int]) -> None:
    """KAI's rules for a gang in a KAI queue: none is placed in a parent queue (:func:`not_a_leaf`),
    and one that names no PriorityClass runs at KAI's default for its top owner's kind."""
    info = queues.get(g.queue)
    if info is None or not info.kai:
        return
    if g.blocked is None:
        g.blocked = not_a_leaf(info)
    owner = _default_class_owner(g, priority_of_class)
    if owner is None:
        return
    name = kai_default_priority_class(owner)
    value = priority_of_class.get(name)
    if value is not None:  # a class that does not exist: the pods keep their own priority, as for KAI's label
        g.priority, g.default_class, g.top_owner = value, name, owner


def _default_class_owner(g: GroupInfo, priority_of_class: Mapping[str, int]) -> str | None:
    """``Kind.group`` of the top owner whose kind sets the gang's PriorityClass, as KAI's pod grouper
    does (pkg/podgrouper/podgrouper/plugins/defaultgrouper ``CalcPriorityClassWithDefaults``), or None
    where something names the class: the PodGroup, or a pod (:func:`~drasched.scheduler.podinfo.names_class`).
    KAI's grouper makes the PodGroups of workloads, so only a pod of none, or a PodGroup made for a
    workload (the implicit-gang controller's, owned by the top owner), takes a default: a PodGroup
    someone wrote keeps what it says."""
    for p in g.pods:
        md = p.obj.get("metadata") or {}
        if names_class(md.get("labels") or {}, p.obj.get("spec") or {}, priority_of_class):
            return None
    if g.implicit:
        return g.pods[0].top_owner if g.pods else None
    spec = (g.obj or {}).get("spec") or {}
    if spec.get("priorityClassName"):
        return None
    refs = ((g.obj or {}).get("metadata") or {}).get("ownerReferences") or ()
    ref = next((r for r in refs if isinstance(r, dict) and r.get("controller")), None)
    return group_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")) if ref is not None else None


def _new_group(key: str, first: PodInfo, pg: Obj | None, prio: Mapping[str, int]) -> GroupInfo:
    if first.group_label is None:
        return GroupInfo(key, first.namespace, first.name, None, True, 1, first.queue_label or DEFAULT_QUEUE,
                         first.priority, first.created, None, None, ())
    spec = (pg or {}).get("spec") or {}
    md = (pg or {}).get("metadata") or {}
    topo = spec.get("topologyConstraint") or {}
    pclass = spec.get("priorityClassName")
    g = GroupInfo(
        key=key, namespace=first.namespace, name=first.group_label, obj=pg, implicit=False,
        min_member=max(1, int(spec.get("minMember") or 1)),
        queue=spec.get("queue") or first.queue_label or DEFAULT_QUEUE,
        priority=prio.get(pclass, first.priority) if pclass else first.priority,
        created=str(md.get("creationTimestamp") or first.created),
        required_key=topo.get("requiredTopologyKey") or None,
        preferred_key=topo.get("preferredTopologyKey") or None,
        claim_entries=claim_entries(spec),
    )
    if pg is None:
        g.blocked = f'PodGroup "{key}" does not exist'
    elif pclass and pclass not in prio:
        g.blocked = f'PriorityClass "{pclass}" of PodGroup {key} does not exist'
    return g


def _finish_group(g: GroupInfo) -> None:
    if g.implicit:
        return
    spec = (g.obj or {}).get("spec") or {}
    if not spec.get("priorityClassName"):
        g.priority = max((p.priority for p in g.pods), default=0)
    g.label_mismatch = [p for p in g.pods if p.queue_label and p.queue_label != g.queue and not p.terminal]
    members = sum(1 for p in g.pods if p.phase != "Failed")
    if g.blocked is None and members < g.min_member:
        g.blocked = f"PodGroup {g.key} has {members} pods, fewer than its minMember {g.min_member}"
    g.pending.sort(key=lambda p: (-p.priority, p.created, p.name))
