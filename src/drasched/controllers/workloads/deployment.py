"""The ``apps/v1`` Deployment controller of the embedded control plane.

As upstream ``pkg/controller/deployment``: the pod template's ReplicaSet is named
``<deployment>-<pod-template-hash>`` and carries the ``pod-template-hash`` label (in its
selector and template too) and the ``deployment.kubernetes.io/revision`` annotation. A
template change creates a new ReplicaSet and rolls over:

* **RollingUpdate** (``maxSurge`` / ``maxUnavailable``, 25% each by default; percentages of
  ``replicas``, surge rounded up and unavailable down, both 0 means 1 unavailable): the new
  ReplicaSet grows while all ReplicaSets together stay within ``replicas + maxSurge``, and
  old ones shrink (oldest first) while ``replicas - maxUnavailable`` pods stay available.
* **Recreate**: old ReplicaSets go to 0, and once their pods are gone the new one scales up.

ReplicaSets the selector matches that have no controller are adopted (upstream
``getReplicaSetsForDeployment``, :mod:`.adoption`); the current ReplicaSet is the oldest whose pod
template is the Deployment's but for the ``pod-template-hash`` label (``FindNewReplicaSet``), so
an adopted orphan of the same template is kept, and given the highest revision, instead of a new
one being made; an adopted one of another template is an old ReplicaSet, scaled down by the rollout.

Scaling the Deployment scales its current ReplicaSet. Status: ``replicas``, ``updatedReplicas``,
``readyReplicas``, ``availableReplicas``, ``unavailableReplicas``, ``observedGeneration`` and
the ``Available`` / ``Progressing`` conditions with upstream's reasons and messages; events
``ScalingReplicaSet``. The hash is FNV-32a of the template's canonical JSON written in
upstream's safe alphabet: stable and of upstream's form, not byte-equal to upstream's value
(which hashes Go's printed struct).
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from drasched.api import kinds
from drasched.api.errors import Conflict, NotFound
from drasched.api.meta import format_time, owner_reference
from drasched.controllers.workloads.adoption import claim
from drasched.controllers.workloads.common import (
    Obj,
    WorkloadBase,
    is_active,
    is_ready,
    md,
    owned_by,
    set_condition,
    spec_of,
)
from drasched.controllers.workloads.replicaset import is_available

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand alphanums


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """upstream ``rand.SafeEncodeString``: every byte mapped into an alphabet without vowels."""
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in text)


def template_hash(template: Obj, collision_count: int = 0) -> str:
    """The ``pod-template-hash`` of a pod template (the label itself left out)."""
    clean = copy.deepcopy(template)
    ((clean.get("metadata") or {}).get("labels") or {}).pop(POD_TEMPLATE_HASH, None)
    data = json.dumps(clean, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


def resolve_fenceposts(surge: Any, unavailable: Any, replicas: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as pod counts (upstream ``deploymentutil.ResolveFenceposts``)."""
    def scaled(value: Any, round_up: bool) -> int:
        if isinstance(value, str) and value.endswith("%"):
            exact = float(value[:-1]) * replicas / 100
            return math.ceil(exact) if round_up else math.floor(exact)
        return int(value or 0)
    max_surge, max_unavailable = scaled(surge, True), scaled(unavailable, False)
    if max_surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    return max_surge, max_unavailable


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    """Upstream ``deploymentutil.EqualIgnoreHash``: two pod templates alike but for the
    ``pod-template-hash`` label (no labels and empty labels alike, as ``Semantic.DeepEqual``)."""
    def clean(template: Obj) -> Obj:
        out = dict(template)
        meta = dict(out.get("metadata") or {})
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
        meta.pop("labels", None)
        if labels:
            meta["labels"] = labels
        out.pop("metadata", None)
        if meta:
            out["metadata"] = meta
        return out
    return clean(a) == clean(b)


def find_new_set(template: Obj, sets: list[Obj]) -> Obj | None:
    """Upstream ``deploymentutil.FindNewReplicaSet``: the oldest ReplicaSet whose pod template is
    the Deployment's (``EqualIgnoreHash``), whoever made it: a matching orphan the Deployment adopted
    becomes its current set, so no new one is made."""
    def created(rs: Obj) -> tuple[str, str]:
        return (str(md(rs).get("creationTimestamp") or ""), str(md(rs).get("name") or ""))
    return next((rs for rs in sorted(sets, key=created)
                 if equal_ignore_hash(spec_of(rs).get("template") or {}, template)), None)


def _revision(rs: Obj) -> int:
    """The ``deployment.kubernetes.io/revision`` annotation (0: none, or not a number)."""
    text = str((md(rs).get("annotations") or {}).get(REVISION) or "0")
    return int(text) if text.isdigit() else 0


def _revision_order(rs: Obj) -> tuple[int, str]:
    return (_revision(rs), str(md(rs).get("name", "")))


class DeploymentController(WorkloadBase):
    """Rolls each Deployment's pods onto its current template through ReplicaSets."""

    name = "deployment-controller"
    component = "deployment-controller"
    kind = kinds.DEPLOYMENT
    watched = (kinds.REPLICA_SET, kinds.POD)

    def sync(self, dep: Obj) -> bool:
        # Our own top-level copies: a write's result replaces their fields below (``update``),
        # while the informers' objects stay as the store shares them, read-only.
        dep = dict(dep)
        spec = spec_of(dep)
        all_sets = list(self.informer(kinds.REPLICA_SET).values())
        owned = owned_by(all_sets).get(md(dep).get("uid", ""), [])
        # upstream getReplicaSetsForDeployment: ClaimReplicaSets adopts the orphans the selector
        # matches and releases what stopped matching
        owned, wrote = claim(self, dep, all_sets, owned, kinds.REPLICA_SET)
        sets = sorted((dict(rs) for rs in owned), key=_revision_order)
        template = spec.get("template") or {}
        want_hash = template_hash(template, int((dep.get("status") or {}).get("collisionCount") or 0))
        current = find_new_set(template, sets)
        old = [rs for rs in sets if rs is not current]
        replicas = int(spec.get("replicas", 1))
        status = copy.deepcopy(dep.get("status") or {})
        stamp = format_time(self.ctx.now())
        if current is None:
            revision = 1 + max((_revision(rs) for rs in sets), default=0)
            start = 0 if old else replicas
            if (spec.get("strategy") or {}).get("type") != "Recreate" and old:
                start = self._surge_room(dep, sets, replicas, 0)
            current = self._create_set(dep, want_hash, revision, start)
            if current is None:
                return wrote
            set_condition(status, "Progressing", "True", "NewReplicaSetCreated",
                          f'Created new replica set "{md(current).get("name")}"', stamp, probe=False)
            return self.write_status(dep, self._status(dep, status, current, old, stamp)) or True
        wrote |= self._sync_new_set(dep, current, old)
        wrote |= self._note_revision(dep, current)
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            wrote |= self._recreate(dep, current, old, replicas)
        else:
            wrote |= self._roll(dep, current, old, replicas)
        return self.write_status(dep, self._status(dep, status, current, old, stamp)) or wrote

    # ---- rollout ------------------------------------------------------------------------------
    def _surge_room(self, dep: Obj, sets: list[Obj], replicas: int, new_now: int) -> int:
        rolling = (spec_of(dep).get("strategy") or {}).get("rollingUpdate") or {}
        surge, _ = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas)
        total = sum(int(spec_of(rs).get("replicas", 0)) for rs in sets)
        return max(0, min(replicas, new_now + replicas + surge - total))

    def _roll(self, dep: Obj, current: Obj, old: list[Obj], replicas: int) -> bool:
        rolling = (spec_of(dep).get("strategy") or {}).get("rollingUpdate") or {}
        _, unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas)
        wrote = False
        new_now = int(spec_of(current).get("replicas", 0))
        if not old:
            return self._scale(dep, current, replicas)
        target = self._surge_room(dep, [current, *old], replicas, new_now)
        if target > new_now:
            wrote |= self._scale(dep, current, target)
        # Scale old sets down while enough pods stay available (upstream reconcileOldReplicaSets).
        min_available = replicas - unavailable
        available = sum(self._available(rs) for rs in [current, *old])
        new_unavailable = max(0, int(spec_of(current).get("replicas", 0)) - self._available(current))
        all_pods = sum(int(spec_of(rs).get("replicas", 0)) for rs in [current, *old])
        room = min(all_pods - min_available - new_unavailable, available - min_available)
        for rs in old:
            have = int(spec_of(rs).get("replicas", 0))
            if have == 0:
                continue
            cut = min(have, max(0, room))
            if cut > 0:
                wrote |= self._scale(dep, rs, have - cut)
                room -= cut
        return wrote

    def _recreate(self, dep: Obj, current: Obj, old: list[Obj], replicas: int) -> bool:
        wrote = False
        for rs in old:
            if int(spec_of(rs).get("replicas", 0)):
                wrote |= self._scale(dep, rs, 0)
        pods = owned_by(self.informer(kinds.POD).values())
        if any(is_active(p) for rs in old for p in pods.get(md(rs).get("uid", ""), [])):
            return wrote
        return self._scale(dep, current, replicas) or wrote

    def _available(self, rs: Obj) -> int:
        pods = owned_by(self.informer(kinds.POD).values()).get(md(rs).get("uid", ""), [])
        min_ready = int(spec_of(rs).get("minReadySeconds") or 0)
        return sum(1 for p in pods if is_active(p) and is_available(p, min_ready, self.ctx.now()))

    # ---- writes -------------------------------------------------------------------------------
    def _create_set(self, dep: Obj, pod_hash: str, revision: int, replicas: int) -> Obj | None:
        spec = spec_of(dep)
        template = copy.deepcopy(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH] = pod_hash
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = pod_hash
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        surge, _ = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), int(spec.get(
            "replicas", 1))) if (spec.get("strategy") or {}).get("type") != "Recreate" else (0, 0)
        rs: Obj = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": f"{md(dep).get('name')}-{pod_hash}",
                "namespace": md(dep).get("namespace") or "default",
                "labels": dict(template["metadata"]["labels"]),
                "annotations": {DESIRED_REPLICAS: str(spec.get("replicas", 1)),
                                MAX_REPLICAS: str(int(spec.get("replicas", 1)) + surge), REVISION: str(revision)},
                "ownerReferences": [owner_reference(dep)],
            },
            "spec": {"replicas": replicas, "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                     "selector": selector, "template": template},
        }
        created = self.create(rs, dep)
        if created is not None:
            self.ctx.event(dep, "Normal", "ScalingReplicaSet",
                           f"Scaled up replica set {md(created).get('name')} from 0 to {replicas}", self.component)
        return created

    def _sync_new_set(self, dep: Obj, current: Obj, old: list[Obj]) -> bool:
        """Upstream ``getNewReplicaSet`` for a ReplicaSet that exists (one adopted, or an old one
        the template went back to): its revision becomes the highest (``SetNewReplicaSetAnnotations``:
        the old sets' highest plus one, when its own is lower) and it takes the Deployment's
        ``minReadySeconds``."""
        revision = 1 + max((_revision(rs) for rs in old), default=0)
        min_ready = int(spec_of(dep).get("minReadySeconds") or 0)
        patch: Obj = {}
        if _revision(current) < revision:
            patch["metadata"] = {"annotations": {REVISION: str(revision)}}
        if int(spec_of(current).get("minReadySeconds") or 0) != min_ready:
            patch["spec"] = {"minReadySeconds": min_ready}
        if not patch:
            return False
        patch.setdefault("metadata", {})["resourceVersion"] = md(current).get("resourceVersion")
        try:
            updated = self.ctx.store.patch(kinds.REPLICA_SET, md(current).get("name", ""),
                                           md(current).get("namespace"), patch)
        except (Conflict, NotFound):
            return True
        self._put(updated)
        current.update(updated)
        return True

    def _note_revision(self, dep: Obj, current: Obj) -> bool:
        """The Deployment carries its current ReplicaSet's ``deployment.kubernetes.io/revision``."""
        revision = (md(current).get("annotations") or {}).get(REVISION)
        if not revision or (md(dep).get("annotations") or {}).get(REVISION) == revision:
            return False
        try:
            updated = self.ctx.store.patch(kinds.DEPLOYMENT, md(dep).get("name", ""), md(dep).get("namespace"), {
                "metadata": {"resourceVersion": md(dep).get("resourceVersion"), "annotations": {REVISION: revision}}})
        except (Conflict, NotFound):
            return True
        self._put(updated)
        dep.update(updated)
        return True

    def _scale(self, dep: Obj, rs: Obj, replicas: int) -> bool:
        have = int(spec_of(rs).get("replicas", 0))
        if have == replicas:
            return False
        try:
            updated = self.ctx.store.patch(kinds.REPLICA_SET, md(rs).get("name", ""), md(rs).get("namespace"), {
                "metadata": {"resourceVersion": md(rs).get("resourceVersion"),
                             "annotations": {DESIRED_REPLICAS: str(spec_of(dep).get("replicas", 1))}},
                "spec": {"replicas": replicas}})
        except (Conflict, NotFound):  # a lost race: the next round sees the new state
            return True
        self._put(updated)
        rs.update(updated)
        word = "up" if replicas > have else "down"
        self.ctx.event(dep, "Normal", "ScalingReplicaSet",
                       f"Scaled {word} replica set {md(rs).get('name')} from {have} to {replicas}", self.component)
        return True

    def _status(self, dep: Obj, status: Obj, current: Obj, old: list[Obj], stamp: str) -> Obj:
        sets = [current, *old]
        replicas = int(spec_of(dep).get("replicas", 1))
        pods = owned_by(self.informer(kinds.POD).values())
        active = {md(rs).get("uid", ""): [p for p in pods.get(md(rs).get("uid", ""), []) if is_active(p)]
                  for rs in sets}
        total = sum(len(v) for v in active.values())
        ready = sum(1 for v in active.values() for p in v if is_ready(p))
        available = sum(self._available(rs) for rs in sets)
        counts = {"replicas": total, "updatedReplicas": len(active[md(current).get("uid", "")]),
                  "readyReplicas": ready, "availableReplicas": available,
                  "unavailableReplicas": max(0, replicas - available)}
        for key, value in counts.items():
            if value:
                status[key] = value
            else:
                status.pop(key, None)
        status["observedGeneration"] = md(dep).get("generation", 1)
        rolling = (spec_of(dep).get("strategy") or {}).get("rollingUpdate") or {}
        _, unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas)
        if (spec_of(dep).get("strategy") or {}).get("type") == "Recreate":
            unavailable = replicas
        if available >= replicas - unavailable:
            set_condition(status, "Available", "True", "MinimumReplicasAvailable",
                          "Deployment has minimum availability.", stamp, probe=False)
        else:
            set_condition(status, "Available", "False", "MinimumReplicasUnavailable",
                          "Deployment does not have minimum availability.", stamp, probe=False)
        name = md(current).get("name")
        done = (len(active[md(current).get("uid", "")]) == replicas and available >= replicas
                and all(not active[md(rs).get("uid", "")] for rs in old))
        if done:
            set_condition(status, "Progressing", "True", "NewReplicaSetAvailable",
                          f'ReplicaSet "{name}" has successfully progressed.', stamp, probe=False)
        elif not any(c.get("type") == "Progressing" and c.get("reason") == "NewReplicaSetCreated"
                     and str(name) in str(c.get("message")) for c in status.get("conditions") or []):
            set_condition(status, "Progressing", "True", "ReplicaSetUpdated",
                          f'ReplicaSet "{name}" is progressing.', stamp, probe=False)
        status["conditions"] = sorted(status.get("conditions") or [],
                                      key=lambda c: {"Available": 0, "Progressing": 1}.get(str(c.get("type")), 2))
        return status

