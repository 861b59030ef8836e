"""Which placements ``drasched serve`` records as a BindRequest, and the in-memory ones.

A BindRequest is the scheduler's decision written down before the binder acts on it. It buys
something where the binder's own writes would not tell a restarted scheduler what was meant:

* a gang's member (a group of more than one pod, or a ``minMember`` above one): the gang is
  placed together, and a restarted scheduler must count the members already decided as placed,
  not place the rest of the gang again from scratch;
* a claim reserved for a PodGroup (the entry's ``reservedFor``): its rollback keeps the
  reservation while another member holds it, which only the written request records;
* a device with binding conditions (KEP-5007): the pod may wait minutes, and the request's
  status is where the wait is told (``BindingConditionsPending``).

Any other placement, a lone pod, is handed to the binder in process
(:class:`~drasched.control.BindHandoff`) and the binder's writes are the record, as
upstream's: the claims' allocation and ``reservedFor`` first (a pending pod whose claims are
allocated and reserved for it is placed on their node again after a restart), then the
binding. That is one API write per pod fewer: the request's create, its watch event to every
watcher, the server's custom-resource validation of it (BENCHMARKS.md).
"""

from __future__ import annotations

import uuid
from typing import Any

from drasched.dra.claimrules import has_binding_conditions
from drasched.scheduler.groups import GroupInfo
from drasched.scheduler.session import Placement

Obj = dict[str, Any]


def needs_bind_request(p: Placement, group: GroupInfo) -> bool:
    """Whether ``p`` is written as a BindRequest (see the module docstring) or only handed over."""
    if len(group.pods) > 1 or group.min_member > 1:
        return True
    if any((entry.get("reservedFor") or {}).get("resource", "pods") != "pods" for entry in p.claims):
        return True  # reserved for the PodGroup
    allocations = [entry.get("allocation") for entry in p.claims]
    if p.extended is not None:
        allocations.append(p.extended.get("allocation"))
    return any(map(has_binding_conditions, allocations))


def assumed_bind_request(br: Obj, now: str) -> Obj:
    """``br`` as the in-memory request the binder is handed: a uid of its own (the binder's
    backoff and the scheduler's bind backoff count requests by uid) and a resourceVersion
    the binder moves as it records attempts."""
    uid = str(uuid.uuid4())
    return {**br, "metadata": {**br["metadata"], "uid": uid, "resourceVersion": uid, "creationTimestamp": now}}


def pod_moved_on(br: Obj, pod: Obj | None) -> bool:
    """Whether an assumed request is over: its pod is gone, replaced, or bound (by its bind or
    another); a failed one stays until the scheduler places the pod again."""
    if pod is None:
        return True
    spec = br.get("spec") or {}
    uid = spec.get("podUID")
    return bool(uid and (pod.get("metadata") or {}).get("uid") != uid) or bool((pod.get("spec") or {}).get("nodeName"))
