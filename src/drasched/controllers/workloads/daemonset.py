"""The ``apps/v1`` DaemonSet controller of the embedded control plane.

As upstream ``pkg/controller/daemon/daemon_controller.go`` and ``update.go``:

* **Which nodes** (``NodeShouldRunDaemonPod``): a node should run the daemon pod when the pod
  template's ``nodeName`` (if any), ``nodeSelector`` and required node affinity match it and
  every ``NoSchedule`` / ``NoExecute`` taint of the node is tolerated, counting the tolerations
  the controller adds to every daemon pod (``AddOrUpdateDaemonPodTolerations``: not-ready and
  unreachable ``NoExecute``; disk-, memory- and pid-pressure, unschedulable ``NoSchedule``;
  network-unavailable for ``hostNetwork`` pods). So a cordoned node gets one. A pod already on a
  node whose taints it does not tolerate may stay there unless a ``NoExecute`` taint is among them.
* **The pod** (``syncNodes``): the template with those tolerations, labels
  ``controller-revision-hash`` (the template's hash) and ``pod-template-generation`` (the
  DaemonSet's ``deprecated.daemonset.template.generation`` annotation), generateName ``<ds>-``, a
  controller ownerReference, and a required node affinity ``matchFields metadata.name In
  [<node>]`` that replaces the template's required terms (``ReplaceDaemonSetPodNodeNameNodeAffinity``).
  The scheduler places it like any pod, so it may wait for room (``PodScheduled=False``).
* **Keeping one per node** (``podsShouldBeOnNode``): a missing pod is created; a Failed pod is
  deleted (``FailedDaemonPod``, at most once per back-off, 1 s doubling to 15 min per node, as
  upstream's ``failedPodsBackoff``) and a Succeeded one too (``SucceededDaemonPod``), then made
  again once gone; of several pods on a node all but the oldest go; pods on a node that should
  not run one go, and so do unscheduled pods aimed at a node that no longer exists.
* **Updates** (``rollingUpdate``, no surge): when ``spec.template`` changes, ``RollingUpdate``
  deletes the pods of the old hash, the unavailable ones at once and the available ones while no
  more than ``maxUnavailable`` (1 by default; a percentage of the desired count, rounded up) of
  the desired nodes lack an available new pod; the manage pass then makes the new ones.
  ``OnDelete`` waits for the pods to be deleted by someone else.
* **Status** (``updateDaemonSetStatus``): ``desiredNumberScheduled``, ``currentNumberScheduled``
  (nodes that should run it and have a pod, placed or still pending), ``numberMisscheduled``,
  ``numberReady``, ``numberAvailable`` (ready for ``minReadySeconds``), ``updatedNumberScheduled``,
  ``numberUnavailable`` and ``observedGeneration``, counted on the oldest pod of each node.

Events ``SuccessfulCreate`` / ``SuccessfulDelete`` (``Created pod: <name>``) as upstream's pod
control writes them. Not modelled: ControllerRevision objects (the hash is computed, no history
is written; ``status.collisionCount`` is read, never raised), ``maxSurge`` (a surge rollout runs
as ``maxUnavailable`` would, with at least 1), the 250-pod burst limit's slow start.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

import msgspec

from drasched.api import kinds
from drasched.api.meta import parse_time
from drasched.api.resource import NodeSelector, decode
from drasched.api.tolerations import tolerates
from drasched.api.workload_defaults import TEMPLATE_GENERATION
from drasched.controllers.workloads.common import (
    Obj,
    WorkloadBase,
    is_deleting,
    is_ready,
    md,
    owned_by,
    pod_from_template,
    spec_of,
)
from drasched.controllers.workloads.deployment import template_hash
from drasched.controllers.workloads.replicaset import is_available, ready_since
from drasched.dra.nodes import node_selector_matches

REVISION_LABEL = "controller-revision-hash"
"""``apps.DefaultDaemonSetUniqueLabelKey``: the template's hash, on every pod."""
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
"""``extensions.DaemonSetTemplateGenerationKey``: the template generation, on every pod."""
NAME_FIELD = "metadata.name"
BURST_REPLICAS = 250
"""Creates and deletes of one sync at most (upstream ``BurstReplicas``); the rest come next round."""
BACKOFF_INITIAL = timedelta(seconds=1)
BACKOFF_MAX = timedelta(minutes=15)

DAEMON_TOLERATIONS: tuple[Obj, ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
"""What ``AddOrUpdateDaemonPodTolerations`` gives every daemon pod, in its order."""
NETWORK_UNAVAILABLE_TOLERATION: Obj = {
    "key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}
"""Added too when the pod uses the host's network."""


# ---- the pure decisions ------------------------------------------------------------------------


def _same_toleration(a: Obj, b: Obj) -> bool:
    """Upstream ``Toleration.MatchToleration``: key, operator, value and effect are equal."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def add_daemon_tolerations(pod_spec: Obj) -> None:
    """``AddOrUpdateDaemonPodTolerations``: each daemon toleration replaces one of the same key,
    operator, value and effect (a ``tolerationSeconds`` goes with it), else is appended."""
    wanted = list(DAEMON_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        wanted.append(NETWORK_UNAVAILABLE_TOLERATION)
    tolerations = [t for t in pod_spec.get("tolerations") or [] if isinstance(t, dict)]
    for tol in wanted:
        for i, have in enumerate(tolerations):
            if _same_toleration(have, tol):
                tolerations[i] = dict(tol)
                break
        else:
            tolerations.append(dict(tol))
    pod_spec["tolerations"] = tolerations


def untolerated(taints: list[Obj], tolerations: list[Obj], effects: tuple[str, ...]) -> Obj | None:
    """``FindMatchingUntoleratedTaint`` over the taints of the given effects."""
    for taint in taints:
        if taint.get("effect") in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def new_pod(ds: Obj, node_name: str) -> Obj:
    """Upstream ``NewPod``: the template as a pod on ``node_name`` with the daemon tolerations
    (what ``NodeShouldRunDaemonPod`` tests a node with)."""
    template = spec_of(ds).get("template") or {}
    pod_spec = copy.deepcopy(template.get("spec") or {})
    pod_spec["nodeName"] = node_name
    add_daemon_tolerations(pod_spec)
    return {"metadata": copy.deepcopy(template.get("metadata") or {}), "spec": pod_spec}


def _required_affinity_matches(pod_spec: Obj, node: Obj) -> bool:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match``: nodeSelector and the required terms
    (a term that does not parse matches nothing)."""
    labels = md(node).get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return True
    try:
        return node_selector_matches(decode(required, NodeSelector), node)
    except msgspec.ValidationError:
        return False


def node_should_run(node: Obj, ds: Obj) -> tuple[bool, bool]:
    """Upstream ``NodeShouldRunDaemonPod``: (shouldRun, shouldContinueRunning)."""
    name = str(md(node).get("name") or "")
    template_node = ((spec_of(ds).get("template") or {}).get("spec") or {}).get("nodeName")
    if template_node and template_node != name:
        return False, False
    pod = new_pod(ds, name)
    if not _required_affinity_matches(pod["spec"], node):
        return False, False
    taints = [t for t in spec_of(node).get("taints") or [] if isinstance(t, dict)]
    tolerations = pod["spec"]["tolerations"]
    if untolerated(taints, tolerations, ("NoSchedule", "NoExecute")) is not None:
        # a pod already there may stay unless a NoExecute taint is not tolerated
        return False, untolerated(taints, tolerations, ("NoExecute",)) is None
    return True, True


def replace_node_name_affinity(pod_spec: Obj, node_name: str) -> None:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required node affinity becomes the one
    term ``matchFields metadata.name In [node]``; preferred terms and other affinities stay."""
    term = {"matchFields": [{"key": NAME_FIELD, "operator": "In", "values": [node_name]}]}
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, dict):
        required["nodeSelectorTerms"] = [term]
    else:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}


def target_node(pod: Obj) -> str | None:
    """``GetTargetNodeName``: the pod's node, or for a pod not yet placed the node its
    ``metadata.name In`` affinity names (None: neither, or more than one node named)."""
    if spec_of(pod).get("nodeName"):
        return str(spec_of(pod)["nodeName"])
    required = ((((spec_of(pod).get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution")) or {})
    for term in required.get("nodeSelectorTerms") or []:
        for req in (term or {}).get("matchFields") or []:
            if req.get("key") == NAME_FIELD and req.get("operator") == "In":
                values = req.get("values") or []
                return str(values[0]) if len(values) == 1 else None
    return None


def revision_hash(ds: Obj) -> str:
    """The template's hash (upstream ``controller.ComputeHash`` of the template and collisionCount)."""
    collisions = int((ds.get("status") or {}).get("collisionCount") or 0)
    return template_hash(spec_of(ds).get("template") or {}, collisions)


def template_generation(ds: Obj) -> str | None:
    return (md(ds).get("annotations") or {}).get(TEMPLATE_GENERATION)


def daemon_pod(ds: Obj, node_name: str, hash_: str) -> Obj:
    """The pod ``syncNodes`` creates for ``node_name`` (``CreatePodTemplate`` + the node's affinity)."""
    labels = {REVISION_LABEL: hash_}
    generation = template_generation(ds)
    if generation is not None:
        labels = {TEMPLATE_GENERATION_LABEL: generation, **labels}
    pod = pod_from_template(ds, spec_of(ds).get("template") or {}, extra_labels=labels)
    add_daemon_tolerations(pod["spec"])
    replace_node_name_affinity(pod["spec"], node_name)
    return pod


def is_updated(pod: Obj, hash_: str, generation: str | None) -> bool:
    """``IsPodUpdated``: the pod carries the current hash or the current template generation."""
    labels = md(pod).get("labels") or {}
    return (bool(hash_) and labels.get(REVISION_LABEL) == hash_) or (
        generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == generation)


def _created(pod: Obj) -> float:
    text = md(pod).get("creationTimestamp")
    return parse_time(str(text)).timestamp() if text else 0.0


def oldest_first(pods: list[Obj]) -> list[Obj]:
    """``podByCreationTimestampAndPhase``: placed pods first, then by creation time and name."""
    return sorted(pods, key=lambda p: (0 if spec_of(p).get("nodeName") else 1, _created(p), str(md(p).get("name"))))


def scaled_count(value: Any, total: int) -> int:
    """``GetScaledValueFromIntOrPercent`` rounding up (a bad value counts as 0)."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            return math.ceil(float(value[:-1]) * total / 100)
        except ValueError:
            return 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def plan_node(node: Obj | None, ds: Obj, pods: list[Obj]) -> tuple[bool, list[Obj], list[Obj]]:
    """``podsShouldBeOnNode`` without the back-off: (create a pod here, pods to delete as
    surplus or misplaced, ended pods to replace). ``node`` None: a node that does not exist."""
    if node is None:  # getUnscheduledPodsWithoutNode
        return False, [p for p in pods if not spec_of(p).get("nodeName") and not is_deleting(p)], []
    should_run, should_continue = node_should_run(node, ds)
    if should_run and not pods:
        return True, [], []
    if should_continue:
        live = [p for p in pods if not is_deleting(p)]
        ended = [p for p in live if (p.get("status") or {}).get("phase") in ("Failed", "Succeeded")]
        done = {id(p) for p in ended}
        running = oldest_first([p for p in live if id(p) not in done])
        return False, running[1:], ended
    return False, [p for p in pods if not is_deleting(p)], []


# ---- the controller ----------------------------------------------------------------------------


class DaemonSetController(WorkloadBase):
    """Keeps one pod of each DaemonSet on every node that should run it."""

    name = "daemonset-controller"
    component = "daemonset-controller"
    kind = kinds.DAEMON_SET
    watched = (kinds.POD, kinds.NODE)

    def __init__(self) -> None:
        super().__init__()
        self._backoff: dict[str, tuple[timedelta, datetime]] = {}
        """(DaemonSet uid, observedGeneration, node) -> (current delay, last delete): failed pods' back-off."""

    def sync(self, ds: Obj) -> bool:
        selector = spec_of(ds).get("selector")
        if isinstance(selector, dict) and not selector.get("matchLabels") and not selector.get("matchExpressions"):
            self.ctx.event(ds, "Warning", "SelectingAll",
                           "This daemon set is selecting all pods. A non-empty selector is required.", self.component)
            return False
        nodes = sorted(self.informer(kinds.NODE).values(), key=lambda n: str(md(n).get("name")))
        by_name = {str(md(n).get("name")): n for n in nodes}
        hash_ = revision_hash(ds)
        wrote = self._manage(ds, nodes, by_name, hash_)
        if not wrote:  # upstream: rolls once the creates and deletes it asked for are seen
            strategy = spec_of(ds).get("updateStrategy") or {}
            if strategy.get("type", "RollingUpdate") == "RollingUpdate":
                wrote = self._roll(ds, nodes, hash_)
        return self.write_status(ds, self._status(ds, nodes, hash_)) or wrote

    def _node_pods(self, ds: Obj) -> dict[str, list[Obj]]:
        """``getNodesToDaemonPods``: the DaemonSet's pods by the node they run on or are meant for."""
        out: dict[str, list[Obj]] = defaultdict(list)
        for pod in owned_by(self.informer(kinds.POD).values()).get(md(ds).get("uid", ""), []):
            node = target_node(pod)
            if node is not None:
                out[node].append(pod)
        return out

    def _manage(self, ds: Obj, nodes: list[Obj], by_name: dict[str, Obj], hash_: str) -> bool:
        node_pods = self._node_pods(ds)
        create: list[str] = []
        delete: list[Obj] = []
        for node in nodes:
            name = str(md(node).get("name"))
            make, surplus, ended = plan_node(node, ds, node_pods.get(name, []))
            if make:
                create.append(name)
            delete += surplus
            delete += [p for p in ended if self._may_delete_ended(ds, name, p)]
        for name in sorted(set(node_pods) - set(by_name)):
            delete += plan_node(None, ds, node_pods[name])[1]
        wrote = False
        for name in create[:BURST_REPLICAS]:
            created = self.create(daemon_pod(ds, name, hash_), ds)
            if created is None:
                break
            self.ctx.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {md(created).get('name')}",
                           self.component)
            wrote = True
        return self._delete_pods(ds, delete) or wrote

    def _may_delete_ended(self, ds: Obj, node: str, pod: Obj) -> bool:
        """An ended pod is deleted with upstream's event; a Failed one once per back-off per node."""
        ref = f"{md(pod).get('namespace')}/{md(pod).get('name')}"
        if (pod.get("status") or {}).get("phase") == "Succeeded":
            self.ctx.event(ds, "Normal", "SucceededDaemonPod",
                           f"Found succeeded daemon pod {ref} on node {node}, will try to delete it", self.component)
            return True
        now = self.ctx.now()
        key = f"{md(ds).get('uid')}/{(ds.get('status') or {}).get('observedGeneration', 0)}/{node}"
        entry = self._backoff.get(key)
        if entry is not None and now - entry[1] < entry[0]:  # IsInBackOffSinceUpdate
            self.wake(ds, entry[1] + entry[0])
            return False
        # flowcontrol.Backoff.Next: the delay doubles, and starts over after 2 x the maximum unused
        fresh = entry is None or now - entry[1] > 2 * BACKOFF_MAX
        self._backoff[key] = (BACKOFF_INITIAL if fresh or entry is None else min(entry[0] * 2, BACKOFF_MAX), now)
        self.ctx.event(ds, "Warning", "FailedDaemonPod",
                       f"Found failed daemon pod {ref} on node {node}, will try to kill it", self.component)
        return True

    def _delete_pods(self, ds: Obj, pods: list[Obj]) -> bool:
        wrote = False
        for pod in pods[:BURST_REPLICAS]:
            if self.delete(kinds.POD, pod):
                self.ctx.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {md(pod).get('name')}",
                               self.component)
                wrote = True
        return wrote

    def _roll(self, ds: Obj, nodes: list[Obj], hash_: str) -> bool:
        """``rollingUpdate`` without surge: old pods go while few enough nodes lack an available new one."""
        node_pods = self._node_pods(ds)
        desired = [str(md(n).get("name")) for n in nodes if node_should_run(n, ds)[0]]
        rolling = (spec_of(ds).get("updateStrategy") or {}).get("rollingUpdate") or {}
        max_unavailable = scaled_count(rolling.get("maxUnavailable"), len(desired))
        if desired and max_unavailable == 0:
            max_unavailable = 1  # no surge modelled: a rollout always has room for one
        generation = template_generation(ds)
        min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
        now = self.ctx.now()
        unavailable = 0
        replace: list[Obj] = []
        candidates: list[Obj] = []
        for name in sorted(set(node_pods) | set(desired)):
            new: Obj | None = None
            old: Obj | None = None
            clash = False
            for pod in node_pods.get(name, []):
                if is_deleting(pod):
                    continue
                if is_updated(pod, hash_, generation):
                    clash |= new is not None
                    new = pod
                else:
                    clash |= old is not None
                    old = pod
            if clash or (new is None) == (old is None):
                unavailable += 1  # the manage pass sorts this node out
            elif new is not None:
                unavailable += 0 if is_available(new, min_ready, now) else 1
            elif old is not None and not is_available(old, min_ready, now):
                replace.append(old)
            elif old is not None and unavailable < max_unavailable:
                candidates.append(old)
        room = max(0, min(max_unavailable - unavailable, len(candidates)))
        return self._delete_pods(ds, replace + candidates[:room])

    def _status(self, ds: Obj, nodes: list[Obj], hash_: str) -> Obj:
        """``updateDaemonSetStatus``: counted per node on its oldest pod."""
        node_pods = self._node_pods(ds)
        min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
        now = self.ctx.now()
        generation = template_generation(ds)
        desired = current = misscheduled = ready = available = updated = 0
        for node in nodes:
            should_run, _ = node_should_run(node, ds)
            pods = node_pods.get(str(md(node).get("name")), [])
            if not should_run:
                misscheduled += 1 if pods else 0
                continue
            desired += 1
            if not pods:
                continue
            current += 1
            pod = oldest_first(pods)[0]
            if is_ready(pod):
                ready += 1
                if is_available(pod, min_ready, now):
                    available += 1
                elif (since := ready_since(pod)) is not None:  # look again when it becomes available
                    self.wake(ds, since + timedelta(seconds=min_ready))
            updated += 1 if is_updated(pod, hash_, generation) else 0
        status = copy.deepcopy(ds.get("status") or {})
        status.update(currentNumberScheduled=current, numberMisscheduled=misscheduled,
                      desiredNumberScheduled=desired, numberReady=ready,
                      observedGeneration=md(ds).get("generation", 1))
        for key, value in (("updatedNumberScheduled", updated), ("numberAvailable", available),
                           ("numberUnavailable", desired - available)):
            if value:
                status[key] = value
            else:
                status.pop(key, None)
        return status
