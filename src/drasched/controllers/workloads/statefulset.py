"""The ``apps/v1`` StatefulSet controller of the embedded control plane.

As upstream ``pkg/controller/statefulset``: pods are named ``<sts>-<ordinal>`` with the
labels ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
``controller-revision-hash``, hostname = pod name and subdomain = ``serviceName``.
``OrderedReady`` creates ordinal i only once every lower ordinal is Running and Ready, and
removes the highest ordinal first, one at a time; ``Parallel`` creates and removes them all
at once. A pod that ended (Succeeded or Failed) is deleted and made again under the same
name. Events ``SuccessfulCreate`` / ``SuccessfulDelete`` in upstream's words
(``create Pod web-0 in StatefulSet web successful``). Not modelled: volumeClaimTemplates,
rolling updates of a changed template (pods keep the revision they were made with).
"""

from __future__ import annotations

import copy

from drasched.api import kinds
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
        pods = {o: p for p in owned_by(self.informer(kinds.POD).values()).get(md(sts).get("uid", ""), [])
                if (o := ordinal_of(name, p)) is not None}
        revision = f"{name}-{template_hash(spec.get('template') or {})}"
        wrote = False
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
            if not parallel and (is_deleting(pod) or not is_ready(pod)):
                break  # OrderedReady: the next ordinal waits for this one
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
        if self.create(pod, sts) is None:
            return False
        self.ctx.event(sts, "Normal", "SuccessfulCreate",
                       f"create Pod {name} in StatefulSet {md(sts).get('name')} successful", self.component)
        return True

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
                  "availableReplicas": sum(1 for p in live if is_ready(p))}
        counts["updatedReplicas"] = counts["currentReplicas"]
        for key, value in counts.items():
            if value or key == "replicas":
                status[key] = value
            else:
                status.pop(key, None)
        status.update(observedGeneration=md(sts).get("generation", 1), currentRevision=revision,
                      updateRevision=revision, collisionCount=0)
        return status
