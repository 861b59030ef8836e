"""The binder: carries out the scheduler's BindRequests against any ClusterStore.

The scheduler decides; the binder writes. Keeping the writes out of the scheduling cycle
keeps the cycle pure and fast, and lets binds of one cycle fail on their own.

For one BindRequest (``scheduling.drasched.io/v1alpha1``, named after the pod) an attempt:

1. reads the pod: gone, replaced (uid) or being deleted -> roll back, ``Failed``; already
   on ``selectedNode`` -> ``Succeeded`` (an earlier attempt bound it and crashed before
   recording it); on another node -> roll back, ``Failed``. The node must exist.
2. for each ``resourceClaimAllocations`` entry: finalizer, then allocation + reservedFor
   (the pod, or the entry's own ``reservedFor``, e.g. the PodGroup), with resourceVersion
   preconditions; conflicts re-read and decide again; a claim allocated differently
   "got allocated elsewhere in the meantime" and fails the bind.
3. with ``extendedResourceClaimAllocation``: find (owner + annotation) or create the pod's
   extended-resource claim, allocate and reserve it, patch
   ``pod.status.extendedResourceClaimStatus``.
4. waits while a device allocated with binding conditions (KEP-5007) does not meet them
   (:mod:`~drasched.binder.bindingconditions`): the request stays ``Pending`` with reason
   ``BindingConditionsPending``, the pod unbound, its claims allocated and reserved; a
   failure condition or the binding timeout fails the attempt (rolled back, placed again).
5. binds through ``pods/binding``, then records ``Succeeded`` (unless ``record_success`` is
   off) and a ``Scheduled`` event.

Each step reads before it writes, so a restart after a crash between any two writes
resumes where it stopped. Failures that no retry can fix roll back at once; others retry
with exponential backoff (in the caller's time, virtual in a simulation) up to
``max_attempts``, then roll back. Rollback removes this pod's reservations, clears
allocations this bind wrote that nobody else holds (with their finalizer), deletes the
extended-resource claim and clears the pod status field. A group's reservation stays while
another member of the group is bound or being bound.

BindRequests are kept after they finish. ``Failed`` in ``status.phase`` is final: to place
the pod again the scheduler replaces it (delete, create). Success needs no record of its
own: the pod's binding is the record (the scheduler counts a BindRequest only while its pod
is unbound, and an attempt that finds the pod on ``selectedNode`` is done), so
``drasched serve`` skips the ``Succeeded`` status write, one API write per pod
(``record_success=False``; the BindRequest goes with its pod, its owner, through garbage
collection). ``drasched simulate`` keeps it, for the output's record. Without it, a pod
found already bound by an earlier attempt or process gets no second ``Scheduled`` event, so
a restarted binder that walks the old BindRequests writes nothing for them.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from drasched.api import kinds
from drasched.api.errors import ApiError, BadRequest, Conflict, Invalid, NotFound
from drasched.api.meta import format_time
from drasched.binder.bindingconditions import (
    WAITING_REASON,
    claims_have_binding_conditions,
    times_out_at,
    waiting_for,
)
from drasched.binder.claims import (
    BindFailure,
    clear_pod_claim_status,
    delete_claim,
    ensure_extended_claim,
    find_extended_claims,
    group_still_needs,
    pod_consumer,
    release_claim,
    reserve_claim,
    set_pod_claim_status,
)
from drasched.store.base import ClusterStore

Obj = dict[str, Any]
log = logging.getLogger(__name__)

PENDING, SUCCEEDED, FAILED = "Pending", "Succeeded", "Failed"
TERMINAL = (SUCCEEDED, FAILED)
ROLLBACK_PENDING = " (rollback pending: "


class EventRecorder(Protocol):
    """Where Events go (``SimContext`` in a simulation, an Event writer in a cluster)."""

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None: ...


class DecisionRecorder(Protocol):
    """Where decisions go (``SimContext`` keeps the decision record)."""

    def decide(self, controller: str, action: str, obj: Obj | str, message: str) -> None: ...


@dataclass(frozen=True)
class Backoff:
    """Delay before retry ``n`` (1-based): ``initial * factor**(n-1)``, at most ``maximum``."""

    initial: float = 1.0
    factor: float = 2.0
    maximum: float = 60.0

    def delay(self, attempts: int) -> timedelta:
        return timedelta(seconds=min(self.initial * self.factor ** max(attempts - 1, 0), self.maximum))


@dataclass
class BindOutcome:
    """What one attempt decided; ``retry_at`` is set while it is still ``Pending``."""

    key: str
    phase: str
    reason: str
    message: str
    attempts: int
    retry_at: datetime | None = None


@dataclass
class _Request:
    """The parts of a BindRequest an attempt works from."""

    obj: Obj
    namespace: str
    pod_name: str
    node: str
    pod_uid: str | None
    claims: list[Obj] = field(default_factory=list)
    extended: Obj | None = None
    assumed: bool = False
    """Handed over in process, never written (``drasched.control.BindHandoff``): no status write."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.pod_name}"

    @property
    def br_key(self) -> str:
        return f"{self.namespace}/{self.obj['metadata']['name']}"


def _pod_ref(req: _Request) -> str:
    """The pod a BindRequest binds, for remembering it across its BindRequests."""
    return f"{req.namespace}/{req.pod_name}/{req.pod_uid or ''}"


class _BindingPending(Exception):
    """The claims are reserved but a device's binding conditions are not met yet."""

    def __init__(self, pod: Obj, detail: str, timeout_at: datetime | None = None) -> None:
        super().__init__(detail)
        self.pod = pod
        self.detail = detail
        self.timeout_at = timeout_at


@functools.lru_cache(maxsize=1)
def _time_text(now: datetime) -> str:
    """``format_time(now)`` for the last time asked: an embedded run binds a burst of pods at
    one instant of its virtual clock, and formatting took ~2% of its CPU."""
    return format_time(now)


def _parse(br: Obj) -> _Request:
    spec = br.get("spec") or {}
    md = br.get("metadata") or {}
    pod_name, node = spec.get("podName"), spec.get("selectedNode")
    if not isinstance(pod_name, str) or not pod_name or not isinstance(node, str) or not node:
        raise BindFailure("Invalid", "spec.podName and spec.selectedNode are required")
    claims = list(spec.get("resourceClaimAllocations") or [])
    if any(not isinstance(c, dict) or not c.get("name") for c in claims):
        raise BindFailure("Invalid", "every resourceClaimAllocations entry needs a name")
    return _Request(br, md.get("namespace") or "default", pod_name, node, spec.get("podUID") or None,
                    claims, spec.get("extendedResourceClaimAllocation") or None)


class Binder:
    """Carries out BindRequests against a ClusterStore; one instance per binder process.

    Holds only the backoff deadlines in memory: after a restart every pending BindRequest
    is tried at once, which is safe because every step checks state first.
    """

    def __init__(
        self,
        store: ClusterStore,
        *,
        recorder: EventRecorder | None = None,
        decisions: DecisionRecorder | None = None,
        max_attempts: int = 5,
        backoff: Backoff | None = None,
        name: str = "binder",
        record_success: bool = True,
        binding_poll: timedelta | None = None,
    ) -> None:
        self.store = store
        self.record_success = record_success
        self.binding_poll = binding_poll
        """How often a pod waiting for binding conditions is looked at again (upstream: 5 s);
        None: only when something else makes the caller try (an embedded run, where nothing
        outside sets conditions, ends with the pod waiting instead of polling forever)."""
        self.recorder = recorder
        self.decisions = decisions
        self.max_attempts = max_attempts
        self.backoff = backoff or Backoff()
        self.name = name
        self._not_before: dict[str, datetime] = {}
        self._timed_out: set[str] = set()
        """Pods (by uid, key when none) whose binding conditions already timed out once here: an
        embedded run, which does not poll, wakes for the timeout once per pod (upstream retries
        every ``bindingTimeout`` for ever; nothing in an embedded run meets the conditions, so a
        second wait would only repeat the first and the run would never end)."""

    # ---- public API --------------------------------------------------------------------

    def pending(self, namespace: str | None = None) -> list[Obj]:
        """BindRequests not yet Succeeded or Failed, in namespace/name order."""
        items = self.store.list(kinds.BIND_REQUEST, namespace).items
        return [b for b in items if (b.get("status") or {}).get("phase") not in TERMINAL]

    def not_before(self, br: Obj) -> datetime | None:
        """When a BindRequest in backoff may be tried again (None: now)."""
        return self._not_before.get(br["metadata"].get("uid", ""))

    def process(self, br: Obj, now: datetime, *, assumed: bool = False) -> BindOutcome | None:
        """One attempt at ``br``; None when it is finished already or still in backoff.

        ``assumed``: ``br`` exists only in this process (a lone pod's placement handed over by
        the scheduler): every step is the same, its status is only returned, never written."""
        uid = br["metadata"].get("uid", "")
        status = br.get("status") or {}
        if status.get("phase") in TERMINAL:
            self._not_before.pop(uid, None)
            return None
        due = self._not_before.get(uid)
        if due is not None and now < due:
            return None
        self._not_before.pop(uid, None)
        attempts = int(status.get("attempts") or 0)
        try:
            req = _parse(br)
        except BindFailure as f:
            return self._record(br, FAILED, f.reason, f.message, attempts + 1, write=not assumed)
        req.assumed = assumed
        if attempts >= self.max_attempts:
            # The limit was reached but the rollback did not finish (crash or error): finish it.
            cause = str(status.get("message") or "retries exhausted").split(ROLLBACK_PENDING)[0]
            return self._fail(req, BindFailure(status.get("reason") or "BindFailed", cause), attempts, now)
        attempts += 1
        try:
            pod, already = self._attempt(req, now)
        except _BindingPending as w:
            return self._wait(req, w, attempts - 1, now)  # waiting is not a failed attempt
        except BindFailure as f:
            if f.reason == "BindingTimeout":
                self._timed_out.add(_pod_ref(req))
            if f.permanent or attempts >= self.max_attempts:
                return self._fail(req, f, attempts, now)
            return self._retry(req, f, attempts, now)
        except (Invalid, BadRequest) as e:
            return self._fail(req, BindFailure(e.reason, e.message), attempts, now)
        except Exception as e:  # transient: API errors, connection trouble; the loop must go on
            log.warning("bind %s: attempt %d: %s", req.key, attempts, e)
            transient = BindFailure(getattr(e, "reason", "") or "BindError", str(e) or type(e).__name__,
                                    permanent=False)
            if attempts >= self.max_attempts:
                return self._fail(req, transient, attempts, now)
            return self._retry(req, transient, attempts, now)
        message = f"Successfully assigned {req.key} to {req.node}"
        if self.record_success:
            out = self._record(br, SUCCEEDED, "Bound", message, attempts, write=not assumed)
        else:
            out = BindOutcome(req.br_key, SUCCEEDED, "Bound", message, attempts)
        if already and not self.record_success:
            return out  # done before (the binding is the record): nothing new to tell
        if self.recorder is not None:
            self.recorder.event(pod, "Normal", "Scheduled", message)
        self._decide("bind", br, message)
        return out

    # ---- one attempt -------------------------------------------------------------------

    def _attempt(self, req: _Request, now: datetime) -> tuple[Obj, bool]:
        """Steps 1-5 of the module docstring; returns the pod as last read, and whether it
        was bound to ``selectedNode`` before this attempt wrote anything."""
        timestamp = _time_text(now)
        pod = self._get_pod(req)
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound == req.node:
            return pod, True  # bound by an earlier attempt that did not live to record it
        if bound:
            raise BindFailure("PodBoundElsewhere", f"pod {req.key} is already assigned to node {bound}")
        try:
            self.store.get(kinds.NODE, req.node)
        except NotFound:
            raise BindFailure("NodeNotFound", f'node "{req.node}" not found') from None
        pod_uid = pod["metadata"]["uid"]
        reserved: list[Obj] = []
        for entry in req.claims:
            consumer = entry.get("reservedFor") or pod_consumer(req.pod_name, pod_uid)
            reserved.append(reserve_claim(self.store, req.namespace, entry["name"], consumer,
                                          entry.get("allocation"), uid=entry.get("uid") or None,
                                          timestamp=timestamp))
        if req.extended:
            claim = ensure_extended_claim(self.store, pod, req.extended, timestamp)
            reserved.append(claim)
            set_pod_claim_status(self.store, pod, claim["metadata"]["name"],
                                 list(req.extended.get("containerMappings") or []))
        if claims_have_binding_conditions(reserved):
            detail = waiting_for(reserved, now)  # raises on a failure condition or the timeout
            if detail is not None:
                raise _BindingPending(pod, detail, times_out_at(reserved))
        try:
            self.store.bind(req.namespace, req.pod_name, req.node, pod_uid)
        except (Conflict, NotFound):
            pod = self._get_pod(req)  # gone or replaced raises; bound by us in a lost answer is fine
            bound = (pod.get("spec") or {}).get("nodeName")
            if bound == req.node:
                return pod, False
            if bound:
                raise BindFailure("PodBoundElsewhere",
                                  f"pod {req.key} is already assigned to node {bound}") from None
            raise
        return pod, False

    def _get_pod(self, req: _Request) -> Obj:
        try:
            pod = self.store.get(kinds.POD, req.pod_name, req.namespace)
        except NotFound:
            raise BindFailure("PodDeleted", f"pod {req.key} was deleted") from None
        md = pod["metadata"]
        if req.pod_uid and md.get("uid") != req.pod_uid:
            raise BindFailure("PodDeleted", f"pod {req.key} was deleted and recreated")
        if md.get("deletionTimestamp"):
            raise BindFailure("PodDeleted", f"pod {req.key} is being deleted")
        if req.pod_uid is None:
            req.pod_uid = md.get("uid")
        return pod

    # ---- outcomes ----------------------------------------------------------------------

    def _wait(self, req: _Request, w: _BindingPending, attempts: int, now: datetime) -> BindOutcome | None:
        """The pod waits for binding conditions: say so once (status, upstream's Event), then
        look again after ``binding_poll``, or, without polling (an embedded run), when the
        binding timeout passes, so that the wait ends as upstream's does (the attempt fails, the
        claims are rolled back, the pod is scheduled again); None when there is nothing new to
        say or do."""
        polls = self.binding_poll is not None
        retry_at: datetime | None
        if self.binding_poll is not None:
            retry_at = now + self.binding_poll
            self._not_before[req.obj["metadata"].get("uid", "")] = retry_at
        else:  # not polling: the wake-up goes out with the first word of the wait, and only then
            retry_at = w.timeout_at if _pod_ref(req) not in self._timed_out else None
        status = req.obj.get("status") or {}
        message = f"waiting for binding conditions for device on node {req.node}: {w.detail}"
        if status.get("reason") == WAITING_REASON and status.get("message") == message:
            if retry_at is None or not polls:
                return None
            return BindOutcome(req.br_key, PENDING, WAITING_REASON, message, attempts, retry_at)
        out = self._record(req.obj, PENDING, WAITING_REASON, message, attempts, write=not req.assumed)
        out.retry_at = retry_at
        if status.get("reason") != WAITING_REASON:
            if self.recorder is not None:
                self.recorder.event(w.pod, "Normal", WAITING_REASON,
                                    f"waiting for binding conditions for device on node {req.node}")
            self._decide("wait", req.obj, message)
        return out

    def _retry(self, req: _Request, f: BindFailure, attempts: int, now: datetime) -> BindOutcome:
        retry_at = now + self.backoff.delay(attempts)
        self._not_before[req.obj["metadata"].get("uid", "")] = retry_at
        out = self._record(req.obj, PENDING, f.reason, f.message, attempts, write=not req.assumed)
        out.retry_at = retry_at
        self._decide("retry", req.obj, f"attempt {attempts}/{self.max_attempts} failed, retrying at "
                                       f"{retry_at.isoformat()}: {f.message}")
        return out

    def _fail(self, req: _Request, f: BindFailure, attempts: int, now: datetime) -> BindOutcome:
        """Roll back, then record ``Failed``; if the rollback fails, stay Pending to finish it later."""
        try:
            self.rollback(req.obj)
        except Exception as e:  # record it, keep the cause, try again after backoff
            log.warning("bind %s: rollback failed: %s", req.key, e)
            retry_at = now + self.backoff.delay(attempts)
            self._not_before[req.obj["metadata"].get("uid", "")] = retry_at
            out = self._record(req.obj, PENDING, f.reason, f"{f.message}{ROLLBACK_PENDING}{e})",
                               max(attempts, self.max_attempts), write=not req.assumed)
            out.retry_at = retry_at
            return out
        message = f"binding {req.key} to {req.node} failed: {f.message}"
        out = self._record(req.obj, FAILED, f.reason, message, attempts, write=not req.assumed)
        self._decide("fail", req.obj, message)
        if self.recorder is not None and f.reason != "PodDeleted":
            try:
                pod = self.store.get(kinds.POD, req.pod_name, req.namespace)
            except ApiError:
                pod = None
            if pod is not None:
                self.recorder.event(pod, "Warning", "FailedScheduling", message)
        return out

    def rollback(self, br: Obj) -> None:
        """Undo what binding ``br`` may have written; safe to repeat, safe on partial state.

        Touches nothing for a pod that is bound (here or elsewhere): what it holds is in use.
        """
        req = _parse(br)
        pod: Obj | None
        try:
            pod = self.store.get(kinds.POD, req.pod_name, req.namespace)
        except NotFound:
            pod = None
        if pod is not None and req.pod_uid and pod["metadata"].get("uid") != req.pod_uid:
            pod = None  # a new pod with the same name: not ours to touch
        if pod is not None:
            req.pod_uid = req.pod_uid or pod["metadata"].get("uid")
            if (pod.get("spec") or {}).get("nodeName"):
                return
        for entry in reversed(req.claims):
            consumer: Obj | None = entry.get("reservedFor") or pod_consumer(req.pod_name, req.pod_uid or "")
            if consumer is not None and consumer.get("resource") == "podgroups" and group_still_needs(
                self.store, req.namespace, str(consumer.get("name", "")), req.pod_name
            ):
                consumer = None
            release_claim(self.store, req.namespace, entry["name"], consumer, entry.get("allocation"),
                          uid=entry.get("uid") or None)
        if req.extended:
            for claim in find_extended_claims(self.store, req.namespace, req.pod_name, req.pod_uid):
                delete_claim(self.store, claim)
            if pod is not None:
                clear_pod_claim_status(self.store, req.namespace, req.pod_name, req.pod_uid)
        self._decide("rollback", br, f"rolled back the writes for pod {req.key}")

    def _record(self, br: Obj, phase: str, reason: str, message: str, attempts: int, *,
                write: bool = True) -> BindOutcome:
        """Write the BindRequest status (uid + resourceVersion preconditions: never onto a
        newer BindRequest of the same name); without ``write`` (an assumed one) only say it."""
        md = br["metadata"]
        key = f"{md.get('namespace', '')}/{md.get('name', '')}"
        status = {"phase": phase, "attempts": attempts, "reason": reason, "message": message}
        if not write:
            return BindOutcome(key, phase, reason, message, attempts)
        obj = dict(br, status=status)
        for _ in range(4):
            try:
                self.store.update_status(obj)
                break
            except NotFound:
                break
            except Conflict:
                try:
                    current = self.store.get(kinds.BIND_REQUEST, md["name"], md.get("namespace"))
                except NotFound:
                    break
                if current["metadata"].get("uid") != md.get("uid"):
                    break
                obj = dict(current, status=status)
        return BindOutcome(key, phase, reason, message, attempts)

    def _decide(self, action: str, br: Obj, message: str) -> None:
        if self.decisions is not None:
            self.decisions.decide(self.name, action, br, message)
