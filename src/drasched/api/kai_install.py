"""What installing KAI-Scheduler puts in a cluster that a KAI user's manifests rely on.

KAI's deployment comes with four PriorityClasses (KAI-Scheduler docs/priority/README.md,
"Priority Classes": ``train`` 50, ``build-preemptible`` 75, ``build`` 100, ``inference`` 125).
KAI's published examples name them without writing them (docs/priority/example/*.yaml put
``priorityClassName: build`` on a pod as a label), and KAI's pod grouper gives a workload that
names no class the default of its kind (``inference`` for a Deployment, ``train`` for a Job),
which only means something while those classes exist. A user simulating a KAI cluster writes
its Queues, not its installation: without the classes ``simulate`` would ignore every such
label (with a warning) and run the pods at priority 0, preemptible, where KAI runs a ``build``
pod non-preemptible and within quota. So, as ``simulate`` creates the DeviceClasses NVIDIA's
DRA driver chart installs, it creates KAI's PriorityClasses when the input holds KAI's
objects, unless the input writes a class of that name. ``serve`` adds nothing: a cluster
that ran KAI has them. Pure functions: no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Container, Iterable
from typing import Any

Obj = dict[str, Any]

KAI_PRIORITY_CLASSES: tuple[tuple[str, int, str], ...] = (
    ("train", 50, "preemptible training workloads"),
    ("build-preemptible", 75, "preemptible build/interactive workloads"),
    ("build", 100, "build/interactive workloads (non-preemptible)"),
    ("inference", 125, "inference workloads (non-preemptible)"),
)
"""KAI's predefined PriorityClasses: name, value and what KAI's docs say each is for. None is
the global default and none sets ``preemptionPolicy`` (KAI's priority-preemptibility design:
"All priority classes shipped by KAI ... leave preemptionPolicy unset")."""

KAI_CLASS_NAMES = frozenset(name for name, _, _ in KAI_PRIORITY_CLASSES)

KAI_API_GROUPS = ("scheduling.run.ai/",)
"""The apiVersion prefix of KAI's Queue (``v2``) and PodGroup (``v2alpha2``): an input holding
one of them describes a cluster where KAI is installed."""

INSTALLED_BY = "drasched.io/installed-by"
"""Annotation on an object ``simulate`` adds because the cluster described would have it."""
KAI_INSTALL = "kai-scheduler"


TRANSLATED_FROM = "drasched.io/translated-from"
""":data:`drasched.api.foreign.TRANSLATED_FROM` (which imports this module, so not imported here)."""


def holds_kai_objects(objects: Iterable[Obj]) -> bool:
    """Whether ``objects`` hold a KAI Queue or PodGroup, as written (``scheduling.run.ai``) or
    translated (a drasched object whose ``drasched.io/translated-from`` annotation names KAI's version)."""
    for o in objects:
        if not isinstance(o, dict):
            continue
        if str(o.get("apiVersion", "")).startswith(KAI_API_GROUPS):
            return True
        annotations = (o.get("metadata") or {}).get("annotations") or {}
        if isinstance(annotations, dict) and str(annotations.get(TRANSLATED_FROM, "")).startswith(KAI_API_GROUPS):
            return True
    return False


def kai_priority_classes(objects: Iterable[Obj], existing: Container[str] = ()) -> list[Obj]:
    """KAI's PriorityClasses that ``objects`` (a simulation's input) rely on and lack: none when
    they hold no KAI object; else each of :data:`KAI_PRIORITY_CLASSES` that neither ``objects``
    nor ``existing`` (the names already in the store) holds. A class the user wrote keeps the
    user's value."""
    objs = [o for o in objects if isinstance(o, dict)]
    if not holds_kai_objects(objs):
        return []
    written = {(o.get("metadata") or {}).get("name") for o in objs
               if o.get("kind") == "PriorityClass" and str(o.get("apiVersion", "")).startswith("scheduling.k8s.io/")}
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name, "uid": _uid(name), "annotations": {INSTALLED_BY: KAI_INSTALL}},
             "value": value, "globalDefault": False, "description": f"KAI-Scheduler: {why}"}
            for name, value, why in KAI_PRIORITY_CLASSES if name not in written and name not in existing]


def _uid(name: str) -> str:
    """A fixed uid for an added class: a generated one would draw from the store's seeded
    generator and shift every name generated after it, so adding the classes would rename the
    pods of a run that names none of them."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://github.com/NVIDIA/KAI-Scheduler/priorityclasses/{name}"))
