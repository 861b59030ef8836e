"""KAI-Scheduler's rule for non-preemptible workloads: they use their queue's quota, never over it.

KAI gives a queue its quota (``deserved``) first and splits what is left over quota; what a
queue holds over its quota can be reclaimed. A workload that cannot be evicted could keep
over-quota resources for good, so KAI places a non-preemptible workload only where the
non-preemptible workloads of its queue, and of every queue above it, stay within that
queue's quota (``pkg/scheduler/plugins/proportion/capacity_policy``:
``resultsWithNonPreemptibleOverQuota``; reason ``NonPreemptibleOverQuota``). A quota of -1
(drasched's ``quota: unlimited``) does not hold them. KAI counts quota in three resources,
GPU, cpu and memory, and a resource a KAI Queue leaves out has a quota of 0 there.

Which workloads are non-preemptible (KAI's ``CalculatePreemptibility``): the PodGroup's
``spec.preemptibility`` (a translated KAI PodGroup keeps it as the label
``kai.scheduler/preemptibility``), else the pods' ``kai.scheduler/preemptibility`` label
(``preemptible`` or ``non-preemptible``), else a PriorityClass that drasched protects
(``drasched.io/preemptible: "false"``), else a priority of 100 or more (KAI's ``build`` and
``inference`` classes, which KAI also gives by default to a Notebook's and a Deployment's pods that
name no class: ``scheduler/groups.py``).

drasched applies the rule to gangs in KAI's queues only (a ``scheduling.run.ai/v2`` Queue,
translated): a drasched Queue's quota keeps its own meaning (docs/design.md, "Other
schedulers' objects").
"""

from __future__ import annotations

from collections.abc import Mapping

from drasched.api.foreign import KAI_PREEMPTIBILITY_LABEL
from drasched.scheduler.accounting import demand_with_claims, pod_claim_keys
from drasched.scheduler.constants import GPU
from drasched.scheduler.queues import QueueInfo
from drasched.scheduler.session import Session
from drasched.scheduler.snapshot import GroupInfo
from drasched.scheduler.victims import PREEMPTIBLE_KEY

PREEMPTIBLE, NON_PREEMPTIBLE = "preemptible", "non-preemptible"
NON_PREEMPTIBLE_PRIORITY = 100
"""KAI's ``nonPreemptiblePriorityThreshold``: a workload of this priority or more is non-preemptible."""
KAI_DIMENSIONS = (GPU, "cpu", "memory")
"""The resources a KAI Queue sets quota for (``gpu``, ``cpu``, ``memory``)."""
EPS = 1e-9


def is_kai_queue(info: QueueInfo) -> bool:
    """Whether the queue was written as a KAI ``scheduling.run.ai/v2`` Queue."""
    return info.kai


def why_non_preemptible(session: Session, g: GroupInfo) -> str | None:
    """Why the gang is non-preemptible in KAI's terms (``None``: it is preemptible)."""
    md = (g.obj or {}).get("metadata") or {}
    marks = [((md.get("labels") or {}).get(KAI_PREEMPTIBILITY_LABEL), f"its PodGroup's {KAI_PREEMPTIBILITY_LABEL}")]
    if g.pods:
        labels = (g.pods[0].obj.get("metadata") or {}).get("labels") or {}
        marks.append((labels.get(KAI_PREEMPTIBILITY_LABEL), f"the label {KAI_PREEMPTIBILITY_LABEL}"))
    for value, where in marks:
        if value == NON_PREEMPTIBLE:
            return f"{where} is {NON_PREEMPTIBLE}"
        if value == PREEMPTIBLE:
            return None
    pcs = session.snap.priority_classes
    if pcs:
        names = [str(((g.obj or {}).get("spec") or {}).get("priorityClassName") or "")]
        names += [str((p.obj.get("spec") or {}).get("priorityClassName") or "") for p in g.pods[:1]]
        names += [g.default_class or ""]
        for name in names:
            md = ((pcs.get(name) or {}).get("metadata") or {}) if name else {}
            marked = ((md.get("labels") or {}).get(PREEMPTIBLE_KEY), (md.get("annotations") or {}).get(PREEMPTIBLE_KEY))
            if "false" in marked:
                return f"its PriorityClass {name} is not preemptible ({PREEMPTIBLE_KEY})"
    if g.priority >= NON_PREEMPTIBLE_PRIORITY:
        return f"its priority {g.priority} is {NON_PREEMPTIBLE_PRIORITY} or more{_default_class_note(g)}"
    return None


def _default_class_note(g: GroupInfo) -> str:
    """Where a priority set by KAI's default class came from, for the pod's message."""
    if g.default_class is None:
        return ""
    return f", KAI's default PriorityClass {g.default_class} for a workload of kind {g.top_owner}"


def quota_bound(session: Session, g: GroupInfo) -> bool | None:
    """Whether the gang is held to its queue's quota (``None``: not in a KAI queue), for the
    shape of a failed gang: two gangs alike but for this fail differently."""
    info = session.snap.queues.queues.get(g.queue)
    if info is None or not is_kai_queue(info):
        return None
    return why_non_preemptible(session, g) is not None


def _non_preemptible_held(session: Session, queues: set[str]) -> dict[str, dict[str, float]]:
    """Per queue of ``queues``: what non-preemptible gangs of its own hold (bound, being bound,
    or placed in this session), in accounting dimensions."""
    snap = session.snap
    out: dict[str, dict[str, float]] = {}
    verdicts: dict[str, bool] = {}

    def non_preemptible(g: GroupInfo) -> bool:
        hit = verdicts.get(g.key)
        if hit is None:
            hit = verdicts[g.key] = why_non_preemptible(session, g) is not None
        return hit

    def add(queue: str, demand: Mapping[str, float]) -> None:
        row = out.setdefault(queue, {})
        for d, v in demand.items():
            row[d] = row.get(d, 0.0) + v

    for g in snap.groups.values():
        if g.queue not in queues or not non_preemptible(g):
            continue
        for p in g.pods:
            if (p.node_name or p.key in snap.assumed) and not p.terminal and p.key not in session.placements:
                add(g.queue, demand_with_claims(snap, p, pod_claim_keys(snap, p)))
    for placement in session.placements.values():
        placed = snap.groups.get(placement.group)
        if placed is not None and placed.queue in queues and non_preemptible(placed):
            add(placed.queue, placement.demand)
    return out


def over_quota(session: Session, g: GroupInfo, demand: Mapping[str, float]) -> str | None:
    """Why placing ``demand`` for the gang would take a non-preemptible workload over its queue's
    quota (or a queue's above it); ``None`` when the rule does not hold it back."""
    tree = session.snap.queues
    info = tree.queues.get(g.queue)
    if info is None or not is_kai_queue(info):
        return None
    asked = {d: v for d, v in demand.items() if d in KAI_DIMENSIONS and v > 0}
    if not asked:
        return None
    why = why_non_preemptible(session, g)
    if why is None:
        return None
    chain = [q for q in tree.ancestors(g.queue) if is_kai_queue(tree.queues[q])]
    held: dict[str, dict[str, float]] | None = None
    for q in chain:
        qinfo = tree.queues[q]
        for d in KAI_DIMENSIONS:
            v = asked.get(d, 0.0)
            settings = qinfo.settings(d)
            if v <= 0 or settings.unlimited:
                continue
            if held is None:
                held = _non_preemptible_held(session, set(tree.subtree(chain[-1])))
            used = sum(held.get(s, {}).get(d, 0.0) for s in tree.subtree(q))
            quota = float(settings.quota or 0)
            if used + v > quota + EPS:
                return (f"queue {q} over its quota for {d}: the pod's workload is non-preemptible ({why}), so it "
                        f"may use only its queue's quota ({quota:g}; non-preemptible pods hold {used:g}, the pod "
                        f"asks {v:g} more); a preemptible workload may go over quota")
    return None
