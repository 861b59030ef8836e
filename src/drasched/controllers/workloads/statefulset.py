"""The ``apps/v1`` StatefulSet controller of the embedded control plane.

As upstream ``pkg/controller/statefulset``: pods are named ``<sts>-<ordinal>`` with the
labels ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
``controller-revision-hash``, hostname = pod name and subdomain = ``serviceName``.
``OrderedReady`` creates ordinal i only once every lower ordinal is Running and Ready, and
removes the highest ordinal first, one at a time; ``Parallel`` creates and removes them all
at once. A pod that ended (Succeeded or Failed) is deleted and made again under the same
name. Events ``SuccessfulCreate`` / ``SuccessfulDelete`` in upstream's words
(``create Pod web-0 in StatefulSet web successful``). With ``minReadySeconds``, OrderedReady
waits until the lower ordinal has been Ready that long (upstream ``isRunningAndAvailable``), and
``availableReplicas`` counts such pods. Each ``volumeClaimTemplates`` entry becomes a pod volume
``{name: <template>, persistentVolumeClaim: {claimName: <template>-<sts>-<ordinal>}}`` (upstream
``updateStorage``), but the PersistentVolumeClaims themselves are not created: drasched does not
model volumes. Orphan pods named ``<sts>-<ordinal>`` that match the selector are adopted
(:mod:`.adoption`). Not modelled either: rolling updates of a changed template (pods keep the
revision they were made with).
"""

from __future__ import annotations

import copy
from datetime import timedelta

from drasched.api import kinds
from drasched.controllers.workloads.adoption import claim
from drasched.controllers.workloads.common import (
    Obj,
    WorkloadBase,
    is_deleting,
    is_ready,
    is_terminal,
    md,
    owned_by,
    pod_from_template,
    spec_of,
)
from drasched.controllers.workloads.deployment import template_hash
from drasched.controllers.workloads.replicaset import is_available, ready_since

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"


def ordinal_of(sts_name: str, pod: Obj) -> int | None:
    """The ordinal in a pod name ``<sts>-<i>``, or None for a pod that is not one of the set's."""
    name = str(md(pod).get("name") or "")
    prefix = f"{sts_name}-"
    tail = name[len(prefix):] if name.startswith(prefix) else ""
    return int(tail) if tail.isdigit() else None


class StatefulSetController(WorkloadBase):
    """Keeps ``replicas`` pods with stable ordinal names."""

    name = "statefulset-controller"
    component = "statefulset-controller"
    kind = kinds.STATEFUL_SET
    watched = (kinds.POD,)

    def sync(self, sts: Obj) -> bool:
        spec = spec_of(sts)
        name = str(md(sts).get("name"))
        replicas = int(spec.get("replicas", 1))
        parallel = spec.get("podManagementPolicy") == "Parallel"
        all_pods = list(self.informer(kinds.POD).values())
        # upstream getPodsForStatefulSet: ClaimPods with isMemberOf (adopt matching orphans named <sts>-<i>)
        owned, wrote = claim(self, sts, all_pods, owned_by(all_pods).get(md(sts).get("uid", ""), []),
                             filter_=lambda p: ordinal_of(name, p) is not None)
        pods = {o: p for p in owned if (o := ordinal_of(name, p)) is not None}
        revision = f"{name}-{template_hash(spec.get('template') or {})}"
        for i in range(replicas):
            pod = pods.get(i)
            if pod is not None and is_terminal(pod) and not is_deleting(pod):
                wrote |= self._delete(sts, pod)  # ended: made again under the same name once gone
                if not parallel:
                    break
                continue
            if pod is None:
                wrote |= self._create(sts, i, revision)
                if not parallel:
                    break
                continue
            if not parallel and (is_deleting(pod) or not self._available(sts, pod)):
                break  # OrderedReady: the next ordinal waits for this one to be Running and available
        surplus = sorted((o for o in pods if o >= replicas), reverse=True)
        for o in surplus:
            if is_deleting(pods[o]):
                if not parallel:
                    break
                continue
            wrote |= self._delete(sts, pods[o])
            if not parallel:
                break
        return self.write_status(sts, self._status(sts, list(pods.values()), revision)) or wrote

    def _create(self, sts: Obj, ordinal: int, revision: str) -> bool:
        name = f"{md(sts).get('name')}-{ordinal}"
        pod = pod_from_template(sts, spec_of(sts).get("template") or {}, name=name, extra_labels={
            REVISION_LABEL: revision, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)})
        pod["spec"]["hostname"] = name
        if spec_of(sts).get("serviceName"):
            pod["spec"]["subdomain"] = spec_of(sts)["serviceName"]
        _add_claim_volumes(sts, pod["spec"], ordinal)
        if self.create(pod, sts) is None:
            return False
        self.ctx.event(sts, "Normal", "SuccessfulCreate",
                       f"create Pod {name} in StatefulSet {md(sts).get('name')} successful", self.component)
        return True

    def _available(self, sts: Obj, pod: Obj) -> bool:
        """Ready for ``minReadySeconds`` (upstream ``isRunningAndAvailable``); else look again when it will be."""
        min_ready = int(spec_of(sts).get("minReadySeconds") or 0)
        now = self.ctx.now()
        if is_available(pod, min_ready, now):
            return True
        since = ready_since(pod)
        if since is not None:
            self.wake(sts, since + timedelta(seconds=min_ready))
        return False

    def _delete(self, sts: Obj, pod: Obj) -> bool:
        if not self.delete(kinds.POD, pod):
            return False
        self.ctx.event(sts, "Normal", "SuccessfulDelete",
                       f"delete Pod {md(pod).get('name')} in StatefulSet {md(sts).get('name')} successful",
                       self.component)
        return True

    def _status(self, sts: Obj, pods: list[Obj], revision: str) -> Obj:
        status = copy.deepcopy(sts.get("status") or {})
        live = [p for p in pods if not is_terminal(p)]
        counts = {"replicas": len(live), "readyReplicas": sum(1 for p in live if is_ready(p)),
                  "currentReplicas": sum(1 for p in live if (md(p).get("labels") or {}).get(REVISION_LABEL)
                                         == revision),
                  "availableReplicas": sum(1 for p in live if self._available(sts, p))}
        counts["updatedReplicas"] = counts["currentReplicas"]
        for key, value in counts.items():
            if value or key == "replicas":
                status[key] = value
            else:
                status.pop(key, None)
        status.update(observedGeneration=md(sts).get("generation", 1), currentRevision=revision,
                      updateRevision=revision, collisionCount=0)
        return status


def _add_claim_volumes(sts: Obj, pod_spec: Obj, ordinal: int) -> None:
    """Upstream ``updateStorage``: a volume per claim template, named as the template, for the claim
    ``<template>-<sts>-<ordinal>`` (``getPersistentVolumeClaimName``), before the template's other
    volumes, replacing one of the same name."""
    templates = [str((t.get("metadata") or {}).get("name")) for t in spec_of(sts).get("volumeClaimTemplates") or []]
    if not templates:
        return
    claims = [{"name": t, "persistentVolumeClaim": {"claimName": f"{t}-{md(sts).get('name')}-{ordinal}"}}
              for t in templates]
    pod_spec["volumes"] = claims + [v for v in pod_spec.get("volumes") or [] if v.get("name") not in templates]
