"""Lookups the ResourceClaim controller keeps current from watch deltas, one object at a time.

They answer "which keys does this change concern?" without a pass over every pod or claim
(upstream's ``podResourceClaimIndex`` and ``claimPodOwnerIndex``, plus what PodGroups
need): pods by the claims, templates and group they use, claims by controlling owner and
by the consumers in ``status.reservedFor``, and which groups still have a running pod. The
upstream ``scheduling.k8s.io`` PodGroups (joined through ``spec.schedulingGroup``) are kept
apart from drasched's own: the two kinds may use one name.
Each ``put_*`` replaces what the previous version of that object contributed.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from drasched.controllers.claimutil import (
    controller_owner_uid,
    is_allocated,
    is_group_ref,
    pod_group_name,
    pod_is_done,
    reserved_for,
    upstream_group_name,
)
from drasched.dra.claimrules import claim_names_of
from drasched.store.multiindex import MultiIndex

Obj = dict[str, Any]
Key = tuple[str, str]
"""(namespace, name)."""

MAX_DELETED_UIDS = 50_000
"""Uids of deleted pods remembered (upstream ``maxUIDCacheEntries`` is 500; a burst here is
thousands of pods, and an entry is a few dozen bytes)."""


def _md(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


class ClaimControllerIndex:
    def __init__(self) -> None:
        self.pods_by_claim: MultiIndex[Key, Key] = MultiIndex()
        """Values (namespace, claim name)."""
        self.pods_by_template: MultiIndex[Key, Key] = MultiIndex()
        """Values (namespace, template name)."""
        self.pods_by_group: MultiIndex[Key, Key] = MultiIndex()
        """Values (namespace, group name)."""
        self.live_group_pods: MultiIndex[Key, Key] = MultiIndex()
        """Values (namespace, group name) for pods of the group that are not done."""
        self.pod_uid: dict[Key, str] = {}
        self.claims_by_owner: MultiIndex[Key, Any] = MultiIndex()
        """Values: controlling owner uid."""
        self.claims_by_consumer: MultiIndex[Key, Any] = MultiIndex()
        """Values: uid of each ``reservedFor`` entry."""
        self.group_holds: MultiIndex[Key, Any] = MultiIndex()
        """Values: uid of each PodGroup an allocated claim is reserved for."""
        self.group_by_uid: dict[str, Key] = {}
        self.group_uid: dict[Key, str] = {}
        self.pods_by_upstream_group: MultiIndex[Key, Key] = MultiIndex()
        """Values (namespace, upstream PodGroup name) from ``spec.schedulingGroup.podGroupName``."""
        self.live_upstream_group_pods: MultiIndex[Key, Key] = MultiIndex()
        self.upstream_group_by_uid: dict[str, Key] = {}
        self.upstream_group_uid: dict[Key, str] = {}
        self._deleted_pods: OrderedDict[str, None] = OrderedDict()

    # ---- pods ---------------------------------------------------------------------------------
    def put_pod(self, key: Key, pod: Obj | None) -> None:
        ns = key[0]
        if pod is None:
            self.pod_uid.pop(key, None)
            for idx in (self.pods_by_claim, self.pods_by_template, self.pods_by_group, self.live_group_pods,
                        self.pods_by_upstream_group, self.live_upstream_group_pods):
                idx.put(key, ())
            return
        self.pod_uid[key] = _md(pod).get("uid") or ""
        entries = [e for e in (pod.get("spec") or {}).get("resourceClaims") or [] if isinstance(e, dict)]
        self.pods_by_claim.put(key, {(ns, n) for n in claim_names_of(pod)})
        self.pods_by_template.put(key, {(ns, str(e["resourceClaimTemplateName"])) for e in entries
                                        if e.get("resourceClaimTemplateName")})
        group = pod_group_name(pod)
        self.pods_by_group.put(key, [(ns, group)] if group else [])
        self.live_group_pods.put(key, [(ns, group)] if group and not pod_is_done(pod) else [])
        upstream = upstream_group_name(pod)
        self.pods_by_upstream_group.put(key, [(ns, upstream)] if upstream else [])
        self.live_upstream_group_pods.put(key, [(ns, upstream)] if upstream and not pod_is_done(pod) else [])

    def note_deleted_pod(self, uid: str) -> None:
        """A pod we saw go (upstream ``deletedObjects``): its reservations can be dropped
        without asking the API server whether it still exists."""
        self._deleted_pods[uid] = None
        self._deleted_pods.move_to_end(uid)
        while len(self._deleted_pods) > MAX_DELETED_UIDS:
            self._deleted_pods.popitem(last=False)

    def pod_was_deleted(self, uid: str) -> bool:
        return uid in self._deleted_pods

    def claims_of_pod(self, key: Key) -> frozenset[Key]:
        return self.pods_by_claim.of.get(key, frozenset())

    def group_has_live_pods(self, namespace: str, group: str) -> bool:
        return bool(self.live_group_pods.by_value.get((namespace, group)))

    def upstream_group_has_live_pods(self, namespace: str, group: str) -> bool:
        return bool(self.live_upstream_group_pods.by_value.get((namespace, group)))

    # ---- claims -------------------------------------------------------------------------------
    def put_claim(self, key: Key, claim: Obj | None) -> set[str]:
        """Index a claim; returns the uids of the PodGroups whose "holds a claim" may have changed."""
        if claim is None:
            self.claims_by_owner.put(key, ())
            self.claims_by_consumer.put(key, ())
            return set(self.group_holds.put(key, ()))
        owner = controller_owner_uid(claim)
        self.claims_by_owner.put(key, [owner] if owner else [])
        refs = reserved_for(claim)
        self.claims_by_consumer.put(key, {r.get("uid") for r in refs if r.get("uid")})
        holds = {str(r["uid"]) for r in refs if is_group_ref(r) and r.get("uid")} if is_allocated(claim) else set()
        old = self.group_holds.put(key, holds)
        return set(old) ^ holds

    def owned_claims(self, owner_uid: str) -> list[Key]:
        return sorted(self.claims_by_owner.keys_for(owner_uid))

    def holds_allocated_claim(self, group_uid: str) -> bool:
        return bool(self.group_holds.by_value.get(group_uid))

    # ---- groups -------------------------------------------------------------------------------
    def put_group(self, key: Key, group: Obj | None) -> str | None:
        """Index a PodGroup; returns the uid it had before (None: new)."""
        return _put_uid(self.group_uid, self.group_by_uid, key, group)

    def put_upstream_group(self, key: Key, group: Obj | None) -> str | None:
        """Index an upstream PodGroup; returns the uid it had before (None: new)."""
        return _put_uid(self.upstream_group_uid, self.upstream_group_by_uid, key, group)


def _put_uid(uid_of: dict[Key, str], key_of: dict[str, Key], key: Key, obj: Obj | None) -> str | None:
    old = uid_of.pop(key, None)
    if old is not None and key_of.get(old) == key:
        del key_of[old]
    if obj is not None and _md(obj).get("uid"):
        uid = str(_md(obj)["uid"])
        uid_of[key] = uid
        key_of[uid] = key
    return old
