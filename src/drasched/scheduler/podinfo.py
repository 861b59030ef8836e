"""What the scheduler needs from one pod or node, parsed once per object version."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from drasched.api.foreign import (
    COSCHEDULING_POD_GROUP_LABEL,
    KAI_POD_GROUP_ANNOTATION,
    KAI_PRIORITY_LABEL,
    KAI_QUEUE_LABELS,
    group_kind,
    named_pod_group,
)
from drasched.api.implicitgang import TOP_OWNER_ANNOTATION
from drasched.quantity import QuantityError
from drasched.scheduler.claims import ClaimEntry, claim_entries
from drasched.scheduler.constants import GPU, POD_GROUP_LABEL, POD_SCHEDULED, PODS, QUEUE_LABEL, UNSCHEDULABLE
from drasched.scheduler.fraction import FractionError, gpu_fraction
from drasched.scheduler.resources import pod_requests, to_units

Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")


PodKeys = Callable[["PodInfo"], tuple[str, str]]
"""A profile's ``pod_keys``: the pod's ``static_key`` and ``eq_key``."""


@dataclass(slots=True, eq=False)
class PodInfo:
    """A pod as the scheduler sees it; ``obj`` is the cached wire dict (never mutated)."""

    key: str
    namespace: str
    name: str
    uid: str
    obj: Obj
    requests: dict[str, float]
    """Container requests in vector units; shared by pods of one template: never change it."""
    error: str | None
    priority: int
    created: str
    node_name: str
    phase: str
    deleting: bool
    scheduler_name: str
    gated: bool
    queue_label: str | None
    group_label: str | None
    claim_entries: tuple[ClaimEntry, ...]
    gpu_fraction: Fraction | None = None
    """``drasched.io/gpu-fraction``: ``requests[nvidia.com/gpu]`` then holds this fraction, not 1."""
    pod_keys: PodKeys | None = None
    """Builds :attr:`static_key` and :attr:`eq_key` (``None``: every built-in plugin's)."""
    controlled: bool = False
    """Whether an owner reference marks a controller, which recreates the pod if it is evicted."""
    _keys: tuple[str, str] | None = None

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL

    # Read from the object when asked: only pods a cycle places need them (and the cycle's
    # filters memoise their verdicts per static_key), so a large cluster's bound pods never do.

    @property
    def node_selector(self) -> dict[str, str]:
        return dict((self.obj.get("spec") or {}).get("nodeSelector") or {})

    @property
    def required_affinity(self) -> Obj | None:
        affinity: Obj | None = (((self.obj.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        return affinity

    @property
    def tolerations(self) -> tuple[Obj, ...]:
        return tuple((self.obj.get("spec") or {}).get("tolerations") or ())

    @property
    def top_owner(self) -> str:
        """``Kind.group`` of the pod's top owner (:func:`top_owner_kind`), for KAI's default PriorityClass."""
        return top_owner_kind(self.obj.get("metadata") or {})

    @property
    def condition(self) -> tuple[str, str, str] | None:
        """The pod's PodScheduled condition: (status, reason, message)."""
        return _scheduled_condition(self.obj)

    @property
    def static_key(self) -> str:
        """Equal for pods on which every enabled static filter gives the same verdict on every node
        (built from the filters' signatures, :meth:`~drasched.scheduler.framework.profile.Profile.pod_keys`)."""
        return (self._keys or self._build_keys())[0]

    @property
    def eq_key(self) -> str:
        """Equal for pods with identical scheduling requirements (same template)."""
        return (self._keys or self._build_keys())[1]

    def _build_keys(self) -> tuple[str, str]:
        """The keys on first use: only pods a cycle places read them, and building them was
        most of parsing a pod (a large cluster's bound pods never need them)."""
        keys = self.pod_keys
        if keys is None:
            from drasched.scheduler.framework.profile import default_profile  # the profile imports this module

            keys = default_profile().pod_keys
        self._keys = keys(self)
        return self._keys


INVALID_POD_GROUP = "InvalidPodGroup"


def unschedulable_reason(message: str) -> str:
    """PodScheduled's reason for a pending pod: ``InvalidPodGroup`` for a pod naming two groups."""
    return INVALID_POD_GROUP if message.startswith(INVALID_POD_GROUP + ":") else UNSCHEDULABLE


def queue_label(labels: Obj) -> str | None:
    """The queue a pod's labels name: ``drasched.io/queue``, else KAI-Scheduler's
    ``kai.scheduler/queue`` or ``runai/queue`` (read as aliases: the pod is not rewritten)."""
    ours = labels.get(QUEUE_LABEL)
    if ours:
        return ours
    for k in KAI_QUEUE_LABELS:  # a loop, not next(generator): this runs for every pod of a full build
        if labels.get(k):
            return labels[k]
    return None


def labelled_priority(labels: Obj, spec: Obj, priority_of_class: dict[str, int]) -> int | None:
    """The priority of KAI-Scheduler's ``priorityClassName`` label, read as KAI reads it: only
    where ``spec.priorityClassName`` names no class (the API server resolved that one into
    ``spec.priority``, and it wins); a label naming a class that does not exist is ignored, as
    KAI falls back to its default (here: the pod's own priority; in a KAI queue, KAI's default class
    for the kind of the pod's top owner, :func:`names_class`). None: no such label applies."""
    name = labels.get(KAI_PRIORITY_LABEL)
    if not name or spec.get("priorityClassName"):
        return None
    return priority_of_class.get(name)


def names_class(labels: Obj, spec: Obj, priority_of_class: Mapping[str, int]) -> bool:
    """Whether the pod names its own PriorityClass, as KAI's pod grouper takes one: ``spec.priorityClassName``
    (which the API server fills with the global default class, if any), or KAI's ``priorityClassName``
    label naming a class that exists (a missing one falls through to the default, as in KAI's
    ``CalcPriorityClassWithDefaults``). A pod that names none runs, in a KAI queue, at the default class
    of its top owner's kind (``scheduler/groups.py``)."""
    if spec.get("priorityClassName"):
        return True
    return labels.get(KAI_PRIORITY_LABEL) in priority_of_class


def top_owner_kind(md: Obj) -> str:
    """``Kind.group`` of the pod's top owner, as KAI's pod grouper finds it by ownerReferences: the
    ``drasched.io/top-owner`` annotation, which the implicit-gang controller writes where the pod's own
    reference stops short (a ReplicaSet's pod: the ReplicaSet's own owner, a Deployment), else the
    pod's controller reference, else the pod itself (``Pod``)."""
    written = (md.get("annotations") or {}).get(TOP_OWNER_ANNOTATION)
    if written:
        return str(written)
    for ref in md.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return group_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
    return "Pod"


def group_label(md: Obj) -> str | None:
    """The PodGroup a pod's metadata names: its ``drasched.io/pod-group`` label, else an alias:
    KAI-Scheduler's ``pod-group-name`` annotation, scheduler-plugins' ``scheduling.x-k8s.io/pod-group`` label."""
    return named_pod_group(md)


def _group_key_of(md: Obj, group: str) -> str:
    """Where the metadata names ``group``, for a message: ``label drasched.io/pod-group`` or an alias."""
    labels = md.get("labels") or {}
    if labels.get(POD_GROUP_LABEL) == group:
        return f"label {POD_GROUP_LABEL}"
    if (md.get("annotations") or {}).get(KAI_POD_GROUP_ANNOTATION) == group:
        return f"annotation {KAI_POD_GROUP_ANNOTATION}"
    return f"label {COSCHEDULING_POD_GROUP_LABEL}"


def joined_group(md: Obj, spec: Obj) -> tuple[str | None, str | None]:
    """The PodGroup a pod joins: its ``drasched.io/pod-group`` label (or an alias, :func:`group_label`)
    or its upstream ``spec.schedulingGroup.podGroupName`` (docs/design.md, "One gang per pod"), and the
    error when it names both."""
    ours = group_label(md)
    upstream = (spec.get("schedulingGroup") or {}).get("podGroupName") or None
    if ours and upstream:
        return None, (f"{INVALID_POD_GROUP}: the pod names two PodGroups, {ours} ({_group_key_of(md, ours)}) and "
                      f"{upstream} (spec.schedulingGroup.podGroupName); a pod joins one group")
    return ours or upstream, None


def _scheduled_condition(obj: Obj) -> tuple[str, str, str] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == POD_SCHEDULED:
            return (str(c.get("status", "")), str(c.get("reason", "")), str(c.get("message", "")))
    return None


REQUESTS_MEMO_SIZE = 4096
"""Distinct container resource sets :func:`shared_requests` remembers (then it starts over)."""
_requests_memo: dict[tuple[Any, ...], dict[str, float]] = {}


def _resources_key(spec: Obj) -> tuple[Any, ...] | None:
    """What :func:`~drasched.scheduler.resources.pod_requests` reads of ``spec``, as a hashable
    key: each container's requests and limits; ``None`` for a spec it does not cover (init
    containers, overhead, pod-level resources, anything not a map of plain values)."""
    if "initContainers" in spec or "overhead" in spec or "resources" in spec:
        return None
    containers = spec.get("containers") or ()
    if not isinstance(containers, list):
        return None
    key: list[Any] = []
    for c in containers:
        res = c.get("resources") if isinstance(c, dict) else None
        if not res:
            key.append(None)
            continue
        if not isinstance(res, dict):
            return None
        req, lim = res.get("requests"), res.get("limits")
        if (req and not isinstance(req, dict)) or (lim and not isinstance(lim, dict)):
            return None
        key.append(tuple(req.items()) if req else ())
        key.append(tuple(lim.items()) if lim else ())
    return tuple(key)


def shared_requests(spec: Obj) -> dict[str, float]:
    """``pod_requests(spec)``, worked out once per distinct set of container resources: pods of
    one template share the dict (never changed: a :class:`PodInfo`'s requests are read-only).
    Parsing the quantities was a third of parsing a pod, for the same few templates."""
    key = _resources_key(spec)
    if key is None:
        return pod_requests(spec)
    try:
        hit = _requests_memo.get(key)
    except TypeError:  # a value that is not hashable (a malformed quantity): parse it as it is
        return pod_requests(spec)
    if hit is None:
        hit = pod_requests(spec)
        if len(_requests_memo) >= REQUESTS_MEMO_SIZE:
            _requests_memo.clear()
        _requests_memo[key] = hit
    return hit


def parse_pod(key: str, obj: Obj, priority_of_class: dict[str, int], keys: PodKeys | None = None) -> PodInfo:
    """Parse ``obj`` once per version; ``keys`` builds its memo keys (default: every built-in plugin)."""
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    labels = md.get("labels") or {}
    error = None
    try:
        requests = shared_requests(spec)
    except (QuantityError, TypeError, ValueError) as exc:
        requests = {PODS: 1.0}
        error = f"pod has a malformed resource request: {exc}"
    fraction = None
    if md.get("annotations"):  # (the fraction is an annotation: most pods have none)
        try:
            fraction = gpu_fraction(obj, requests)
        except FractionError as exc:
            error = error or str(exc)
    if fraction is not None:
        requests = {**requests, GPU: float(fraction)}
    if md.get("annotations") or spec.get("schedulingGroup"):
        group, group_error = joined_group(md, spec)
        error = error or group_error
    else:  # joined_group's answer for a pod that can name its group only by a label
        group = labels.get(POD_GROUP_LABEL) or labels.get(COSCHEDULING_POD_GROUP_LABEL) or None
    priority = spec.get("priority")
    if priority is None:
        priority = priority_of_class.get(spec.get("priorityClassName") or "", 0)
    if labels and KAI_PRIORITY_LABEL in labels:  # (most pods have no such label)
        labelled = labelled_priority(labels, spec, priority_of_class)
        priority = labelled if labelled is not None else priority
    return PodInfo(  # positional, in field order: half the cost of keywords, paid once per pod
        key,  # key
        str(md.get("namespace", "")),  # namespace
        str(md.get("name", "")),  # name
        str(md.get("uid", "")),  # uid
        obj,  # obj
        requests,  # requests
        error,  # error
        int(priority or 0),  # priority
        str(md.get("creationTimestamp") or ""),  # created
        str(spec.get("nodeName") or ""),  # node_name
        str((obj.get("status") or {}).get("phase") or "Pending"),  # phase
        bool(md.get("deletionTimestamp")),  # deleting
        str(spec.get("schedulerName") or "default-scheduler"),  # scheduler_name
        bool(spec.get("schedulingGates")),  # gated
        queue_label(labels) if labels else None,  # queue_label
        group,  # group_label
        claim_entries(spec) if spec.get("resourceClaims") else (),  # claim_entries (most pods have none)
        fraction,  # gpu_fraction
        keys,  # pod_keys
        has_controller(md),  # controlled
    )


def has_controller(md: Obj) -> bool:
    """Whether the metadata's owner references name a controller."""
    refs = md.get("ownerReferences")
    if not refs:
        return False
    return any(isinstance(r, dict) and r.get("controller") for r in refs)


@dataclass(slots=True, eq=False)
class NodeInfo:
    name: str
    index: int
    labels: dict[str, str]
    taints: tuple[Obj, ...]
    unschedulable: bool
    allocatable: dict[str, float]
    obj: Obj


def parse_node(obj: Obj, index: int) -> NodeInfo:
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    # The API server defaults a missing allocatable to the capacity (SetDefaults_NodeStatus).
    raw = status.get("allocatable") or status.get("capacity") or {}
    allocatable: dict[str, float] = {}
    for name, value in raw.items():
        try:
            allocatable[name] = to_units(name, value)
        except (QuantityError, TypeError):
            continue  # a malformed node quantity counts as none of that resource
    # No "pods" in it allows no pod, as upstream's NodeInfo (``NewResource``: AllowedPodNumber is
    # ``allocatable["pods"]``, 0 when missing, so NodeResourcesFit says "Too many pods" for every
    # pod); a node with neither allocatable nor capacity has nothing at all. drasched simulate
    # warns about both when it loads such a node.
    return NodeInfo(str(md.get("name", "")), index, dict(md.get("labels") or {}),
                    tuple(spec.get("taints") or ()), bool(spec.get("unschedulable")), allocatable, obj)
