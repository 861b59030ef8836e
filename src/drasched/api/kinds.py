"""The resource types drasched reads and writes: group/version/kind, plural, scope."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drasched.api.errors import BadRequest


@dataclass(frozen=True)
class ResourceType:
    """One REST resource, as the API server serves it.

    Every store lookup hashes one (its key holds the type), so the hash is computed once,
    at construction, from the same fields equality compares: equal types hash equal, as a
    dataclass's own hash guarantees. A pickled type is rebuilt by its constructor
    (``__reduce__``), so the hash is never carried into a process that hashes strings
    differently.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    has_status: bool = True
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(self._fields()))

    def _fields(self) -> tuple[str, str, str, str, bool, bool]:
        return (self.group, self.version, self.kind, self.plural, self.namespaced, self.has_status)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ResourceType)
        return self._hash == other._hash and self._fields() == other._fields()

    def __reduce__(self) -> tuple[Any, tuple[str, str, str, str, bool, bool]]:
        return (ResourceType, self._fields())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of a collection or an object."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        return base


RESOURCE = "resource.k8s.io"
DRASCHED = "scheduling.drasched.io"

POD = ResourceType("", "v1", "Pod", "pods", True)
NODE = ResourceType("", "v1", "Node", "nodes", False)
NAMESPACE = ResourceType("", "v1", "Namespace", "namespaces", False)
EVENT = ResourceType("", "v1", "Event", "events", True, has_status=False)
SERVICE_ACCOUNT = ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, has_status=False)
CONFIG_MAP = ResourceType("", "v1", "ConfigMap", "configmaps", True, has_status=False)
DEVICE_CLASS = ResourceType(RESOURCE, "v1", "DeviceClass", "deviceclasses", False, has_status=False)
RESOURCE_CLAIM = ResourceType(RESOURCE, "v1", "ResourceClaim", "resourceclaims", True)
RESOURCE_CLAIM_TEMPLATE = ResourceType(
    RESOURCE, "v1", "ResourceClaimTemplate", "resourceclaimtemplates", True, has_status=False
)
RESOURCE_SLICE = ResourceType(RESOURCE, "v1", "ResourceSlice", "resourceslices", False, has_status=False)
DEVICE_TAINT_RULE = ResourceType(RESOURCE, "v1", "DeviceTaintRule", "devicetaintrules", False)
DEVICE_TAINT_RULE_V1BETA2 = ResourceType(RESOURCE, "v1beta2", "DeviceTaintRule", "devicetaintrules", False)
"""What a 1.36 API server serves (feature gate DRADeviceTaintRules); v1's shape. ``serve``
reads and writes rules in it there; manifests are converted to v1 on input."""
PRIORITY_CLASS = ResourceType(
    "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, has_status=False
)
RUNTIME_CLASS = ResourceType("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False, has_status=False)
"""Applied to new pods by the RuntimeClass admission plugin (overhead, node selector, tolerations):
:mod:`drasched.store.pod_admission`."""
LEASE = ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True, has_status=False)
POD_DISRUPTION_BUDGET = ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True)
QUEUE = ResourceType(DRASCHED, "v1alpha1", "Queue", "queues", False)
POD_GROUP = ResourceType(DRASCHED, "v1alpha1", "PodGroup", "podgroups", True)
BIND_REQUEST = ResourceType(DRASCHED, "v1alpha1", "BindRequest", "bindrequests", True)
# Other schedulers' objects ``drasched serve`` reads from a server that serves them
# (drasched.scheduler.foreign_intake); not in ALL: drasched never creates them. The embedded
# store serves the upstream gang API's (UPSTREAM_GANG below) for ``simulate``.
UPSTREAM_POD_GROUP = ResourceType("scheduling.k8s.io", "v1beta1", "PodGroup", "podgroups", True)
UPSTREAM_WORKLOAD = ResourceType("scheduling.k8s.io", "v1beta1", "Workload", "workloads", True)
UPSTREAM_POD_GROUP_V1ALPHA2 = ResourceType("scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups", True)
UPSTREAM_WORKLOAD_V1ALPHA2 = ResourceType("scheduling.k8s.io", "v1alpha2", "Workload", "workloads", True)
"""The gang API as Kubernetes 1.36 serves it (1.37: v1beta1)."""
KAI_QUEUE = ResourceType("scheduling.run.ai", "v2", "Queue", "queues", False)
KAI_POD_GROUP = ResourceType("scheduling.run.ai", "v2alpha2", "PodGroup", "podgroups", True)
COSCHEDULING_POD_GROUP = ResourceType("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups", True)
"""kubernetes-sigs/scheduler-plugins' PodGroup (its coscheduling plugin; apis/scheduling/v1alpha1)."""
FOREIGN: tuple[ResourceType, ...] = (UPSTREAM_WORKLOAD, UPSTREAM_POD_GROUP, UPSTREAM_WORKLOAD_V1ALPHA2,
                                     UPSTREAM_POD_GROUP_V1ALPHA2, KAI_QUEUE, KAI_POD_GROUP, COSCHEDULING_POD_GROUP)
UPSTREAM_GANG: tuple[ResourceType, ...] = (UPSTREAM_WORKLOAD, UPSTREAM_WORKLOAD_V1ALPHA2, UPSTREAM_POD_GROUP,
                                           UPSTREAM_POD_GROUP_V1ALPHA2)
"""The upstream gang API (KEP-4671, KEP-5729) as the embedded store serves it (``drasched simulate``),
in restore order: kept as written, in either version, as a 1.37 (v1beta1) or 1.36 (v1alpha2) server
keeps it, and read translated by the scheduler as ``serve`` reads a server's (docs/design.md, "Other
schedulers' objects"). KAI's and scheduler-plugins' kinds are still translated when manifests are read."""
# Workloads: the embedded control plane runs their controllers (drasched.controllers.workloads).
JOB = ResourceType("batch", "v1", "Job", "jobs", True)
DEPLOYMENT = ResourceType("apps", "v1", "Deployment", "deployments", True)
REPLICA_SET = ResourceType("apps", "v1", "ReplicaSet", "replicasets", True)
STATEFUL_SET = ResourceType("apps", "v1", "StatefulSet", "statefulsets", True)
DAEMON_SET = ResourceType("apps", "v1", "DaemonSet", "daemonsets", True)
JOB_SET = ResourceType("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", True)
LEADER_WORKER_SET = ResourceType("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets", True)

ALL: tuple[ResourceType, ...] = (
    NAMESPACE,
    SERVICE_ACCOUNT,
    CONFIG_MAP,
    PRIORITY_CLASS,
    RUNTIME_CLASS,
    NODE,
    DEVICE_CLASS,
    RESOURCE_SLICE,
    DEVICE_TAINT_RULE,
    QUEUE,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_CLAIM,
    POD_GROUP,
    LEADER_WORKER_SET,
    JOB_SET,
    DEPLOYMENT,
    REPLICA_SET,
    STATEFUL_SET,
    DAEMON_SET,
    JOB,
    POD,
    BIND_REQUEST,
    POD_DISRUPTION_BUDGET,
    LEASE,
    EVENT,
)
"""Every kind, in the order a restore should create them (dependencies first)."""

JOB_SET_ALSO_SERVED = ("jobset.x-k8s.io/v1",)
"""Other versions a JobSet is accepted in: the JobSet CRD serves ``v1`` (sigs.k8s.io/jobset
``api/jobset/v1/jobset_types.go``, its storage version) beside ``v1alpha2``, the same shape for what
drasched reads except ``spec.startupPolicy``, which v1 no longer has (``dependsOn`` replaces it). Such a
JobSet is kept under :data:`JOB_SET`, as the server keeps every version in one storage version, and keeps
the apiVersion it was written in."""

_BY_KIND: dict[tuple[str, str], ResourceType] = {(r.api_version, r.kind): r
                                                 for r in (*ALL, DEVICE_TAINT_RULE_V1BETA2, *UPSTREAM_GANG)}
_BY_KIND.update({(v, JOB_SET.kind): JOB_SET for v in JOB_SET_ALSO_SERVED})
_BY_KIND_ONLY: dict[str, ResourceType] = {r.kind: r for r in ALL}


def for_object(obj: dict) -> ResourceType:
    """The resource type of a wire-form object, from its apiVersion and kind."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise BadRequest("Object 'Kind' is missing")
    if not isinstance(api_version, str) or not api_version:
        raise BadRequest(f"Object 'apiVersion' is missing for kind {kind!r}")
    rt = _BY_KIND.get((api_version, kind))
    if rt is None:
        known = _BY_KIND_ONLY.get(kind)
        group = api_version.rpartition("/")[0]
        other = UNMODELED.get((group, kind))
        served = ", ".join(served_versions(kind))
        hint = (f" (drasched serves {kind} as {served})" if known
                else f" (Kubernetes serves {kind} as {other.api_version}, which drasched leaves out)" if other
                else f": {kubeflow_hint(kind)}" if group in KUBEFLOW_GROUPS
                else f": {NVIDIA_COMPUTE_DOMAIN_HINT}" if (group, kind) == NVIDIA_COMPUTE_DOMAIN
                else "")
        raise BadRequest(f'no kind "{kind}" is registered for version "{api_version}"{hint}')
    return rt


def served_versions(kind: str) -> list[str]:
    """The apiVersions drasched serves ``kind`` in, in registry order."""
    return [v for (v, k) in _BY_KIND if k == kind]


KUBEFLOW_GROUPS = ("kubeflow.org", "trainer.kubeflow.org")
"""Kubeflow's training APIs: the training operator's ``kubeflow.org/v1`` PyTorchJob, TFJob, MPIJob,
XGBoostJob, PaddleJob and JAXJob (the MPI operator's ``kubeflow.org/v2beta1`` MPIJob), and Kubeflow
Trainer's ``trainer.kubeflow.org/v1alpha1`` TrainJob and its (Cluster)TrainingRuntimes."""


def kubeflow_hint(kind: str) -> str:
    """Why a Kubeflow training object is refused, and what to give instead."""
    if kind in ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"):
        return (f"drasched does not run Kubeflow Trainer embedded, so a {kind} makes no pods here. In a cluster "
                "Trainer turns a TrainJob into a JobSet whose pods drasched schedules (one gang per JobSet); to "
                "simulate, give that JobSet (jobset.x-k8s.io/v1alpha2 or v1), or its Jobs or pods")
    return (f"drasched does not run the Kubeflow training operator embedded, so a {kind} makes no pods here. In a "
            f"cluster the operator creates the {kind}'s pods and drasched schedules them (a PyTorchJob's or "
            "MPIJob's pods as one gang); to simulate, give those pods as the operator makes them (label "
            f"training.kubeflow.org/job-name and a controller ownerReference to the {kind}), or the same work "
            "as a batch/v1 Job or a JobSet")


NVIDIA_COMPUTE_DOMAIN = ("resource.nvidia.com", "ComputeDomain")
NVIDIA_COMPUTE_DOMAIN_HINT = (
    "a ComputeDomain is NVIDIA's DRA driver's multi-node NVLink (IMEX) domain, which drasched does not run "
    "embedded: its controller would create the workload's ResourceClaimTemplate (spec.channel."
    "resourceClaimTemplate.name, one request 'channel' of DeviceClass "
    "compute-domain-default-channel.nvidia.com) and the IMEX daemons, and the compute-domain.nvidia.com "
    "kubelet plugin would publish the channel devices. To simulate, give that ResourceClaimTemplate, the "
    "DeviceClass and ResourceSlices of driver compute-domain.nvidia.com with the channel devices yourself, "
    "or leave the ComputeDomain and its claims out")
"""Why NVIDIA's ``resource.nvidia.com`` ComputeDomain is refused, and what to give instead (its
controller's template: NVIDIA/k8s-dra-driver-gpu templates/compute-domain-workload-claim-template)."""


@dataclass(frozen=True)
class Unmodeled:
    """A Kubernetes built-in kind drasched does not model. Charts and cluster dumps carry
    them beside the objects that matter, so manifests may hold them: a run leaves them out
    with a warning (``why``: what that changes) instead of refusing the whole input."""

    group: str
    kind: str
    versions: tuple[str, ...]
    """Every version Kubernetes serves or served it in, newest first."""
    why: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.versions[0]}" if self.group else self.versions[0]


NO_EFFECT = "does not affect scheduling"
_STORAGE = "drasched does not model volumes (volume binding and storage capacity are not simulated)"
_ADMISSION = "admission is not simulated ({what} are not applied to pods)"


def _not_run(plural: str, effect: str = "their pods are not simulated") -> str:
    return f"drasched simulate does not run {plural} ({effect})"


UNMODELED: dict[tuple[str, str], Unmodeled] = {
    (u.group, u.kind): u for u in (
        Unmodeled("", "Service", ("v1",), NO_EFFECT),
        Unmodeled("", "Endpoints", ("v1",), NO_EFFECT),
        Unmodeled("", "Secret", ("v1",), NO_EFFECT),
        Unmodeled("", "PodTemplate", ("v1",), NO_EFFECT),
        Unmodeled("", "ReplicationController", ("v1",), _not_run("ReplicationControllers")),
        Unmodeled("", "PersistentVolume", ("v1",), _STORAGE),
        Unmodeled("", "PersistentVolumeClaim", ("v1",), _STORAGE),
        Unmodeled("", "LimitRange", ("v1",), _ADMISSION.format(what="its default requests and limits")),
        Unmodeled("", "ResourceQuota", ("v1",), _ADMISSION.format(what="quotas")),
        Unmodeled("apps", "ControllerRevision", ("v1", "v1beta2"), NO_EFFECT),
        Unmodeled("batch", "CronJob", ("v1", "v1beta1"), _not_run("CronJobs", "no Jobs are created from them")),
        Unmodeled("autoscaling", "HorizontalPodAutoscaler", ("v2", "v1", "v2beta2", "v2beta1"),
                  _not_run("HorizontalPodAutoscalers", "replica counts stay as written")),
        Unmodeled("discovery.k8s.io", "EndpointSlice", ("v1", "v1beta1"), NO_EFFECT),
        Unmodeled("events.k8s.io", "Event", ("v1", "v1beta1"), NO_EFFECT),
        Unmodeled("networking.k8s.io", "NetworkPolicy", ("v1",), NO_EFFECT),
        Unmodeled("networking.k8s.io", "Ingress", ("v1", "v1beta1"), NO_EFFECT),
        Unmodeled("networking.k8s.io", "IngressClass", ("v1", "v1beta1"), NO_EFFECT),
        Unmodeled("networking.k8s.io", "ServiceCIDR", ("v1", "v1beta1"), NO_EFFECT),
        Unmodeled("networking.k8s.io", "IPAddress", ("v1", "v1beta1"), NO_EFFECT),
        *(Unmodeled("rbac.authorization.k8s.io", k, ("v1", "v1beta1"), NO_EFFECT)
          for k in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")),
        Unmodeled("storage.k8s.io", "StorageClass", ("v1", "v1beta1"), _STORAGE),
        Unmodeled("storage.k8s.io", "CSIDriver", ("v1",), _STORAGE),
        Unmodeled("storage.k8s.io", "CSINode", ("v1",), _STORAGE),
        Unmodeled("storage.k8s.io", "CSIStorageCapacity", ("v1", "v1beta1"), _STORAGE),
        Unmodeled("storage.k8s.io", "VolumeAttachment", ("v1",), _STORAGE),
        Unmodeled("storage.k8s.io", "VolumeAttributesClass", ("v1", "v1beta1"), _STORAGE),
        Unmodeled("policy", "PodSecurityPolicy", ("v1beta1",), NO_EFFECT),
        Unmodeled("apiextensions.k8s.io", "CustomResourceDefinition", ("v1", "v1beta1"),
                  "does not affect scheduling (objects of the kinds it defines stay unknown)"),
        Unmodeled("apiregistration.k8s.io", "APIService", ("v1",), NO_EFFECT),
        Unmodeled("certificates.k8s.io", "CertificateSigningRequest", ("v1",), NO_EFFECT),
        *(Unmodeled("admissionregistration.k8s.io", k, ("v1",), _ADMISSION.format(what="webhooks"))
          for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")),
        *(Unmodeled("admissionregistration.k8s.io", k, ("v1", "v1beta1"), _ADMISSION.format(what="policies"))
          for k in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")),
        *(Unmodeled("admissionregistration.k8s.io", k, ("v1beta1", "v1alpha1"), _ADMISSION.format(what="policies"))
          for k in ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")),
        *(Unmodeled("flowcontrol.apiserver.k8s.io", k, ("v1", "v1beta3"), NO_EFFECT)
          for k in ("FlowSchema", "PriorityLevelConfiguration")),
    )
}
"""Built-in kinds drasched reads and leaves out, by (group, kind); served kinds are in ALL."""


def unmodeled(obj: dict) -> Unmodeled | None:
    """The entry of ``obj``'s kind when it is a built-in drasched leaves out, in a version
    Kubernetes serves or served it in (another version is refused, with a hint)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group, _, version = api_version.rpartition("/")
    entry = UNMODELED.get((group, kind))
    return entry if entry is not None and version in entry.versions else None


_RESTORE_ORDER = (*ALL[:ALL.index(POD_GROUP) + 1], *UPSTREAM_GANG, *ALL[ALL.index(POD_GROUP) + 1:])
"""ALL with the upstream gang kinds after drasched's PodGroup: Workloads, then their PodGroups, before
the workloads whose pods join them."""
_ORDER: dict[ResourceType, int] = {rt: i for i, rt in enumerate(_RESTORE_ORDER)}


def order_index(rt: ResourceType) -> int:
    """Position of a kind in dependency order, for deterministic output (an older version's
    position is its kind's)."""
    index = _ORDER.get(rt)
    return index if index is not None else _ORDER[_BY_KIND_ONLY[rt.kind]]
