"""Which pods wait for an implicit PodGroup, read from the pod alone.

In a cluster a workload's pods arrive one by one from their controller (the Job controller
of kube-controller-manager, JobSet's, LeaderWorkerSet's, Kubeflow's training operator), and
drasched's implicit-gang controller labels each with its workload's PodGroup a moment
later. Scheduled in between, the first pods would be placed one by one, which is the
partial placement gangs exist to prevent. So the scheduler holds a pod of such a workload
until it has its group (the ``implicitGangGate`` plugin), and the controller marks the pods
it decides to leave without a group (the kind switched off, a PodGroup of that name that is
someone else's), so that they are not held forever. Both sides read this one rule.

Only kinds whose gang the pod itself reveals are held: a Job's pod (a JobSet's Jobs
included), a LeaderWorkerSet's (made by the LWS itself, or by its StatefulSets as upstream's
controller does, labelled with the LWS name), a Kubeflow PyTorchJob's or MPIJob's (labelled
with the job name). A Deployment, ReplicaSet or StatefulSet is a gang only when annotated, which its pods
do not show; their pods are not held for a gang.

One more hold, for KAI-Scheduler's default priority (:func:`awaited_top_owner`): a pod in a KAI
queue that names no PriorityClass runs at the default class of its top owner's kind (``inference``
for a Deployment, ``train`` for a bare ReplicaSet), and a ReplicaSet's pod does not show whether a
Deployment owns the ReplicaSet. The controller, which has the ReplicaSets, writes the top owner's
kind on such a pod (``drasched.io/top-owner``); until then the scheduler holds it.
"""

from __future__ import annotations

from typing import Any

from drasched.api.foreign import KAI_QUEUE_LABELS, names_pod_group

Obj = dict[str, Any]

POD_GROUP_LABEL = "drasched.io/pod-group"
IMPLICIT_GANG_ANNOTATION = "drasched.io/implicit-gang"
"""Set by the implicit-gang controller on a pod it leaves without a group (value: ``none``)."""
NO_GANG = "none"
KUBEFLOW_JOB_NAME = "training.kubeflow.org/job-name"
KUBEFLOW_KINDS = ("PyTorchJob", "MPIJob")
HELD_KINDS = ("Job", "LeaderWorkerSet", *KUBEFLOW_KINDS)
"""Controller kinds whose pods wait for their implicit PodGroup."""
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
"""On every pod of a LeaderWorkerSet; upstream's pods are controlled by its StatefulSets."""
TOP_OWNER_ANNOTATION = "drasched.io/top-owner"
"""``Kind.group`` of the pod's top owner (``Deployment.apps``), written by the implicit-gang
controller where the pod's own ownerReferences stop short of it (a ReplicaSet's pod)."""


def awaited_gang(pod: Obj) -> str | None:
    """``<Kind> <namespace>/<name>`` of the workload whose implicit PodGroup ``pod`` still
    waits for, or None when it waits for none: it names a group itself (the
    ``drasched.io/pod-group`` label, KAI-Scheduler's ``pod-group-name`` annotation, scheduler-plugins'
    ``scheduling.x-k8s.io/pod-group`` label, or upstream's ``spec.schedulingGroup`` /
    ``spec.workloadRef``), it is bound, the controller left it without one, or its
    controller is not a kind that implies a gang."""
    md = pod.get("metadata") or {}
    annotations = md.get("annotations") or {}
    if names_pod_group(md) or IMPLICIT_GANG_ANNOTATION in annotations:
        return None
    spec = pod.get("spec") or {}
    if spec.get("schedulingGroup") or spec.get("workloadRef") or spec.get("nodeName"):
        return None  # a group of its own, or already placed (a running pod the scheduler may move)
    ref = next((r for r in md.get("ownerReferences") or [] if isinstance(r, dict) and r.get("controller")), None)
    kind = (ref or {}).get("kind")
    lws = (md.get("labels") or {}).get(LWS_NAME_LABEL)
    if kind == "StatefulSet" and lws:  # upstream LWS: leader and worker StatefulSets make the pods
        return f"LeaderWorkerSet {md.get('namespace') or 'default'}/{lws}"
    if kind not in HELD_KINDS:
        return None
    if kind in KUBEFLOW_KINDS and not (md.get("labels") or {}).get(KUBEFLOW_JOB_NAME):
        return None
    assert ref is not None
    return f"{kind} {md.get('namespace') or 'default'}/{ref.get('name', '')}"


def awaited_top_owner(pod: Obj) -> str | None:
    """``ReplicaSet <namespace>/<name>`` when ``pod`` waits for the controller to write its top
    owner's kind (:data:`TOP_OWNER_ANNOTATION`): an unbound pod of a ReplicaSet, in a queue named by
    KAI's label, that names no PriorityClass in ``spec.priorityClassName`` and has no group of its own
    (a group's PodGroup is owned by the top owner already). None otherwise."""
    md = pod.get("metadata") or {}
    annotations = md.get("annotations") or {}
    labels = md.get("labels") or {}
    if TOP_OWNER_ANNOTATION in annotations or not any(labels.get(k) for k in KAI_QUEUE_LABELS):
        return None
    spec = pod.get("spec") or {}
    if spec.get("priorityClassName") or spec.get("nodeName") or spec.get("schedulingGroup"):
        return None
    if names_pod_group(md):
        return None
    ref = next((r for r in md.get("ownerReferences") or [] if isinstance(r, dict) and r.get("controller")), None)
    if ref is None or ref.get("kind") != "ReplicaSet":
        return None
    return f"ReplicaSet {md.get('namespace') or 'default'}/{ref.get('name', '')}"
