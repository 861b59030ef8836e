"""Implicit gangs: a PodGroup for each workload whose pods must start together.

Controllers create a workload's pods one by one; scheduled one by one they could be
placed partly, which is what gangs prevent. So for every pending pod that names no
PodGroup itself, this controller finds the workload that owns it, creates a
``scheduling.drasched.io`` PodGroup for it (named after the workload, owner-referenced to
it so it is garbage-collected with it) and labels the pod ``drasched.io/pod-group`` before
the scheduler sees it (it runs earlier in every round).

* **Job** (``batch/v1``): minMember = ``parallelism`` (at most ``completions``), then the pods the Job
  still runs at once: once some succeeded, at most the completions left (:func:`job_gang`), so a
  replacement for a failed pod after the others finished is not held for pods that will never come.
  The PodGroup follows the Job's status (Kueue's and upstream's count).
* **JobSet** (``jobset.x-k8s.io``, v1alpha2 or v1): one PodGroup for all its Jobs' pods, minMember = the sum
  over replicated Jobs of ``replicas`` x the Job's gang (every pod that must start together).
* **LeaderWorkerSet**: one PodGroup per group (leader and workers), ``<lws>-<group>``, minMember =
  ``leaderWorkerTemplate.size``; with the ``leaderworkerset.sigs.k8s.io/exclusive-topology: <key>``
  annotation the group must land in one domain of that key (``requiredTopologyKey``). Pods made
  by upstream's controller (owned by the LWS's StatefulSets) are found by their
  ``leaderworkerset.sigs.k8s.io/name`` label.
* **Kubeflow PyTorchJob / MPIJob** (pods labelled ``training.kubeflow.org/job-name`` and
  controlled by one): one PodGroup named after the job, minMember = its pods present when the
  PodGroup is made (an embedded run has them all from the start; in ``drasched serve``, where the
  operator makes them one by one, the replicas its replica specs declare), queue and priority
  class from the pod.
* **Deployment** (through its ReplicaSet), **ReplicaSet**, **StatefulSet**: no gang unless the
  workload is annotated ``drasched.io/gang-min-member: "<n>"`` (then minMember n). A StatefulSet
  needs ``podManagementPolicy: Parallel`` for it (OrderedReady makes one pod at a time, so a
  gang would wait forever); on an OrderedReady one the annotation is ignored with a Warning.

KAI-Scheduler's topology annotations on the workload at the top of the pods' owners,
``kai.scheduler/topology-required-placement`` and ``kai.scheduler/topology-preferred-placement``
(node label keys), become the PodGroup's ``requiredTopologyKey`` / ``preferredTopologyKey``, as KAI's
pod grouper fills its PodGroup's ``topologyConstraint`` from them (defaultgrouper ``GetPodGroupMetadata``),
in any queue; a LeaderWorkerSet's ``exclusive-topology`` wins over KAI's required placement.

A Job or JobSet whose queue is one of KAI-Scheduler's (a ``scheduling.run.ai/v2`` Queue) is grouped
as KAI's pod grouper groups it instead: minMember = its ``kai.scheduler/batch-min-member``
annotation, else 1, each pod on its own (pkg/podgrouper/podgrouper/plugins/job/job_grouper.go
``calcMinMember``; the JobSet grouper's ``getMinAvailable``; KAI's changelog: "JobSet PodGroups no
longer auto-calculate minAvailable ... The default is now 1"). A ReplicaSet's pod in a queue named
by KAI's label that names no PriorityClass gets its top owner's kind written on it
(``drasched.io/top-owner``: ``Deployment.apps`` through the ReplicaSet's own owner, as KAI's grouper
walks ownerReferences), from which the scheduler takes KAI's default class (``inference`` for a
Deployment); the scheduler holds such a pod until then.

The queue is the workload's ``drasched.io/queue`` label, else KAI-Scheduler's
``kai.scheduler/queue`` (or ``runai/queue``) on it (KAI reads the top owner's label first); without
either, the pods' label. The priority class is the pod template's ``priorityClassName``, else
KAI's ``priorityClassName`` label on the workload when that PriorityClass exists (KAI falls back
to its default for a missing one: here the pods keep their own priority, or in a KAI queue take KAI's
default class for the workload's kind, which the scheduler applies; the workload gets a Warning).
A pod that already names a PodGroup (the ``drasched.io/pod-group``
label, or an alias: KAI's ``pod-group-name``, scheduler-plugins' ``scheduling.x-k8s.io/pod-group``)
is left as it is: an explicit PodGroup always wins. A PodGroup of the workload's
name that belongs to something else is not touched (a Warning event on the workload says
so) and the pods are scheduled one by one. Grouping is switched off per kind with
:class:`ImplicitGangs`: ``implicitGangs: {Job: false}`` in the scheduler configuration (in an
embedded run, the ``config.yaml`` of the ConfigMap ``kube-system/drasched-scheduler``; in
``drasched serve``, the configuration file).

In ``drasched serve`` the scheduler holds the pods of the kinds
:mod:`drasched.api.implicitgang` names until they are labelled (the ``implicitGangGate``
plugin); a pod of such a kind this controller leaves without a group (its kind switched off,
the name taken, an LWS that starts its leader first) gets the annotation
``drasched.io/implicit-gang: none`` so that it is no longer held. A pod whose workload is not
in the cache yet (its watch event is a moment behind the pod's) is looked at again when it
arrives. Only the workload kinds the API server serves are watched (a kind whose list is answered
404 or 403, such as a CRD that is not installed, is left out). A pass looks only at the pods still waiting
for a decision: those that changed, or all of them when a workload, a PodGroup or the
settings changed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, Conflict, Forbidden, NotFound
from drasched.api.foreign import (
    KAI_BATCH_MIN_MEMBER,
    KAI_PRIORITY_LABEL,
    group_kind,
    kai_min_member,
    kai_queue_names,
    kai_topology_constraint,
    labelled_queue,
    names_pod_group,
)
from drasched.api.implicitgang import (
    IMPLICIT_GANG_ANNOTATION,
    KUBEFLOW_JOB_NAME,
    KUBEFLOW_KINDS,
    LWS_NAME_LABEL,
    NO_GANG,
    POD_GROUP_LABEL,
    TOP_OWNER_ANNOTATION,
    awaited_gang,
    awaited_top_owner,
)
from drasched.api.kinds import ResourceType
from drasched.api.meta import controller_uid, owner_reference
from drasched.control import SCHEDULER_CONFIG_MAP, ControllerContext
from drasched.controllers.workloads.common import (
    Obj,
    condition_true,
    is_deleting,
    is_terminal,
    md,
    sort_key,
    spec_of,
)
from drasched.controllers.workloads.jobset import starts_in_order
from drasched.controllers.workloads.leaderworkerset import group_key as lws_group_key
from drasched.store.informer import Informer

log = logging.getLogger(__name__)

CONFIG_MAP_KEY = SCHEDULER_CONFIG_MAP
"""The ConfigMap whose ``config.yaml`` configures an embedded run's scheduler (and these gangs)."""

QUEUE_LABEL = "drasched.io/queue"
DEFAULT_QUEUE = "default"
LABEL_VALUE_MAX = 63
OWNER_DEPTH_MAX = 8
"""ownerReferences followed from a pod to its top owner (KAI's grouper walks them all; a chain
of workloads is a handful deep)."""
GANG_MIN_MEMBER_ANNOTATION = "drasched.io/gang-min-member"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
LWS_GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
GROUPED_KINDS = ("Job", "JobSet", "LeaderWorkerSet", "PyTorchJob", "MPIJob", "Deployment", "ReplicaSet",
                 "StatefulSet")


class ConfigError(ValueError):
    """An ``implicitGangs`` setting that cannot be used."""


@dataclass(frozen=True)
class ImplicitGangs:
    """Which workload kinds get an implicit PodGroup (all by default)."""

    enabled: Mapping[str, bool] = field(default_factory=lambda: dict.fromkeys(GROUPED_KINDS, True))

    def on(self, kind: str) -> bool:
        return bool(self.enabled.get(kind, False))

    @classmethod
    def parse(cls, raw: Any, base: ImplicitGangs | None = None) -> ImplicitGangs:
        """From ``implicitGangs: {Job: false, ...}``; a kind it leaves out keeps its setting in
        ``base`` (on, without one)."""
        base = base or cls()
        if raw is None:
            return base
        if not isinstance(raw, Mapping):
            raise ConfigError("implicitGangs: must be a mapping of workload kind to true/false")
        enabled = dict(base.enabled)
        for kind, value in raw.items():
            if kind not in enabled:
                raise ConfigError(f"implicitGangs.{kind}: unknown kind (known: {', '.join(GROUPED_KINDS)})")
            if not isinstance(value, bool):
                raise ConfigError(f"implicitGangs.{kind}: must be true or false")
            enabled[kind] = value
        return cls(enabled)


@dataclass(frozen=True)
class GangSpec:
    """The PodGroup a workload implies."""

    workload: Obj
    min_member: int
    group_name: str | None = None
    """The PodGroup's name when it is not the workload's (a LeaderWorkerSet's ``<lws>-<group>``)."""
    topology_key: str | None = None
    """A topology key every pod of the gang must share (``requiredTopologyKey``)."""
    hashed_name: str | None = None
    """The name to use when the readable one is too long for a label (default: its SHA-1)."""
    top_owner: Obj | None = None
    """The workload at the top of the pods' owners when it is not ``workload`` (a staged JobSet of a
    per-Job gang): KAI's pod grouper reads its topology annotations there."""

    @property
    def name(self) -> str:
        """The PodGroup's name, which every pod carries as its ``drasched.io/pod-group`` label:
        a label value holds at most 63 characters, so a longer name is replaced by a SHA-1 hash,
        as LeaderWorkerSet labels its groups (``group-key``) whatever their names' length."""
        readable = self.group_name or str(md(self.workload).get("name"))
        if len(readable) <= LABEL_VALUE_MAX:
            return readable
        namespace = md(self.workload).get("namespace") or "default"
        return self.hashed_name or hashlib.sha1(f"{namespace}/{readable}".encode()).hexdigest()

    def labelled_priority_class(self) -> str | None:
        """KAI's ``priorityClassName`` label on the workload, when its pod template names no
        class in ``spec.priorityClassName`` (which wins)."""
        if spec_of(pod_template_of(self.workload)).get("priorityClassName"):
            return None
        return (md(self.workload).get("labels") or {}).get(KAI_PRIORITY_LABEL) or None

    def pod_group(self, priority_classes: Container[str] = ()) -> Obj:
        """The PodGroup; ``priority_classes``: the PriorityClasses that exist (a workload's KAI
        priority label naming another is left out, as KAI leaves it)."""
        template_spec = spec_of(pod_template_of(self.workload))
        spec: Obj = {"minMember": self.min_member}
        queue = labelled_queue(md(self.workload).get("labels") or {})
        if queue:
            spec["queue"] = queue
        labelled = self.labelled_priority_class()
        if template_spec.get("priorityClassName"):
            spec["priorityClassName"] = template_spec["priorityClassName"]
        elif labelled and labelled in priority_classes:
            spec["priorityClassName"] = labelled
        topology = self.topology_constraint()
        if topology:
            spec["topologyConstraint"] = topology
        return {"apiVersion": kinds.POD_GROUP.api_version, "kind": "PodGroup",
                "metadata": {"name": self.name, "namespace": md(self.workload).get("namespace") or "default",
                             "ownerReferences": [owner_reference(self.workload)]},
                "spec": spec}

    def topology_constraint(self) -> Obj:
        """KAI's topology annotations on the top owner (:func:`~drasched.api.foreign.kai_topology_constraint`),
        with the workload's own required key (LeaderWorkerSet's ``exclusive-topology``) over KAI's."""
        constraint = kai_topology_constraint(self.top_owner or self.workload)
        if self.topology_key:
            constraint["requiredTopologyKey"] = self.topology_key
        return constraint


def pod_template_of(workload: Obj) -> Obj:
    """The workload's pod template (a JobSet's: its first replicated Job's)."""
    if workload.get("kind") == "LeaderWorkerSet":
        lwt = spec_of(workload).get("leaderWorkerTemplate") or {}
        return lwt.get("workerTemplate") or lwt.get("leaderTemplate") or {}
    if workload.get("kind") == "JobSet":
        rjobs = spec_of(workload).get("replicatedJobs") or [{}]
        return spec_of((rjobs[0] or {}).get("template") or {}).get("template") or {}
    return spec_of(workload).get("template") or {}


def jobset_gang(jobset: Obj) -> int:
    """A JobSet's gang: every replicated Job's pods that run at once, all Jobs together."""
    return sum(int(r.get("replicas", 1)) * job_gang(r.get("template") or {})
               for r in spec_of(jobset).get("replicatedJobs") or [])


def staged(jobset: Obj) -> bool:
    """Whether a JobSet creates its Jobs in stages: a replicated Job ``dependsOn`` another, or
    ``startupPolicy.startupPolicyOrder: InOrder`` (the JobSet controller's startup order)."""
    if starts_in_order(jobset):
        return True
    return any(r.get("dependsOn") for r in spec_of(jobset).get("replicatedJobs") or [])


def job_gang(job: Obj) -> int:
    """A Job's gang: the pods it still runs at once, ``parallelism`` at most, never more than the
    completions still to come, at least 1 (a template without status: ``min(parallelism, completions)``).

    As Kueue sizes a Job (``pkg/controller/jobs/job/job_controller.go``: ``podsCount`` is
    ``min(parallelism, completions)``, and ``ReclaimablePods`` gives back ``parallelism`` -
    (``completions`` - ``status.succeeded``) once that is less, ``completions`` defaulting to
    ``parallelism``), and as upstream's Job controller creates pods (``manageJob``: ``wantActive`` =
    ``min(completions - succeeded, parallelism)``): a replacement for a failed pod after the others
    succeeded is a gang of the pods left, not of the first ``parallelism``. An Indexed Job counts its
    ``completedIndexes`` (upstream's ``succeeded`` of an Indexed Job is their number) and leaves out its
    ``failedIndexes`` (``backoffLimitPerIndex``: never run again)."""
    spec = spec_of(job)
    raw = job.get("status")
    status: Obj = raw if isinstance(raw, dict) else {}
    parallelism = int(spec.get("parallelism", 1))
    if spec.get("completionMode") == "Indexed":
        done = _index_count(status.get("completedIndexes")) + _index_count(status.get("failedIndexes"))
    else:
        done = int(status.get("succeeded") or 0)
    completions = spec.get("completions")
    remaining = (int(completions) if completions is not None else parallelism) - done
    return max(1, min(parallelism, remaining))


def _index_count(text: Any) -> int:
    """How many indexes upstream's ``completedIndexes`` / ``failedIndexes`` text holds (``1,3-5``: 4)."""
    count = 0
    for part in str(text or "").split(","):
        first, _, last = part.partition("-")
        try:
            count += int(last or first) - int(first) + 1 if first else 0
        except ValueError:
            continue
    return count


def annotated_gang(workload: Obj) -> int | None:
    """The ``drasched.io/gang-min-member`` annotation of a Deployment/ReplicaSet/StatefulSet."""
    text = (md(workload).get("annotations") or {}).get(GANG_MIN_MEMBER_ANNOTATION)
    try:
        value = int(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


_OWNER_KINDS: dict[str, ResourceType] = {
    "Job": kinds.JOB, "JobSet": kinds.JOB_SET, "LeaderWorkerSet": kinds.LEADER_WORKER_SET,
    "ReplicaSet": kinds.REPLICA_SET, "Deployment": kinds.DEPLOYMENT,
    "StatefulSet": kinds.STATEFUL_SET,
}
Verdict = GangSpec | str | None
"""A pod's gang; or why it has none (a decision); or None: not known yet (its workload is not cached)."""


class ImplicitGangController:
    """Creates implicit PodGroups and labels the pods of grouped workloads."""

    name = "implicit-gangs"
    component = "drasched-gangs"

    def __init__(self, settings: ImplicitGangs | None = None, *, base: ImplicitGangs | None = None,
                 schedules: Callable[[str | None], bool] | None = None, config_map: str = CONFIG_MAP_KEY) -> None:
        """``settings``: fixed settings; else the ``implicitGangs`` key of the scheduler's
        ConfigMap on top of ``base`` (``drasched serve``: its configuration file's).
        ``schedules``: whether a ``spec.schedulerName`` is drasched's (None: every pod is, as
        in an embedded run); other schedulers' pods are left alone."""
        self.fixed = settings
        self.schedules = schedules
        self.config_map = config_map
        """``namespace/name`` of the ConfigMap whose ``implicitGangs`` apply on top of ``base``."""
        self.base = base or ImplicitGangs()
        self.settings = settings or self.base
        self._store: object | None = None
        self._warned: set[str] = set()

    def _attach(self, ctx: ControllerContext) -> None:
        if self._store is ctx.store:
            return
        served = [(kind, rt) for kind, rt in _OWNER_KINDS.items() if _served(ctx, rt)]  # may raise: asked again
        self._store = ctx.store
        self.live = ctx.informers is not None
        """Caches fed by watches in the background (``drasched serve``), so possibly behind."""
        self.pods = Informer(ctx.store, kinds.POD)
        self.groups = Informer(ctx.store, kinds.POD_GROUP)
        self.classes = Informer(ctx.store, kinds.PRIORITY_CLASS)
        self.owners = {kind: Informer(ctx.store, rt) for kind, rt in served}
        self.config_maps = Informer(ctx.store, kinds.CONFIG_MAP) if self.fixed is None else None
        self.queues = Informer(ctx.store, kinds.QUEUE)
        # KAI's own Queue objects, where a server serves them (simulate reads them translated, as Queues)
        self.kai_queues = Informer(ctx.store, kinds.KAI_QUEUE) if self.live and _served(ctx, kinds.KAI_QUEUE) \
            else None
        self._replicas: dict[str, int | None] = {}
        """Kubeflow job uid -> the pods its replica specs declare (``drasched serve`` only)."""
        self._waiting: set[tuple[str, str]] = set()
        """(namespace, name) of the pods that want a group and have none: the only ones a pass looks at."""

    def reconcile(self, ctx: ControllerContext) -> bool:
        self._attach(ctx)
        pods_changed = self.pods.sync()
        watched = [self.groups, self.classes, self.queues, *self.owners.values()]
        watched += [inf for inf in (self.config_maps, self.kai_queues) if inf is not None]
        others = [inf.sync() for inf in watched]
        if not pods_changed and not any(others):
            return False
        self.ctx = ctx
        if self.fixed is None:
            self.settings = self._configured()
        keys = self.pods.take_changed()
        if keys is None:
            self._waiting = {sort_key(pod) for pod in self.pods.values() if self._wants_group(pod)}
            chosen: set[tuple[str, str]] = set(self._waiting)
        else:
            for key in keys:
                pod = self.pods.get(key[1], key[0])
                if pod is not None and self._wants_group(pod):
                    self._waiting.add(key)
                else:
                    self._waiting.discard(key)
            # a workload, a PodGroup or a setting changed: any waiting pod may be concerned; else only
            # the pods that changed (the others were decided already), so a busy cluster's rounds stay cheap
            chosen = set(self._waiting) if any(others) else keys & self._waiting
        progress = False
        for ns, name in sorted(chosen):
            pod = self.pods.get(name, ns)
            if pod is not None and self._wants_group(pod):
                progress |= self._group(pod)
        jobs = self.owners.get("Job")
        if jobs is not None:
            changed = jobs.take_changed()
            for ns, name in sorted(changed if changed is not None else {sort_key(j) for j in jobs.values()}):
                job = jobs.get(name, ns)
                if job is not None and not is_deleting(job) and not _ending(job) and self.settings.on("Job"):
                    progress |= self._resize(GangSpec(job, self._job_size(job)))
        return progress

    def _wants_group(self, pod: Obj) -> bool:
        """A pod of ours that has a controller (a bare pod never gets an implicit gang) and wants a group."""
        return (_wants_group(pod) and _controller_ref(pod) is not None
                and (self.schedules is None or self.schedules(spec_of(pod).get("schedulerName"))))

    def gang_of(self, pod: Obj) -> GangSpec | None:
        """The implicit gang a pod belongs to, from its controlling owner, or None."""
        verdict = self.verdict(pod)
        return verdict if isinstance(verdict, GangSpec) else None

    def verdict(self, pod: Obj) -> Verdict:
        """The pod's implicit gang, why it has none, or None while its workload is not cached."""
        ns = md(pod).get("namespace")
        ref = _controller_ref(pod)
        lws_name = (md(pod).get("labels") or {}).get(LWS_NAME_LABEL)
        if lws_name and ref is not None and ref.get("kind") == "StatefulSet" and "LeaderWorkerSet" in self.owners:
            # upstream LWS: the pod's controller is a StatefulSet of the LWS its label names
            lws = self.owners["LeaderWorkerSet"].get(lws_name, ns)
            if lws is None or is_deleting(lws):
                return self._missing("its LeaderWorkerSet")
            return self._lws_gang(lws, pod) if self.settings.on("LeaderWorkerSet") else _off("LeaderWorkerSet")
        if ref is None or ref.get("kind") not in self.owners:
            return self._kubeflow_gang(pod)
        owner = self._controller_of(pod, ns)
        if owner is None:
            return self._missing("its workload")
        kind = str(owner.get("kind"))
        if kind == "LeaderWorkerSet":
            return self._lws_gang(owner, pod) if self.settings.on(kind) else _off(kind)
        if kind == "Job":
            parent = _controller_ref(owner)
            if parent is not None and parent.get("kind") == "JobSet" and "JobSet" in self.owners:
                jobset = self._controller_of(owner, ns)
                if jobset is None:
                    return self._missing("its Job's JobSet")
                if not self.settings.on("JobSet"):
                    return _off("JobSet")
                if staged(jobset):
                    # Its Jobs are created in stages: a gang of all of them would wait for pods that the
                    # JobSet creates only after the first stage ran. Each Job is a gang of its own.
                    self._warn(jobset, "GangPerJob", "a JobSet whose Jobs start in stages (dependsOn, "
                               "startupPolicy InOrder) is gang-scheduled one Job at a time")
                    return (GangSpec(owner, self._job_size(owner), top_owner=jobset) if self.settings.on(kind)
                            else _off(kind))
                return GangSpec(jobset, self._jobset_size(jobset))
            return GangSpec(owner, self._job_size(owner)) if self.settings.on(kind) else _off(kind)
        if kind == "ReplicaSet":
            deployment = self._controller_of(owner, ns)
            if deployment is not None and deployment.get("kind") == "Deployment":
                size = annotated_gang(deployment)
                if not size:
                    return f"Deployment without {GANG_MIN_MEMBER_ANNOTATION}"
                return GangSpec(deployment, size) if self.settings.on("Deployment") else _off("Deployment")
        size = annotated_gang(owner)
        if not size:
            return f"{kind} without {GANG_MIN_MEMBER_ANNOTATION}"
        if not self.settings.on(kind):
            return _off(kind)
        if kind == "StatefulSet" and spec_of(owner).get("podManagementPolicy") != "Parallel":
            # OrderedReady makes ordinal i+1 only once i is Ready: a gang of more than one would never start.
            self._warn(owner, "GangNeedsParallel", f"{GANG_MIN_MEMBER_ANNOTATION} is ignored: a gang of "
                       "StatefulSet pods needs podManagementPolicy: Parallel (OrderedReady creates them one by one)")
            return "OrderedReady StatefulSet"
        return GangSpec(owner, size)

    def _job_size(self, job: Obj) -> int:
        """A Job's gang: drasched's (:func:`job_gang`), or in a KAI queue KAI's minMember (the Job's
        annotation, else that of the JobSet it belongs to, else 1)."""
        if not self._in_kai_queue(job):
            return job_gang(job)
        owner = self._controller_of(job, md(job).get("namespace"))
        if KAI_BATCH_MIN_MEMBER in (md(job).get("annotations") or {}) or (owner or {}).get("kind") != "JobSet":
            return self._kai_min_member(job)
        return self._kai_min_member(owner or job)

    def _jobset_size(self, jobset: Obj) -> int:
        """A JobSet's gang: drasched's (:func:`jobset_gang`), or in a KAI queue KAI's minMember."""
        return self._kai_min_member(jobset) if self._in_kai_queue(jobset) else jobset_gang(jobset)

    def _kai_min_member(self, workload: Obj) -> int:
        """KAI's minMember of a Job or JobSet (:func:`~drasched.api.foreign.kai_min_member`); a bad
        annotation is a Warning on the workload."""
        size, problem = kai_min_member(workload)
        if problem:
            self._warn(workload, "InvalidMinMember", problem)
        return size

    def _in_kai_queue(self, workload: Obj) -> bool:
        """Whether the workload's PodGroup lands in a KAI queue: the queue its labels name, else its
        pod template's (the pods'), else ``default``, is a KAI Queue."""
        queue = (labelled_queue(md(workload).get("labels") or {})
                 or labelled_queue(md(pod_template_of(workload)).get("labels") or {}) or DEFAULT_QUEUE)
        kai = self.kai_queues.values() if self.kai_queues is not None else ()
        return queue in kai_queue_names(self.queues.values(), kai)

    def _top_owner(self, pod: Obj) -> str:
        """``Kind.group`` of the pod's top owner, following controller ownerReferences through the
        owners this controller caches, as KAI's pod grouper walks them (pkg/podgrouper/topowner): a
        ReplicaSet's pod reaches its Deployment through the ReplicaSet's own reference. The last
        reference followed names it; a pod with none is its own (``Pod``)."""
        ns = md(pod).get("namespace")
        ref, obj = _controller_ref(pod), pod
        for _ in range(OWNER_DEPTH_MAX):
            owner = self._controller_of(obj, ns) if ref is not None else None
            parent = _controller_ref(owner) if owner is not None else None
            if owner is None or parent is None:
                break
            ref, obj = parent, owner
        if ref is None:
            return "Pod"
        return group_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))

    def _missing(self, what: str) -> Verdict:
        """A controller named in ownerReferences that is not cached: against a real API server its
        watch event may still be on the way (wait); where the caches are read synchronously
        (an embedded run) it does not exist (or is being deleted), and no gang comes."""
        return None if self.live else f"{what} does not exist"

    def _kubeflow_gang(self, pod: Obj) -> Verdict:
        """A Kubeflow PyTorchJob / MPIJob, known by its pods' labels and controller ownerReference:
        one gang of every pod of the job (master and workers, launcher and workers) seen so far."""
        job_name = (md(pod).get("labels") or {}).get(KUBEFLOW_JOB_NAME)
        ref = _controller_ref(pod)
        if not job_name or ref is None or ref.get("kind") not in KUBEFLOW_KINDS:
            return "no workload that implies a gang"
        if not self.settings.on(ref["kind"]):
            return _off(ref["kind"])
        ns = md(pod).get("namespace")
        members = [p for p in self.pods.values() if md(p).get("namespace") == ns and controller_uid(p) == ref.get(
            "uid") and not is_terminal(p)]
        declared = self._declared_replicas(ref, ns) if self.live else None
        labelled = labelled_queue(md(pod).get("labels") or {})
        queue = {QUEUE_LABEL: labelled} if labelled else {}
        priority = {k: v for k, v in spec_of(pod).items() if k == "priorityClassName"}
        job: Obj = {"apiVersion": ref.get("apiVersion"), "kind": ref["kind"],
                    "metadata": {"name": ref.get("name"), "namespace": ns, "uid": ref.get("uid"), "labels": queue},
                    "spec": {"template": {"spec": priority}}}
        return GangSpec(job, declared or len(members))

    def _declared_replicas(self, ref: Obj, ns: str | None) -> int | None:
        """In a cluster the training operator creates the job's pods one by one, so the pods seen
        are not yet the gang: the job's replica specs (``pytorchReplicaSpecs``,
        ``mpiReplicaSpecs``: every replica type, ``replicas`` 1 by default) say how many. Asked once
        per job; None when the job cannot be read (then the pods seen count)."""
        uid = str(ref.get("uid") or "")
        if uid in self._replicas:
            return self._replicas[uid]
        group, _, version = str(ref.get("apiVersion") or "").rpartition("/")
        kind = str(ref.get("kind"))
        rt = ResourceType(group, version, kind, kind.lower() + "s", True)
        total: int | None = None
        try:
            job = self.ctx.store.get(rt, str(ref.get("name") or ""), ns)
        except ApiError as exc:
            log.info("implicit gangs: %s %s/%s not read (%s); its pods seen so far make the gang", kind, ns,
                     ref.get("name"), exc.message)
        else:
            specs = [v for k, v in spec_of(job).items() if k.endswith("ReplicaSpecs") and isinstance(v, Mapping)]
            counts = [r.get("replicas") for spec in specs for r in spec.values() if isinstance(r, Mapping)]
            total = sum(1 if n is None else n for n in counts if n is None or isinstance(n, int)) or None
        self._replicas[uid] = total
        return total

    def _lws_gang(self, lws: Obj, pod: Obj) -> Verdict:
        """One gang per leader and its workers: ``<lws>-<group>``, minMember = the group size; a
        name too long for a label becomes the group's ``group-key`` (LeaderWorkerSet's own hash)."""
        labels = md(pod).get("labels") or {}
        group = labels.get(LWS_GROUP_INDEX)
        if group is None:
            return f"no {LWS_GROUP_INDEX} label"
        spec = spec_of(lws)
        if spec.get("startupPolicy") == "LeaderReady":
            self._warn(lws, "GangNeedsLeaderCreated", "no implicit gang: startupPolicy LeaderReady makes the "
                       "workers only once the leader runs, so a gang of the group would never start")
            return "startupPolicy LeaderReady"
        size = int((spec.get("leaderWorkerTemplate") or {}).get("size", 1))
        topology = (md(lws).get("annotations") or {}).get(LWS_EXCLUSIVE_TOPOLOGY)
        name, ns = str(md(lws).get("name")), str(md(lws).get("namespace") or "default")
        hashed = labels.get(LWS_GROUP_KEY) or lws_group_key(ns, name, int(group))
        return GangSpec(lws, size, group_name=f"{name}-{group}", topology_key=topology, hashed_name=hashed)

    def _controller_of(self, obj: Obj, ns: str | None) -> Obj | None:
        for ref in md(obj).get("ownerReferences") or []:
            if not ref.get("controller") or ref.get("kind") not in self.owners:
                continue
            owner = self.owners[ref["kind"]].get(ref.get("name", ""), ns)
            if owner is not None and md(owner).get("uid") == ref.get("uid") and not is_deleting(owner):
                return owner
        return None

    def _group(self, pod: Obj) -> bool:
        verdict = self.verdict(pod)
        if verdict is None:
            return False  # looked at again when its workload arrives
        if isinstance(verdict, str):
            return self._release(pod)
        gang = verdict
        ns = md(pod).get("namespace") or "default"
        group = self.groups.get(gang.name, ns)
        wrote = False
        if group is None:
            classes = {str(md(pc).get("name")) for pc in self.classes.values()}
            labelled = gang.labelled_priority_class()
            if labelled and labelled not in classes:
                self._warn(gang.workload, "PriorityClassNotFound",
                           f"label {KAI_PRIORITY_LABEL}={labelled} ignored: PriorityClass {labelled} does not "
                           "exist; the pods keep their own priority (in a KAI queue, KAI's default class for the "
                           "workload's kind)")
            try:
                group = self.ctx.store.create(gang.pod_group(classes))
            except AlreadyExists:
                return True  # made meanwhile: look again next round
            except ApiError as exc:
                self._warn(gang.workload, "FailedCreatePodGroup", f"implicit PodGroup {gang.name}: {exc.message}")
                return False
            self.groups.put(group)
            self.ctx.decide(self.name, "create", group, f"implicit gang of {gang.workload.get('kind')} "
                            f"{ns}/{gang.name}: minMember {gang.min_member}")
            wrote = True
        if controller_uid(group) != md(gang.workload).get("uid"):
            self._warn(gang.workload, "PodGroupExists",
                       f"PodGroup {ns}/{gang.name} exists and is not this workload's; its pods are scheduled "
                       "without an implicit gang")
            return self._release(pod) or wrote
        if gang.workload.get("kind") == "Job" and not _ending(gang.workload):
            wrote |= self._resize(gang)
        return self._patch_pod(pod, {"labels": {POD_GROUP_LABEL: gang.name}}) or wrote

    def _resize(self, gang: GangSpec) -> bool:
        """Keep a Job's own implicit PodGroup's minMember at the pods the Job still runs at once
        (:func:`job_gang`, from the Job's status); a PodGroup the Job does not control is left alone."""
        ns = md(gang.workload).get("namespace") or "default"
        group = self.groups.get(gang.name, ns)
        if group is None or controller_uid(group) != md(gang.workload).get("uid") or is_deleting(group):
            return False
        old = spec_of(group).get("minMember")
        if old == gang.min_member:
            return False
        try:
            updated = self.ctx.store.patch(kinds.POD_GROUP, gang.name, ns, {
                "metadata": {"resourceVersion": md(group).get("resourceVersion")},
                "spec": {"minMember": gang.min_member}})
        except (Conflict, NotFound):
            return True  # changed or gone meanwhile: looked at again next round
        except ApiError as exc:
            self._warn(gang.workload, "FailedUpdatePodGroup", f"implicit PodGroup {gang.name}: {exc.message}")
            return False
        self.groups.put(updated)
        self.ctx.decide(self.name, "update", updated, f"implicit gang of Job {ns}/{gang.name}: minMember {old} -> "
                        f"{gang.min_member} (the pods it still runs at once)")
        return True

    def _release(self, pod: Obj) -> bool:
        """Mark a pod the scheduler would hold for a gang it will not get (``implicit-gang: none``),
        or for its top owner's kind (``drasched.io/top-owner``), with what it waits for."""
        annotations: dict[str, str] = {}
        if awaited_gang(pod) is not None:
            annotations[IMPLICIT_GANG_ANNOTATION] = NO_GANG
        if awaited_top_owner(pod) is not None:
            annotations[TOP_OWNER_ANNOTATION] = self._top_owner(pod)
        if not annotations:
            return False
        return self._patch_pod(pod, {"annotations": annotations})

    def _patch_pod(self, pod: Obj, metadata: Obj) -> bool:
        try:
            updated = self.ctx.store.patch(kinds.POD, md(pod).get("name", ""), md(pod).get("namespace"), {
                "metadata": {"resourceVersion": md(pod).get("resourceVersion"), **metadata}})
        except (Conflict, NotFound):
            return True
        self.pods.put(updated)
        return True

    def _configured(self) -> ImplicitGangs:
        """``implicitGangs`` from the ConfigMap that configures an embedded run's scheduler."""
        namespace, _, name = self.config_map.partition("/")
        cm = self.config_maps.get(name, namespace) if self.config_maps is not None else None
        text = ((cm or {}).get("data") or {}).get("config.yaml")
        if cm is None or not isinstance(text, str):
            return self.base
        try:
            raw = yaml.safe_load(text)
            return ImplicitGangs.parse(raw.get("implicitGangs") if isinstance(raw, dict) else None, self.base)
        except (yaml.YAMLError, ConfigError) as exc:
            self._warn(cm, "InvalidConfiguration", f"{exc}; implicit gangs keep their last good settings")
            return self.settings  # not the base: one bad edit must not undo the good ones before it

    def _warn(self, workload: Obj, reason: str, message: str) -> None:
        key = f"{md(workload).get('uid')}/{reason}"
        if key in self._warned:
            return
        self._warned.add(key)
        self.ctx.event(workload, "Warning", reason, message, self.component)
        self.ctx.decide(self.name, reason, workload, message)


def _served(ctx: ControllerContext, rt: ResourceType) -> bool:
    """Whether ``rt`` can be watched: a workload CRD (JobSet, LeaderWorkerSet) may not be
    installed (404), or the identity may not list it (403); such a kind is left out. Any other
    error is raised, and the controller asks again next round."""
    try:
        ctx.store.list(rt)
    except (NotFound, Forbidden) as exc:
        log.info("implicit gangs: %s is not watched (%s)", rt.kind, exc.message)
        return False
    return True


def settings_from_file(path: str | None) -> ImplicitGangs:
    """The ``implicitGangs`` key of a scheduler configuration file (every kind on without one)."""
    if path is None:
        return ImplicitGangs()
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f)
    return ImplicitGangs.parse(raw.get("implicitGangs") if isinstance(raw, dict) else None)


def _controller_ref(obj: Obj) -> Obj | None:
    return next((r for r in md(obj).get("ownerReferences") or [] if r.get("controller")), None)


def _ending(job: Obj) -> bool:
    """A Job whose end is decided (``SuccessCriteriaMet``/``FailureTarget``, then ``Complete``/``Failed``):
    it runs no new pods, and its PodGroup is left as it was."""
    return any(condition_true(job, c) for c in ("SuccessCriteriaMet", "FailureTarget", "Complete", "Failed"))


def _off(kind: str) -> str:
    return f"implicitGangs.{kind} is off"


def _wants_group(pod: Obj) -> bool:
    """A pending, unbound pod that names no PodGroup (nor an upstream scheduling group) itself,
    and that this controller has not already left without one."""
    if is_terminal(pod) or is_deleting(pod) or spec_of(pod).get("nodeName"):
        return False
    annotations = md(pod).get("annotations") or {}
    if names_pod_group(md(pod)) or IMPLICIT_GANG_ANNOTATION in annotations:  # the label or an alias (KAI's, ...)
        return False
    spec = spec_of(pod)
    return not (spec.get("workloadRef") or spec.get("schedulingGroup"))
