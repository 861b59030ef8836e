"""Other schedulers' objects read as drasched's own: the upstream gang API and KAI-Scheduler.

A user migrating to drasched keeps the manifests they have. This module turns them into the
drasched objects the scheduler already understands, so the scheduler core never learns a second
vocabulary: at the edge where manifests are read (KAI's and scheduler-plugins' objects in
``simulate``; there and in ``drasched convert``, every kind for its warnings), and where the
scheduler cache reads a server's objects (:mod:`drasched.scheduler.foreign_intake`: ``serve``,
and the upstream gang API in ``simulate``, whose memory store keeps those objects as written):

* ``scheduling.k8s.io`` ``v1alpha2`` (Kubernetes 1.36) and ``v1beta1`` (1.37) **PodGroup**,
  resolved against the **Workload** template of its own version it names, reads as a drasched
  PodGroup of the same name (pods join it through ``spec.schedulingGroup.podGroupName``, which
  the scheduler reads directly). The Workload only carries templates.
* KAI-Scheduler's ``scheduling.run.ai/v2`` **Queue** and ``v2alpha2`` **PodGroup** become a
  drasched Queue and PodGroup (its ``kai.scheduler/v1`` **Topology** is set aside with a
  warning: the levels a PodGroup names are node label keys already); a pod's
  ``kai.scheduler/queue`` (or the older ``runai/queue``) label, ``pod-group-name`` annotation
  and ``gpu-fraction`` annotation become drasched's ``drasched.io/queue``,
  ``drasched.io/pod-group`` and ``drasched.io/gpu-fraction``. KAI's queue and
  ``priorityClassName`` labels on a workload are read where drasched reads a workload's
  labels (the implicit-gang controller, the pod's priority), and so are its topology annotations
  (``kai.scheduler/topology-required-placement`` / ``-preferred-placement``: the topology keys of
  the workload's implicit PodGroup); here they are only checked.
* kubernetes-sigs/scheduler-plugins' ``scheduling.x-k8s.io/v1alpha1`` **PodGroup** (its
  coscheduling plugin's gang) becomes a drasched PodGroup of the same name; a pod's
  ``scheduling.x-k8s.io/pod-group`` label is read as ``drasched.io/pod-group``.

Every field with no meaning here gives a warning that names the object and the field, and
the rest goes on (docs/design.md, "Other schedulers' objects"). Pure functions: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from drasched.api.disruption import EVICT_WHOLE
from drasched.api.duration import parse_go_duration
from drasched.api.kai_install import KAI_CLASS_NAMES, holds_kai_objects

Obj = dict[str, Any]

UPSTREAM_GROUP = "scheduling.k8s.io"
UPSTREAM_V1BETA1 = f"{UPSTREAM_GROUP}/v1beta1"
UPSTREAM_V1ALPHA2 = f"{UPSTREAM_GROUP}/v1alpha2"
UPSTREAM_VERSIONS = (UPSTREAM_V1BETA1, UPSTREAM_V1ALPHA2)
"""1.37 serves the gang API as v1beta1 (and no longer v1alpha2); 1.36 as v1alpha2. Two fields
read here changed shape (``k8s.io/api/scheduling``): the PodGroup's reference to its Workload
template (v1alpha2 ``podGroupTemplateRef.workload.{workloadName, podGroupTemplateName}``, v1beta1
``workloadRef.{workloadName, templateName}``) and ``disruptionMode`` (v1alpha2 the string
``PodGroup`` / ``Pod``, v1beta1 the one-of ``{all: {}}`` / ``{single: {}}``)."""
KAI_QUEUE_VERSION = "scheduling.run.ai/v2"
KAI_POD_GROUP_VERSION = "scheduling.run.ai/v2alpha2"
KAI_TOPOLOGY_VERSION = "kai.scheduler/v1"
COSCHEDULING_VERSION = "scheduling.x-k8s.io/v1alpha1"
"""kubernetes-sigs/scheduler-plugins' PodGroup (apis/scheduling/v1alpha1/types.go), which its
coscheduling plugin (pkg/coscheduling) schedules as a gang."""
DRASCHED_VERSION = "scheduling.drasched.io/v1alpha1"
PRIORITY_CLASS = ("scheduling.k8s.io/v1", "PriorityClass")
SYSTEM_CLASSES = ("system-node-critical", "system-cluster-critical")

TRANSLATED_FROM = "drasched.io/translated-from"
"""Annotation on a translated object: the apiVersion and kind it was written as."""
QUEUE_LABEL = "drasched.io/queue"
POD_GROUP_LABEL = "drasched.io/pod-group"
GPU_FRACTION = "drasched.io/gpu-fraction"
KAI_QUEUE_LABELS = ("kai.scheduler/queue", "runai/queue")
"""KAI's queue label: ``kai.scheduler/queue`` since KAI v0.10, ``runai/queue`` before."""
KAI_POD_GROUP_ANNOTATION = "pod-group-name"
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""scheduler-plugins' ``PodGroupLabel`` (``scheduling.GroupName + "/pod-group"``, apis/scheduling/v1alpha1/
types.go): a pod joins the coscheduling PodGroup this label names, in its own namespace."""
KAI_PRIORITY_LABEL = "priorityClassName"
"""KAI's priority label on a workload or pod (KAI's docs/priority examples): the PriorityClass
its pods run at when the pod spec names none."""
KAI_TRAIN_CLASS = "train"
"""KAI's default PriorityClass for a workload whose kind has none of its own (50, preemptible)."""
KAI_DEFAULT_PRIORITY_CLASSES = {"Deployment.apps": "inference", "Service.serving.knative.dev": "inference",
                                "Notebook.kubeflow.org": "build"}
"""KAI's pod grouper's default PriorityClass by the top owner's kind (``Kind.group``, as Go's
``schema.GroupKind`` prints it) when nothing names one: ``inference`` (125) for a Deployment or a
Knative Service, ``build`` (100) for a Kubeflow Notebook, else ``train`` (docs/priority/README.md,
"Workload Default Priority"; pkg/podgrouper/podgrouper/plugins/deployment/deployment_grouper.go,
knative, notebook; defaultgrouper's ``constants.TrainPriorityClass``)."""
KAI_BATCH_MIN_MEMBER = "kai.scheduler/batch-min-member"
"""KAI's minMember of a batch Job's or JobSet's PodGroup (1 without it): pkg/podgrouper/.../job/job_grouper.go
``calcMinMember`` and the JobSet grouper read ``constants.MinMemberOverrideKey`` on the top owner."""
KAI_MIN_MEMBER_MISSPELT = "kai.scheduler/min-member"
"""The key an older copy of KAI's docs/batch/batch-job-min-member.yaml wrote: KAI's Job and JobSet
groupers never read it (its StatefulSet grouper does), so neither does drasched on those."""
KAI_TOPOLOGY_PLACEMENTS = {"kai.scheduler/topology-required-placement": "requiredTopologyKey",
                           "kai.scheduler/topology-preferred-placement": "preferredTopologyKey"}
"""KAI's topology annotations on a workload (its top owner) and the drasched PodGroup field each
becomes: KAI's pod grouper copies them into the PodGroup's ``topologyConstraint.requiredTopologyLevel``
/ ``preferredTopologyLevel`` (pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go
``GetPodGroupMetadata``; docs/topology/README.md), levels being node label keys, as drasched's keys are."""
KAI_TOPOLOGY_NAME = "kai.scheduler/topology"
"""The Topology object a workload's placements are levels of: not needed here (the levels are node label keys)."""
KAI_GPU_FRACTION = "gpu-fraction"
KAI_GPU_MEMORY = "gpu-memory"
"""KAI's share of one GPU by memory (MiB): not read yet (``scheduler/fraction.py`` says why)."""
GPU = "nvidia.com/gpu"
UNLIMITED_QUOTA = "unlimited"
"""drasched's quota that deserves all a queue asks (``scheduler/queues.py``): KAI's quota -1."""

WHOLE_GROUP, SINGLE_POD = "all", "single"
"""v1beta1's disruptionMode choices; v1alpha2 spells them ``PodGroup`` and ``Pod``."""
V1ALPHA2_MODES = {"PodGroup": WHOLE_GROUP, "Pod": SINGLE_POD}


@dataclass
class Translation:
    """Each input object as drasched reads it (``None``: consumed, a Workload), and one warning
    per field that has no meaning here."""

    objects: list[Obj | None] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[Obj]:
        return [o for o in self.objects if o is not None]


def is_upstream(obj: Obj, kind: str) -> bool:
    return obj.get("kind") == kind and obj.get("apiVersion") in UPSTREAM_VERSIONS


def is_upstream_gang(obj: Obj) -> bool:
    """Whether ``obj`` is an upstream gang API PodGroup or Workload (``scheduling.k8s.io``, a
    version read): ``simulate`` keeps them as written, as ``serve`` finds them on a server."""
    return is_upstream(obj, "PodGroup") or is_upstream(obj, "Workload")


def is_foreign(obj: Obj) -> bool:
    """Whether ``obj`` is one of the kinds this module translates (pods aside)."""
    return (is_upstream(obj, "PodGroup") or is_upstream(obj, "Workload")
            or (obj.get("apiVersion"), obj.get("kind")) in ((KAI_QUEUE_VERSION, "Queue"),
                                                           (KAI_POD_GROUP_VERSION, "PodGroup"),
                                                           (KAI_TOPOLOGY_VERSION, "Topology"),
                                                           (COSCHEDULING_VERSION, "PodGroup")))


def translate(objects: Iterable[Obj]) -> Translation:
    """Every object of ``objects`` as drasched reads it, position for position.

    A translated PodGroup or Queue whose name a drasched object of that kind already holds
    is dropped with a warning: drasched's own object wins, then the upstream PodGroup, then
    KAI's, then scheduler-plugins' (as ``serve`` merges them, :mod:`drasched.scheduler.foreign_intake`).
    An upstream PodGroup reads the Workload templates of its own version (a server serves one).
    """
    objs = list(objects)
    workloads = {(o.get("apiVersion"), _key(o)): o for o in objs if is_upstream(o, "Workload")}
    groups = [o for o in objs if is_upstream(o, "PodGroup")]
    native = {(o.get("kind"), _key(o)) for o in objs if o.get("apiVersion") == DRASCHED_VERSION}
    best: dict[str, int] = {}
    """PodGroup key -> the rank of the other scheduler's PodGroup that wins it (:data:`GROUP_PRECEDENCE`)."""
    for o in objs:
        rank = _group_rank(o)
        if rank is not None:
            best[_key(o)] = min(rank, best.get(_key(o), rank))
    out = Translation()
    _check_workloads(workloads.values(), groups, out.warnings)
    classes = {_name(o) for o in objs if (o.get("apiVersion"), o.get("kind")) == PRIORITY_CLASS} | set(SYSTEM_CLASSES)
    if holds_kai_objects(objs):  # simulate adds the classes KAI's installation has (api/kai_install.py)
        classes |= KAI_CLASS_NAMES
    for o in objs:
        _check_kai_labels(o, classes, out.warnings)
        _check_kai_min_member(o, out.warnings)
        _check_kai_topology(o, out.warnings)
        _check_old_coscheduling_label(o, out.warnings)
        version_kind = (o.get("apiVersion"), o.get("kind"))
        t: Obj | None
        if is_upstream(o, "Workload"):
            t = None
        elif is_upstream(o, "PodGroup"):
            own = {k: w for (v, k), w in workloads.items() if v == o.get("apiVersion")}
            t = upstream_pod_group(o, own, out.warnings)
        elif version_kind == (KAI_QUEUE_VERSION, "Queue"):
            t = kai_queue(o, out.warnings)
        elif version_kind == (KAI_POD_GROUP_VERSION, "PodGroup"):
            t = kai_pod_group(o, out.warnings)
        elif version_kind == (KAI_TOPOLOGY_VERSION, "Topology"):
            kai_topology(o, out.warnings)
            t = None
        elif version_kind == (COSCHEDULING_VERSION, "PodGroup"):
            t = coscheduling_pod_group(o, out.warnings)
        elif version_kind == ("v1", "Pod"):
            t = aliased_pod(o, out.warnings)
        else:
            t = o
        if t is not None and t is not o and is_foreign(o) and (t["kind"], _key(t)) in native:
            out.warnings.append(f"{_what(o)}: ignored: {DRASCHED_VERSION} {t['kind']} of the same name exists "
                                "and wins")
            t = None
        elif t is not None and (rank := _group_rank(o)) is not None and best[_key(o)] < rank:
            out.warnings.append(f"{_what(o)}: ignored: {GROUP_PRECEDENCE[best[_key(o)]]} PodGroup of the same "
                                "name exists and wins")
            t = None
        out.objects.append(t)
    return out


GROUP_PRECEDENCE = (UPSTREAM_V1BETA1, UPSTREAM_V1ALPHA2, KAI_POD_GROUP_VERSION, COSCHEDULING_VERSION)
"""Which of two other schedulers' PodGroups of one name wins (the first), after drasched's own: as
``serve`` merges them (:data:`drasched.scheduler.foreign_intake.TARGET_OF`)."""


def _group_rank(o: Obj) -> int | None:
    """The rank of ``o`` in :data:`GROUP_PRECEDENCE`; None for an object that is no such PodGroup."""
    if o.get("kind") != "PodGroup" or o.get("apiVersion") not in GROUP_PRECEDENCE:
        return None
    return GROUP_PRECEDENCE.index(str(o["apiVersion"]))


# ---- the upstream gang API (KEP-4671, KEP-5729) ---------------------------------------------


def upstream_pod_group(pg: Obj, workloads: dict[str, Obj], warnings: list[str]) -> Obj:
    """A ``scheduling.k8s.io`` PodGroup as a drasched PodGroup of the same namespace and name.

    The PodGroup's own fields win; those it leaves unset come from the Workload template its
    ``spec.podGroupTemplateRef`` names (as the workload controller copies them upstream).
    """
    what = _what(pg)
    spec = dict(pg.get("spec") or {})
    ref = _workload_ref(pg)
    if ref is not None:
        template = _template(pg, ref, workloads, warnings)
        for k, v in template.items():
            if k != "name" and spec.get(k) in (None, {}, [], ""):
                spec[k] = v
    out_spec: Obj = {"minMember": _min_count(spec.get("schedulingPolicy") or {}, what, warnings)}
    queue = _labels(pg).get(QUEUE_LABEL)
    if queue:  # else the pods' label, else "default" (docs/design.md, "One gang per pod")
        out_spec["queue"] = queue
    if spec.get("priorityClassName"):
        out_spec["priorityClassName"] = spec["priorityClassName"]
    if spec.get("priority") is not None and not spec.get("priorityClassName"):
        warnings.append(f"{what}: spec.priority {spec['priority']} has no meaning here: drasched takes a group's "
                        "priority from spec.priorityClassName, else from its pods")
    topology = ((spec.get("schedulingConstraints") or {}).get("topology")) or []
    keys = [str(t.get("key")) for t in topology if isinstance(t, dict) and t.get("key")]
    if keys:
        out_spec["topologyConstraint"] = {"requiredTopologyKey": keys[0]}
        for i, extra in enumerate(keys[1:], start=1):
            warnings.append(f"{what}: spec.schedulingConstraints.topology[{i}] ({extra}) ignored: drasched "
                            f"places a group within one domain of one key ({keys[0]})")
    if spec.get("resourceClaims"):
        out_spec["resourceClaims"] = copy.deepcopy(spec["resourceClaims"])
    whole = _disruption_mode(pg, spec.get("disruptionMode"), warnings) == WHOLE_GROUP
    if spec.get("parentCompositePodGroupName"):
        warnings.append(f"{what}: spec.parentCompositePodGroupName has no meaning here: drasched has no composite "
                        "PodGroups, each group is scheduled on its own")
    if spec.get("preemptionPolicy") == "Never":
        warnings.append(f"{what}: spec.preemptionPolicy Never has no meaning here: drasched takes it from the "
                        "pods' spec.preemptionPolicy or their PriorityClass")
    out = _drasched("PodGroup", pg, out_spec)
    if whole:
        out["metadata"]["annotations"][EVICT_WHOLE] = "true"
    return out


@dataclass(frozen=True)
class _WorkloadRef:
    """Where a PodGroup names its Workload template, in the field paths of its own version."""

    workload: str
    template: str
    workload_path: str
    template_path: str


def _workload_ref(pg: Obj) -> _WorkloadRef | None:
    spec = pg.get("spec") or {}
    if pg.get("apiVersion") == UPSTREAM_V1ALPHA2:
        ref = (spec.get("podGroupTemplateRef") or {}).get("workload") or {}
        base = "spec.podGroupTemplateRef.workload"
        name_field, template_field = "workloadName", "podGroupTemplateName"
    else:
        ref = spec.get("workloadRef") or {}
        base, name_field, template_field = "spec.workloadRef", "workloadName", "templateName"
    if not ref:
        return None
    return _WorkloadRef(str(ref.get(name_field) or ""), str(ref.get(template_field) or ""),
                        f"{base}.{name_field}", f"{base}.{template_field}")


def _disruption_mode(pg: Obj, mode: Any, warnings: list[str]) -> str | None:
    """The group's disruptionMode (``all`` or ``single``, whatever the version's spelling), None when
    unset or unknown (warned about). ``all`` is kept as ``drasched.io/evict-whole``; ``single`` is
    drasched's own rule only in part: the pods beyond minCount go one by one, never the group below it."""
    if mode is None:
        return None
    v1alpha2 = pg.get("apiVersion") == UPSTREAM_V1ALPHA2
    choice = V1ALPHA2_MODES.get(mode) if v1alpha2 else next(iter(mode), None) if isinstance(mode, dict) else None
    shown = f"spec.disruptionMode {mode}" if v1alpha2 else f"spec.disruptionMode.{choice}"
    if choice == SINGLE_POD:
        warnings.append(f"{_what(pg)}: {shown} is read only in part: drasched evicts the group's pods beyond "
                        "minCount one by one, and the group whole, never a pod of its minCount alone")
    elif choice != WHOLE_GROUP:
        known = "PodGroup, Pod" if v1alpha2 else "all, single"
        warnings.append(f"{_what(pg)}: spec.disruptionMode: unknown value {mode!r} (known: {known}); the group is "
                        "evicted whole")
        return WHOLE_GROUP
    return choice


def _check_workloads(workloads: Iterable[Obj], groups: list[Obj], warnings: list[str]) -> None:
    """A Workload template no PodGroup instantiates schedules nothing: say so."""
    used = set()
    for g in groups:
        ref = _workload_ref(g)
        if ref is not None:
            used.add((g.get("apiVersion"), _ns(g), ref.workload, ref.template))
    for w in workloads:
        if (w.get("spec") or {}).get("compositePodGroupTemplates"):
            warnings.append(f"{_what(w)}: spec.compositePodGroupTemplates has no meaning here: drasched has no "
                            "composite PodGroups; their PodGroups are scheduled each on its own")
        for i, t in enumerate((w.get("spec") or {}).get("podGroupTemplates") or []):
            name = (t or {}).get("name")
            if (w.get("apiVersion"), _ns(w), _name(w), name) not in used:
                ref_field = ("spec.podGroupTemplateRef.workload" if w.get("apiVersion") == UPSTREAM_V1ALPHA2
                             else "spec.workloadRef")
                warnings.append(f"{_what(w)}: spec.podGroupTemplates[{i}] ({name}): no PodGroup is created from "
                                f"this template, so no pod can join it; create a PodGroup whose {ref_field} names "
                                f"{_name(w)}/{name}")


def _template(pg: Obj, ref: _WorkloadRef, workloads: dict[str, Obj], warnings: list[str]) -> Obj:
    w = workloads.get(f"{_ns(pg)}/{ref.workload}")
    if w is None:
        warnings.append(f"{_what(pg)}: {ref.workload_path}: Workload {_ns(pg)}/{ref.workload} does not exist; "
                        "the PodGroup's own fields are used")
        return {}
    for t in (w.get("spec") or {}).get("podGroupTemplates") or []:
        if (t or {}).get("name") == ref.template:
            return dict(t)
    warnings.append(f"{_what(pg)}: {ref.template_path}: Workload {_ns(pg)}/{ref.workload} has no template "
                    f"{ref.template!r}; the PodGroup's own fields are used")
    return {}


def _min_count(policy: Obj, what: str, warnings: list[str]) -> int:
    gang = policy.get("gang")
    if isinstance(gang, dict):
        try:
            return max(1, int(gang.get("minCount") or 1))
        except (TypeError, ValueError):
            warnings.append(f"{what}: spec.schedulingPolicy.gang.minCount: not an integer; 1 is used")
    return 1  # basic: every pod on its own merits


# ---- KAI-Scheduler ----------------------------------------------------------------------------

KAI_RESOURCES = {"gpu": GPU, "cpu": "cpu", "memory": "memory"}
KAI_QUEUE_IGNORED = {"displayName": "a display name", "nodePoolName": "node pools",
                     "dependsOn": "queue dependencies"}
KAI_POD_GROUP_IGNORED = {"topologyConstraint.topology": "a named Topology object (the level keys are read)",
                         "subGroups": "sub-groups (one gang minimum per group)",
                         "markUnschedulable": "marking a group unschedulable",
                         "schedulingBackoff": "a per-group backoff (drasched's backoff is 1 s doubling to 10 s)"}
KAI_PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
"""KAI's preemptibility label on a workload or pod; a translated KAI PodGroup carries its
``spec.preemptibility`` as this label (read by ``scheduler/preemptibility.py``)."""
KAI_PREEMPTIBILITY_VALUES = ("preemptible", "non-preemptible")


def kai_queue(q: Obj, warnings: list[str]) -> Obj:
    """A KAI Queue as a drasched Queue. Units: KAI counts cpu in millicores and memory in MB
    (10^6 bytes); ``-1`` means unlimited."""
    what = _what(q)
    spec = q.get("spec") or {}
    out: Obj = {}
    if spec.get("parentQueue"):
        out["parentQueue"] = spec["parentQueue"]
    if spec.get("priority") is not None:
        out["priority"] = spec["priority"]
    runtimes = {k: spec[k] for k in ("preemptMinRuntime", "reclaimMinRuntime") if spec.get(k)}
    if runtimes:
        out["minRuntime"] = min(runtimes.values(), key=_seconds)
        if len(set(runtimes.values())) > 1:
            warnings.append(f"{what}: spec.reclaimMinRuntime and spec.preemptMinRuntime differ: drasched has one "
                            f"minRuntime for both, the shorter ({out['minRuntime']}) is used")
    resources: Obj = {}
    given = spec.get("resources") or {}
    for kai_name, res in given.items():
        name = KAI_RESOURCES.get(kai_name)
        if name is None:
            warnings.append(f"{what}: spec.resources.{kai_name} has no meaning here (known: gpu, cpu, memory)")
            continue
        entry = _kai_resource(kai_name, res or {}, f"{what}: spec.resources.{kai_name}", warnings)
        if entry:
            resources[name] = entry
    for kai_name, name in KAI_RESOURCES.items():
        if kai_name not in given:
            resources[name] = _kai_resource_left_out(kai_name, f"{what}: spec.resources.{kai_name}", warnings)
    if resources:
        out["resources"] = resources
    for k in sorted(set(spec) - {"parentQueue", "priority", "resources", "preemptMinRuntime", "reclaimMinRuntime"}):
        why = KAI_QUEUE_IGNORED.get(k, "no drasched equivalent")
        warnings.append(f"{what}: spec.{k} has no meaning here ({why}); ignored")
    return _drasched("Queue", q, out)


def _kai_resource(kai_name: str, res: Obj, where: str, warnings: list[str]) -> Obj:
    """One resource of a KAI Queue. ``-1`` is KAI's ``UnlimitedResourceQuantity``: a quota of -1
    is deserved without bound (KAI's fair share gives such a queue all it asks before dividing
    over quota, ``resource_division.go``, and never holds its non-preemptible workloads to it,
    ``capacity_policy``): drasched's ``quota: unlimited``; a limit of -1 is no limit, and an unset
    limit is KAI's Go zero value, a limit of 0 (:func:`_kai_unset_limit`)."""
    entry: Obj = {}
    for k in ("quota", "limit"):
        v = res.get(k)
        if v is None:
            if k == "limit":
                entry[k] = _kai_unset_limit(kai_name, f"{where}.limit", warnings)
            continue
        if float(v) < 0:  # -1: unlimited
            if k == "quota":
                entry[k] = UNLIMITED_QUOTA
            continue
        entry[k] = _kai_quantity(kai_name, v)
    weight = res.get("overQuotaWeight")
    if weight is not None:
        if isinstance(weight, int | float) and not isinstance(weight, bool) and weight < 0:
            warnings.append(f"{where}.overQuotaWeight: {weight} gives the queue no over-quota share in KAI (its "
                            "weight is floored to 0); 0 is used")
            weight = 0
        entry["overQuotaWeight"] = weight
    for k in sorted(set(res) - {"quota", "limit", "overQuotaWeight"}):
        warnings.append(f"{where}.{k} has no meaning here; ignored")
    return entry


def _kai_resource_left_out(kai_name: str, where: str, warnings: list[str]) -> Obj:
    """A resource a KAI Queue leaves out: KAI reads the zero ``QueueResource``, so its limit is 0
    (its quota 0 too, which drasched's quota already is without a setting)."""
    return {"limit": _kai_unset_limit(kai_name, where, warnings)}


def _kai_unset_limit(kai_name: str, where: str, warnings: list[str]) -> str:
    """An unset limit is 0 in KAI: ``QueueResource.Limit`` is a plain float64 with no default
    (pkg/apis/scheduling/v2/resources.go), its scheduler caps the queue at it unless it is -1
    (pkg/scheduler/plugins/proportion/capacity_policy/max_allowed_check.go ``isOverLimit``), and
    its docs say "limit 0 or unset: no additional resources allowed (default)" (docs/queues/README.md).
    So the queue's pods may ask none of the resource, and a warning says how to lift it."""
    warnings.append(f"{where}: unset, which KAI reads as a limit of 0: the queue's pods may ask no {kai_name} "
                    "(write limit: -1 for no limit)")
    return _kai_quantity(kai_name, 0)


def _kai_quantity(kai_name: str, value: Any) -> str:
    """KAI's number as an exact Kubernetes quantity: millicores, MB (10^6 bytes), GPUs."""
    text = _number(value)
    if kai_name == "cpu":
        return f"{text}m"
    if kai_name == "memory":
        return f"{text}M"
    return text


def kai_pod_group(pg: Obj, warnings: list[str]) -> Obj:
    """A KAI PodGroup as a drasched PodGroup; topology levels are node label keys in both."""
    what = _what(pg)
    spec = pg.get("spec") or {}
    out: Obj = {"minMember": max(1, int(spec.get("minMember") or 1))}
    if spec.get("queue"):
        out["queue"] = spec["queue"]
    if spec.get("priorityClassName"):
        out["priorityClassName"] = spec["priorityClassName"]
    topo = spec.get("topologyConstraint") or {}
    constraint = {dk: topo[kk] for kk, dk in (("requiredTopologyLevel", "requiredTopologyKey"),
                                              ("preferredTopologyLevel", "preferredTopologyKey")) if topo.get(kk)}
    if constraint:
        out["topologyConstraint"] = constraint
    present = {f"spec.{k}" for k in spec} | {f"spec.topologyConstraint.{k}" for k in topo}
    for path in sorted(present):
        short = path.removeprefix("spec.")
        if short in ("minMember", "queue", "priorityClassName", "topologyConstraint", "preemptibility",
                     "topologyConstraint.requiredTopologyLevel", "topologyConstraint.preferredTopologyLevel"):
            continue
        why = KAI_POD_GROUP_IGNORED.get(short, "no drasched equivalent")
        warnings.append(f"{what}: {path} has no meaning here ({why}); ignored")
    group = _drasched("PodGroup", pg, out)
    preemptibility = spec.get("preemptibility")
    if preemptibility in KAI_PREEMPTIBILITY_VALUES:
        group["metadata"]["labels"] = {**(group["metadata"].get("labels") or {}),
                                       KAI_PREEMPTIBILITY_LABEL: preemptibility}
    elif preemptibility:
        warnings.append(f"{what}: spec.preemptibility: unknown value {preemptibility!r} (known: "
                        f"{', '.join(KAI_PREEMPTIBILITY_VALUES)}); ignored, its priority decides as in KAI")
    return group


def kai_topology(topology: Obj, warnings: list[str]) -> None:
    """A KAI Topology is set aside: drasched's topology keys are node label keys, which a KAI
    PodGroup's ``requiredTopologyLevel`` / ``preferredTopologyLevel`` already are, so the named
    hierarchy adds nothing to place by (a PodGroup's reference to it is warned about there)."""
    levels = [str((lv or {}).get("nodeLabel")) for lv in (topology.get("spec") or {}).get("levels") or []]
    shown = f" ({', '.join(levels)})" if levels else ""
    warnings.append(f"{_what(topology)}: ignored: drasched needs no Topology object; a PodGroup's topology level "
                    f"is the node label key itself{shown}")


def aliased_pod(pod: Obj, warnings: list[str]) -> Obj:
    """A pod with KAI's queue label, group or GPU-fraction annotation, or scheduler-plugins' group
    label, with drasched's added.

    drasched's own label or annotation wins where both are set and differ (with a warning).
    Returns ``pod`` itself when it carries none of them.
    """
    md = pod.get("metadata") or {}
    labels, annotations = dict(md.get("labels") or {}), dict(md.get("annotations") or {})
    aliases = [(labels, k, labels, QUEUE_LABEL, f"metadata.labels[{k}]") for k in KAI_QUEUE_LABELS]
    aliases += [(annotations, KAI_POD_GROUP_ANNOTATION, labels, POD_GROUP_LABEL,
                 f"metadata.annotations[{KAI_POD_GROUP_ANNOTATION}]"),
                (labels, COSCHEDULING_POD_GROUP_LABEL, labels, POD_GROUP_LABEL,
                 f"metadata.labels[{COSCHEDULING_POD_GROUP_LABEL}]"),
                (annotations, KAI_GPU_FRACTION, annotations, GPU_FRACTION,
                 f"metadata.annotations[{KAI_GPU_FRACTION}]")]
    changed = False
    for src, key, dst, ours, path in aliases:
        if key not in src:
            continue
        if ours in dst and dst[ours] != src[key]:
            warnings.append(f"{_what(pod)}: {path} {src[key]!r} ignored: {ours} says {dst[ours]!r}")
            continue
        if ours not in dst:
            dst[ours] = src[key]
            changed = True
    if KAI_GPU_MEMORY in annotations:
        warnings.append(f"{_what(pod)}: metadata.annotations[{KAI_GPU_MEMORY}] is not read: drasched shares a GPU "
                        f"by fraction only ({GPU_FRACTION}); the pod is not scheduled and says why")
    spec = _with_fraction_request(pod, annotations, warnings)
    if not changed and spec is None:
        return pod
    out = copy.deepcopy(pod)
    out["metadata"]["labels"] = labels
    if annotations:
        out["metadata"]["annotations"] = annotations
    if spec is not None:
        out["spec"] = spec
    return out


KAI_FRACTION_CONTAINER = "gpu-fraction-container-name"
"""KAI's annotation naming the container that gets the GPU fraction (default: the first)."""


def _with_fraction_request(pod: Obj, annotations: Obj, warnings: list[str]) -> Obj | None:
    """The pod's spec with ``nvidia.com/gpu: 1`` added where KAI's ``gpu-fraction`` pod asks no
    GPU (None: nothing to add). KAI writes a fraction alone (its binder hands the pod part of a
    GPU it reserves itself); drasched's fraction is a share of one DRA GPU, which the pod reaches
    through the special claim of a ``nvidia.com/gpu: 1`` request (KEP-5004), so the request is
    added to the container KAI would give the fraction to, with a warning."""
    if KAI_GPU_FRACTION not in (((pod.get("metadata") or {}).get("annotations")) or {}) \
            or GPU_FRACTION in (((pod.get("metadata") or {}).get("annotations")) or {}):
        return None
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return None
    containers = [c for key in ("containers", "initContainers") for c in spec.get(key) or [] if isinstance(c, dict)]
    if any(GPU in ((c.get("resources") or {}).get(part) or {}) for c in containers for part in ("requests", "limits")):
        return None  # the pod asks GPUs itself: the fraction's own check says whether that fits
    wanted = annotations.get(KAI_FRACTION_CONTAINER)
    target = next((c for c in containers if c.get("name") == wanted), None) if wanted else None
    if target is None:
        first = spec.get("containers") or []
        target = first[0] if first and isinstance(first[0], dict) else None
    if target is None:
        return None
    out = copy.deepcopy(spec)
    for c in [*(out.get("containers") or []), *(out.get("initContainers") or [])]:
        if c is not None and c.get("name") == target.get("name"):
            resources = c.setdefault("resources", {})
            resources.setdefault("limits", {})[GPU] = "1"
            resources.setdefault("requests", {})[GPU] = "1"
            break
    warnings.append(f"{_what(pod)}: metadata.annotations[{KAI_GPU_FRACTION}] without a GPU request: container "
                    f"{target.get('name')!r} asks {GPU}: 1, whose DRA device the fraction shares (drasched's "
                    f"fractional GPUs)")
    return out


def _check_kai_labels(o: Obj, classes: set[str], warnings: list[str]) -> None:
    """Say where KAI's labels on a workload or pod will not be read as written: its queue label
    against drasched's (drasched's wins; a pod's is warned about by :func:`kai_pod`), its
    ``priorityClassName`` label against ``spec.priorityClassName`` or a class not in the input."""
    labels = _labels(o)
    if not labels or o.get("kind") in ("PriorityClass", "Queue", "PodGroup", "Workload"):
        return
    ours = labels.get(QUEUE_LABEL)
    if o.get("kind") != "Pod" and ours:
        for k in KAI_QUEUE_LABELS:
            if labels.get(k) and labels[k] != ours:
                warnings.append(f"{_what(o)}: metadata.labels[{k}] {labels[k]!r} ignored: {QUEUE_LABEL} says {ours!r}")
    name = labels.get(KAI_PRIORITY_LABEL)
    if not name:
        return
    spec = o.get("spec") or {}
    named = spec.get("priorityClassName") if o.get("kind") == "Pod" else _template_priority_class(o)
    path = f"metadata.labels[{KAI_PRIORITY_LABEL}]"
    if named and named != name:
        where = "spec.priorityClassName" if o.get("kind") == "Pod" else "its pod template's spec.priorityClassName"
        warnings.append(f"{_what(o)}: {path} {name!r} ignored: {where} says {named!r}")
    elif not named and name not in classes:
        warnings.append(f"{_what(o)}: {path}: PriorityClass {name!r} does not exist; ignored, as KAI ignores it: "
                        "in a KAI queue the pods run at KAI's default class for their workload's kind, elsewhere at "
                        "their own priority")


def _template_priority_class(workload: Obj) -> str | None:
    """The ``priorityClassName`` of a workload's pod template (a JobSet's first Job's)."""
    spec = workload.get("spec") or {}
    if workload.get("kind") == "JobSet":
        rjobs = spec.get("replicatedJobs") or [{}]
        spec = (((rjobs[0] or {}).get("template") or {}).get("spec") or {})
    return (((spec.get("template") or {}).get("spec") or {}).get("priorityClassName")) or None


def labelled_queue(labels: dict[str, str]) -> str | None:
    """The queue a workload's or pod's labels name: ``drasched.io/queue``, else KAI's
    ``kai.scheduler/queue`` or ``runai/queue`` (KAI reads its label on the workload first)."""
    ours = labels.get(QUEUE_LABEL)
    if ours:
        return ours
    return next((labels[k] for k in KAI_QUEUE_LABELS if labels.get(k)), None)


def is_kai_queue(obj: Obj) -> bool:
    """Whether a drasched Queue was written as a KAI ``scheduling.run.ai/v2`` Queue (translated)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(TRANSLATED_FROM, "")).startswith(KAI_QUEUE_VERSION + " ")


def kai_queue_names(queues: Iterable[Obj], kai_queues: Iterable[Obj] = ()) -> set[str]:
    """The names of the queues that are KAI's: ``queues`` (drasched Queues) translated from KAI,
    and ``kai_queues`` (``scheduling.run.ai/v2`` Queues as a server serves them) that no native
    drasched Queue of the same name overrides (drasched's own wins a name)."""
    native: set[str] = set()
    names: set[str] = set()
    for q in queues:
        (names if is_kai_queue(q) else native).add(_name(q))
    return names | ({_name(q) for q in kai_queues} - native)


def group_kind(api_version: str, kind: str) -> str:
    """``Kind.group`` as Go's ``schema.GroupKind`` prints it (``Deployment.apps``; ``Pod`` for the core group)."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return f"{kind}.{group}" if group else kind


def kai_default_priority_class(top_owner: str) -> str:
    """The PriorityClass KAI's pod grouper gives a workload whose top owner is of kind ``top_owner``
    (``Kind.group``) when neither it nor its pods name one (:data:`KAI_DEFAULT_PRIORITY_CLASSES`)."""
    return KAI_DEFAULT_PRIORITY_CLASSES.get(top_owner, KAI_TRAIN_CLASS)


def kai_min_member(workload: Obj) -> tuple[int, str | None]:
    """A batch Job's or JobSet's minMember as KAI's pod grouper sets it: its ``kai.scheduler/batch-min-member``
    annotation, else 1 (each pod on its own); and why the annotation was not used, when it is not a
    whole number of at least 1 (KAI's grouper then makes no PodGroup at all; here the pods run as with 1)."""
    raw = ((workload.get("metadata") or {}).get("annotations") or {}).get(KAI_BATCH_MIN_MEMBER)
    if raw is None:
        return 1, None
    try:
        value = int(str(raw), 10)
    except ValueError:
        value = 0
    if value < 1:
        return 1, f"annotation {KAI_BATCH_MIN_MEMBER}={raw!r} is not a whole number of at least 1; 1 is used"
    return value, None


def _check_kai_min_member(o: Obj, warnings: list[str]) -> None:
    """KAI's Job and JobSet groupers read ``kai.scheduler/batch-min-member`` only; an older copy of
    its docs example wrote ``kai.scheduler/min-member``, which they ignore: say so."""
    if o.get("kind") not in ("Job", "JobSet"):
        return
    annotations = (o.get("metadata") or {}).get("annotations") or {}
    if KAI_MIN_MEMBER_MISSPELT in annotations and KAI_BATCH_MIN_MEMBER not in annotations:
        warnings.append(f"{_what(o)}: metadata.annotations[{KAI_MIN_MEMBER_MISSPELT}] is not read: KAI's "
                        f"{o['kind']} grouper reads {KAI_BATCH_MIN_MEMBER}")


def kai_topology_constraint(workload: Obj) -> Obj:
    """The ``topologyConstraint`` KAI's pod grouper gives a workload's PodGroup, read from the workload's
    (its top owner's) annotations (:data:`KAI_TOPOLOGY_PLACEMENTS`) as drasched's ``requiredTopologyKey`` /
    ``preferredTopologyKey``; empty when it has neither. The named Topology is not needed (:func:`kai_topology`)."""
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    return {ours: str(annotations[theirs]) for theirs, ours in KAI_TOPOLOGY_PLACEMENTS.items()
            if annotations.get(theirs)}


GANG_MIN_MEMBER = "drasched.io/gang-min-member"
GANG_ON_REQUEST = ("Deployment", "ReplicaSet", "StatefulSet")
"""Workload kinds that get an implicit PodGroup only with drasched's :data:`GANG_MIN_MEMBER` annotation
(``controllers/workloads/gangs.py``): without one, KAI's topology annotations have no group to go on."""


def _check_kai_topology(o: Obj, warnings: list[str]) -> None:
    """Say where KAI's topology annotations on a workload are not read as KAI reads them: the named
    Topology (its levels are node label keys here), and placements on a workload that gets no PodGroup."""
    if o.get("kind") in ("Pod", "PodGroup", "Queue", "Topology", "Workload"):
        return
    annotations = (o.get("metadata") or {}).get("annotations") or {}
    name = annotations.get(KAI_TOPOLOGY_NAME)
    if name:
        warnings.append(f"{_what(o)}: metadata.annotations[{KAI_TOPOLOGY_NAME}] ({name}) has no meaning here (a "
                        "named Topology object: the placement annotations are node label keys, read directly)")
    placed = [k for k in KAI_TOPOLOGY_PLACEMENTS if annotations.get(k)]
    if placed and o.get("kind") in GANG_ON_REQUEST and GANG_MIN_MEMBER not in annotations:
        warnings.append(f"{_what(o)}: metadata.annotations[{placed[0]}] is not read: a {o['kind']} gets a PodGroup, "
                        f"whose topology it would set, only with the annotation {GANG_MIN_MEMBER}")


# ---- kubernetes-sigs/scheduler-plugins (coscheduling) -----------------------------------------

COSCHEDULING_READ = ("minMember", "minResources", "scheduleTimeoutSeconds")


def coscheduling_pod_group(pg: Obj, warnings: list[str]) -> Obj:
    """A scheduler-plugins PodGroup as a drasched PodGroup of the same namespace and name.

    Its pods name it by the :data:`COSCHEDULING_POD_GROUP_LABEL` label, read as drasched's. The
    coscheduling plugin turns a pod away while its group has fewer than ``minMember`` pods (PreFilter)
    and holds placed pods until ``minMember`` are (Permit; pkg/coscheduling/core/core.go): drasched's
    gang, which places ``minMember`` pods together or none. A ``minMember`` of 0 (unset) lets every pod
    through alone: 1. The queue is the group's ``drasched.io/queue`` label, else its pods', as for an
    upstream PodGroup; its status is scheduler-plugins' controller's, not read.
    """
    what = _what(pg)
    spec = pg.get("spec") or {}
    out: Obj = {"minMember": max(1, int(spec.get("minMember") or 1))}
    queue = _labels(pg).get(QUEUE_LABEL)
    if queue:
        out["queue"] = queue
    if spec.get("minResources"):
        warnings.append(f"{what}: spec.minResources is not read: drasched places the group's minMember pods "
                        "together only where what they ask fits (the coscheduling plugin's PreFilter first "
                        "compares minResources with the cluster's free resources)")
    if spec.get("scheduleTimeoutSeconds") is not None:
        warnings.append(f"{what}: spec.scheduleTimeoutSeconds has no meaning here: drasched places a group's "
                        "minMember pods in one cycle or none, so no placed pod waits for the others (the "
                        "coscheduling plugin's Permit waits at most that long)")
    for k in sorted(set(spec) - set(COSCHEDULING_READ)):
        warnings.append(f"{what}: spec.{k} has no meaning here; ignored")
    return _drasched("PodGroup", pg, out)


OLD_COSCHEDULING_POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
"""scheduler-plugins' pod label before v0.25, which replaced it with :data:`COSCHEDULING_POD_GROUP_LABEL`
("ACTION REQUIRED", kubernetes-sigs/scheduler-plugins#526): v0.25 and later do not read it, and neither does
drasched; a pod carrying only it joins no group, so it is warned about."""


def _pod_templates_labels(o: Obj) -> Iterable[tuple[str, Obj]]:
    """``(path, labels)`` of a pod's own labels, or of the pod templates of a workload (a JobSet's per
    replicated Job)."""
    if o.get("kind") == "Pod":
        yield "metadata.labels", _labels(o)
        return
    spec = o.get("spec") or {}
    if o.get("kind") == "JobSet":
        for i, rjob in enumerate(spec.get("replicatedJobs") or []):
            job_spec = ((rjob or {}).get("template") or {}).get("spec") or {}
            labels = ((job_spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            yield f"spec.replicatedJobs[{i}].template.spec.template.metadata.labels", labels
        return
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        yield "spec.template.metadata.labels", labels


def _check_old_coscheduling_label(o: Obj, warnings: list[str]) -> None:
    """A pod (or a workload's pod template) labelled with scheduler-plugins' pre-v0.25 pod-group label and not
    the current one: the pod joins no group, where the user expects the coscheduling gang."""
    for path, labels in _pod_templates_labels(o):
        if not isinstance(labels, dict):
            continue
        old = labels.get(OLD_COSCHEDULING_POD_GROUP_LABEL)
        if old and not labels.get(COSCHEDULING_POD_GROUP_LABEL):
            warnings.append(f"{_what(o)}: {path}[{OLD_COSCHEDULING_POD_GROUP_LABEL}] is scheduler-plugins' label "
                            f"before v0.25 and is not read: the pods join no PodGroup; label them "
                            f"{COSCHEDULING_POD_GROUP_LABEL}: {old} (kubernetes-sigs/scheduler-plugins#526)")


def named_pod_group(md: Obj) -> str | None:
    """The PodGroup a pod's metadata names: drasched's ``drasched.io/pod-group`` label, else KAI's
    ``pod-group-name`` annotation, else scheduler-plugins' ``scheduling.x-k8s.io/pod-group`` label
    (aliases: the pod is not rewritten). Upstream's ``spec.schedulingGroup`` is the spec's, not read here."""
    labels = md.get("labels") or {}
    return (labels.get(POD_GROUP_LABEL) or (md.get("annotations") or {}).get(KAI_POD_GROUP_ANNOTATION)
            or labels.get(COSCHEDULING_POD_GROUP_LABEL) or None)


def names_pod_group(md: Obj) -> bool:
    """Whether a pod's metadata names a PodGroup (:func:`named_pod_group`'s keys, set at all)."""
    labels = md.get("labels") or {}
    return (POD_GROUP_LABEL in labels or COSCHEDULING_POD_GROUP_LABEL in labels
            or KAI_POD_GROUP_ANNOTATION in (md.get("annotations") or {}))


# ---- helpers -----------------------------------------------------------------------------------


def _drasched(kind: str, src: Obj, spec: Obj) -> Obj:
    md = copy.deepcopy(src.get("metadata") or {})
    for k in ("resourceVersion", "uid", "generation", "managedFields", "selfLink"):
        md.pop(k, None)
    md["annotations"] = {**(md.get("annotations") or {}), TRANSLATED_FROM: f"{src.get('apiVersion')} {kind}"}
    return {"apiVersion": DRASCHED_VERSION, "kind": kind, "metadata": md, "spec": spec}


def _labels(o: Obj) -> dict[str, str]:
    return dict((o.get("metadata") or {}).get("labels") or {})


def _ns(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("namespace") or "default")


def _name(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name") or "")


def _key(o: Obj) -> str:
    return f"{_ns(o)}/{_name(o)}"


def _what(o: Obj) -> str:
    """How a message names an object: ``<apiVersion> <Kind> <namespace>/<name>``."""
    md = o.get("metadata") or {}
    name = f"{md['namespace']}/{_name(o)}" if md.get("namespace") else _name(o)
    return f"{o.get('apiVersion')} {o.get('kind')} {name}"


def _number(value: Any) -> str:
    f = float(value)
    return str(int(f)) if f == int(f) else repr(f)


def _seconds(duration: str) -> float:
    try:
        return parse_go_duration(str(duration)).total_seconds()
    except ValueError:
        return float("inf")
