"""The ResourceClaim controller: claims from templates, release, deallocation, group claims.

A port of upstream's ``pkg/controller/resourceclaim`` for drasched, plus the PodGroup
side of KEP-5729 ("ResourceClaim support for workloads"). As upstream it is a keyed work
queue: watch deltas of pods, claims, templates and PodGroups enqueue the keys they
concern (``pod:ns/name``, ``claim:ns/name``, and ``group:ns/name`` for PodGroups), and one
sync handles one key; a failed sync is retried with per-key exponential backoff. What to
write is decided by the pure functions of :mod:`~drasched.controllers.claimdecisions`;
this module reads the caches, calls them, and writes.

* **Claims from templates** (``pod:``). For every pod entry with
  ``resourceClaimTemplateName`` a claim owned by the pod (``controller``, as upstream)
  and annotated ``resource.kubernetes.io/pod-claim-name`` is adopted if it exists (we may
  have crashed after creating it) or created; its name goes to
  ``pod.status.resourceClaimStatuses``. A pod bound without our scheduler gets its
  allocated claims reserved.
* **Release** (``claim:``). A consumer in ``status.reservedFor`` that is gone, replaced,
  done, or (for a PodGroup) being deleted with no live pod left is removed; when nothing
  is left the allocation is cleared and the delete-protection finalizer removed. Claims
  generated for a pod are deleted once that pod is done or gone: such a claim, or one being
  deleted, with no consumer left, is deleted and loses the finalizer with no release or
  deallocation write first (the deletion makes them moot). One whose owner is gone is left
  to the garbage collector for ``collector_grace`` seconds (serve), then deleted anyway.
* **Group claims** (``group:``). A PodGroup's ``spec.resourceClaims`` (at most 4) get one
  claim per template, owned by the group; a pod entry that is its group's claim uses that
  claim, reserved for the group as ONE consumer. A finalizer keeps the group while it
  holds an allocated claim.
* **Upstream PodGroups** (``podgroup:``, upstream's own prefix), when the server serves the
  ``scheduling.k8s.io`` gang API (``upstream_groups``): as 1.37's controller with
  ``DRAWorkloadResourceClaims``, each template entry of the group gets one claim, made as
  ``handlePodGroupClaim`` makes it and named in the group's
  ``status.resourceClaimStatuses``; the group's pods (``spec.schedulingGroup``) use it; a
  reservation for the group is released, and the claim deleted, once the group is gone
  or being deleted with none of its pods running. No condition and no finalizer of ours.

Never is a consumer that may still run removed: a bound pod that is being deleted keeps
its reservation until its kubelet finishes it, and a pod that is not in the cache is
checked against the API before its entry goes. Events: only Warnings (upstream's
controller records ``FailedResourceClaimCreation`` and nothing Normal); what it did goes
to the decision record.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import timedelta
from typing import Any

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, Conflict, NotFound, TooManyRequests
from drasched.api.meta import format_time
from drasched.control import ControllerContext
from drasched.controllers.claimdecisions import (
    CLAIMS_VALID_CONDITION,
    claim_annotation,
    claim_from_template,
    claim_sync_idle,
    claims_condition,
    consumer_text,
    controller_owner,
    delete_reason,
    drops_finalizer,
    goes_without_release,
    group_finalizer_change,
    plan_owner_claims,
    plan_pod,
    plan_release,
    release_reason,
    statuses_list,
    without_finalizer,
)
from drasched.controllers.claimindex import ClaimControllerIndex, Key
from drasched.controllers.claimutil import (
    DELETE_PROTECTION_FINALIZER,
    GROUP_CLAIM_FINALIZER,
    MAX_RESERVED_FOR,
    group_claim_problems,
    is_group_ref,
    is_pod_ref,
    is_upstream_group_owner,
    is_upstream_group_ref,
    pod_group_name,
    pod_is_done,
    reserved_for,
    status_claim_names,
    upstream_group_name,
)
from drasched.controllers.workqueue import WorkQueue
from drasched.store.base import ClusterStore
from drasched.store.informer import Informer

Obj = dict[str, Any]

log = logging.getLogger(__name__)

__all__ = ["CLAIMS_VALID_CONDITION", "ResourceClaimController"]

_BY_GROUP_RESOURCE = {(rt.group, rt.plural): rt for rt in kinds.ALL}

POD, CLAIM, GROUP, UPSTREAM_GROUP = "pod:", "claim:", "group:", "podgroup:"
"""Key prefixes (upstream's ``podKeyPrefix``, ``claimKeyPrefix`` and ``podGroupKeyPrefix``, the
last for upstream PodGroups; ``group:`` for drasched's)."""


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


def _key(prefix: str, key: Key) -> str:
    return f"{prefix}{key[0]}/{key[1]}"


def _split(item: str) -> tuple[str, Key]:
    prefix, _, rest = item.partition(":")
    ns, _, name = rest.partition("/")
    return prefix + ":", (ns, name)


def _retriable(exc: ApiError) -> bool:
    """Worth a retry with backoff: the next try may well succeed (stale copy, overload)."""
    return isinstance(exc, (Conflict, AlreadyExists, TooManyRequests)) or exc.code >= 500


class _Retry(Exception):
    """A sync that must be tried again later (its key goes back with backoff)."""


class _LeftToCollector(Exception):
    """A claim whose owner is gone waits for the garbage collector (``collector_grace``)."""


class _UpstreamGroups:
    """The upstream PodGroups of every version read, as one informer.

    A server serves the gang API in one version (``serve`` names that one); the embedded store
    keeps each object in the version it was written in (v1beta1 or v1alpha2), so ``simulate``
    reads both. Where both versions hold a name the first wins, as in the scheduler's
    translation (:data:`drasched.scheduler.foreign_intake.TARGET_OF`)."""

    def __init__(self, store: ClusterStore, rts: tuple[kinds.ResourceType, ...]) -> None:
        self.rts = rts
        self._parts = [Informer(store, rt) for rt in rts]

    def sync(self) -> bool:
        return any([part.sync() for part in self._parts])  # every part, not the first that changed

    def take_changed(self) -> set[Key] | None:
        out: set[Key] = set()
        relisted = False
        for part in self._parts:
            changed = part.take_changed()
            if changed is None:
                relisted = True
            else:
                out |= changed
        return None if relisted else out

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        for part in self._parts:
            found = part.get(name, namespace)
            if found is not None:
                return found
        return None

    def values(self) -> Iterator[Obj]:
        """Every group that wins its name, in (namespace, name) order."""
        seen: dict[Key, Obj] = {}
        for part in self._parts:
            for obj in part.values():
                seen.setdefault((_ns(obj), _name(obj)), obj)
        for key in sorted(seen):
            yield seen[key]

    def rt_of(self, obj: Obj) -> kinds.ResourceType:
        """The version ``obj`` is kept in (what its writes go to)."""
        return next((rt for rt in self.rts if rt.api_version == obj.get("apiVersion")), self.rts[0])

    def put(self, obj: Obj) -> None:
        self._parts[self.rts.index(self.rt_of(obj))].put(obj)

    def forget(self, name: str, namespace: str | None = None) -> None:
        for part in self._parts:
            part.forget(name, namespace)


class ResourceClaimController:
    """A work queue fed by watch deltas; each round syncs the keys that are ready.

    ``workers`` > 1 (``drasched serve``): the pods of a round get their claims side by
    side (each sync touches only its own pod's claims; a create and a status write are
    round trips that one after another would cap a burst at the server's latency), at
    most ``batch`` of them (0: all), oldest first, so the scheduler can place the first of
    a burst while the rest wait (see :meth:`queued`). Claim keys run side by side too (each
    writes only its own claim). Embedded: one worker, keys in the order
    they were queued, so a run is deterministic.
    """

    name = "resourceclaim-controller"

    def __init__(self, *, workers: int = 1, batch: int = 0,
                 keys: Iterable[str] = (POD, GROUP, UPSTREAM_GROUP, CLAIM), name: str | None = None,
                 upstream_groups: kinds.ResourceType | tuple[kinds.ResourceType, ...] | None = None,
                 protect_on_create: bool = False, collector_grace: float = 0.0) -> None:
        self.workers = workers
        self.batch = batch
        self.protect_on_create = protect_on_create
        """Create claims from templates with the delete-protection finalizer already on (serve):
        the binder then has no finalizer write to make before the allocation, one write a claim
        fewer. Embedded keeps upstream's shape, a claim without it until it is allocated."""
        self.collector_grace = collector_grace
        """Seconds a generated claim whose owner is gone is left to the garbage collector
        before this controller deletes it itself (serve). Upstream's controller leaves such a
        claim to the collector for good; a cluster without kube-controller-manager has none,
        so after the grace it goes anyway. Meanwhile it is not released either: the
        collector's deletion, then the finalizer's removal, end it in two writes, where
        deleting it at once raced the collector (both deleted, and the losing write failed)."""
        self._orphaned_since: dict[Key, float] = {}
        """Claim -> when its owner was first found gone (see ``collector_grace``)."""
        self.upstream_rts: tuple[kinds.ResourceType, ...] = (
            () if upstream_groups is None else (upstream_groups,) if isinstance(upstream_groups, kinds.ResourceType)
            else tuple(upstream_groups))
        """The upstream PodGroup kind the server serves (``scheduling.k8s.io`` v1beta1 on 1.37,
        v1alpha2 on 1.36; the embedded store serves both, each object kept in its own), or none:
        such groups are then not read, as before the gang API."""
        self.watches = (kinds.POD, kinds.RESOURCE_CLAIM, kinds.RESOURCE_CLAIM_TEMPLATE, kinds.POD_GROUP,
                        *self.upstream_rts)
        """What wakes it in serve (the kinds it reads)."""
        self.keys = frozenset(keys)
        """Which keys this instance syncs (``POD``, ``GROUP``, ``UPSTREAM_GROUP``, ``CLAIM``):
        serve runs two, see :func:`split_claim_controller`; embedded one with all."""
        if name is not None:
            self.name = name
        self.queue: WorkQueue[str] = WorkQueue()
        self._queued_pods: dict[str, str] = {}
        """Uid -> key of each pod whose ``pod:`` key waits in the queue (see :meth:`queued`)."""
        self._queued_uid: dict[str, str] = {}
        """The other way round: key -> uid."""
        self._pool: ThreadPoolExecutor | None = None
        self._store: ClusterStore | None = None
        self._warned: dict[tuple[str, str], str] = {}
        self._looked_at: set[Key] | None = None
        """Pods :meth:`_enqueue_pod` looked at in the current pass over the watch deltas."""
        self._deleted: dict[Key, str] = {}
        """Claims this controller deleted (key -> uid) whose deletion the watch has not shown
        yet: a sync of the old copy meanwhile (a change we wrote just before the delete) would
        send the delete again."""

    # ---- driving ---------------------------------------------------------------------------
    def _attach(self, store: ClusterStore) -> None:
        if self._store is store:
            return
        self._store = store
        self.pods = Informer(store, kinds.POD)
        self.claims = Informer(store, kinds.RESOURCE_CLAIM)
        self.templates = Informer(store, kinds.RESOURCE_CLAIM_TEMPLATE)
        self.groups = Informer(store, kinds.POD_GROUP)
        self.upstream = _UpstreamGroups(store, self.upstream_rts) if self.upstream_rts else None
        self.index = ClaimControllerIndex()
        self.queue = WorkQueue()
        self._queued_pods.clear()
        self._queued_uid.clear()
        self._warned.clear()
        self._deleted.clear()

    def reconcile(self, ctx: ControllerContext) -> bool:
        """Enqueue what changed, then sync every key that is ready; True when it wrote."""
        self._attach(ctx.store)
        self.ctx = ctx
        self.store = ctx.store
        self._observe()
        now = ctx.now().timestamp()
        self.queue.promote(now)
        wrote = self._drain(now)
        ready_at = self.queue.next_ready_at()
        if ready_at is not None:
            ctx.wake_at(ctx.now() + timedelta(seconds=max(0.0, ready_at - now)))
        return wrote

    def queued(self, pod_uid: str) -> bool:
        """Whether this pod's claims are still to come: its key waits in the queue (serve)."""
        return pod_uid in self._queued_pods

    def close(self) -> None:
        """Stop the workers (serve mode)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    # ---- event handlers: watch deltas -> keys ------------------------------------------------
    def _changed(self, informer: Informer | _UpstreamGroups,
                 known: Callable[[], set[Key]]) -> list[tuple[Key, Obj | None]]:
        """(key, current object or None) for what changed, sorted (deterministic queue order)."""
        keys = informer.take_changed()
        if keys is None:  # first list, or a relist: everything we cached or the store has
            keys = {(_ns(o), _name(o)) for o in informer.values()} | known()
        return [(k, informer.get(k[1], k[0])) for k in sorted(keys)]

    def _observe(self) -> None:
        for inf in (self.groups, self.upstream, self.templates, self.pods, self.claims):
            if inf is not None:
                inf.sync()
        self._looked_at = set()
        try:
            self._handle_changes()
        finally:
            self._looked_at = None

    def _handle_changes(self) -> None:
        idx = self.index
        groups = self._changed(self.groups, lambda: set(idx.group_uid))
        upstream = self._changed(self.upstream, lambda: set(idx.upstream_group_uid)) if self.upstream else []
        templates = self._changed(self.templates, set)
        pods = self._changed(self.pods, lambda: set(idx.pod_uid))
        claims = self._changed(self.claims, lambda: set(idx.claims_by_owner.of) | set(idx.claims_by_consumer.of))
        # First every index, then the keys: a handler reads the others' current state.
        group_before = [idx.put_group(k, g) for k, g in groups]
        upstream_before = [idx.put_upstream_group(k, g) for k, g in upstream]
        pod_before: list[tuple[str | None, frozenset[Key], frozenset[Key], frozenset[Key]]] = []
        for k, p in pods:
            pod_before.append((idx.pod_uid.get(k), idx.claims_of_pod(k), idx.pods_by_group.of.get(k, frozenset()),
                               idx.pods_by_upstream_group.of.get(k, frozenset())))
            idx.put_pod(k, p)
        claim_before: list[tuple[frozenset[str], frozenset[str], set[str]]] = []
        for k, c in claims:
            owner = idx.claims_by_owner.of.get(k, frozenset())
            consumers = idx.claims_by_consumer.of.get(k, frozenset())
            claim_before.append((owner, consumers, idx.put_claim(k, c)))
        for (k, g), old_uid in zip(groups, group_before, strict=True):
            self._on_group(k, g, old_uid)
        for (k, g), old_uid in zip(upstream, upstream_before, strict=True):
            self._on_upstream_group(k, g, old_uid)
        for k, _ in templates:
            self._on_template(k)
        for (k, p), pb in zip(pods, pod_before, strict=True):
            self._on_pod(k, p, *pb)
        for (k, c), cb in zip(claims, claim_before, strict=True):
            self._on_claim(k, c, *cb)

    def _add(self, item: str) -> None:
        if item[:item.index(":") + 1] in self.keys:
            self.queue.add(item)

    def _add_claims(self, keys: set[Key]) -> None:
        for k in sorted(keys):
            if self.claims.get(k[1], k[0]) is not None:
                self._add(_key(CLAIM, k))

    def _enqueue_pod(self, key: Key) -> None:
        """Upstream ``enqueuePod``'s second half: queue the pod if it needs work (``podNeedsWork``)."""
        if POD not in self.keys:
            return
        if self._looked_at is not None:
            # One look per pod in a pass: nothing it reads changes until the pass ends (a pod
            # and its claims often change together, and each change asks again).
            if key in self._looked_at:
                return
            self._looked_at.add(key)
        pod = self.pods.get(key[1], key[0])
        if pod is None or not (pod.get("spec") or {}).get("resourceClaims"):
            return
        if self._plan_pod(pod).needs_work(status_claim_names(pod)):
            item = _key(POD, key)
            old = self._queued_uid.get(item)
            if old is not None and old != _uid(pod):
                self._queued_pods.pop(old, None)
            self._queued_pods[_uid(pod)] = item
            self._queued_uid[item] = _uid(pod)
            self._add(item)

    def _on_pod(self, key: Key, pod: Obj | None, old_uid: str | None, old_claims: frozenset[Key],
                old_groups: frozenset[Key], old_upstream: frozenset[Key]) -> None:
        uid = _uid(pod) if pod is not None else None
        replaced = old_uid is not None and uid != old_uid
        if replaced and old_uid:
            self.index.note_deleted_pod(old_uid)
        if pod is None or replaced or pod_is_done(pod) or _md(pod).get("deletionTimestamp"):
            # Its claims may be released, deallocated or deleted now.
            idx = self.index
            claims = set(old_claims) | set(idx.claims_of_pod(key))
            for u in {old_uid, uid} - {None, ""}:
                claims |= idx.claims_by_consumer.keys_for(u) | idx.claims_by_owner.keys_for(u)
            for gkey in sorted(old_groups | idx.pods_by_group.of.get(key, frozenset())):
                guid = idx.group_uid.get(gkey)
                if guid and not idx.group_has_live_pods(*gkey):
                    claims |= idx.claims_by_consumer.keys_for(guid)
            for gkey in sorted(old_upstream | idx.pods_by_upstream_group.of.get(key, frozenset())):
                guid = idx.upstream_group_uid.get(gkey)
                if guid and not idx.upstream_group_has_live_pods(*gkey):  # a deleting group's claims may go
                    claims |= idx.claims_by_consumer.keys_for(guid) | idx.claims_by_owner.keys_for(guid)
            self._add_claims(claims)
        if pod is not None:
            self._enqueue_pod(key)

    def _on_claim(self, key: Key, claim: Obj | None, old_owner: frozenset[str], old_consumers: frozenset[str],
                  groups_changed: set[str]) -> None:
        idx = self.index
        if claim is None:
            self._deleted.pop(key, None)
            self._orphaned_since.pop(key, None)
        elif CLAIM in self.keys and not claim_sync_idle(claim, lambda name: self.pods.get(name, key[0])):
            # upstream checks every added or updated claim; one whose sync would find nothing
            # to do waits for its pods' events instead (claim_sync_idle)
            self._add(_key(CLAIM, key))
        for pod_key in sorted(idx.pods_by_claim.keys_for(key)):
            self._enqueue_pod(pod_key)
        owners = set(old_owner)
        owner_ref = controller_owner(claim) if claim is not None else None
        if owner_ref is not None and owner_ref.get("kind") == "Pod":
            self._enqueue_pod((key[0], str(owner_ref.get("name", ""))))
        elif owner_ref is not None:
            owners.add(str(owner_ref.get("uid", "")))
        for guid in sorted(owners | groups_changed):
            gkey = idx.group_by_uid.get(guid)
            if gkey is not None:
                self._add(_key(GROUP, gkey))
                if guid in owners:
                    for pod_key in sorted(idx.pods_by_group.keys_for(gkey)):
                        self._enqueue_pod(pod_key)
            ukey = idx.upstream_group_by_uid.get(guid)
            if ukey is not None and guid in owners:
                self._add(_key(UPSTREAM_GROUP, ukey))
                for pod_key in sorted(idx.pods_by_upstream_group.keys_for(ukey)):
                    self._enqueue_pod(pod_key)

    def _on_template(self, key: Key) -> None:
        for pod_key in sorted(self.index.pods_by_template.keys_for(key)):
            self._enqueue_pod(pod_key)
        for prefix, informer in ((GROUP, self.groups), (UPSTREAM_GROUP, self.upstream)):
            for group in informer.values() if informer is not None else ():
                if _ns(group) == key[0] and any(
                        isinstance(e, dict) and e.get("resourceClaimTemplateName") == key[1]
                        for e in (group.get("spec") or {}).get("resourceClaims") or []):
                    self._add(_key(prefix, (key[0], _name(group))))

    def _on_group(self, key: Key, group: Obj | None, old_uid: str | None) -> None:
        self._on_any_group(GROUP, self.index.pods_by_group.keys_for(key), key, group, old_uid)

    def _on_upstream_group(self, key: Key, group: Obj | None, old_uid: str | None) -> None:
        """Upstream ``enqueuePodGroup``; its claims too, which may be released or deleted now."""
        self._on_any_group(UPSTREAM_GROUP, self.index.pods_by_upstream_group.keys_for(key), key, group, old_uid)

    def _on_any_group(self, prefix: str, pods: set[Key], key: Key, group: Obj | None, old_uid: str | None) -> None:
        idx = self.index
        if group is not None:
            self._add(_key(prefix, key))
        for pod_key in sorted(pods):
            self._enqueue_pod(pod_key)
        claims: set[Key] = set()
        for u in {old_uid, _uid(group) if group is not None else None} - {None, ""}:
            claims |= idx.claims_by_consumer.keys_for(u) | idx.claims_by_owner.keys_for(u)
        self._add_claims(claims)

    # ---- workers ----------------------------------------------------------------------------
    def _drain(self, now: float) -> bool:
        items: list[str] = []
        while (item := self.queue.get()) is not None:
            items.append(item)
        if self.workers <= 1:
            return any([self._process(item, now) for item in items])
        groups = [i for i in items if i.startswith((GROUP, UPSTREAM_GROUP))]
        pods = [i for i in items if i.startswith(POD)]
        claims = [i for i in items if i.startswith(CLAIM)]
        later: list[str] = []
        if 0 < self.batch < len(pods):
            pods.sort(key=self._created)  # oldest first: a relist queues them by name
            pods, later = pods[:self.batch], pods[self.batch:]
        for item in later:  # served in a later round; the scheduler knows (queued())
            self.queue.done(item)
            self.queue.add(item)
        wrote = any([self._process(item, now) for item in groups]) or bool(later)
        wrote = self._process_all(pods, now) or wrote
        return self._process_all(claims, now) or wrote

    def _process_all(self, items: list[str], now: float) -> bool:
        """Sync ``items`` side by side and wait for every one of them.

        Not ``Executor.map``: when one call raises, it cancels the calls not yet started,
        and their keys, taken from the queue, would stay held forever (``done`` never
        called: the key is never handed out again) and their pods marked as waiting for
        this controller (:meth:`queued`), so the scheduler would never report them.
        """
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="claim-controller")
        futures = [self._pool.submit(self._process, item, now) for item in items]
        wait(futures)
        return any([f.result() for f in futures])

    def _created(self, item: str) -> tuple[str, str]:
        _, key = _split(item)
        pod = self.pods.get(key[1], key[0])
        return (_md(pod).get("creationTimestamp") or "" if pod is not None else "", item)

    def _process(self, item: str, now: float) -> bool:
        """Sync one key; on trouble put it back with backoff (upstream ``processNextWorkItem``)."""
        prefix, key = _split(item)
        sync = {POD: self._sync_pod, CLAIM: self._sync_claim, GROUP: self._sync_group,
                UPSTREAM_GROUP: self._sync_upstream_group}[prefix]
        if prefix == POD:
            self._queued_pods.pop(self._queued_uid.pop(item, ""), None)
        try:
            wrote = sync(key)
        except _Retry:
            self.queue.add_rate_limited(item, now)
            wrote = True
        except ApiError as exc:
            if _retriable(exc):
                self.queue.add_rate_limited(item, now)
                self._warn_once(item, key, "ResourceClaimControllerError", f"{exc.message}; retrying with backoff")
            else:  # retried when one of its objects changes
                self.queue.forget(item)
                self._warn_once(item, key, "ResourceClaimControllerError",
                                f"{exc.message}; will retry when something changes")
            wrote = False
        except Exception:
            # Any other failure (a write refused by serve's leadership fence while the Lease
            # cannot be renewed, a bug) is retried with backoff too, as upstream's
            # processNextWorkItem does for every error: a key dropped here would leave its
            # pod without claims and without a word until something else touches it.
            self.queue.add_rate_limited(item, now)
            if self.queue.backoff.failures(item) == 1:  # once per streak, not per retry
                log.exception("%s: sync of %s failed; retrying with backoff", self.name, item)
            wrote = False
        else:
            self.queue.forget(item)
        finally:
            self.queue.done(item)
        return wrote

    # ---- small helpers ---------------------------------------------------------------------
    def _plan_pod(self, pod: Obj) -> Any:
        ns = _ns(pod)
        group = self._group_of(pod)
        # upstream getPodGroup: a pod of an upstream PodGroup not (yet) there waits for it
        missing = group is None and self.upstream is not None and upstream_group_name(pod) is not None
        return plan_pod(pod, group, lambda n: self.claims.get(n, ns), self._owned(pod), group_missing=missing)

    def _owned(self, owner: Obj) -> list[Obj]:
        ns = _ns(owner)
        found = [self.claims.get(name, kns) for kns, name in self.index.owned_claims(_uid(owner)) if kns == ns]
        return [c for c in found if c is not None]

    def _group_of(self, obj: Obj) -> Obj | None:
        """The pod's drasched PodGroup, else (where served) the upstream one it names: drasched's
        own wins where both kinds use the name, as in the scheduler."""
        name = pod_group_name(obj)
        group = self.groups.get(name, _ns(obj)) if name else None
        upstream = upstream_group_name(obj) if group is None and self.upstream is not None else None
        return self.upstream.get(upstream, _ns(obj)) if upstream and self.upstream is not None else group

    def _event(self, obj: Obj, etype: str, reason: str, message: str) -> None:
        self.ctx.event(obj, etype, reason, message, component=self.name)

    def _warn_once(self, obj: Obj | str, key: Key, reason: str, message: str) -> None:
        """A Warning event, repeated only when the message changes (retries stay quiet)."""
        wkey = (_uid(obj) if isinstance(obj, dict) else obj, reason)
        if self._warned.get(wkey) == message:
            return
        self._warned[wkey] = message
        if isinstance(obj, str):
            prefix = obj.split(":", 1)[0] + ":"
            inf = {POD: self.pods, CLAIM: self.claims, GROUP: self.groups, UPSTREAM_GROUP: self.upstream}.get(prefix)
            found = inf.get(key[1], key[0]) if inf is not None else None
            if found is None:
                self.ctx.decide(self.name, reason, obj, message)
                return
            obj = found
        self._event(obj, "Warning", reason, message)
        self.ctx.decide(self.name, reason, obj, message)

    def _put_claim(self, claim: Obj | None, name: str, namespace: str) -> None:
        md = _md(claim) if claim else {}
        if claim is None or (md.get("deletionTimestamp") and not md.get("finalizers")):
            self.claims.forget(name, namespace)
        else:
            self.claims.put(claim)

    def _pod(self, name: str, namespace: str, uid: str) -> Obj | None:
        """The pod of that name as the cache has it; else, unless we saw the pod with ``uid``
        go (no need to ask then), as the API server has it."""
        pod = self.pods.get(name, namespace)
        if pod is not None or self.index.pod_was_deleted(uid):
            return pod
        return self._confirm(kinds.POD, name, namespace)

    def _confirm(self, rt: kinds.ResourceType, name: str, namespace: str | None) -> Obj | None:
        """Ask the API itself before treating an object as gone: a cache may lag."""
        try:
            return self.store.get(rt, name, namespace)
        except NotFound:
            return None

    def _confirm_upstream(self, name: str, namespace: str) -> Obj | None:
        """:meth:`_confirm` for an upstream PodGroup, in each version read (the first that has it)."""
        for rt in self.upstream_rts:
            found = self._confirm(rt, name, namespace)
            if found is not None:
                return found
        return None

    def _conflict(self, obj: Obj, exc: ApiError) -> _Retry:
        """Our copy was stale: re-read (the watch brings the new one) and decide again."""
        self.ctx.decide(self.name, "retry", obj, f"{exc.message}; re-reading")
        return _Retry()

    # ---- PodGroups ---------------------------------------------------------------------------
    def _sync_group(self, key: Key) -> bool:
        group = self.groups.get(key[1], key[0])
        if group is None:
            return False
        if _md(group).get("deletionTimestamp"):
            return self._group_finalizer(group)
        progress = False
        problems = group_claim_problems(group)
        status = copy.deepcopy(group.get("status") or {})
        conds = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        want = claims_condition(conds, problems)
        if problems:
            self._warn_once(group, key, "InvalidResourceClaims", "; ".join(problems))
        if want is not None:
            want["lastTransitionTime"] = format_time(self.ctx.now())
            status["conditions"] = [c for c in conds if c.get("type") != CLAIMS_VALID_CONDITION] + [want]
        if not problems:
            entries = (group.get("spec") or {}).get("resourceClaims") or []
            plan = plan_owner_claims(group, entries, lambda n: self.claims.get(n, key[0]), self._owned(group))
            statuses = plan.statuses
            self._decide_adoptions(group, plan.adopt)
            for entry in plan.create:
                name = self._create_from_template(group, entry)
                if name:
                    statuses[entry["name"]] = name
                    progress = True
            status["resourceClaimStatuses"] = statuses_list(group, statuses)
            if not status["resourceClaimStatuses"]:
                del status["resourceClaimStatuses"]
        if status != (group.get("status") or {}):
            new = copy.deepcopy(group)
            new["status"] = status
            try:
                group = self.store.update_status(new)
            except Conflict as exc:
                raise self._conflict(group, exc) from exc
            except NotFound:
                return progress
            self.groups.put(group)
            progress = True
        return self._group_finalizer(group) or progress

    def _group_finalizer(self, group: Obj) -> bool:
        """Hold the group while an allocated claim is reserved for it; let go once released."""
        change = group_finalizer_change(group, self.index.holds_allocated_claim(_uid(group)))
        if change is None:
            return False
        if change == "add":
            new = copy.deepcopy(group)
            new["metadata"]["finalizers"] = [*(_md(group).get("finalizers") or []), GROUP_CLAIM_FINALIZER]
            message = "holds an allocated group claim"
        else:
            new = without_finalizer(group, GROUP_CLAIM_FINALIZER)
            message = ("group is being deleted and holds no allocated claim" if _md(group).get("deletionTimestamp")
                       else "no longer holds an allocated claim")
        try:
            updated = self.store.update(new)
        except Conflict as exc:
            raise self._conflict(group, exc) from exc
        except NotFound:
            return False
        if _md(updated).get("finalizers") or not _md(updated).get("deletionTimestamp"):
            self.groups.put(updated)
        else:
            self.groups.forget(_name(group), _ns(group))
        self.ctx.decide(self.name, f"{change}-finalizer", group, f"{GROUP_CLAIM_FINALIZER}: {message}")
        return True

    def _sync_upstream_group(self, key: Key) -> bool:
        """Upstream ``syncPodGroup``: create or adopt the claims of the group's template entries
        and name them in its ``status.resourceClaimStatuses`` (a merge patch of that field
        alone, as upstream's apply of it: the scheduler writes the group's conditions)."""
        if self.upstream is None:
            return False
        group = self.upstream.get(key[1], key[0])
        if group is None or _md(group).get("deletionTimestamp"):
            return False
        entries = [e for e in (group.get("spec") or {}).get("resourceClaims") or [] if isinstance(e, dict)]
        plan = plan_owner_claims(group, entries, lambda n: self.claims.get(n, key[0]), self._owned(group))
        statuses = plan.statuses
        self._decide_adoptions(group, plan.adopt)
        progress, failed = self._create_claims(group, plan.create, statuses)
        recorded = status_claim_names(group)
        if statuses != recorded:
            if self._record_claims(self.upstream.rt_of(group), self.upstream, group, key, recorded,
                                   statuses) is None:
                return progress
            progress = True
        if failed is not None:
            raise failed
        return progress

    def _create_claims(self, owner: Obj, entries: list[Obj], names: dict[str, str | None]) -> tuple[
            bool, ApiError | None]:
        """Create the owner's claims for ``entries`` from their templates, each name into ``names``;
        whether one was created, and the last refusal (the others are still tried)."""
        created, failed = False, None
        for entry in entries:
            try:
                name = self._create_from_template(owner, entry)
            except ApiError as exc:
                failed = exc
                continue
            if name:
                names[entry["name"]] = name
                created = True
        return created, failed

    def _record_claims(self, rt: kinds.ResourceType, informer: Informer | _UpstreamGroups, owner: Obj, key: Key,
                       recorded: Mapping[str, str | None], wanted: dict[str, str | None]) -> Obj | None:
        """Name the owner's claims in its ``status.resourceClaimStatuses`` (a merge patch of that
        field alone); the owner as written, None when it is gone."""
        try:
            owner = self.store.patch(rt, key[1], key[0],
                                     {"status": {"resourceClaimStatuses": statuses_list(owner, wanted)}},
                                     subresource="status")
        except NotFound:
            return None
        informer.put(owner)
        self.ctx.decide(self.name, "record-claims", owner,
                        ", ".join(f"{k}={v}" for k, v in sorted(wanted.items()) if recorded.get(k) != v))
        return owner

    # ---- pods --------------------------------------------------------------------------------
    def _sync_pod(self, key: Key) -> bool:
        """Upstream ``syncPod``: create or adopt the pod's claims, record them, reserve if bound."""
        pod = self.pods.get(key[1], key[0])
        if pod is None or pod_is_done(pod) or _md(pod).get("deletionTimestamp"):
            return False  # nothing to create; the claim keys release what it held
        plan = self._plan_pod(pod)
        recorded = status_claim_names(pod)
        if not plan.needs_work(recorded):
            return False
        wanted = dict(plan.statuses)
        self._decide_adoptions(pod, plan.adopt)
        progress, failed = self._create_claims(pod, plan.create, wanted)
        if wanted != recorded:
            written = self._record_claims(kinds.POD, self.pods, pod, key, recorded, wanted)
            if written is None:
                return progress
            pod = written
            progress = True
        if failed is not None:
            raise failed
        for claim_name in plan.full:
            self._warn_once(pod, key, "ResourceClaimReservedForFull",
                            f"ResourceClaim {claim_name} is already reserved for {MAX_RESERVED_FOR} consumers, "
                            "the most status.reservedFor holds; to share one claim with more pods, list it "
                            "in their PodGroup's spec.resourceClaims so it is reserved for the group")
        for claim_name, consumer in plan.reserve:
            progress |= self._reserve(pod, claim_name, consumer)
        return progress

    def _decide_adoptions(self, owner: Obj, adopt: dict[str, str]) -> None:
        annotation = claim_annotation(owner)
        for entry, claim_name in sorted(adopt.items()):
            self.ctx.decide(self.name, "adopt", f"ResourceClaim/{_ns(owner)}/{claim_name}",
                            f"adopted ResourceClaim {claim_name} for entry {entry}: owned by this "
                            f"{owner.get('kind')} and annotated {annotation}={entry}")

    def _create_from_template(self, owner: Obj, entry: Obj) -> str | None:
        """Create the claim of one template entry; its name, or None when it cannot be made now.

        A missing template or a refused create is a Warning ``FailedResourceClaimCreation``
        on the owner, as upstream; the create is retried with backoff when it may succeed on
        its own (raised), else when the template or the owner changes.
        """
        ns = _ns(owner)
        template_name = entry["resourceClaimTemplateName"]
        template = self.templates.get(template_name, ns)
        okey = (ns, _name(owner))
        what = "PodResourceClaim" if owner.get("kind") == "Pod" else "PodGroupResourceClaim"  # as upstream
        if template is None:
            self._warn_once(owner, okey, "FailedResourceClaimCreation",
                            f"{what} {entry['name']}: resource claim template {template_name!r}: "
                            f'{kinds.RESOURCE_CLAIM_TEMPLATE.group_resource} "{template_name}" not found')
            return None
        body = claim_from_template(owner, entry, template)
        if self.protect_on_create:
            body["metadata"]["finalizers"] = [DELETE_PROTECTION_FINALIZER]
        try:
            created = self.store.create(body)
        except ApiError as exc:
            self._warn_once(owner, okey, "FailedResourceClaimCreation",
                            f"{what} {entry['name']}: create ResourceClaim from template "
                            f"{template_name!r}: {exc.message}")
            if _retriable(exc):
                raise
            return None
        self.claims.put(created)
        self.ctx.decide(self.name, "create", created,
                        f"created ResourceClaim {_name(created)} from template {template_name} "
                        f"for entry {entry['name']}")
        return _name(created)

    def _reserve(self, pod: Obj, claim_name: str, consumer: Obj) -> bool:
        """A pod bound without our scheduler (spec.nodeName set by hand) still gets its
        allocated claims reserved, as upstream ``syncPod``/``reserveForPod`` does."""
        claim = self.claims.get(claim_name, _ns(pod))
        if claim is None:
            return False
        new = copy.deepcopy(claim)
        new.setdefault("status", {})["reservedFor"] = [*reserved_for(claim), consumer]
        try:
            updated = self.store.update_status(new)
        except Conflict as exc:
            raise self._conflict(claim, exc) from exc
        except NotFound:
            return False
        self.claims.put(updated)
        self.ctx.decide(self.name, "reserve", claim, f"reserved for {consumer_text(consumer)} (bound to "
                                                     f"{pod['spec']['nodeName']})")
        return True

    # ---- claims ------------------------------------------------------------------------------
    def _sync_claim(self, key: Key) -> bool:
        """Upstream ``syncClaim``: release, deallocate, drop the finalizer, delete if unneeded.

        A claim that goes anyway (being deleted, or generated for an owner that is done or
        gone, with no consumer left: :func:`goes_without_release`) is deleted and loses its
        finalizer without the release and deallocation writes first.
        """
        claim = self.claims.get(key[1], key[0])
        if claim is None or self._deleted.get(key) == _uid(claim):
            return False
        plan = plan_release(claim, [self._why_release(claim, ref) for ref in reserved_for(claim)])
        tried_delete = False
        if goes_without_release(claim, plan):
            if _md(claim).get("deletionTimestamp"):
                return self._drop_finalizer(claim, key, "the claim is being deleted and no consumer is left")
            tried_delete = True
            released = claim if plan.status is None else {**claim, "status": plan.status}
            try:
                deleted = self._delete_if_owner_done(released)
            except _LeftToCollector:
                return False  # neither released nor deleted yet: the collector's deletion ends it
            if deleted:
                current = self.claims.get(key[1], key[0])
                if current is not None:
                    self._drop_finalizer(current, key, "the claim is being deleted and no consumer is left")
                return True
        progress = False
        if plan.status is not None:
            new = copy.deepcopy(claim)
            new["status"] = plan.status
            try:
                claim = self.store.update_status(new)
            except Conflict as exc:
                raise self._conflict(claim, exc) from exc
            except NotFound:
                self.claims.forget(*reversed(key))
                return False
            self.claims.put(claim)
            for ref, why in plan.released:
                self.ctx.decide(self.name, "release", claim, f"released for {consumer_text(ref)}: {why}")
            if plan.deallocate:
                self.ctx.decide(self.name, "deallocate", claim,
                                "deallocated: " + ("no consumer left in status.reservedFor" if plan.released
                                                   else "the claim is being deleted and no consumer is left"))
            progress = True
        if drops_finalizer(claim, just_released=plan.status is not None):
            if not self._drop_finalizer(claim, key, "not allocated"):
                return False
            progress = True
        current = self.claims.get(key[1], key[0])
        if current is not None and not plan.keep and not tried_delete:
            with contextlib.suppress(_LeftToCollector):
                progress |= self._delete_if_owner_done(current)
        return progress

    def _left_to_collector(self, key: Key) -> bool:
        """Whether a claim whose owner is gone still waits for the garbage collector; if so,
        it is looked at again when the grace ends."""
        if self.collector_grace <= 0:
            return False
        now = self.ctx.now().timestamp()
        since = self._orphaned_since.setdefault(key, now)
        if now - since >= self.collector_grace:
            return False
        self.queue.add_after(_key(CLAIM, key), since + self.collector_grace)
        return True

    def _drop_finalizer(self, claim: Obj, key: Key, why: str) -> bool:
        """Remove the delete-protection finalizer; False if the claim is gone meanwhile."""
        if DELETE_PROTECTION_FINALIZER not in (_md(claim).get("finalizers") or []):
            return False
        try:
            updated = self.store.update(without_finalizer(claim, DELETE_PROTECTION_FINALIZER))
        except Conflict as exc:
            raise self._conflict(claim, exc) from exc
        except NotFound:
            self.claims.forget(*reversed(key))
            return False
        self._put_claim(updated, *reversed(key))
        md = _md(updated)
        if md.get("deletionTimestamp") and not md.get("finalizers"):
            # gone with it: a late watch event of an older copy (our delete's, the collector's)
            # must not send the removal again (a 404 write)
            self._deleted[key] = _uid(claim)
        self.ctx.decide(self.name, "remove-finalizer", claim, f"{DELETE_PROTECTION_FINALIZER}: {why}")
        return True

    def _why_release(self, claim: Obj, ref: Obj) -> str | None:
        ns = _ns(claim)
        name = str(ref.get("name", ""))
        if is_pod_ref(ref):
            return release_reason(ref, self._pod(name, ns, str(ref.get("uid", ""))))
        if is_group_ref(ref):
            group = self.groups.get(name, ns) or self._confirm(kinds.POD_GROUP, name, ns)
            return release_reason(ref, group, group_has_live_pods=self.index.group_has_live_pods(ns, name))
        if is_upstream_group_ref(ref) and self.upstream is not None:
            group = self.upstream.get(name, ns) or self._confirm_upstream(name, ns)
            return release_reason(ref, group, group_has_live_pods=self.index.upstream_group_has_live_pods(ns, name))
        rt = _BY_GROUP_RESOURCE.get((ref.get("apiGroup") or "", ref.get("resource") or ""))
        if rt is None:
            self._warn_once(claim, (ns, _name(claim)), "UnknownConsumer",
                            f"cannot check consumer {consumer_text(ref)}: drasched does not know "
                            f"{ref.get('resource')}.{ref.get('apiGroup')}; keeping the reservation")
            return None
        return release_reason(ref, self._confirm(rt, name, ns if rt.namespaced else None), kind=rt.kind)

    def _delete_if_owner_done(self, claim: Obj) -> bool:
        """Delete a generated claim whose pod is done or gone, or whose PodGroup is gone (or,
        for an upstream one, being deleted with none of its pods running)."""
        ref = controller_owner(claim)
        if ref is None or _md(claim).get("deletionTimestamp") or reserved_for(claim):
            return False
        ns, oname = _ns(claim), str(ref.get("name", ""))
        live = True
        if ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1":
            owner = self._pod(oname, ns, str(ref.get("uid", "")))
        elif ref.get("kind") == kinds.POD_GROUP.kind and ref.get("apiVersion") == kinds.POD_GROUP.api_version:
            owner = self.groups.get(oname, ns) or self._confirm(kinds.POD_GROUP, oname, ns)
        elif is_upstream_group_owner(ref) and self.upstream is not None:
            owner = self.upstream.get(oname, ns) or self._confirm_upstream(oname, ns)
            live = self.index.upstream_group_has_live_pods(ns, oname)
        else:
            return False
        reason = delete_reason(claim, owner, group_has_live_pods=live)
        if reason is None:
            return False
        if owner is None and self._left_to_collector((ns, _name(claim))):
            raise _LeftToCollector()
        try:
            left = self.store.delete(kinds.RESOURCE_CLAIM, _name(claim), ns, uid=_uid(claim))
        except Conflict as exc:
            raise self._conflict(claim, exc) from exc
        except NotFound:
            self.claims.forget(_name(claim), ns)
            return False
        self._put_claim(left, _name(claim), ns)
        if left is None:
            self._deleted[(ns, _name(claim))] = _uid(claim)
        self.ctx.decide(self.name, "delete", claim, f"deleted ResourceClaim {_name(claim)}: {reason}")
        return True



COLLECTOR_GRACE = 5.0
"""Serve: seconds a claim whose owner is gone waits for kube-controller-manager's garbage
collector (which deletes it within moments where it runs) before the claim controller
deletes it itself."""


def split_claim_controller(*, workers: int, batch: int,
                           upstream_groups: kinds.ResourceType | tuple[kinds.ResourceType, ...] | None = None,
                           ) -> tuple[ResourceClaimController, ResourceClaimController]:
    """Serve's claim controller as two instances over the same shared watches, each in a thread
    of its own: one syncs pods and PodGroups (the claims a new pod waits for) and one syncs
    claims (release, deallocation, finalizers, orphans). One instance would make every new pod
    wait for the cleanup of the claims of pods that just went away: a chain of round trips per
    claim.
    Each instance keeps its own index from the same events, so neither reads the other's state.
    Claims are created with the delete-protection finalizer on (``protect_on_create``), and one
    whose owner is gone is left to the garbage collector for ``COLLECTOR_GRACE`` seconds.
    ``upstream_groups``: the upstream PodGroup kind the server serves, if any (both read it).
    """
    pods = ResourceClaimController(workers=workers, batch=batch, keys=(POD, GROUP, UPSTREAM_GROUP),
                                   upstream_groups=upstream_groups, protect_on_create=True)
    claims = ResourceClaimController(workers=workers, keys=(CLAIM,), name="resourceclaim-cleanup",
                                     upstream_groups=upstream_groups, collector_grace=COLLECTOR_GRACE)
    return pods, claims
