"""Claim writes of the binder: reserve, release, and the extended-resource claim (KEP-5004).

Every function here reads the current object first and decides from what it finds, so it
can run again after a crash between any two writes: a step already done is a no-op, and a
write that loses a race (resourceVersion precondition, 409) re-reads and decides again.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.meta import owner_reference
from drasched.api.resource import FINALIZER
from drasched.api.resource import RESERVED_FOR_MAX_SIZE as MAX_RESERVED_FOR
from drasched.dra.claimrules import POD_GROUP_LABEL, pod_group_name
from drasched.store.base import ClusterStore

Obj = dict[str, Any]

EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
MAX_CONFLICTS = 8
"""Re-reads per claim before a step gives up for this attempt (and retries with backoff)."""


class BindFailure(Exception):
    """A binding step could not be carried out.

    ``permanent`` failures (the world changed: claim taken, pod gone) roll back at once;
    the others are retried with backoff until the attempt limit.
    """

    def __init__(self, reason: str, message: str, *, permanent: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.permanent = permanent


def pod_consumer(name: str, uid: str) -> Obj:
    """The ``reservedFor`` entry of a pod."""
    return {"resource": "pods", "name": name, "uid": uid}


def allocation_key(allocation: Obj | None) -> list[tuple[str, str, str, str, str]]:
    """What makes two allocations the same: the devices each request got.

    Compared instead of the raw dicts because a real API server may default or drop empty
    fields of what we wrote; the device results are the decision itself.
    """
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    return sorted(
        (
            str(r.get("request", "")),
            str(r.get("driver", "")),
            str(r.get("pool", "")),
            str(r.get("device", "")),
            str(r.get("shareID") or ""),
        )
        for r in results
    )


def same_allocation(a: Obj | None, b: Obj | None) -> bool:
    return allocation_key(a) == allocation_key(b)


def _claim_ref(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def reserve_claim(
    store: ClusterStore,
    namespace: str,
    name: str,
    consumer: Obj,
    allocation: Obj | None,
    *,
    uid: str | None = None,
    claim: Obj | None = None,
    timestamp: str | None = None,
) -> Obj:
    """Make ``claim`` allocated with ``allocation`` and reserved for ``consumer``; return it.

    ``timestamp`` becomes ``allocation.allocationTimestamp`` when this bind writes the
    allocation, as kube-scheduler writes it under the 1.36 default gates (binding conditions +
    device status); a claim allocated already keeps its allocation as it is.

    ``allocation`` None means the scheduler found the claim already allocated and only
    needs the reservation. Steps, each checked before it is written: delete-protection
    finalizer (spec write), then allocation + reservedFor together (status write, since
    the API server refuses reservedFor on an unallocated claim).
    """
    ref = _claim_ref(namespace, name)
    for _ in range(MAX_CONFLICTS):
        if claim is None:
            try:
                claim = store.get(kinds.RESOURCE_CLAIM, name, namespace)
            except NotFound:
                raise BindFailure("ClaimNotFound", f"resourceclaim {ref} not found") from None
        md = claim["metadata"]
        if uid and md.get("uid") != uid:
            raise BindFailure("ClaimReplaced", f"resourceclaim {ref} was deleted and recreated")
        status: Obj = claim.setdefault("status", {})
        reserved: list[Obj] = list(status.get("reservedFor") or [])
        current = status.get("allocation")
        has_entry = any(r.get("uid") == consumer["uid"] for r in reserved)
        try:
            if current:
                if allocation and not same_allocation(current, allocation):
                    raise BindFailure("ClaimAllocatedElsewhere",
                                      f"claim {ref} got allocated elsewhere in the meantime")
                if has_entry:
                    return claim
                if md.get("deletionTimestamp"):
                    raise BindFailure("ClaimDeleted", f"claim {ref} is being deleted")
                if len(reserved) >= MAX_RESERVED_FOR:
                    raise BindFailure("ClaimReservedForFull",
                                      f"claim {ref} is already reserved for {MAX_RESERVED_FOR} consumers")
                status["reservedFor"] = [*reserved, consumer]
                # the allocation is left as it is, unstamped or not: the API server refuses any
                # change to it once set ("field cannot be modified once set")
                return store.update_status(claim)
            if not allocation:
                raise BindFailure("ClaimNotAllocated", f"claim {ref} is no longer allocated")
            if md.get("deletionTimestamp"):
                raise BindFailure("ClaimDeleted", f"claim {ref} is being deleted")
            finalizers = list(md.get("finalizers") or [])
            if FINALIZER not in finalizers:
                md["finalizers"] = [*finalizers, FINALIZER]
                claim = store.update(claim)
                continue
            status["allocation"] = dict(allocation)  # the write copies it; the top level gets the timestamp
            if timestamp:
                status["allocation"].setdefault("allocationTimestamp", timestamp)
            # An unallocated claim has no valid reservations; start the list afresh.
            status["reservedFor"] = [consumer]
            return store.update_status(claim)
        except Conflict:
            claim = None
    raise BindFailure("Conflict", f"claim {ref} kept changing while being reserved", permanent=False)


def release_claim(
    store: ClusterStore,
    namespace: str,
    name: str,
    consumer: Obj | None,
    allocation: Obj | None,
    *,
    uid: str | None = None,
) -> None:
    """Undo ``reserve_claim``: drop ``consumer`` and, if nobody else holds the claim and the
    allocation is the one this bind wrote, clear it and the finalizer.

    ``consumer`` None leaves the reservations alone (a group still using the claim).
    ``allocation`` None: this bind only reserved, so the allocation is someone else's.
    """
    claim: Obj | None = None
    for _ in range(MAX_CONFLICTS):
        try:
            claim = store.get(kinds.RESOURCE_CLAIM, name, namespace)
        except NotFound:
            return
        md = claim["metadata"]
        if uid and md.get("uid") != uid:
            return
        status: Obj = claim.setdefault("status", {})
        reserved: list[Obj] = list(status.get("reservedFor") or [])
        keep = [r for r in reserved if consumer is None or not _same_consumer(r, consumer)]
        current = status.get("allocation")
        ours = bool(allocation) and bool(current) and same_allocation(current, allocation)
        try:
            if keep != reserved or (ours and not keep):
                if keep:
                    status["reservedFor"] = keep
                else:
                    status.pop("reservedFor", None)
                    if ours:
                        status.pop("allocation", None)
                        status.pop("devices", None)  # the server drops a deallocated device's status too
                store.update_status(claim)
                continue
            finalizers = list(md.get("finalizers") or [])
            if allocation and not current and not keep and FINALIZER in finalizers:
                _set_finalizers(md, [f for f in finalizers if f != FINALIZER])
                store.update(claim)
                continue
            return
        except Conflict:
            continue
    raise BindFailure("Conflict", f"claim {_claim_ref(namespace, name)} kept changing during rollback",
                      permanent=False)


def _set_finalizers(md: Obj, finalizers: list[str]) -> None:
    """Set or drop ``metadata.finalizers`` (an empty list is omitted, as the server does)."""
    if finalizers:
        md["finalizers"] = finalizers
    else:
        md.pop("finalizers", None)


def _same_consumer(entry: Obj, consumer: Obj) -> bool:
    if consumer.get("uid"):
        return bool(entry.get("uid") == consumer["uid"])
    # The pod's uid is unknown (gone before we read it): match a pod entry by name.
    return bool(entry.get("resource") == consumer.get("resource") and entry.get("name") == consumer.get("name"))


def group_still_needs(store: ClusterStore, namespace: str, group: str, pod_name: str) -> bool:
    """Whether another member of ``group`` is bound or about to be, so its claims must stay.

    A group claim is reserved for the PodGroup as one consumer; one member's failed bind
    must not take devices away from the members already running.
    """
    members = store.list(kinds.POD, namespace, label_selector=f"{POD_GROUP_LABEL}={group}").items
    # members that join through the upstream spec.schedulingGroup carry no label
    members += [m for m in store.list(kinds.POD, namespace, label_selector=f"!{POD_GROUP_LABEL}").items
                if pod_group_name(m) == group]
    others = {m["metadata"]["name"] for m in members if m["metadata"]["name"] != pod_name}
    for m in members:
        if m["metadata"]["name"] not in others:
            continue
        if (m.get("spec") or {}).get("nodeName") and (m.get("status") or {}).get("phase") not in (
            "Succeeded", "Failed"
        ):
            return True
    for br in store.list(kinds.BIND_REQUEST, namespace).items:
        if (br.get("spec") or {}).get("podName") in others and (br.get("status") or {}).get("phase") not in (
            "Succeeded", "Failed"
        ):
            return True
    return False


# ---- the extended-resource claim (KEP-5004) -----------------------------------------------


def _request_key(req: Obj) -> tuple[str, str, str, int]:
    """A device request with the API server's defaults filled in, for comparison."""
    exactly = req.get("exactly") or {}
    mode = str(exactly.get("allocationMode") or "ExactCount")
    count = int(exactly.get("count") or 1) if mode == "ExactCount" else 0
    return (str(req.get("name", "")), str(exactly.get("deviceClassName", "")), mode, count)


def _same_requests(claim: Obj, requests: Iterable[Obj]) -> bool:
    have = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
    return sorted(map(_request_key, have)) == sorted(map(_request_key, requests))


def is_extended_claim_of(claim: Obj, pod_name: str, pod_uid: str | None) -> bool:
    """An annotated claim whose controller owner is the pod (by uid, or by name if unknown)."""
    md = claim.get("metadata") or {}
    if (md.get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) != "true":
        return False
    for ref in md.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Pod" and (
            ref.get("uid") == pod_uid if pod_uid else ref.get("name") == pod_name
        ):
            return True
    return False


def find_extended_claims(store: ClusterStore, namespace: str, pod_name: str, pod_uid: str | None) -> list[Obj]:
    """Every extended-resource claim owned by the pod, by owner + annotation, sorted by name.

    A store that can answer "claims controlled by this uid" (``drasched serve``'s cached
    view) is asked that instead of listing the namespace: a list per bind is O(claims).
    """
    owned = getattr(store, "controlled_by", None)
    if owned is not None and pod_uid:
        items = owned(kinds.RESOURCE_CLAIM, namespace, pod_uid)
    else:
        items = store.list(kinds.RESOURCE_CLAIM, namespace).items
    return sorted((c for c in items if is_extended_claim_of(c, pod_name, pod_uid)),
                  key=lambda c: c["metadata"]["name"])


def delete_claim(store: ClusterStore, claim: Obj) -> None:
    """Delete a claim this binder owns, finalizer included, whatever step it was left at."""
    md = claim["metadata"]
    name, namespace, uid = md["name"], md.get("namespace"), md.get("uid")
    for _ in range(MAX_CONFLICTS):
        try:
            current = store.get(kinds.RESOURCE_CLAIM, name, namespace)
        except NotFound:
            return
        cmd = current["metadata"]
        if cmd.get("uid") != uid:
            return
        try:
            if not cmd.get("deletionTimestamp"):
                store.delete(kinds.RESOURCE_CLAIM, name, namespace, uid=uid)
                continue
            finalizers = list(cmd.get("finalizers") or [])
            if FINALIZER not in finalizers:
                return  # someone else's finalizer holds it: theirs to remove
            _set_finalizers(cmd, [f for f in finalizers if f != FINALIZER])
            store.update(current)
            return
        except NotFound:
            return
        except Conflict:
            continue
    raise BindFailure("Conflict", f"claim {_claim_ref(namespace or '', name)} kept changing while being deleted",
                      permanent=False)


def new_extended_claim(pod: Obj, requests: list[Obj]) -> Obj:
    """The claim upstream's scheduler would create for the pod's DRA-backed extended resources.

    Created with the finalizer already on: one write fewer, and rollback deletes it anyway.
    The spec is immutable, so the requests go in at creation.
    """
    md = pod["metadata"]
    return {
        "apiVersion": kinds.RESOURCE_CLAIM.api_version,
        "kind": kinds.RESOURCE_CLAIM.kind,
        "metadata": {
            "generateName": f"{md['name']}-extended-resources-",
            "namespace": md["namespace"],
            "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
            # as 1.37's scheduler writes it (extendeddynamicresources.go): controller alone
            "ownerReferences": [owner_reference({**pod, "apiVersion": "v1", "kind": "Pod"}, block_owner_deletion=None)],
            "finalizers": [FINALIZER],
        },
        "spec": {"devices": {"requests": copy.deepcopy(requests)}},
    }


def ensure_extended_claim(store: ClusterStore, pod: Obj, spec: Obj, timestamp: str | None = None) -> Obj:
    """Find (owner + annotation) or create the pod's extended-resource claim and reserve it.

    ``spec`` is the BindRequest's ``extendedResourceClaimAllocation``. A claim that cannot
    be the one this bind wants (other requests, another allocation, being deleted) is a
    leftover of an earlier attempt: it is deleted, never reused. Duplicates (a create whose
    answer was lost, then retried) are deleted too, keeping the one the pod status names.
    """
    md = pod["metadata"]
    requests = list(spec.get("deviceRequests") or [])
    allocation = spec.get("allocation")
    if not requests or not allocation:
        raise BindFailure("Invalid", "extendedResourceClaimAllocation needs deviceRequests and an allocation")
    named = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    found = find_extended_claims(store, md["namespace"], md["name"], md["uid"])
    keep: Obj | None = None
    for claim in sorted(found, key=lambda c: c["metadata"]["name"] != named):
        current = (claim.get("status") or {}).get("allocation")
        usable = (
            keep is None
            and not claim["metadata"].get("deletionTimestamp")
            and _same_requests(claim, requests)
            and (not current or same_allocation(current, allocation))
        )
        if usable:
            keep = claim
        else:
            delete_claim(store, claim)
    if keep is None:
        keep = store.create(new_extended_claim(pod, requests))
    kmd = keep["metadata"]
    return reserve_claim(store, kmd["namespace"], kmd["name"], pod_consumer(md["name"], md["uid"]), allocation,
                         uid=kmd["uid"], claim=keep, timestamp=timestamp)


def set_pod_claim_status(store: ClusterStore, pod: Obj, claim_name: str, mappings: list[Obj]) -> None:
    """Patch ``pod.status.extendedResourceClaimStatus`` unless it already says this."""
    want = {"resourceClaimName": claim_name, "requestMappings": copy.deepcopy(mappings)}
    if (pod.get("status") or {}).get("extendedResourceClaimStatus") == want:
        return
    _patch_pod_status(store, pod, {"extendedResourceClaimStatus": want})


def clear_pod_claim_status(store: ClusterStore, namespace: str, pod_name: str, pod_uid: str | None) -> None:
    """Remove ``pod.status.extendedResourceClaimStatus`` if the same pod still carries it."""
    try:
        pod = store.get(kinds.POD, pod_name, namespace)
    except NotFound:
        return
    if pod_uid and pod["metadata"].get("uid") != pod_uid:
        return
    if "extendedResourceClaimStatus" not in (pod.get("status") or {}):
        return
    _patch_pod_status(store, pod, {"extendedResourceClaimStatus": None})


def _patch_pod_status(store: ClusterStore, pod: Obj, status: Obj) -> None:
    """Merge-patch the pod's status with its uid as precondition.

    A real server answers a uid mismatch with 422 (uid immutable), the memory store with
    409: either way, re-read to tell "pod replaced" from a genuine error.
    """
    md = pod["metadata"]
    try:
        store.patch(kinds.POD, md["name"], md["namespace"], {"metadata": {"uid": md["uid"]}, "status": status},
                    subresource="status")
    except ApiError:
        try:
            now = store.get(kinds.POD, md["name"], md["namespace"])
        except NotFound:
            raise BindFailure("PodDeleted", f"pod {md['namespace']}/{md['name']} was deleted") from None
        if now["metadata"].get("uid") != md["uid"]:
            raise BindFailure("PodDeleted", f"pod {md['namespace']}/{md['name']} was deleted and recreated") from None
        raise
