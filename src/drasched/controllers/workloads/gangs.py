"""Implicit gangs: a PodGroup for each workload whose pods must start together.

Controllers create a workload's pods one by one; scheduled one by one they could be
placed partly, which is what gangs prevent. So for every pending pod that names no
PodGroup itself, this controller finds the workload that owns it, creates a
``scheduling.drasched.io`` PodGroup for it (named after the workload, owner-referenced to
it so it is garbage-collected with it) and labels the pod ``drasched.io/pod-group`` before
the scheduler sees it (it runs earlier in every round).

* **Job** (``batch/v1``): minMember = ``parallelism`` (at most ``completions``).
* **JobSet** (``jobset.x-k8s.io``): one PodGroup for all its Jobs' pods, minMember = the sum
  over replicated Jobs of ``replicas`` x the Job's gang (every pod that must start together).
* **LeaderWorkerSet**: one PodGroup per group (leader and workers), ``<lws>-<group>``, minMember =
  ``leaderWorkerTemplate.size``; with the ``leaderworkerset.sigs.k8s.io/exclusive-topology: <key>``
  annotation the group must land in one domain of that key (``requiredTopologyKey``).
* **Kubeflow PyTorchJob / MPIJob** (pods labelled ``training.kubeflow.org/job-name`` and
  controlled by one): one PodGroup named after the job, minMember = its pods present when the
  PodGroup is made (an embedded run has them all from the start), queue and priority class from
  the pod.
* **Deployment** (through its ReplicaSet), **ReplicaSet**, **StatefulSet**: no gang unless the
  workload is annotated ``drasched.io/gang-min-member: "<n>"`` (then minMember n). A StatefulSet
  needs ``podManagementPolicy: Parallel`` for it (OrderedReady makes one pod at a time, so a
  gang would wait forever); on an OrderedReady one the annotation is ignored with a Warning.

The queue is the workload's ``drasched.io/queue`` label, the priority class its pod
template's ``priorityClassName``. A pod that already has the ``drasched.io/pod-group``
label is left as it is: an explicit PodGroup always wins. A PodGroup of the workload's
name that belongs to something else is not touched (a Warning event on the workload says
so) and the pods are scheduled one by one. Grouping is switched off per kind with
:class:`ImplicitGangs`: ``implicitGangs: {Job: false}`` in the scheduler configuration (in an
embedded run, the ``config.yaml`` of the ConfigMap ``kube-system/drasched-scheduler``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, Conflict, NotFound
from drasched.api.kinds import ResourceType
from drasched.api.meta import controller_uid, owner_reference
from drasched.control import ControllerContext
from drasched.controllers.workloads.common import Obj, is_deleting, is_terminal, md, sort_key, spec_of
from drasched.store.informer import Informer

CONFIG_MAP_KEY = "kube-system/drasched-scheduler"
"""The ConfigMap whose ``config.yaml`` configures an embedded run's scheduler (and these gangs)."""

POD_GROUP_LABEL = "drasched.io/pod-group"
QUEUE_LABEL = "drasched.io/queue"
GANG_MIN_MEMBER_ANNOTATION = "drasched.io/gang-min-member"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
GROUPED_KINDS = ("Job", "JobSet", "LeaderWorkerSet", "PyTorchJob", "MPIJob", "Deployment", "ReplicaSet",
                 "StatefulSet")
KUBEFLOW_JOB_NAME = "training.kubeflow.org/job-name"
KUBEFLOW_KINDS = ("PyTorchJob", "MPIJob")


class ConfigError(ValueError):
    """An ``implicitGangs`` setting that cannot be used."""


@dataclass(frozen=True)
class ImplicitGangs:
    """Which workload kinds get an implicit PodGroup (all by default)."""

    enabled: Mapping[str, bool] = field(default_factory=lambda: dict.fromkeys(GROUPED_KINDS, True))

    def on(self, kind: str) -> bool:
        return bool(self.enabled.get(kind, False))

    @classmethod
    def parse(cls, raw: Any) -> ImplicitGangs:
        """From ``implicitGangs: {Job: false, ...}`` (a missing kind stays on)."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise ConfigError("implicitGangs: must be a mapping of workload kind to true/false")
        enabled = dict.fromkeys(GROUPED_KINDS, True)
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

    @property
    def name(self) -> str:
        return self.group_name or str(md(self.workload).get("name"))

    def pod_group(self) -> Obj:
        template_spec = spec_of(pod_template_of(self.workload))
        spec: Obj = {"minMember": self.min_member}
        queue = (md(self.workload).get("labels") or {}).get(QUEUE_LABEL)
        if queue:
            spec["queue"] = queue
        if template_spec.get("priorityClassName"):
            spec["priorityClassName"] = template_spec["priorityClassName"]
        if self.topology_key:
            spec["topologyConstraint"] = {"requiredTopologyKey": self.topology_key}
        return {"apiVersion": kinds.POD_GROUP.api_version, "kind": "PodGroup",
                "metadata": {"name": self.name, "namespace": md(self.workload).get("namespace") or "default",
                             "ownerReferences": [owner_reference(self.workload)]},
                "spec": spec}


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


def job_gang(job: Obj) -> int:
    """A Job's gang: ``parallelism`` pods run together (never more than ``completions``)."""
    spec = spec_of(job)
    size = int(spec.get("parallelism", 1))
    if spec.get("completions") is not None:
        size = min(size, int(spec["completions"]))
    return size


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


class ImplicitGangController:
    """Creates implicit PodGroups and labels the pods of grouped workloads."""

    name = "implicit-gangs"
    component = "drasched-gangs"

    def __init__(self, settings: ImplicitGangs | None = None) -> None:
        self.fixed = settings
        """Settings given by the caller; None: the ``implicitGangs`` key of the scheduler's ConfigMap."""
        self.settings = settings or ImplicitGangs()
        self._store: object | None = None
        self._warned: set[str] = set()

    def _attach(self, ctx: ControllerContext) -> None:
        if self._store is ctx.store:
            return
        self._store = ctx.store
        self.pods = Informer(ctx.store, kinds.POD)
        self.groups = Informer(ctx.store, kinds.POD_GROUP)
        self.owners = {kind: Informer(ctx.store, rt) for kind, rt in _OWNER_KINDS.items()}
        self.config_maps = Informer(ctx.store, kinds.CONFIG_MAP)

    def reconcile(self, ctx: ControllerContext) -> bool:
        self._attach(ctx)
        pods_changed = self.pods.sync()
        others = [inf.sync() for inf in (self.groups, self.config_maps, *self.owners.values())]
        if not pods_changed and not any(others):
            return False
        self.ctx = ctx
        if self.fixed is None:
            self.settings = self._configured()
        keys = self.pods.take_changed()
        if keys is None or any(others):  # a workload or a setting changed: every pod may be concerned
            candidates = list(self.pods.values())
        else:  # only pods changed: only those can need a group (a busy cluster's rounds stay cheap)
            candidates = [p for ns, name in keys if (p := self.pods.get(name, ns))]
        progress = False
        for pod in sorted(candidates, key=sort_key):
            if _wants_group(pod):
                progress |= self._group(pod)
        return progress

    def gang_of(self, pod: Obj) -> GangSpec | None:
        """The implicit gang a pod belongs to, from its controlling owner, or None."""
        ns = md(pod).get("namespace")
        owner = self._controller_of(pod, ns)
        if owner is None:
            return self._kubeflow_gang(pod)
        kind = owner.get("kind")
        if kind == "LeaderWorkerSet":
            return self._lws_gang(owner, pod) if self.settings.on("LeaderWorkerSet") else None
        if kind == "Job":
            jobset = self._controller_of(owner, ns)
            if jobset is not None and jobset.get("kind") == "JobSet":
                return GangSpec(jobset, jobset_gang(jobset)) if self.settings.on("JobSet") else None
            return GangSpec(owner, job_gang(owner)) if self.settings.on("Job") else None
        if kind == "ReplicaSet":
            deployment = self._controller_of(owner, ns)
            if deployment is not None and deployment.get("kind") == "Deployment":
                size = annotated_gang(deployment)
                return GangSpec(deployment, size) if size and self.settings.on("Deployment") else None
        size = annotated_gang(owner)
        if not size or not self.settings.on(str(kind)):
            return None
        if kind == "StatefulSet" and spec_of(owner).get("podManagementPolicy") != "Parallel":
            # OrderedReady makes ordinal i+1 only once i is Ready: a gang of more than one would never start.
            self._warn(owner, "GangNeedsParallel", f"{GANG_MIN_MEMBER_ANNOTATION} is ignored: a gang of "
                       "StatefulSet pods needs podManagementPolicy: Parallel (OrderedReady creates them one by one)")
            return None
        return GangSpec(owner, size)

    def _kubeflow_gang(self, pod: Obj) -> GangSpec | None:
        """A Kubeflow PyTorchJob / MPIJob, known by its pods' labels and controller ownerReference:
        one gang of every pod of the job (master and workers, launcher and workers) seen so far."""
        job_name = (md(pod).get("labels") or {}).get(KUBEFLOW_JOB_NAME)
        ref = next((r for r in md(pod).get("ownerReferences") or [] if r.get("controller")), None)
        if not job_name or ref is None or ref.get("kind") not in KUBEFLOW_KINDS or not self.settings.on(ref["kind"]):
            return None
        ns = md(pod).get("namespace")
        members = [p for p in self.pods.values() if md(p).get("namespace") == ns and controller_uid(p) == ref.get(
            "uid") and not is_terminal(p)]
        queue = {k: v for k, v in (md(pod).get("labels") or {}).items() if k == QUEUE_LABEL}
        priority = {k: v for k, v in spec_of(pod).items() if k == "priorityClassName"}
        job: Obj = {"apiVersion": ref.get("apiVersion"), "kind": ref["kind"],
                    "metadata": {"name": ref.get("name"), "namespace": ns, "uid": ref.get("uid"), "labels": queue},
                    "spec": {"template": {"spec": priority}}}
        return GangSpec(job, len(members))

    def _lws_gang(self, lws: Obj, pod: Obj) -> GangSpec | None:
        """One gang per leader and its workers: ``<lws>-<group>``, minMember = the group size."""
        group = (md(pod).get("labels") or {}).get(LWS_GROUP_INDEX)
        if group is None:
            return None
        spec = spec_of(lws)
        if spec.get("startupPolicy") == "LeaderReady":
            self._warn(lws, "GangNeedsLeaderCreated", "no implicit gang: startupPolicy LeaderReady makes the "
                       "workers only once the leader runs, so a gang of the group would never start")
            return None
        size = int((spec.get("leaderWorkerTemplate") or {}).get("size", 1))
        topology = (md(lws).get("annotations") or {}).get(LWS_EXCLUSIVE_TOPOLOGY)
        return GangSpec(lws, size, group_name=f"{md(lws).get('name')}-{group}", topology_key=topology)

    def _controller_of(self, obj: Obj, ns: str | None) -> Obj | None:
        for ref in md(obj).get("ownerReferences") or []:
            if not ref.get("controller") or ref.get("kind") not in self.owners:
                continue
            owner = self.owners[ref["kind"]].get(ref.get("name", ""), ns)
            if owner is not None and md(owner).get("uid") == ref.get("uid") and not is_deleting(owner):
                return owner
        return None

    def _group(self, pod: Obj) -> bool:
        gang = self.gang_of(pod)
        if gang is None:
            return False
        ns = md(pod).get("namespace") or "default"
        group = self.groups.get(gang.name, ns)
        wrote = False
        if group is None:
            try:
                group = self.ctx.store.create(gang.pod_group())
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
            return wrote
        try:
            updated = self.ctx.store.patch(kinds.POD, md(pod).get("name", ""), ns, {"metadata": {
                "resourceVersion": md(pod).get("resourceVersion"), "labels": {POD_GROUP_LABEL: gang.name}}})
        except (Conflict, NotFound):
            return True
        self.pods.put(updated)
        return True

    def _configured(self) -> ImplicitGangs:
        """``implicitGangs`` from the ConfigMap that configures an embedded run's scheduler."""
        namespace, name = CONFIG_MAP_KEY.split("/")
        cm = self.config_maps.get(name, namespace)
        text = ((cm or {}).get("data") or {}).get("config.yaml")
        if cm is None or not isinstance(text, str):
            return ImplicitGangs()
        try:
            raw = yaml.safe_load(text)
            return ImplicitGangs.parse(raw.get("implicitGangs") if isinstance(raw, dict) else None)
        except (yaml.YAMLError, ConfigError) as exc:
            self._warn(cm, "InvalidConfiguration", f"{exc}; implicit gangs stay on for every kind")
            return ImplicitGangs()

    def _warn(self, workload: Obj, reason: str, message: str) -> None:
        key = f"{md(workload).get('uid')}/{reason}"
        if key in self._warned:
            return
        self._warned.add(key)
        self.ctx.event(workload, "Warning", reason, message, self.component)
        self.ctx.decide(self.name, reason, workload, message)


def _wants_group(pod: Obj) -> bool:
    """A pending, unbound pod that names no PodGroup (nor an upstream scheduling group) itself."""
    if is_terminal(pod) or is_deleting(pod) or spec_of(pod).get("nodeName"):
        return False
    if POD_GROUP_LABEL in (md(pod).get("labels") or {}):
        return False
    spec = spec_of(pod)
    return not (spec.get("workloadRef") or spec.get("schedulingGroup"))
