"""The ``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSet controller of the embedded control plane (basics).

``replicas`` groups of ``leaderWorkerTemplate.size`` pods: the leader ``<lws>-<group>`` (from
``leaderTemplate``, else ``workerTemplate``) and the workers ``<lws>-<group>-<1..size-1>``,
the names upstream's leader and worker StatefulSets give them. Every pod carries upstream's
labels ``leaderworkerset.sigs.k8s.io/name``, ``group-index``, ``worker-index`` (0 for the
leader) and ``group-key``, the ``size`` annotation, and workers the ``leader-name``
annotation; hostname = pod name, subdomain = the LeaderWorkerSet's name; every container
gets ``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE`` and ``LWS_WORKER_INDEX``. With
``startupPolicy: LeaderCreated`` (default) the workers are made with their leader, with
``LeaderReady`` once the leader is Running and Ready.

Status: ``replicas`` (groups made), ``readyReplicas`` (groups whose every pod is ready),
``updatedReplicas``, and the conditions ``Available`` / ``Progressing``.

Simplified: the pods are owned by the LeaderWorkerSet itself (upstream: by the leader
StatefulSet, and the workers by a per-group StatefulSet owned by the leader pod); a pod that
ended stays as it is (upstream recreates the group); rolling updates are not modelled.
"""

from __future__ import annotations

import copy
import hashlib

from drasched.api import kinds
from drasched.api.meta import format_time
from drasched.controllers.workloads.common import (
    Obj,
    WorkloadBase,
    is_ready,
    md,
    owned_by,
    pod_from_template,
    set_condition,
    spec_of,
)

PREFIX = "leaderworkerset.sigs.k8s.io/"
SET_NAME = PREFIX + "name"
GROUP_INDEX = PREFIX + "group-index"
WORKER_INDEX = PREFIX + "worker-index"
GROUP_KEY = PREFIX + "group-key"
SIZE = PREFIX + "size"
LEADER_NAME = PREFIX + "leader-name"
EXCLUSIVE_TOPOLOGY = PREFIX + "exclusive-topology"


def group_key(namespace: str, lws_name: str, group: int) -> str:
    """``group-key``: SHA-1 of ``<namespace>/<lws>-<group>`` (the leader's name), hex."""
    return hashlib.sha1(f"{namespace}/{lws_name}-{group}".encode()).hexdigest()


class LeaderWorkerSetController(WorkloadBase):
    """Keeps each LeaderWorkerSet's groups of a leader and its workers."""

    name = "leaderworkerset-controller"
    component = "leaderworkerset-controller"
    kind = kinds.LEADER_WORKER_SET
    watched = (kinds.POD,)

    def sync(self, lws: Obj) -> bool:
        spec = spec_of(lws)
        name = str(md(lws).get("name"))
        template = spec.get("leaderWorkerTemplate") or {}
        size = int(template.get("size", 1))
        pods = {md(p).get("name"): p for p in owned_by(self.informer(kinds.POD).values()).get(
            md(lws).get("uid", ""), [])}
        wrote = False
        for group in range(int(spec.get("replicas", 1))):
            leader_name = f"{name}-{group}"
            leader = pods.get(leader_name)
            if leader is None:
                leader = self._create(lws, group, 0, size)
                wrote |= leader is not None
            if leader is None or (spec.get("startupPolicy") == "LeaderReady" and not is_ready(leader)):
                continue
            for worker in range(1, size):
                if f"{leader_name}-{worker}" not in pods:
                    wrote |= self._create(lws, group, worker, size) is not None
        return self.write_status(lws, self._status(lws, list(pods.values()), size)) or wrote

    def _create(self, lws: Obj, group: int, worker: int, size: int) -> Obj | None:
        spec = spec_of(lws)
        name, ns = str(md(lws).get("name")), md(lws).get("namespace") or "default"
        lwt = spec.get("leaderWorkerTemplate") or {}
        template = (lwt.get("leaderTemplate") if worker == 0 else None) or lwt.get("workerTemplate") or {}
        leader_name = f"{name}-{group}"
        pod_name = leader_name if worker == 0 else f"{leader_name}-{worker}"
        annotations = {SIZE: str(size)}
        if worker:
            annotations[LEADER_NAME] = leader_name
        if (md(lws).get("annotations") or {}).get(EXCLUSIVE_TOPOLOGY):
            annotations[EXCLUSIVE_TOPOLOGY] = md(lws)["annotations"][EXCLUSIVE_TOPOLOGY]
        pod = pod_from_template(lws, copy.deepcopy(template), name=pod_name, extra_labels={
            SET_NAME: name, GROUP_INDEX: str(group), WORKER_INDEX: str(worker),
            GROUP_KEY: group_key(ns, name, group)}, extra_annotations=annotations)
        pod["spec"]["hostname"] = pod_name
        pod["spec"]["subdomain"] = name
        _add_env(pod["spec"], {"LWS_LEADER_ADDRESS": f"{leader_name}.{name}.{ns}", "LWS_GROUP_SIZE": str(size),
                               "LWS_WORKER_INDEX": str(worker)})
        created = self.create(pod, lws)
        if created is not None:
            self.ctx.event(lws, "Normal", "SuccessfulCreate", f"Created pod: {pod_name}", self.component)
        return created

    def _status(self, lws: Obj, pods: list[Obj], size: int) -> Obj:
        status = copy.deepcopy(lws.get("status") or {})
        replicas = int(spec_of(lws).get("replicas", 1))
        groups: dict[str, list[Obj]] = {}
        for pod in pods:
            groups.setdefault(str((md(pod).get("labels") or {}).get(GROUP_INDEX)), []).append(pod)
        ready = sum(1 for members in groups.values() if len(members) == size and all(is_ready(p) for p in members))
        status.update(replicas=len(groups), readyReplicas=ready, updatedReplicas=len(groups))
        for key in ("readyReplicas", "updatedReplicas"):
            if not status[key]:
                status.pop(key)
        stamp = format_time(self.ctx.now())
        if ready == replicas:
            set_condition(status, "Available", "True", "AllGroupsReady", "All replicas are ready", stamp, probe=None)
            set_condition(status, "Progressing", "False", "Ready", "Replicas are ready", stamp, probe=None)
        else:
            if any(c.get("type") == "Available" for c in status.get("conditions") or []):
                set_condition(status, "Available", "False", "GroupsProgressing", "Replicas are progressing", stamp,
                              probe=None)
            set_condition(status, "Progressing", "True", "GroupsProgressing", "Replicas are progressing", stamp,
                          probe=None)
        return status


def _add_env(spec: Obj, values: dict[str, str]) -> None:
    """What LeaderWorkerSet's pod webhook adds to every container: the leader's address
    (``<leader>.<lws>.<namespace>``), the group size and the pod's worker index."""
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            env = container.setdefault("env", [])
            have = {e.get("name") for e in env}
            env.extend({"name": k, "value": v} for k, v in values.items() if k not in have)
