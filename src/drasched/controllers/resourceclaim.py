"""The ResourceClaim controller: claims from templates, release, deallocation, group claims.

A port of upstream's ``pkg/controller/resourceclaim`` for drasched, plus the PodGroup
side of KEP-5729 ("ResourceClaim support for workloads"):

* **Claims from templates.** For every pod entry with ``resourceClaimTemplateName`` a
  claim owned by the pod (controller, blockOwnerDeletion) and annotated
  ``resource.kubernetes.io/pod-claim-name`` is adopted if it exists (we may have crashed
  after creating it) or created; its name goes to ``pod.status.resourceClaimStatuses``.
* **Release.** A consumer in ``status.reservedFor`` that is gone, replaced, done, or (for
  a PodGroup) being deleted with no live pod left is removed; when nothing is left the
  allocation is cleared and the delete-protection finalizer removed. Claims generated
  for a pod are deleted once that pod is done or gone.
* **Group claims.** A PodGroup's ``spec.resourceClaims`` (at most 4) get one claim per
  template, owned by the group; a pod entry that is its group's claim (docs/design.md,
  "Group claims") uses that claim, reserved for the group as ONE consumer. A finalizer keeps the
  group while it holds an allocated claim.

Never is a consumer that may still run removed: a bound pod that is being deleted keeps
its reservation until its kubelet finishes it, and a pod that is not in the cache is
checked against the API before its entry goes. The controller talks to the store only
through the ``ClusterStore`` contract, so ``drasched serve`` can run it unchanged.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.meta import format_time, owner_reference
from drasched.control import ControllerContext
from drasched.controllers.claimutil import (
    DELETE_PROTECTION_FINALIZER,
    GROUP_CLAIM_FINALIZER,
    MAX_RESERVED_FOR,
    POD_CLAIM_ANNOTATION,
    PODGROUP_CLAIM_ANNOTATION,
    ClaimNotCreated,
    consumer_ref,
    controller_owner_uid,
    done_reason,
    generate_name,
    group_claim_problems,
    group_entry_for,
    is_allocated,
    is_group_ref,
    is_pod_ref,
    is_reserved_for,
    owned_by,
    pod_claim_name,
    pod_group_name,
    pod_is_done,
    reserved_for,
    status_claim_names,
)
from drasched.store.base import ClusterStore
from drasched.store.informer import Informer

Obj = dict[str, Any]

CLAIMS_VALID_CONDITION = "ResourceClaimsValid"
"""PodGroup condition: False when its ``spec.resourceClaims`` cannot be used."""

_BY_GROUP_RESOURCE = {(rt.group, rt.plural): rt for rt in kinds.ALL}


def _md(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _ns(obj: Obj) -> str:
    return _md(obj).get("namespace") or ""


def _name(obj: Obj) -> str:
    return _md(obj).get("name") or ""


def _uid(obj: Obj) -> str:
    return _md(obj).get("uid") or ""


def _ref(obj: Obj) -> str:
    return f"{obj.get('kind')} {_ns(obj)}/{_name(obj)}"


class ResourceClaimController:
    """Level-triggered: each pass looks at every cached pod, PodGroup and claim.

    Informers keep the caches current from the store's watch, and a pass runs only when
    something changed or the previous pass wrote, so an idle cluster costs nothing.
    """

    name = "resourceclaim-controller"

    def __init__(self, *, workers: int = 1, batch: int = 0, resync: float | None = None) -> None:
        self.workers = workers
        self.batch = batch
        """With ``workers``: at most this many pods get their claims in one pass, oldest first
        (0: all). The scheduler, next in the same thread, can place the first of a burst
        while the rest still wait for theirs."""
        self._more = False
        self._queued: set[str] = set()
        """Uids of the pods of a burst left for the next passes (see :meth:`queued`)."""
        self.resync = resync
        """``drasched serve``: seconds between whole passes while no new pod needs a claim
        (None: a whole pass on every change, as embedded). In a busy cluster something
        changes every few milliseconds (the binder's own writes), and a whole pass over
        thousands of pods and claims each time cost more CPU than everything else; new pods
        still get their claims at once, releases and deletions wait at most this long."""
        self._last_pass: float | None = None
        self._dirty = False
        """Pods whose claims are created at once (``drasched serve``: each is a create and a pod
        status write, round trips that one after another cap the pass at the server's latency;
        embedded: 1, in order, so a run is deterministic)."""
        self._pool: ThreadPoolExecutor | None = None
        self._quiet_pods: dict[str, tuple[Obj | None, ...]] = {}
        self._quiet_claims: dict[str, tuple[Obj | None, ...]] = {}
        """By uid: the inputs (by identity) with which the last pass found nothing to do."""
        self._store: ClusterStore | None = None
        self._again = True
        self._warned: dict[tuple[str, str], str] = {}

    # ---- driving ---------------------------------------------------------------------------
    def _attach(self, store: ClusterStore) -> None:
        if self._store is store:
            return
        self._store = store
        self.pods = Informer(store, kinds.POD)
        self.claims = Informer(store, kinds.RESOURCE_CLAIM)
        self.templates = Informer(store, kinds.RESOURCE_CLAIM_TEMPLATE)
        self.groups = Informer(store, kinds.POD_GROUP)
        self._again = True
        self._warned.clear()

    def reconcile(self, ctx: ControllerContext) -> bool:
        """One pass; True when it wrote anything (the runner then calls again)."""
        self._attach(ctx.store)
        changed = [inf.sync() for inf in (self.pods, self.claims, self.templates, self.groups)]
        new_pods = self._new_pods_changed()
        if not any(changed) and not self._again and not self._dirty:
            return False
        if self.resync is not None and self._last_pass is not None and not self._again and not new_pods:
            wait = self._last_pass + self.resync - time.monotonic()
            if wait > 0:  # nothing new to create: the whole pass comes at the end of the period
                self._dirty = True
                ctx.wake_at(ctx.now() + timedelta(seconds=wait))
                return False
        self._last_pass, self._dirty = time.monotonic(), False
        self.ctx = ctx
        self.store = ctx.store
        self._index()
        progress = False
        for group in list(self.groups.values()):
            progress |= self._guarded(self._sync_group, group)
        progress |= self._sync_pods([p for p in self.pods.values() if (p.get("spec") or {}).get("resourceClaims")])
        quiet, self._quiet_claims = self._quiet_claims, {}
        for claim in list(self.claims.values()):
            progress |= self._unless_quiet(quiet, self._quiet_claims, self._sync_claim, claim,
                                           self._claim_inputs(claim))
        self._again = progress or self._more
        return progress

    def _new_pods_changed(self) -> bool:
        """Whether a pod that changed since the last look has a template claim to create."""
        keys = self.pods.take_changed()
        if keys is None:
            return True
        for ns, name in keys:
            pod = self.pods.get(name, ns)
            if pod is not None and _unrecorded_template_entry(pod):
                return True
        return False

    def _sync_pods(self, pods: list[Obj]) -> bool:
        """The pod pass.

        With ``workers``, pods with a template entry not yet recorded in their status (a
        claim to create: all the writes of a busy cluster) are synced side by side, each
        touching only its own claims; the pass waits for them, so the scheduler, next in
        the same thread, sees the whole burst's claims at once and places it in one cycle
        (handing them over piecemeal measured slower: many small cycles cost more than a
        few large ones).
        """
        quiet, self._quiet_pods = self._quiet_pods, {}
        self._queued = set()
        new: list[Obj] = []
        settled: list[Obj] = []
        for p in pods:
            (new if _unrecorded_template_entry(p) else settled).append(p)
        progress = any([self._unless_quiet(quiet, self._quiet_pods, self._sync_pod, p, self._pod_inputs(p))
                        for p in settled])
        if self.workers <= 1 or len(new) <= 1:
            return any([self._guarded(self._sync_pod, p) for p in new]) or progress
        self._more = 0 < self.batch < len(new)
        if self._more:
            new.sort(key=lambda p: (_md(p).get("creationTimestamp") or "", _ns(p), _name(p)))
            new, later = new[:self.batch], new[self.batch:]
            self._queued = {_uid(p) for p in later}
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="claim-controller")
        return any(list(self._pool.map(lambda p: self._guarded(self._sync_pod, p), new))) or progress

    def _unless_quiet(self, last: dict[str, tuple[Obj | None, ...]], now: dict[str, tuple[Obj | None, ...]],
                      sync: Callable[[Obj], bool], obj: Obj, inputs: tuple[Obj | None, ...]) -> bool:
        """``sync(obj)``, skipped when the last pass found nothing to do with the very same inputs.

        Informers replace an object on every change and never mutate one, so "the same
        objects" (by identity) means "nothing changed": a pass over thousands of settled
        pods and claims costs a few comparisons each instead of a sync each.
        """
        uid = _uid(obj)
        before = last.get(uid)
        if before is not None and len(before) == len(inputs) and all(a is b for a, b in zip(before, inputs)):
            now[uid] = inputs
            return False
        wrote = self._guarded(sync, obj)
        if not wrote:
            now[uid] = inputs
        return wrote

    def _pod_inputs(self, pod: Obj) -> tuple[Obj | None, ...]:
        """What ``_sync_pod`` reads for a pod whose template claims are recorded: the pod,
        its group, its claims and its group's (a pod with an entry still to create is never
        skipped)."""
        ns = _ns(pod)
        group = self._group_of(pod)
        names = [n for n in status_claim_names(pod).values() if n]
        if group is not None:
            names += [n for n in status_claim_names(group).values() if n]
        return (pod, group, *[self.claims.get(n, ns) for n in names])

    def _claim_inputs(self, claim: Obj) -> tuple[Obj | None, ...]:
        """What ``_sync_claim`` reads: the claim, the pods it is reserved for, its controlling
        owner. A claim reserved for anything but pods is never skipped (whether a group still
        holds it depends on all of the group's pods)."""
        ns = _ns(claim)
        inputs: list[Obj | None] = [claim]
        for ref in reserved_for(claim):
            if not is_pod_ref(ref):
                return (*inputs, {})  # a new object each pass: never the same inputs
            inputs.append(self.pods.get(str(ref.get("name", "")), ns))
        for ref in _md(claim).get("ownerReferences") or []:
            if ref.get("controller"):
                name = str(ref.get("name", ""))
                inputs.append(self.pods.get(name, ns) if ref.get("kind") == "Pod" else self.groups.get(name, ns))
        return tuple(inputs)

    def queued(self, pod_uid: str) -> bool:
        """Whether this pod's claims come in a later pass of the current burst (serve mode)."""
        return pod_uid in self._queued

    def close(self) -> None:
        """Stop the workers (serve mode)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _guarded(self, sync: Callable[[Obj], bool], obj: Obj) -> bool:
        """One object's trouble (a refused write, an API error) never stops the others."""
        try:
            return sync(obj)
        except ApiError as exc:
            self._warn_once(obj, "ResourceClaimControllerError", f"{exc.message}; will retry when something changes")
            return False

    def _index(self) -> None:
        """Per-pass lookups: claims by controlling owner, groups with live pods or held claims."""
        self._claims_by_owner: dict[str, list[Obj]] = {}
        self._group_holds: set[str] = set()
        for claim in self.claims.values():
            owner = controller_owner_uid(claim)
            if owner:
                self._claims_by_owner.setdefault(owner, []).append(claim)
            if is_allocated(claim):
                self._group_holds.update(r.get("uid", "") for r in reserved_for(claim) if is_group_ref(r))
        self._live_groups: set[tuple[str, str]] = set()
        for pod in self.pods.values():
            group = pod_group_name(pod)
            if group and not pod_is_done(pod):
                self._live_groups.add((_ns(pod), group))

    # ---- small write helpers -----------------------------------------------------------------
    def _event(self, obj: Obj, etype: str, reason: str, message: str) -> None:
        self.ctx.event(obj, etype, reason, message, component=self.name)

    def _warn_once(self, obj: Obj, reason: str, message: str) -> None:
        """A Warning event, repeated only when the message changes (retries stay quiet)."""
        key = (_uid(obj), reason)
        if self._warned.get(key) == message:
            return
        self._warned[key] = message
        self._event(obj, "Warning", reason, message)
        self.ctx.decide(self.name, reason, obj, message)

    def _put_claim(self, claim: Obj | None, name: str, namespace: str) -> None:
        md = _md(claim) if claim else {}
        if claim is None or (md.get("deletionTimestamp") and not md.get("finalizers")):
            self.claims.forget(name, namespace)
        else:
            self.claims.put(claim)

    def _conflict(self, obj: Obj, exc: ApiError) -> bool:
        """Our copy was stale: re-read on the next pass and decide again."""
        self.ctx.decide(self.name, "retry", obj, f"{exc.message}; re-reading")
        self._again = True
        return True

    # ---- PodGroups -----------------------------------------------------------------------------
    def _sync_group(self, group: Obj) -> bool:
        md = _md(group)
        if md.get("deletionTimestamp"):
            return self._maybe_drop_group_finalizer(group)
        progress = False
        problems = group_claim_problems(group)
        status = copy.deepcopy(group.get("status") or {})
        self._set_claims_condition(group, status, problems)
        statuses = status_claim_names(group)
        if not problems:
            for entry in (group.get("spec") or {}).get("resourceClaims") or []:
                if not entry.get("resourceClaimTemplateName"):
                    continue
                name, wrote = self._ensure_generated_claim(group, entry, statuses.get(entry["name"]))
                progress |= wrote
                if name:
                    statuses[entry["name"]] = name
            status["resourceClaimStatuses"] = _statuses_list(group, statuses)
            if not status["resourceClaimStatuses"]:
                del status["resourceClaimStatuses"]
        if status != (group.get("status") or {}):
            new = copy.deepcopy(group)
            new["status"] = status
            try:
                group = self.store.update_status(new)
            except Conflict as exc:
                return self._conflict(group, exc)
            except NotFound:
                return progress
            self.groups.put(group)
            progress = True
        return self._ensure_group_finalizer(group) or progress

    def _set_claims_condition(self, group: Obj, status: Obj, problems: list[str]) -> None:
        conds = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        current = next((c for c in conds if c.get("type") == CLAIMS_VALID_CONDITION), None)
        if problems:
            message = "; ".join(problems)
            want = {"type": CLAIMS_VALID_CONDITION, "status": "False",
                    "reason": "TooManyResourceClaims" if "Too many" in message else "InvalidResourceClaims",
                    "message": message}
            self._warn_once(group, "InvalidResourceClaims", message)
        elif current is not None and current.get("status") != "True":
            want = {"type": CLAIMS_VALID_CONDITION, "status": "True", "reason": "Valid",
                    "message": "every entry of spec.resourceClaims can be used"}
        else:
            return
        if current is not None and all(current.get(k) == v for k, v in want.items()):
            return
        want["lastTransitionTime"] = format_time(self.ctx.now())
        status["conditions"] = [c for c in conds if c.get("type") != CLAIMS_VALID_CONDITION] + [want]

    def _ensure_group_finalizer(self, group: Obj) -> bool:
        """Hold the group while an allocated claim is reserved for it; let go once released."""
        finalizers = list(_md(group).get("finalizers") or [])
        holds = _uid(group) in self._group_holds
        if holds == (GROUP_CLAIM_FINALIZER in finalizers):
            return False
        new = copy.deepcopy(group)
        if holds:
            new["metadata"]["finalizers"] = [*finalizers, GROUP_CLAIM_FINALIZER]
            message = "holds an allocated group claim"
        else:
            new["metadata"]["finalizers"] = [f for f in finalizers if f != GROUP_CLAIM_FINALIZER]
            message = "no longer holds an allocated claim"
        try:
            updated = self.store.update(new)
        except Conflict as exc:
            return self._conflict(group, exc)
        except NotFound:
            return False
        self.groups.put(updated)
        self.ctx.decide(self.name, "add-finalizer" if holds else "remove-finalizer", group,
                        f"{GROUP_CLAIM_FINALIZER}: {message}")
        return True

    def _maybe_drop_group_finalizer(self, group: Obj) -> bool:
        """A deleting group goes once its claims are released (after its last pod is done)."""
        if GROUP_CLAIM_FINALIZER not in (_md(group).get("finalizers") or []):
            return False
        if _uid(group) in self._group_holds:
            return False
        new = copy.deepcopy(group)
        new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != GROUP_CLAIM_FINALIZER]
        try:
            updated = self.store.update(new)
        except Conflict as exc:
            return self._conflict(group, exc)
        except NotFound:
            return False
        if _md(updated).get("finalizers") or not _md(updated).get("deletionTimestamp"):
            self.groups.put(updated)
        else:
            self.groups.forget(_name(group), _ns(group))
        self.ctx.decide(self.name, "remove-finalizer", group,
                        f"{GROUP_CLAIM_FINALIZER}: group is being deleted and holds no allocated claim")
        return True

    # ---- pods ----------------------------------------------------------------------------------
    def _sync_pod(self, pod: Obj) -> bool:
        if pod_is_done(pod) or _md(pod).get("deletionTimestamp"):
            return False  # nothing to create; the claim pass releases what it held
        group = self._group_of(pod)
        statuses = status_claim_names(pod)
        wanted = dict(statuses)
        progress = False
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            gentry = group_entry_for(entry, group)
            if gentry is not None:
                if entry.get("resourceClaimTemplateName") and group is not None:
                    gname = status_claim_names(group).get(entry["name"])
                    if gname and self.claims.get(gname, _ns(pod)) is not None:
                        wanted[entry["name"]] = gname
                continue
            if not entry.get("resourceClaimTemplateName"):
                continue
            name, wrote = self._ensure_generated_claim(pod, entry, statuses.get(entry["name"]))
            progress |= wrote
            if name:
                wanted[entry["name"]] = name
        if wanted != statuses:
            try:
                pod = self.store.patch(kinds.POD, _name(pod), _ns(pod),
                                       {"status": {"resourceClaimStatuses": _statuses_list(pod, wanted)}},
                                       subresource="status")
            except NotFound:
                return progress
            self.pods.put(pod)
            self.ctx.decide(self.name, "record-claims", pod,
                            ", ".join(f"{k}={v}" for k, v in sorted(wanted.items()) if statuses.get(k) != v))
            progress = True
        if (pod.get("spec") or {}).get("nodeName"):
            progress |= self._reserve_for_bound_pod(pod, group)
        return progress

    def _group_of(self, obj: Obj) -> Obj | None:
        name = pod_group_name(obj)
        return self.groups.get(name, _ns(obj)) if name else None

    def _ensure_generated_claim(self, owner: Obj, entry: Obj, recorded: str | None) -> tuple[str | None, bool]:
        """The claim of one template entry of a pod or PodGroup: kept, adopted or created.

        Returns (claim name or None when it cannot be made now, whether we wrote).
        """
        ns = _ns(owner)
        if recorded:
            claim = self.claims.get(recorded, ns)
            if claim is not None and owned_by(claim, owner):
                return recorded, False
        annotation = POD_CLAIM_ANNOTATION if owner.get("kind") == "Pod" else PODGROUP_CLAIM_ANNOTATION
        for claim in self._claims_by_owner.get(_uid(owner), []):
            if (_md(claim).get("annotations") or {}).get(annotation) == entry["name"] \
                    and not _md(claim).get("deletionTimestamp"):
                message = (f"adopted ResourceClaim {_name(claim)} for entry {entry['name']}: owned by this "
                           f"{owner.get('kind')} and annotated {annotation}={entry['name']}")
                self._event(owner, "Normal", "AdoptedResourceClaim", message)
                self.ctx.decide(self.name, "adopt", claim, message)
                return _name(claim), True
        template_name = entry["resourceClaimTemplateName"]
        template = self.templates.get(template_name, ns)
        if template is None:
            self._warn_once(owner, "FailedResourceClaimCreation",
                            f"PodResourceClaim {entry['name']}: resource claim template {template_name!r}: "
                            f'{kinds.RESOURCE_CLAIM_TEMPLATE.group_resource} "{template_name}" not found')
            return None, False
        tmeta = ((template.get("spec") or {}).get("metadata")) or {}
        annotations = dict(tmeta.get("annotations") or {})
        annotations[annotation] = entry["name"]
        metadata: Obj = {
            "generateName": generate_name(_name(owner), entry["name"]),
            "namespace": ns,
            "annotations": annotations,
            "ownerReferences": [owner_reference(owner, controller=True, block_owner_deletion=True)],
        }
        if tmeta.get("labels"):
            metadata["labels"] = dict(tmeta["labels"])
        claim = {
            "apiVersion": kinds.RESOURCE_CLAIM.api_version,
            "kind": kinds.RESOURCE_CLAIM.kind,
            "metadata": metadata,
            "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {}),
        }
        try:
            created = self.store.create(claim)
        except ApiError as exc:
            self._warn_once(owner, "FailedResourceClaimCreation",
                            f"PodResourceClaim {entry['name']}: create ResourceClaim from template "
                            f"{template_name!r}: {exc.message}")
            return None, False
        self.claims.put(created)
        self._claims_by_owner.setdefault(_uid(owner), []).append(created)
        message = f"created ResourceClaim {_name(created)} from template {template_name} for entry {entry['name']}"
        self.ctx.decide(self.name, "create", created, message)
        return _name(created), True

    def _reserve_for_bound_pod(self, pod: Obj, group: Obj | None) -> bool:
        """A pod bound without our scheduler (spec.nodeName set by hand) still gets its
        allocated claims reserved, as upstream ``syncPod``/``reserveForPod`` does."""
        progress = False
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            try:
                name, _ = pod_claim_name(pod, entry)
            except ClaimNotCreated:
                continue
            claim = self.claims.get(name, _ns(pod)) if name else None
            if claim is None or not is_allocated(claim) or _md(claim).get("deletionTimestamp"):
                continue
            consumer: Obj = pod
            if group_entry_for(entry, group) is not None and group is not None:
                if _md(group).get("deletionTimestamp"):
                    continue
                consumer = group
            if is_reserved_for(claim, _uid(consumer)) or (group is not None and is_reserved_for(claim, _uid(group))):
                continue  # a reservation for the pod's group covers its pods (KEP-5729)
            if len(reserved_for(claim)) >= MAX_RESERVED_FOR:
                self._warn_once(pod, "ResourceClaimReservedForFull",
                                f"ResourceClaim {name} is already reserved for {MAX_RESERVED_FOR} consumers, "
                                "the most status.reservedFor holds; to share one claim with more pods, list it "
                                "in their PodGroup's spec.resourceClaims so it is reserved for the group")
                continue
            new = copy.deepcopy(claim)
            new.setdefault("status", {})["reservedFor"] = [*reserved_for(claim), consumer_ref(consumer)]
            try:
                updated = self.store.update_status(new)
            except Conflict as exc:
                return self._conflict(claim, exc)
            except NotFound:
                continue
            self.claims.put(updated)
            self.ctx.decide(self.name, "reserve", claim, f"reserved for {_ref(consumer)} (bound to "
                                                         f"{pod['spec']['nodeName']})")
            progress = True
        return progress

    # ---- claims --------------------------------------------------------------------------------
    def _sync_claim(self, claim: Obj) -> bool:
        reserved = reserved_for(claim)
        keep: list[Obj] = []
        released: list[tuple[Obj, str]] = []
        for ref in reserved:
            why = self._why_release(claim, ref)
            if why is None:
                keep.append(ref)
            else:
                released.append((ref, why))
        progress = False
        if released:
            new = copy.deepcopy(claim)
            status = new.setdefault("status", {})
            if keep:
                status["reservedFor"] = keep
            else:
                status.pop("reservedFor", None)
            deallocate = not keep and "allocation" in status
            if deallocate:
                # Free the devices for the next cycle (upstream: "deallocate as soon as
                # the last consumer stops using it"); device status goes with them.
                status.pop("allocation", None)
                status.pop("devices", None)
            try:
                claim = self.store.update_status(new)
            except Conflict as exc:
                return self._conflict(claim, exc)
            except NotFound:
                self.claims.forget(_name(claim), _ns(claim))
                return False
            self.claims.put(claim)
            for ref, why in released:
                message = f"released for {_consumer_text(ref)}: {why}"
                self._event(claim, "Normal", "Released", message)
                self.ctx.decide(self.name, "release", claim, message)
            if deallocate:
                message = "deallocated: no consumer left in status.reservedFor"
                self._event(claim, "Normal", "Deallocated", message)
                self.ctx.decide(self.name, "deallocate", claim, message)
            progress = True
            if not keep and not is_allocated(claim):
                progress |= self._drop_claim_finalizer(claim)
        elif not keep and _md(claim).get("deletionTimestamp") \
                and DELETE_PROTECTION_FINALIZER in (_md(claim).get("finalizers") or []):
            # Deleted while unused: clear a leftover allocation, then unblock removal (upstream).
            if is_allocated(claim):
                new = copy.deepcopy(claim)
                new["status"].pop("allocation", None)
                new["status"].pop("devices", None)
                try:
                    claim = self.store.update_status(new)
                except Conflict as exc:
                    return self._conflict(claim, exc)
                except NotFound:
                    self.claims.forget(_name(claim), _ns(claim))
                    return False
                self.claims.put(claim)
                message = "deallocated: the claim is being deleted and no consumer is left"
                self._event(claim, "Normal", "Deallocated", message)
                self.ctx.decide(self.name, "deallocate", claim, message)
                progress = True
            progress |= self._drop_claim_finalizer(claim)
        if not keep:
            current = self.claims.get(_name(claim), _ns(claim))
            if current is not None:
                progress |= self._delete_if_owner_done(current)
        return progress

    def _why_release(self, claim: Obj, ref: Obj) -> str | None:
        """Why a ``reservedFor`` entry can go, or None while its consumer may still use it."""
        ns = _ns(claim)
        if is_pod_ref(ref):
            pod = self.pods.get(ref.get("name", ""), ns) or self._confirm(kinds.POD, ref.get("name", ""), ns)
            if pod is None:
                return "pod is gone"
            if _uid(pod) != ref.get("uid"):
                return "pod was replaced by a new one with the same name"
            if pod_is_done(pod):
                return done_reason(pod)
            return None
        if is_group_ref(ref):
            group = self.groups.get(ref.get("name", ""), ns) \
                or self._confirm(kinds.POD_GROUP, ref.get("name", ""), ns)
            if group is None:
                return "PodGroup is gone (orphaned reservation)"
            if _uid(group) != ref.get("uid"):
                return "PodGroup was replaced by a new one with the same name (orphaned reservation)"
            if _md(group).get("deletionTimestamp") and (ns, _name(group)) not in self._live_groups:
                return "PodGroup is being deleted and none of its pods runs any more"
            return None
        rt = _BY_GROUP_RESOURCE.get((ref.get("apiGroup") or "", ref.get("resource") or ""))
        if rt is None:
            self._warn_once(claim, "UnknownConsumer",
                            f"cannot check consumer {_consumer_text(ref)}: drasched does not know "
                            f"{ref.get('resource')}.{ref.get('apiGroup')}; keeping the reservation")
            return None
        obj = self._confirm(rt, ref.get("name", ""), ns if rt.namespaced else None)
        if obj is None:
            return f"{rt.kind} is gone (orphaned reservation)"
        if _uid(obj) != ref.get("uid"):
            return f"{rt.kind} was replaced by a new one with the same name (orphaned reservation)"
        return None

    def _confirm(self, rt: kinds.ResourceType, name: str, namespace: str | None) -> Obj | None:
        """Ask the API itself before treating a consumer as gone: a cache may lag."""
        try:
            return self.store.get(rt, name, namespace)
        except NotFound:
            return None

    def _drop_claim_finalizer(self, claim: Obj) -> bool:
        """The delete-protection finalizer only guards an allocation; none is left."""
        finalizers = _md(claim).get("finalizers") or []
        if DELETE_PROTECTION_FINALIZER not in finalizers:
            return False
        new = copy.deepcopy(claim)
        new["metadata"]["finalizers"] = [f for f in finalizers if f != DELETE_PROTECTION_FINALIZER]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        try:
            updated = self.store.update(new)
        except Conflict as exc:
            return self._conflict(claim, exc)
        except NotFound:
            self.claims.forget(_name(claim), _ns(claim))
            return False
        self._put_claim(updated, _name(claim), _ns(claim))
        self.ctx.decide(self.name, "remove-finalizer", claim, f"{DELETE_PROTECTION_FINALIZER}: not allocated")
        return True

    def _delete_if_owner_done(self, claim: Obj) -> bool:
        """Delete a generated claim whose pod is done or gone, or whose PodGroup is gone.

        Upstream leaves a vanished owner to the garbage collector; we also cover it so a
        cluster without kube-controller-manager does not leak claims.
        """
        if _md(claim).get("deletionTimestamp"):
            return False
        owner = next((r for r in _md(claim).get("ownerReferences") or [] if r.get("controller")), None)
        if owner is None:
            return False
        ns = _ns(claim)
        reason: str | None = None
        if owner.get("apiVersion") == "v1" and owner.get("kind") == "Pod":
            pod = self.pods.get(owner.get("name", ""), ns) or self._confirm(kinds.POD, owner.get("name", ""), ns)
            if pod is None:
                reason = f"its pod {ns}/{owner.get('name')} is gone"
            elif _uid(pod) != owner.get("uid"):
                reason = f"its pod {ns}/{owner.get('name')} was replaced"
            elif pod_is_done(pod):
                reason = f"its pod {ns}/{owner.get('name')} is done ({done_reason(pod)})"
        elif owner.get("apiVersion") == kinds.POD_GROUP.api_version and owner.get("kind") == kinds.POD_GROUP.kind:
            group = self.groups.get(owner.get("name", ""), ns) \
                or self._confirm(kinds.POD_GROUP, owner.get("name", ""), ns)
            if group is None or _uid(group) != owner.get("uid"):
                reason = f"its PodGroup {ns}/{owner.get('name')} is gone"
        if reason is None:
            return False
        try:
            left = self.store.delete(kinds.RESOURCE_CLAIM, _name(claim), ns, uid=_uid(claim))
        except Conflict as exc:
            return self._conflict(claim, exc)
        except NotFound:
            self.claims.forget(_name(claim), ns)
            return False
        self._put_claim(left, _name(claim), ns)
        message = f"deleted ResourceClaim {_name(claim)}: {reason}"
        self._event(claim, "Normal", "DeletedResourceClaim", message)
        self.ctx.decide(self.name, "delete", claim, message)
        return True


def _unrecorded_template_entry(pod: Obj) -> bool:
    """Whether a live pod has a template entry that its status does not name a claim for yet."""
    if pod_is_done(pod) or _md(pod).get("deletionTimestamp"):
        return False
    recorded = status_claim_names(pod)
    return any(e.get("resourceClaimTemplateName") and not recorded.get(e.get("name", ""))
               for e in (pod.get("spec") or {}).get("resourceClaims") or [])


def _statuses_list(owner: Obj, names: dict[str, str | None]) -> list[Obj]:
    """``resourceClaimStatuses`` in spec order, then entries we do not know (kept as found)."""
    order = [e.get("name") for e in (owner.get("spec") or {}).get("resourceClaims") or [] if isinstance(e, dict)]
    out: list[Obj] = []
    for key in [*[n for n in order if n in names], *sorted(k for k in names if k not in order)]:
        item: Obj = {"name": key}
        if names[key]:
            item["resourceClaimName"] = names[key]
        out.append(item)
    return out


def _consumer_text(ref: Obj) -> str:
    if is_pod_ref(ref):
        return f"pod {ref.get('name')}"
    if is_group_ref(ref):
        return f"PodGroup {ref.get('name')}"
    return f"{ref.get('resource')}.{ref.get('apiGroup')} {ref.get('name')}"
