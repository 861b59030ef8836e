"""The embedded API store: the semantics of a kube-apiserver we rely on, in memory.

Deterministic (seeded names and uids, injectable clock) so ``drasched simulate`` gives
byte-identical output for the same input. Contract: ``drasched.store.base.ClusterStore``.

Stored objects are never changed in place: a write stores a new object (copy on write), so
the watch history can hand every watcher the stored version itself (see
:mod:`drasched.store.watchlog`) and a new version may share unchanged parts with the old.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from drasched.api import disruption, kinds, validation
from drasched.api.decode import decode_object
from drasched.api.defaults import apply_builtin_defaults, apply_crd_defaults, default_taint_times
from drasched.api.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    NotFound,
    TooManyRequests,
    invalid,
)
from drasched.api.errors import Cause as _Cause
from drasched.api.job_strategy import prepare_job_for_create
from drasched.api.kinds import ResourceType
from drasched.api.meta import format_time
from drasched.api.selectors import field_selector_matches, label_selector_matches
from drasched.api.validation import gang
from drasched.api.validation.admin_access import admin_access_causes, admin_access_status_causes
from drasched.api.workload_defaults import prepare_daemon_set
from drasched.store import pod_admission
from drasched.store.base import ListResult, Obj, WatchEvent
from drasched.store.watchlog import SharedObjectMutated, WatchLog, mutation_text, object_json
from drasched.store.wire import clone, tree_copy

# k8s.io/apimachinery/pkg/util/rand: no vowels and no confusable digits.
GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATE_NAME_PREFIX = 58  # 63 - 5 random characters
_Key = tuple[ResourceType, str, str]
_UUID_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID_SET = (0x8000 << 48) | (4 << 76)
"""The RFC 4122 variant and version 4 bits, as ``uuid.UUID(version=4)`` sets them."""


def _epoch_clock() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


class MemoryStore:
    """An in-process API store. Not thread-safe: one simulation drives it."""

    def __init__(
        self,
        clock: Callable[[], datetime] | None = None,
        seed: int = 0,
        history_limit: int = 1_000_000,
        auto_namespaces: bool = False,
    ) -> None:
        self._objects: dict[_Key, Obj] = {}
        self._kinds: dict[ResourceType, dict[_Key, Obj]] = {}
        """The same objects by kind (creation order), so reading one kind never scans the others."""
        self._uids: dict[str, _Key] = {}
        self._dependents: dict[str, dict[_Key, None]] = {}
        """Owner uid -> keys of the objects whose ownerReferences name it (garbage collection)."""
        self._rv = 0
        self._history = WatchLog(history_limit)
        self._stored_json: dict[_Key, bytes] = {}
        """With the history's check on: each stored object's JSON, to catch a watcher changing it."""
        self._clock = clock or _epoch_clock
        self._rand = random.Random(seed)
        self._now_cache: tuple[datetime | None, str] = (None, "")
        self._now_raw: datetime | None = None
        self.auto_namespaces = auto_namespaces

    # ---- helpers -------------------------------------------------------------------------
    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _uid(self) -> str:
        """A random (version 4) UUID from the seeded generator: ``uuid.UUID(int=..., version=4)``
        written out by hand, the same text at half the cost (a uid on every create)."""
        n = (self._rand.getrandbits(128) & _UUID_CLEAR) | _UUID_SET
        h = f"{n:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def _record(self, rt: ResourceType, etype: Any, obj: Obj) -> None:
        """Add an event; ``obj`` is shared with the watchers, so it must not change after this."""
        json = self._history.record(self._rv, rt, etype, obj)
        if json is not None and etype != "DELETED":
            md = obj["metadata"]
            self._stored_json[self._key(rt, md["name"], md.get("namespace"))] = json

    def _check_stored(self, key: _Key, obj: Obj) -> None:
        """With the history's check on: fail if someone changed a stored object in place."""
        want = self._stored_json.pop(key, None)
        if want is not None and object_json(obj) != want:
            raise SharedObjectMutated(f"{key[0].kind} {key[1]}/{key[2]} was changed in place after it was stored: "
                                      + mutation_text(want, object_json(obj)))

    def _put(self, key: _Key, obj: Obj) -> None:
        """Store ``obj`` under ``key`` (a new key goes last; a replaced one keeps its place)."""
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        if old is not None and self._history.checking:
            self._check_stored(key, old)
        self._objects[key] = obj
        self._kinds.setdefault(key[0], {})[key] = obj
        md = obj.get("metadata") or {}
        if md.get("uid"):
            self._uids[md["uid"]] = key
        for r in md.get("ownerReferences") or []:
            if r.get("uid"):
                self._dependents.setdefault(r["uid"], {})[key] = None

    def _drop(self, key: _Key) -> Obj:
        obj = self._objects.pop(key)
        self._kinds[key[0]].pop(key, None)
        self._unindex(key, obj)
        if self._history.checking:
            self._check_stored(key, obj)
        return obj

    def _unindex(self, key: _Key, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        if md.get("uid") and self._uids.get(md["uid"]) == key:
            del self._uids[md["uid"]]
        for r in md.get("ownerReferences") or []:
            deps = self._dependents.get(r.get("uid") or "")
            if deps is not None:
                deps.pop(key, None)
                if not deps:
                    del self._dependents[r["uid"]]

    def _now_text(self) -> str:
        """The clock's time as metav1.Time text; formatted once per second the clock shows
        (every write stamps it, and an embedded run's virtual clock stands still for many)."""
        raw = self._clock()
        if raw is self._now_raw:  # a virtual clock hands out one object until it moves
            return self._now_cache[1]
        self._now_raw = raw
        now = raw.replace(microsecond=0)
        if now != self._now_cache[0]:
            self._now_cache = (now, format_time(now))
        return self._now_cache[1]

    def _key(self, rt: ResourceType, name: str, namespace: str | None) -> _Key:
        return (rt, (namespace or "") if rt.namespaced else "", name)

    def _not_found(self, rt: ResourceType, name: str) -> NotFound:
        return NotFound(f'{rt.group_resource} "{name}" not found', rt.kind, name)

    def _require(self, rt: ResourceType, name: str, namespace: str | None) -> Obj:
        obj = self._objects.get(self._key(rt, name, namespace))
        if obj is None:
            raise self._not_found(rt, name)
        return obj

    def _check_namespace(self, rt: ResourceType, namespace: str | None) -> None:
        if not rt.namespaced:
            return
        if not namespace:
            raise BadRequest(f"the namespace of the provided object ({rt.kind}) is missing")
        if (kinds.NAMESPACE, "", namespace) in self._objects:
            return
        if self.auto_namespaces:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            return
        raise NotFound(f'namespaces "{namespace}" not found', "Namespace", namespace)

    # ---- contract ------------------------------------------------------------------------
    def create(self, obj: Obj) -> Obj:
        rt = kinds.for_object(obj)
        obj = _decoded_copy(obj, rt)
        md = obj.setdefault("metadata", {})
        if not isinstance(md, dict):
            raise invalid(validation.qualified_kind(rt), "", [_Cause("metadata", "Invalid value: must be an object")])
        if not rt.namespaced:
            md.pop("namespace", None)
        elif not md.get("namespace"):
            md["namespace"] = "default"
        # admission sees the request, before a generated name exists (upstream names the prefix)
        admission_name = str(md.get("name") or md.get("generateName") or "Unknown")
        if not md.get("name") and md.get("generateName"):
            prefix = md["generateName"][:MAX_GENERATE_NAME_PREFIX]
            for _ in range(16):
                name = prefix + "".join(self._rand.choice(GENERATE_NAME_ALPHABET) for _ in range(5))
                if self._key(rt, name, md.get("namespace")) not in self._objects:
                    break
            md["name"] = name
        if rt.group == kinds.DRASCHED:  # an upstream PodGroup shares the kind's name, not its schema
            apply_crd_defaults(rt.kind, obj)
        apply_builtin_defaults(rt.kind, obj)
        default_taint_times(rt.kind, obj, self._now_text())
        admitted = rt is kinds.POD and isinstance(obj.get("spec"), dict)
        if admitted:  # the mutating admission plugins, in the server's order: before validation
            self._admit_priority(obj, admission_name)
            pod_admission.admit_pod(obj["spec"], admission_name, self._runtime_class)
        elif rt is kinds.UPSTREAM_POD_GROUP:
            gang.default_pod_group(obj)
            self._admit_group_priority(obj, admission_name)
        validation.validate(obj, rt)
        self._check_namespace(rt, md.get("namespace"))
        self._authorize_admin_access(rt, obj, admin_access_causes(obj, rt, self._namespace_of(obj)))
        if admitted:  # the validating ones: after validation
            pod_admission.validate_runtime_class(obj["spec"], admission_name, self._runtime_class)
        key = self._key(rt, md["name"], md.get("namespace"))
        if key in self._objects:
            raise AlreadyExists(f'{rt.group_resource} "{md["name"]}" already exists', rt.kind, md["name"])
        md.setdefault("uid", self._uid())
        if rt is kinds.JOB:  # the Job's selector and template labels come from its uid
            prepare_job_for_create(obj)
        elif rt is kinds.DAEMON_SET:
            prepare_daemon_set(obj, None)
        md.setdefault("creationTimestamp", self._now_text())
        md.pop("deletionTimestamp", None)
        md.pop("selfLink", None)
        if (rt.group and rt is not kinds.RUNTIME_CLASS) or rt is kinds.POD:  # its strategy sets none
            md.setdefault("generation", 1)
        md["resourceVersion"] = self._next_rv()
        _reset_status_on_create(rt, obj)
        if rt is kinds.POD:
            _scheduling_gated_condition(obj, self._now_text())
        if rt is kinds.PRIORITY_CLASS:
            self._admit_default_priority_class(obj)
        self._put(key, obj)
        self._record(rt, "ADDED", obj)
        return clone(obj)

    def restore(self, obj: Obj) -> Obj:
        """Create ``obj`` with the status it carries, as a backup/restore tool writes it:
        create, then the status subresource (create alone resets status as the server does)."""
        created = self.create(obj)
        if obj.get("status") and created.get("status") != obj["status"]:
            created["status"] = obj["status"]
            created = self.update_status(created)
        return created

    def _admit_priority(self, pod: Obj, pod_name: str) -> None:
        """The Priority admission plugin: resolve priorityClassName into spec.priority.

        A named class must exist (else 403, as the server answers); without a name the
        globalDefault class applies, else priority 0.
        """
        spec = pod.setdefault("spec", {})
        name = spec.get("priorityClassName")
        pc = self._priority_class(name)
        if name and pc is None:
            raise Forbidden(f'pods "{pod_name}" is forbidden: no PriorityClass with name {name} was found',
                            "Pod", pod_name)
        if not name and pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
        priority = int(pc.get("value", 0)) if pc is not None else 0
        policy = (pc.get("preemptionPolicy") if pc is not None else None) or "PreemptLowerPriority"
        if spec.get("priority") is not None and spec["priority"] != priority:
            raise Forbidden(f'pods "{pod_name}" is forbidden: the integer value of priority ({spec["priority"]}) '
                            "must not be provided in pod spec; priority admission controller computed "
                            f"{priority} from the given PriorityClass name", "Pod", pod_name)
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise Forbidden(f'pods "{pod_name}" is forbidden: the string value of PreemptionPolicy '
                            f'({spec["preemptionPolicy"]}) must not be provided in pod spec; priority admission '
                            f"controller computed {policy} from the given PriorityClass name", "Pod", pod_name)
        spec["priority"] = priority
        spec["preemptionPolicy"] = policy

    def _priority_class(self, name: str | None) -> Obj | None:
        """The class named, or with no name the globalDefault one (the lowest value if a race made
        several), as the Priority admission plugin finds it; None for a name that does not exist."""
        if name:
            return self._objects.get((kinds.PRIORITY_CLASS, "", name)) or _SYSTEM_PRIORITY_CLASSES.get(name)
        defaults = [o for o in self.iter_kind(kinds.PRIORITY_CLASS) if o.get("globalDefault")]
        return min(defaults, key=lambda o: (int(o.get("value", 0)), o["metadata"]["name"])) if defaults else None

    def _admit_group_priority(self, group: Obj, group_name: str) -> None:
        """The Priority admission plugin on an upstream PodGroup (1.37): as on a pod, in its own words."""
        spec = group.get("spec")
        if not isinstance(spec, dict):
            spec = group["spec"] = {}
        name = spec.get("priorityClassName")
        pc = self._priority_class(name)
        what = f'{kinds.UPSTREAM_POD_GROUP.group_resource} "{group_name}" is forbidden'
        if name and pc is None:
            raise Forbidden(f"{what}: no PriorityClass with name {name} was found", "PodGroup", group_name)
        if not name and pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
        priority = int(pc.get("value", 0)) if pc is not None else 0
        if spec.get("priority") is not None and spec["priority"] != priority:
            raise Forbidden(f"{what}: priority set in the pod group ({spec['priority']}) must match the priority "
                            f"computed ({priority}) based on the priority class set in the spec", "PodGroup",
                            group_name)
        spec["priority"] = priority

    def _runtime_class(self, name: str) -> Obj | None:
        return self._objects.get((kinds.RUNTIME_CLASS, "", name))

    def _namespace_of(self, obj: Obj) -> Obj | None:
        return self._objects.get(self._key(kinds.NAMESPACE, str((obj.get("metadata") or {}).get("namespace")), None))

    @staticmethod
    def _authorize_admin_access(rt: ResourceType, obj: Obj, causes: list[_Cause]) -> None:
        """The resource strategies' namespace check for admin access (422, as validation)."""
        if causes:
            raise invalid(validation.qualified_kind(rt), obj["metadata"].get("name", ""), causes)

    def _admit_default_priority_class(self, pc: Obj) -> None:
        """The Priority admission plugin's other half: at most one globalDefault class."""
        if not pc.get("globalDefault"):
            return
        name = pc["metadata"]["name"]
        for other in self.iter_kind(kinds.PRIORITY_CLASS):
            if other.get("globalDefault") and other["metadata"]["name"] != name:
                raise Forbidden(f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: PriorityClass '
                                f'{other["metadata"]["name"]} is already marked as default. Only one default can exist',
                                "PriorityClass", name)

    def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj:
        return clone(self._require(rt, name, namespace))

    def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ListResult:
        items = [
            clone(o)
            for (_, ns, _), o in sorted(self._kinds.get(rt, {}).items(), key=lambda kv: (kv[0][1], kv[0][2]))
            if (not namespace or not rt.namespaced or ns == namespace)
            and label_selector_matches(label_selector, (o.get("metadata") or {}).get("labels"))
            and field_selector_matches(field_selector, o)
        ]
        return ListResult(items, str(self._rv))

    def list_shared(self, rt: ResourceType) -> ListResult:
        """Every object of ``rt`` as stored, without copies, for a reader that never mutates
        them (the scheduler cache): the store replaces an object on each change, never edits it."""
        items = [o for _, o in sorted(self._kinds.get(rt, {}).items(), key=lambda kv: (kv[0][1], kv[0][2]))]
        return ListResult(items, str(self._rv))

    def _write(self, obj: Obj, status_only: bool, stored: frozenset[str] = frozenset()) -> Obj:
        """``stored``: top-level fields of ``obj`` that are the stored object's own (a merge
        patch left them alone), already decoded and never changed by a status write."""
        rt = kinds.for_object(obj)
        obj = _decoded_copy(obj, rt, stored)
        md = obj.get("metadata") or {}
        name, namespace = md.get("name", ""), md.get("namespace")
        current = self._require(rt, name, namespace)
        want_rv = md.get("resourceVersion")
        if want_rv and want_rv != current["metadata"]["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {rt.group_resource} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
                rt.kind,
                name,
            )
        uid = md.get("uid")
        if uid and uid != current["metadata"]["uid"]:
            raise Conflict(f'Precondition failed: UID in precondition: {uid}, UID in object meta: '
                           f'{current["metadata"]["uid"]}', rt.kind, name)
        new = obj  # already this call's own copy
        if status_only:
            # Status writes change status alone (ResetObjectMetaForStatus upstream).
            if not rt.has_status:
                raise NotFound(f"the server could not find the requested resource ({rt.plural}/status)")
            # the stored spec is shared, not copied: stored objects never change in place
            merged = dict(current)
            merged["metadata"] = dict(current["metadata"])
            if rt is kinds.POD:
                # A pod's status write keeps metadata changes (no ResetObjectMetaForStatus upstream).
                for field in ("labels", "annotations"):
                    if field in new.get("metadata", {}):
                        merged["metadata"][field] = new["metadata"][field]
                    else:
                        merged["metadata"].pop(field, None)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            if rt is kinds.POD:
                _keep_dra_pod_status(merged, current)
            new = merged
            validation.validate_status(new, rt)
            validation.validate_status_update(current, new, rt)
            if rt is kinds.RESOURCE_CLAIM:
                self._authorize_admin_access(rt, new, admin_access_status_causes(new, current, self._namespace_of(new)))
        else:
            # Spec writes keep the stored status; server-owned metadata is preserved.
            if rt.has_status:
                if "status" in current:
                    new["status"] = current["status"]  # shared, as above
                else:
                    new.pop("status", None)
            nmd = new.setdefault("metadata", {})
            for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                          "namespace", "generation"):
                if field in current["metadata"]:
                    nmd[field] = current["metadata"][field]
                else:
                    nmd.pop(field, None)
            if rt.group == kinds.DRASCHED:
                apply_crd_defaults(rt.kind, new)
            apply_builtin_defaults(rt.kind, new)
            default_taint_times(rt.kind, new, self._now_text(), current)
            if rt is kinds.POD and isinstance(new.get("spec"), dict):
                pod_admission.default_toleration_seconds(new["spec"])  # it admits updates too
            if rt is kinds.DAEMON_SET:
                prepare_daemon_set(new, current)
            validation.validate(new, rt)
            validation.validate_update(current, new, rt)
            if rt is kinds.PRIORITY_CLASS:
                self._admit_default_priority_class(new)
            if new.get("spec") != current.get("spec") and "generation" in nmd:
                nmd["generation"] = int(nmd["generation"]) + 1
        new["metadata"]["resourceVersion"] = self._next_rv()
        key = self._key(rt, name, namespace)
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") \
                and not _awaits_graceful_termination(rt, new):
            self._drop(key)
            self._record(rt, "DELETED", new)
            self._collect_garbage(new)
            return clone(new)
        self._put(key, new)
        self._record(rt, "MODIFIED", new)
        return clone(new)

    def update(self, obj: Obj) -> Obj:
        return self._write(obj, status_only=False)

    def update_status(self, obj: Obj) -> Obj:
        return self._write(obj, status_only=True)

    def patch(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None,
        patch: Obj,
        subresource: str | None = None,
    ) -> Obj:
        current = self._require(rt, name, namespace)
        if subresource not in (None, "status"):
            raise BadRequest(f"unsupported subresource {subresource!r}")
        merged = _merge_uncopied(current, patch)
        want_rv = ((patch.get("metadata") or {}).get("resourceVersion"))
        rv = want_rv or current["metadata"]["resourceVersion"]
        merged["metadata"] = {**merged["metadata"], "resourceVersion": rv}
        if subresource != "status":
            return self._write(merged, status_only=False)
        untouched = frozenset(k for k, v in current.items()
                              if k not in patch and k not in ("metadata", "status") and merged.get(k) is v)
        return self._write(merged, status_only=True, stored=untouched)

    def delete(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Obj | None:
        current = self._require(rt, name, namespace)
        cmd = current["metadata"]
        if uid and uid != cmd["uid"]:
            raise Conflict(f'Operation cannot be fulfilled on {rt.kind} "{name}": the UID in the precondition '
                           f"({uid}) does not match the UID in record ({cmd['uid']}). The object might have "
                           "been deleted and then recreated", rt.kind, name)
        if resource_version and resource_version != cmd["resourceVersion"]:
            raise Conflict(f'Operation cannot be fulfilled on {rt.kind} "{name}": the ResourceVersion in the '
                           f"precondition ({resource_version}) does not match the ResourceVersion in record "
                           f"({cmd['resourceVersion']}). The object might have been modified", rt.kind, name)
        key = self._key(rt, name, namespace)
        graceful = _graceful_seconds(rt, current, grace_period_seconds)
        if cmd.get("finalizers") or graceful:
            # Finalizers or a graceful pod termination keep the object, marked as deleting.
            if not cmd.get("deletionTimestamp"):
                current = clone(current)  # a new version, not an edit: list_shared readers hold the old one
                cmd = current["metadata"]
                self._put(key, current)
                # the deadline: now + grace period (now for finalizer-only waits)
                cmd["deletionTimestamp"] = format_time(self._clock() + timedelta(seconds=graceful))
                if rt is kinds.POD:
                    cmd["deletionGracePeriodSeconds"] = graceful
                    if graceful and "generation" in cmd:
                        cmd["generation"] = int(cmd["generation"]) + 1
                cmd["resourceVersion"] = self._next_rv()
                self._record(rt, "MODIFIED", current)
            return clone(current)
        self._drop(key)
        current = clone(current)  # the last version, not an edit of the one list_shared readers hold
        current["metadata"]["resourceVersion"] = self._next_rv()
        self._record(rt, "DELETED", current)
        if rt is kinds.NAMESPACE:
            for k in [k for k in self._objects if k[1] == name and k[0].namespaced]:
                gone = clone(self._drop(k))
                gone["metadata"]["resourceVersion"] = self._next_rv()
                self._record(k[0], "DELETED", gone)
        self._collect_garbage(current)
        return None

    def bind(self, namespace: str, pod_name: str, node_name: str, pod_uid: str | None = None) -> None:
        pod = self._require(kinds.POD, pod_name, namespace)
        if pod_uid and pod["metadata"]["uid"] != pod_uid:
            raise Conflict(f'Operation cannot be fulfilled on pods/binding "{pod_name}": precondition '
                           "failed: UID mismatch", "Pod", pod_name)
        if pod["metadata"].get("deletionTimestamp"):
            raise Conflict(f'Operation cannot be fulfilled on pods/binding "{pod_name}": pod {pod_name} '
                           "is being deleted, cannot be assigned to a host", "Pod", pod_name)
        current_node = (pod.get("spec") or {}).get("nodeName")
        if current_node:
            raise Conflict(f'Operation cannot be fulfilled on pods/binding "{pod_name}": pod {pod_name} '
                           f"is already assigned to node \"{current_node}\"", "Pod", pod_name)
        new = clone(pod)
        new["spec"]["nodeName"] = node_name
        status = new.setdefault("status", {})
        # Kubernetes 1.35+ (ClearingNominatedNodeNameAfterBinding, beta, on by default): the
        # binding clears the nomination (pkg/registry/core/pod/storage/storage.go setPodNodeAndMetadata).
        status.pop("nominatedNodeName", None)
        conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                      "lastTransitionTime": self._now_text()})
        status["conditions"] = conds
        new["metadata"]["resourceVersion"] = self._next_rv()
        self._put(self._key(kinds.POD, pod_name, namespace), new)
        self._record(kinds.POD, "MODIFIED", new)

    def evict(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        """The eviction subresource: the pod's PodDisruptionBudget, computed from the pods
        themselves (``drasched.api.disruption``: no disruption controller runs here)."""
        pod = self._require(kinds.POD, name, namespace)
        if uid and uid != pod["metadata"]["uid"]:
            raise Conflict(f'Operation cannot be fulfilled on Pod "{name}": the UID in the precondition ({uid}) '
                           f"does not match the UID in record ({pod['metadata']['uid']}). The object might have "
                           "been deleted and then recreated", "Pod", name)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if not pod["metadata"].get("deletionTimestamp") and phase not in ("Pending", "Succeeded", "Failed"):
            pdbs = [b for b in self.iter_kind(kinds.POD_DISRUPTION_BUDGET) if disruption.selects(b, pod)]
            if len(pdbs) > 1:
                raise ApiError("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                               "does not support.", 500, "InternalError", "Pod", name)
            if pdbs:
                pods = [o for o in self.iter_kind(kinds.POD) if o["metadata"].get("namespace") == namespace]
                b = disruption.budget(pdbs[0], pods)
                if not b.permits(disruption.is_healthy(pod)):
                    raise TooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.",
                                          "Pod", name, [_Cause("", b.refusal(), "DisruptionBudget")])
        self._mark_evicted(pod, namespace, name)
        self.delete(kinds.POD, name, namespace, uid=uid)

    def _mark_evicted(self, pod: Obj, namespace: str, name: str) -> None:
        """The condition the eviction API writes before it deletes (upstream eviction.go
        ``addConditionAndDeletePod``): ``DisruptionTarget=True``, reason ``EvictionByEvictionAPI``,
        replacing one already there (``podutil.UpdatePodCondition``)."""
        cond = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                "lastTransitionTime": self._now_text(), "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting"}
        conds = list((pod.get("status") or {}).get("conditions") or [])
        for i, c in enumerate(conds):
            if c.get("type") == "DisruptionTarget":
                if c.get("status") == "True":
                    cond["lastTransitionTime"] = c.get("lastTransitionTime")
                if {k: c.get(k) for k in ("status", "reason", "message")} == \
                        {k: cond[k] for k in ("status", "reason", "message")}:
                    return
                conds[i] = cond
                break
        else:
            conds.append(cond)
        new = clone(pod)
        new.setdefault("status", {})["conditions"] = conds
        new["metadata"]["resourceVersion"] = self._next_rv()
        self._put(self._key(kinds.POD, name, namespace), new)
        self._record(kinds.POD, "MODIFIED", new)

    def watch(
        self,
        rt: ResourceType,
        resource_version: str,
        namespace: str | None = None,
        timeout_seconds: float = 1.0,
    ) -> Iterator[WatchEvent]:
        """Events after ``resource_version``. Unlike every other read, the objects are not the
        caller's own: each event's object is shared by every watcher and must not be mutated
        (see :mod:`drasched.store.watchlog`)."""
        since = int(resource_version or 0)
        if since < self._history.floor:
            raise Gone(f"too old resource version: {since} ({self._history.floor + 1})")
        yield from self._history.events_after(rt, since, namespace)

    def close(self) -> None:
        pass

    # ---- embedded-only helpers -------------------------------------------------------------
    @property
    def resource_version(self) -> str:
        return str(self._rv)

    def compact(self) -> None:
        """Forget the watch history (as etcd compaction would): older watches get Gone."""
        self._history.compact(self._rv)

    def all_objects(self) -> builtins.list[Obj]:
        """Every stored object, in dependency-then-name order."""
        ordered = sorted(self._objects.items(), key=lambda kv: (kinds.order_index(kv[0][0]), kv[0][1], kv[0][2]))
        return [clone(o) for _, o in ordered]

    def peek(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj | None:
        """The stored object itself, without a copy; callers must not mutate it."""
        return self._objects.get(self._key(rt, name, namespace))

    def iter_kind(self, rt: ResourceType) -> Iterator[Obj]:
        """Stored objects of one kind without copies; callers must not mutate them."""
        yield from list(self._kinds.get(rt, {}).values())

    def _collect_garbage(self, owner: Obj) -> None:
        """Background GC: delete dependents whose every owner is gone."""
        owner_uid = owner["metadata"].get("uid")
        for t, ns, name in list(self._dependents.get(owner_uid or "", {})):
            o = self._objects.get((t, ns, name))
            if o is None:
                continue
            refs = (o.get("metadata") or {}).get("ownerReferences") or []
            if all(not self._uid_exists(r.get("uid")) for r in refs):
                self.delete(t, name, ns or None, grace_period_seconds=0 if t is kinds.POD else None)

    def _uid_exists(self, uid: str | None) -> bool:
        return bool(uid) and uid in self._uids


def _decoded_copy(obj: Obj, rt: ResourceType, stored: frozenset[str] = frozenset()) -> Obj:
    """The store's own copy of a request body, decoded as the API server decodes it: a
    wrongly typed field is refused here (400, or 422 for a CRD) before anything reads it.

    The top-level fields named in ``stored`` are the stored object's (decoded when it was
    written, never changed in place): they are neither copied nor decoded again.
    """
    if stored:
        body = _decoded_copy({k: v for k, v in obj.items() if k not in stored}, rt)
        own = {k: obj[k] if k in stored else body[k] for k in obj if k in stored or k in body}
        own.update((k, v) for k, v in body.items() if k not in own)  # a key the decoder renamed
        return own
    try:
        own = tree_copy(obj)
    except RecursionError:
        raise BadRequest(f"{rt.kind} in version \"{rt.version}\" cannot be handled as a {rt.kind}: "
                         "nested too deeply", rt.kind) from None
    decode_object(own, rt)
    return own


def _merge_uncopied(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch (``drasched.api.meta.merge_patch``) without copying anything: the
    result shares what the patch leaves alone with the stored object, and the patch's own
    values, and the write tree-copies it before anything changes it."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = _merge_uncopied(result.get(k), v)
    return result


POD_DRA_STATUS_FIELDS = ("resourceClaimStatuses", "extendedResourceClaimStatus", "nodeAllocatableResourceClaimStatuses")


def _keep_dra_pod_status(new: Obj, current: Obj) -> None:
    """1.37's ``podStatusStrategy.PrepareForUpdate``: a pods/status write that leaves out (or
    nulls) a DRA status field keeps the stored one, so old clients cannot strip it; an empty
    list still clears a list field."""
    old = current.get("status") or {}
    for field in POD_DRA_STATUS_FIELDS:
        if (new.get("status") or {}).get(field) is None and old.get(field) is not None:
            new.setdefault("status", {})[field] = clone(old[field])


def _graceful_seconds(rt: ResourceType, obj: Obj, requested: int | None) -> int:
    """Pods on a node end gracefully (the kubelet finishes the delete); others go at once."""
    if rt is not kinds.POD:
        return 0
    if not (obj.get("spec") or {}).get("nodeName"):
        return 0
    if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return requested
    return int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))


def _awaits_graceful_termination(rt: ResourceType, obj: Obj) -> bool:
    return rt is kinds.POD and bool(obj["metadata"].get("deletionGracePeriodSeconds"))


_SYSTEM_PRIORITY_CLASSES: dict[str, Obj] = {
    "system-cluster-critical": {"metadata": {"name": "system-cluster-critical"}, "value": 2000000000},
    "system-node-critical": {"metadata": {"name": "system-node-critical"}, "value": 2000001000},
}


def _reset_status_on_create(rt: ResourceType, obj: Obj) -> None:
    """What the server's create strategies do with a status sent on create.

    Nodes keep it (a kubelet registers its node with status); pods start Pending; claims
    start with an empty status; everything else with a status subresource starts without.
    """
    if rt is kinds.POD:
        obj.pop("status", None)
        _default_pod(obj)
    elif rt is kinds.RESOURCE_CLAIM:
        obj["status"] = {}
    elif rt.has_status and rt is not kinds.NODE:
        obj.pop("status", None)


def _scheduling_gated_condition(pod: Obj, now: str) -> None:
    """The pod create strategy's ``applySchedulingGatedCondition`` (pkg/registry/core/pod/strategy.go):
    a new pod with ``spec.schedulingGates`` gets ``PodScheduled=False``, reason ``SchedulingGated``
    (what ``kubectl get`` shows as its STATUS) from the API server, not from a scheduler."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not spec.get("schedulingGates"):
        return
    status = pod.setdefault("status", {})
    conds = status.setdefault("conditions", [])
    if any(isinstance(c, dict) and c.get("type") == "PodScheduled" for c in conds):
        return
    conds.append({"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                  "message": "Scheduling is blocked due to non-empty scheduling gates",
                  "lastProbeTime": None, "lastTransitionTime": now})


def _default_pod(pod: Obj) -> None:
    """The defaults the API server applies to a new pod that our logic reads."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
