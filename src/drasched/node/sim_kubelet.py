"""A minimal simulated kubelet for embedded runs: start, finish and remove bound pods.

What it does, per pod bound to a node (``spec.nodeName`` set):

* **Drivers.** A Node annotated ``drasched.io/sim-gpus`` runs the example GPU driver's
  mock inventory: its ResourceSlices are published and its plugin registered in process
  (see :mod:`drasched.node.sim_drivers`); the driver follows the annotation and the node.
* **Admit.** First a pod is admitted as upstream's kubelet does (:mod:`drasched.node.admission`):
  on a node that does not exist it stays Pending; requests that do not fit the node's allocatable
  next to the pods admitted there, a node affinity / nodeSelector it does not match or an
  untolerated NoExecute taint reject it: phase ``Failed``, ``status.reason`` ``OutOfcpu`` (...),
  ``NodeAffinity`` or ``TaintToleration``, message ``Pod was rejected: ...``, a Warning event.
* **Start.** A Pending pod becomes Running (``startTime``, Ready conditions, container
  statuses) once every claim it uses is allocated and reserved for it or for its
  PodGroup (as the real kubelet refuses to run a pod its claims are not reserved for),
  and the drivers registered on its node prepared them (``NodePrepareResources`` through
  the plugin kit, :func:`~drasched.node.inprocess.prepare_in_process`). Claims of a
  driver with no plugin on the node (hand-written slices) need no preparing.
* **Finish.** A pod annotated ``drasched.io/sim-duration: <Go duration>`` (``90s``,
  ``5m``, ``1h30m``) becomes Succeeded that much virtual time after it started; the
  runner is asked to wake then. Without the annotation a pod runs forever. With
  ``drasched.io/sim-exit-code: <n>`` (n != 0) it ends Failed instead, every container
  terminated with that exit code (reason ``Error``), as a Job's podFailurePolicy reads it.
  With ``restartPolicy: OnFailure`` (a non-zero exit) or ``Always`` (any exit; a pod a controller
  owns: a bare pod ends as above, see :func:`~drasched.node.restarts.restarts_in_place`) the
  containers restart in the same pod instead, which stays Running (``restartCount``; the first
  restart at once, then ``CrashLoopBackOff`` of 10s doubling to 5m, starting over after a run
  longer than 10m). Restarts nothing ends (no Job counts them) wake the run only until their
  cycle repeats (:func:`~drasched.node.restarts.settled`: at the 5m cap, or at the first restart of
  a run longer than 10m); after that they happen only as virtual time moves on for other work,
  so a Deployment whose pods carry a sim-duration still lets the simulation end.
* **Remove.** A pod being deleted (``deletionTimestamp`` set) is finished with a force
  delete, as the kubelet ends a graceful deletion once its containers stopped. A pod
  annotated ``drasched.io/sim-termination: <Go duration>`` takes that long to stop (at most
  its grace period, when the kubelet kills it): until then it holds its node's resources
  and devices, as a slow-stopping container does. A Running pod is first marked ``Failed``
  (containers terminated, exit code 137), as upstream's kubelet puts a killed pod in a terminal
  phase, and removed on the next pass.

A prepare error is never fatal, as upstream's kubelet has it: its runtime prepares a pod's
claims before it creates the pod sandbox and, on an error, records a Warning event
``FailedPrepareDynamicResources`` (message ``Failed to prepare dynamic resources: <error>``) and
returns without failing the sync (kuberuntime_manager.go ``SyncPod``), so the pod stays
``Pending``, its containers waiting in ``ContainerCreating`` (``PodInitializing`` with init
containers; the error is in no status field, only in the event), and its pod worker syncs it
again after the resync interval (pod_workers.go ``completeWork``: a
sync that returned no error is requeued after ``syncFrequency``, 1m by default, jittered up to
half as much again), for ever, until the claim or driver changes or the pod is deleted. What did
prepare stays prepared (dra/manager.go ``prepareResources`` unprepares nothing on an error) until
the pod ends, and the claims stay allocated and reserved for it: a Deployment whose pods can never
prepare keeps its replicas waiting instead of replacing failed pods round after round. So here:
whatever the cause (a device still prepared for another pod's claim, an opaque configuration the
driver refuses, a device it does not publish, a recreated claim, a broken driver, a claim not
allocated or not reserved for the pod), the pod gets that status, one Warning event per distinct
message (a repeat is not recorded again: upstream's recorder counts it on the same Event,
``count`` + 1, but the embedded run's ``ctx.event`` writes every Event anew with count 1, so one
per retry would pile up Events instead) and a ``prepare-failed`` decision, and is tried again on
every pass that sees a change (a pod, claim, PodGroup or Node written, a driver started,
republished or stopped, a device unprepared; upstream would notice at its next resync, up to
1m30s later) and every :data:`RESYNC_INTERVAL` of virtual time that passes for other work. That
resync does not wake the run: in a simulation only a change can clear a prepare error, and a retry
that can only fail again, for ever, would keep the run from ending (restarts that nothing ends
follow the same rule, see *Finish*).

Unprepare runs when a pod finishes or is deleted, before its Succeeded status or its
removal is written, so a claim is never released (and its devices never handed to the next
pod) while a driver still has them prepared. An unprepare error is a Warning event
(``FailedUnprepareDynamicResources``); the pod finishes anyway (a stopped driver's state
is gone with it, so there is nothing left to retry). Every prepare and unprepare of
driver-managed devices is in the decision record (actions ``prepare`` / ``unprepare``,
the devices as ``[driver/pool/device, ...]`` per claim), so a run can be replayed to check
that no device was ever prepared for two claims at once. CDI specs stay in memory.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from drasched.api import kinds
from drasched.api.duration import parse_go_duration
from drasched.api.errors import ApiError, Conflict, NotFound
from drasched.api.meta import controller_uid, format_time, parse_time
from drasched.control import ControllerContext
from drasched.dra.claimrules import (
    ClaimNotCreated,
    group_entry_for,
    is_allocated,
    is_reserved_for,
    pod_claim_name,
    pod_group_name,
    scheduling_group_name,
)
from drasched.node.admission import Rejection, admit
from drasched.node.inprocess import DriverRegistry, prepare_in_process, unprepare_in_process
from drasched.node.plugin import PreparedDevice
from drasched.node.resource_health import allocated_resources_status
from drasched.node.restarts import (
    Restarting,
    Run,
    advance,
    endless,
    restart_delay,
    restarts_in_place,
    settled,
)
from drasched.node.sim_drivers import SimNodeDrivers
from drasched.store.informer import Informer
from drasched.store.wire import clone

Obj = dict[str, Any]

SIM_DURATION_ANNOTATION = "drasched.io/sim-duration"
SIM_TERMINATION_ANNOTATION = "drasched.io/sim-termination"
SIM_EXIT_CODE_ANNOTATION = "drasched.io/sim-exit-code"

PREPARE_FAILED_PREFIX = "Failed to prepare dynamic resources: "
"""How upstream's kubelet words a ``FailedPrepareDynamicResources`` Warning: kuberuntime_manager.go
``SyncPod`` records ``Eventf(..., "Failed to prepare dynamic resources: %v", err)``."""

RESYNC_INTERVAL = timedelta(minutes=1)
"""How long a pod whose claims failed to prepare waits before it is tried again for time alone:
upstream's default ``syncFrequency``, after which its pod worker requeues a pod whose sync returned
no error (a failed prepare is not a sync error), less the jitter of up to 50% (runs are repeatable)."""


def _md(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _set_condition(conds: list[Obj], cond_type: str, status: str, now: str, reason: str | None = None,
                   message: str | None = None) -> None:
    for c in conds:
        if c.get("type") == cond_type:
            if c.get("status") != status:
                c["status"] = status
                c["lastTransitionTime"] = now
            for key, value in (("reason", reason), ("message", message)):
                if value:
                    c[key] = value
                else:
                    c.pop(key, None)
            return
    cond: Obj = {"type": cond_type, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    conds.append(cond)


def _waiting_to_start(pod: Obj, now: str) -> Obj:
    """The status upstream's kubelet reports for a pod whose sandbox it has not created (a prepare
    error returned before it, as kuberuntime ``SyncPod`` does): phase Pending; every container
    waiting in ``ContainerCreating``, or ``PodInitializing`` when the pod has init containers
    (``convertToAPIContainerStatuses``' default state), not ready, not started (the prober's
    ``started: false``); ``PodReadyToStartContainers`` False (no sandbox); ``Initialized`` True,
    or False ``ContainersNotInitialized`` until init containers ran; ``ContainersReady`` and
    ``Ready`` False ``ContainersNotReady`` with upstream's ``containers with unready status:
    [names]``. No field says why: upstream reports the prepare error only as an event. The
    simulated kubelet models no init containers, so it writes no ``initContainerStatuses``, and
    ``startTime`` is written when the pod runs, as for every pod it starts."""
    status = clone(pod.get("status") or {})
    status["phase"] = "Pending"
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    init = [str(c.get("name")) for c in spec.get("initContainers") or []]
    conds = status.setdefault("conditions", [])
    _set_condition(conds, "PodReadyToStartContainers", "False", now)
    if init:
        _set_condition(conds, "Initialized", "False", now, reason="ContainersNotInitialized",
                       message=f"containers with incomplete status: [{' '.join(init)}]")
    else:
        _set_condition(conds, "Initialized", "True", now)
    unready = f"containers with unready status: [{' '.join(str(c.get('name')) for c in containers)}]"
    for cond_type in ("ContainersReady", "Ready"):
        _set_condition(conds, cond_type, "False", now, reason="ContainersNotReady", message=unready)
    waiting = {"waiting": {"reason": "PodInitializing" if init else "ContainerCreating"}}
    status["containerStatuses"] = [
        {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": False, "started": False,
         "restartCount": 0, "state": clone(waiting)}
        for c in containers
    ]
    return status


def _go_seconds(seconds: int) -> str:
    """A Go ``time.Duration`` string of whole seconds (``10s``, ``2m40s``, ``5m0s``)."""
    minutes, rest = divmod(seconds, 60)
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"


def _running_since(pod: Obj) -> str | None:
    """When the (first) container last started running."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        started = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
        if started:
            return str(started)
    return None


def _in_crash_loop(pod: Obj) -> bool:
    """Whether the pod's containers wait in ``CrashLoopBackOff``."""
    return any(((cs.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
               for cs in (pod.get("status") or {}).get("containerStatuses") or [])


def _restart_count(pod: Obj) -> int:
    return max((int(cs.get("restartCount") or 0) for cs in (pod.get("status") or {}).get("containerStatuses") or []),
               default=0)


def _restarting(pod: Obj) -> Restarting:
    """Where the pod's containers stand, read from its status (the first container speaks for all:
    the simulated containers start and exit together). Raises ValueError on a bad timestamp."""
    status = pod.get("status") or {}
    first = (status.get("containerStatuses") or [{}])[0]
    term = (first.get("lastState") or {}).get("terminated") or {}
    last = Run(parse_time(str(term["startedAt"])), parse_time(str(term["finishedAt"]))) if (
        term.get("startedAt") and term.get("finishedAt")) else None
    if _in_crash_loop(pod) and last is not None:
        return Restarting(_restart_count(pod), None, last)
    since = _running_since(pod) or status.get("startTime") or _md(pod).get("creationTimestamp") or ""
    return Restarting(_restart_count(pod), parse_time(str(since)), last)


@dataclass(frozen=True)
class PrepareFailure:
    """Why a pod's claims could not be prepared: the pod waits and is tried again."""

    message: str


def _devices_text(devices: dict[str, list[str]]) -> str:
    """``claim ns/name [driver/pool/device, ...]; claim ...``, as the decision record lists them."""
    return "; ".join(f"claim {key} [{', '.join(names)}]" for key, names in devices.items())


def _node(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _claim_key(claim: Obj) -> str:
    md = _md(claim)
    return f"{md.get('namespace') or 'default'}/{md.get('name', '')}"


class SimulatedKubelet:
    """Every node's kubelet at once, for ``drasched simulate``."""

    name = "sim-kubelet"

    def __init__(self, *, plugin_sockets: bool = False) -> None:
        self.plugin_sockets = plugin_sockets
        """Call each driver over real unix sockets (gRPC) instead of in process."""
        self._store: object | None = None
        self._again = True
        self._deadlines: list[tuple[datetime, str]] = []
        self._scheduled: set[tuple[datetime, str]] = set()
        self._warned: dict[tuple[str, str], str] = {}
        self.registry = DriverRegistry()
        self.node_drivers = SimNodeDrivers(self.registry, sockets=plugin_sockets)
        self._touched: set[str] = set()
        """Pod UIDs whose claims went to prepare_in_process: they must be unprepared."""
        self._held: dict[str, dict[str, list[str]]] = {}
        """Pod UID -> claim key -> the driver-prepared devices it holds, as the decision record lists them."""
        self._adopted: set[str] = set()
        """Pod UIDs found Running whose claims were offered to their node's drivers."""
        self._waiting: set[tuple[str, str]] = set()
        """Bound pods still Pending at the last pass: every pass looks at them again."""
        self._admitted: set[str] = set()
        """Pod UIDs the kubelet admitted (they count on their node while Pending too)."""
        self._on_node: dict[str, list[Obj]] | None = None
        """Per pass: node name -> the admitted pods that hold its resources (built on first use)."""
        self._nodes_changed = False
        self._drivers_changed = False
        """Seen by :meth:`sync_drivers` since the last pass (which may have run it earlier in the round)."""

    def _attach(self, ctx: ControllerContext) -> None:
        if self._store is ctx.store:
            return
        self._store = ctx.store
        self.pods = Informer(ctx.store, kinds.POD)
        self.claims = Informer(ctx.store, kinds.RESOURCE_CLAIM)
        self.groups = Informer(ctx.store, kinds.POD_GROUP)
        # upstream scheduling.k8s.io PodGroups (simulate keeps them as written, in either version)
        self.upstream_groups = [Informer(ctx.store, rt) for rt in kinds.UPSTREAM_GANG if rt.kind == "PodGroup"]
        self.nodes = Informer(ctx.store, kinds.NODE)
        self.node_drivers.close()
        self.registry = DriverRegistry()
        self.node_drivers = SimNodeDrivers(self.registry, sockets=self.plugin_sockets)
        self._deadlines.clear()
        self._scheduled.clear()
        self._warned.clear()
        self._touched.clear()
        self._held.clear()
        self._adopted.clear()
        self._waiting.clear()
        self._admitted.clear()
        self._nodes_changed = self._drivers_changed = False
        self._again = True

    def drivers_controller(self) -> SimNodeDriverController:
        """The nodes' DRA drivers as a controller of their own, for a place in the round before
        the scheduler: :meth:`sync_drivers`."""
        return SimNodeDriverController(self)

    def sync_drivers(self, ctx: ControllerContext) -> bool:
        """Start, republish or stop each node's mock drivers as its ``drasched.io/sim-gpus``
        annotation says; whether a driver changed. A driver's kubelet plugin publishes its
        ResourceSlices as soon as it runs on the node, before any pod asks for its devices, so
        an embedded round runs this before the scheduler (else every pod's first cycle would
        find no device, a ``FailedScheduling`` no cluster with the driver installed shows); the
        pass below runs it too, for a kubelet run on its own."""
        self._attach(ctx)
        if not self.nodes.sync():
            return False
        self._nodes_changed = True
        changed = self.node_drivers.sync(ctx, self.nodes.values())
        self._drivers_changed |= changed
        return changed

    def close(self) -> None:
        """Stop the plugin servers of ``plugin_sockets`` and remove their directory (no store writes)."""
        self.node_drivers.close()

    def reconcile(self, ctx: ControllerContext) -> bool:
        """A pass over the bound pods that may have work: changed, due, or waiting to start."""
        self._attach(ctx)
        changed = [inf.sync() for inf in (self.pods, self.claims, self.groups, *self.upstream_groups)]
        self.sync_drivers(ctx)
        nodes_changed, drivers_changed = self._nodes_changed, self._drivers_changed
        self._nodes_changed = self._drivers_changed = False
        due: set[tuple[str, str]] = set()
        while self._deadlines and self._deadlines[0][0] <= ctx.now():
            entry = heapq.heappop(self._deadlines)
            self._scheduled.discard(entry)
            namespace, _, name = entry[1].partition("/")
            due.add((namespace, name))
        if not any(changed) and not due and not self._again and not nodes_changed:
            return False
        self.ctx = ctx
        self._on_node = None
        progress = drivers_changed
        bound = self._to_visit(due, everything=drivers_changed)
        self._waiting = {(_md(p).get("namespace") or "", _md(p).get("name") or "") for p in bound
                         if not _md(p).get("deletionTimestamp")
                         and ((p.get("status") or {}).get("phase") or "Pending") == "Pending"}
        for pod in bound:  # devices of pods already running count as held before any pod starts
            if (pod.get("status") or {}).get("phase") == "Running":
                self._adopt(pod)
        for pod in bound:
            progress |= self._sync_pod(pod)
        self._again = progress
        return progress

    def _to_visit(self, due: set[tuple[str, str]], everything: bool) -> list[Obj]:
        """The bound pods whose pass may do something, in (namespace, name) order.

        A pod changed since the last pass, one whose run or termination time is up, and one
        still Pending (it starts once its claims are ready or a device it wants is freed:
        a change elsewhere). The others rest until they change: a Running pod with nothing
        due, a finished one. Everything after a relist, or when a node's drivers changed.
        """
        keys = self.pods.take_changed()
        if keys is None or everything:
            pods: Iterable[Obj] = self.pods.values()
        else:
            found = (self.pods.get(name, namespace) for namespace, name in sorted(keys | due | self._waiting))
            pods = (pod for pod in found if pod is not None)
        return [pod for pod in pods if (pod.get("spec") or {}).get("nodeName")]

    # ---- driver hooks ----------------------------------------------------------------------------
    def _prepare(self, pod: Obj, claims: list[Obj]) -> PrepareFailure | None:
        """NodePrepareResources for ``claims`` by the drivers on the pod's node; None when ready."""
        node = _node(pod)
        if not claims or not self.registry.drivers(node):
            return None  # nothing runs there that could prepare them (hand-written slices)
        self._touched.add(_md(pod).get("uid", ""))
        error = prepare_in_process(self.ctx.store, self.registry, pod, claims, ignore_unregistered_drivers=True)
        self._record_prepared(pod, claims)  # on an error too: what did prepare stays prepared, as upstream
        return PrepareFailure(error) if error is not None else None

    def _unprepare(self, pod: Obj, claims: list[Obj]) -> None:
        """NodeUnprepareResources once ``pod`` stopped, before the claim controller may release."""
        uid = _md(pod).get("uid", "")
        self._adopted.discard(uid)
        if uid not in self._touched:
            return
        self._touched.discard(uid)
        # By pod UID in what was prepared: the claims may be released or deleted already.
        error = unprepare_in_process(self.ctx.store, self.registry, pod)
        held = self._held.pop(uid, None)
        if held:
            self.ctx.decide(self.name, "unprepare", pod, f"node {_node(pod)}: {_devices_text(held)}")
        if error is not None:
            self._warn_once(pod, "FailedUnprepareDynamicResources", error)

    def _record_prepared(self, pod: Obj, claims: list[Obj]) -> None:
        """The decision record entry for the devices the drivers prepared for the pod since the
        last one: all of them once it starts, or those of the claims that did prepare when another
        failed (they stay prepared while the pod waits, and the rest follow when it is retried)."""
        held = self._held.setdefault(_md(pod).get("uid", ""), {})
        new: dict[str, list[str]] = {}
        for claim in claims:
            answers = self.registry.prepared(_node(pod), _md(claim).get("uid", "")) or {}
            key = _claim_key(claim)
            devices = [f"{driver}/{d.pool_name}/{d.device_name}" + (f"#{d.share_id}" if d.share_id else "")
                       for driver, answer in sorted(answers.items()) for d in answer.devices]
            fresh = [d for d in devices if d not in held.get(key, [])]
            if fresh:
                new[key] = fresh
                held.setdefault(key, []).extend(fresh)
        if new:
            self.ctx.decide(self.name, "prepare", pod, f"node {_node(pod)}: {_devices_text(new)}")

    def _add_resource_health(self, pod: Obj, claims: list[Obj], status: Obj) -> None:
        """Each container's ``allocatedResourcesStatus`` (KEP-4680, on by default since 1.36), from
        what the node's drivers prepared for the pod's claims and the health they stream; see
        :mod:`drasched.node.resource_health`. Later statuses are cloned from this one and keep it,
        as upstream's final status is generated before the claims are unprepared
        (kubelet.go ``SyncTerminatedPod``)."""
        node = _node(pod)
        by_name = {_md(c).get("name"): c for c in claims}
        prepared: dict[str, dict[str, tuple[PreparedDevice, ...]]] = {}
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            try:
                name, _ = pod_claim_name(pod, entry)
            except ClaimNotCreated:
                continue
            claim = by_name.get(name)
            answers = self.registry.prepared(node, _md(claim).get("uid", "")) if claim is not None else None
            if answers:
                prepared[str(entry.get("name") or "")] = {d: a.devices for d, a in answers.items()}
        containers = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        for cs in status.get("containerStatuses") or []:
            container = containers.get(cs.get("name"))
            found = allocated_resources_status(
                container, prepared, lambda d, p, dev: self.registry.device_health(node, d, p, dev)
            ) if container is not None else []
            if found:
                cs["allocatedResourcesStatus"] = found
            else:
                cs.pop("allocatedResourcesStatus", None)

    # ---- one pod -------------------------------------------------------------------------------
    def _sync_pod(self, pod: Obj) -> bool:
        if _md(pod).get("deletionTimestamp"):
            return self._finish_deletion(pod)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if phase == "Pending":
            return self._start(pod)
        if phase == "Running":
            return self._maybe_complete(pod)
        return False

    def _adopt(self, pod: Obj) -> None:
        """Prepare the claims of a pod that was Running before this kubelet saw it (a restored
        cluster), as the kubelet does after a restart, so its devices count as held."""
        uid = _md(pod).get("uid", "")
        if uid in self._adopted or uid in self._touched or not self.registry.drivers(_node(pod)):
            return
        self._adopted.add(uid)
        claims, waiting, _ = self._claims_ready(pod)
        if waiting is not None:
            return
        failure = self._prepare(pod, claims)
        if failure is not None:
            self._warn_once(pod, "FailedPrepareDynamicResources",
                            PREPARE_FAILED_PREFIX + failure.message + "; the pod keeps running")
            return
        status = clone(pod.get("status") or {})
        self._add_resource_health(pod, claims, status)
        if status != (pod.get("status") or {}):
            self._write_status(pod, status)

    def _claims_ready(self, pod: Obj) -> tuple[list[Obj], str | None, bool]:
        """The pod's claims, or why it cannot start yet, and whether that is for good unless
        someone allocates and reserves a claim (True: what the real kubelet fails to prepare;
        False: a claim or its pod status is still to be written by the control plane), as the
        kubelet's admission checks."""
        ns = _md(pod).get("namespace")
        group_name = pod_group_name(pod)
        group = self.groups.get(group_name, ns) if group_name else None
        upstream = scheduling_group_name(pod) if group is None else None
        if upstream:  # KEP-5729: the claim of an upstream PodGroup is owned by and reserved for it
            group = next((g for inf in self.upstream_groups if (g := inf.get(upstream, ns)) is not None), None)
        claims: list[Obj] = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            try:
                name, check_owner = pod_claim_name(pod, entry)
            except ClaimNotCreated as exc:
                return [], str(exc), False
            if name is None:
                continue  # no claim needed for this entry
            claim = self.claims.get(name, ns)
            if claim is None:
                return [], f"ResourceClaim {name} does not exist", False
            is_group_claim = group is not None and group_entry_for(entry, group) is not None
            owner_uid = controller_uid(claim)
            if check_owner and owner_uid not in (_md(pod).get("uid"), _md(group or {}).get("uid")):
                return [], f"ResourceClaim {name} was not created for pod {_md(pod).get('name')}", True
            if not is_allocated(claim):
                return [], f"ResourceClaim {name} is not allocated", True
            reserved = is_reserved_for(claim, _md(pod).get("uid")) or (
                group is not None and is_reserved_for(claim, _md(group).get("uid")))
            if not reserved:
                kind = "its PodGroup" if is_group_claim else "it"
                return [], f"ResourceClaim {name} is not reserved for {kind}", True
            claims.append(claim)
        # The claim the binder made for extended resources (KEP-5004) is prepared like the others.
        extended = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
        if extended:
            claim = self.claims.get(extended, ns)
            if claim is None or not is_allocated(claim) or not is_reserved_for(claim, _md(pod).get("uid")):
                return [], f"extended-resource ResourceClaim {extended} is not allocated and reserved for it", True
            claims.append(claim)
        return claims, None, False

    def _start(self, pod: Obj) -> bool:
        uid = _md(pod).get("uid", "")
        if uid not in self._admitted:
            node = self.nodes.get(_node(pod))
            if node is None:
                return False  # no kubelet runs there: the pod stays Pending (upstream: nobody runs it)
            rejection = admit(pod, node, self._holding(_node(pod)))
            if rejection is not None:
                return self._reject(pod, rejection)
            self._admitted.add(uid)
            self._holding(_node(pod)).append(pod)
        claims, waiting, unpreparable = self._claims_ready(pod)
        if waiting is not None:
            if unpreparable:  # a pod bound with its claim unallocated (nodeName set by hand): upstream's kubelet
                return self._prepare_failed(pod, waiting)  # fails to prepare it, says so and tries again
            return False  # the claim controller or scheduler has work left; look again on change
        failure = self._prepare(pod, claims)
        if failure is not None:
            return self._prepare_failed(pod, failure.message)
        now = format_time(self.ctx.now())
        status = clone(pod.get("status") or {})
        status["phase"] = "Running"
        status["startTime"] = now
        conds = status.setdefault("conditions", [])
        for cond_type in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"):
            _set_condition(conds, cond_type, "True", now)
        status["containerStatuses"] = [
            {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": True, "started": True,
             "restartCount": 0, "state": {"running": {"startedAt": now}}}
            for c in (pod.get("spec") or {}).get("containers") or []
        ]
        self._add_resource_health(pod, claims, status)
        if not self._write_status(pod, status):
            return True
        self.ctx.decide(self.name, "start", pod, f"running on {pod['spec']['nodeName']}"
                        + (f" with claims {', '.join(_md(c).get('name', '') for c in claims)}" if claims else ""))
        return True

    def _prepare_failed(self, pod: Obj, message: str) -> bool:
        """Upstream's answer to a prepare error (see the module docstring): the Warning event and a
        ``prepare-failed`` decision once per distinct message, the pod Pending with its containers
        waiting to be created, and another try after :data:`RESYNC_INTERVAL` that does not wake
        the run (every change tries again anyway). True when the status was written."""
        md = _md(pod)
        key = (md.get("uid", ""), "FailedPrepareDynamicResources")
        if self._warned.get(key) != message:
            self._warned[key] = message
            self.ctx.event(pod, "Warning", "FailedPrepareDynamicResources", PREPARE_FAILED_PREFIX + message,
                           component=self.name)
            every = _go_seconds(int(RESYNC_INTERVAL.total_seconds()))
            self.ctx.decide(self.name, "prepare-failed", pod,
                            f"node {_node(pod)}: {message}; the pod stays Pending (containers not created) "
                            f"and is tried again on every change and every {every}")
        self._wake(self.ctx.now() + RESYNC_INTERVAL, f"{md.get('namespace')}/{md.get('name')}", drive=False)
        status = _waiting_to_start(pod, format_time(self.ctx.now()))
        if status == (pod.get("status") or {}):
            return False
        return self._write_status(pod, status)

    def _holding(self, node: str) -> list[Obj]:
        """The pods admitted on ``node`` that still hold its resources (not terminal: a pod being
        deleted holds them until its containers stopped), as the kubelet's active pods."""
        if self._on_node is None:
            self._on_node = {}
            for p in self.pods.values():
                phase = (p.get("status") or {}).get("phase") or "Pending"
                if phase in ("Succeeded", "Failed") or not _node(p):
                    continue
                if phase == "Running" or _md(p).get("uid", "") in self._admitted:
                    self._on_node.setdefault(_node(p), []).append(p)
        return self._on_node.setdefault(node, [])

    def _reject(self, pod: Obj, rejection: Rejection) -> bool:
        """Upstream ``kubelet.rejectPod``: a Warning event, phase Failed with the reason and
        ``Pod was rejected: <message>``; no container ever started."""
        message = f"Pod was rejected: {rejection.message}"
        status = clone(pod.get("status") or {})
        status.update(phase="Failed", reason=rejection.reason, message=message)
        if not self._write_status(pod, status):
            return True
        self.ctx.event(pod, "Warning", rejection.reason, rejection.message, component=self.name)
        self.ctx.decide(self.name, "reject", pod, f"{rejection.reason}: {message}")
        return True

    def _maybe_complete(self, pod: Obj) -> bool:
        text = (_md(pod).get("annotations") or {}).get(SIM_DURATION_ANNOTATION)
        if text is None:
            return False
        try:
            duration = parse_go_duration(text)
            started = parse_time(_running_since(pod) or (pod.get("status") or {}).get("startTime")
                                 or _md(pod).get("creationTimestamp") or "")
        except ValueError as exc:
            self._warn_once(pod, "InvalidSimDuration", f"annotation {SIM_DURATION_ANNOTATION}: {exc}; "
                                                       "the pod keeps running")
            return False
        if _in_crash_loop(pod):
            return self._restart(pod, text, duration)
        deadline = started + duration
        if self.ctx.now() < deadline:
            self._wake(deadline, f"{_md(pod).get('namespace')}/{_md(pod).get('name')}",
                       drive=not (endless(pod) and settled(_restart_count(pod), duration)))
            return False
        exit_code = self._exit_code(pod)
        if restarts_in_place(pod, exit_code):
            return self._restart(pod, text, duration)
        claims, _, _ = self._claims_ready(pod)
        self._unprepare(pod, claims)
        now = format_time(self.ctx.now())
        status = clone(pod.get("status") or {})
        status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
        conds = status.setdefault("conditions", [])
        for cond_type in ("PodReadyToStartContainers", "ContainersReady", "Ready"):
            _set_condition(conds, cond_type, "False", now, reason="PodCompleted" if exit_code == 0 else "PodFailed")
        for cs in status.get("containerStatuses") or []:
            started_at = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
            cs.update(ready=False, started=False, state={"terminated": {
                "exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                "startedAt": started_at, "finishedAt": now}})
        if not self._write_status(pod, status):
            return True
        self.ctx.decide(self.name, "complete", pod, f"{status['phase']} after {text} ({SIM_DURATION_ANNOTATION}"
                        + (f", exit code {exit_code})" if exit_code else ")"))
        return True

    def _restart(self, pod: Obj, text: str, duration: timedelta) -> bool:
        """The containers exited and the kubelet restarts them in the same pod, which stays Running
        (:mod:`drasched.node.restarts`: the first restart at once, then ``CrashLoopBackOff``).

        The pod is brought to where its timeline stands now, so one looked at late (its cycle
        had settled and no longer woke the run) gets every restart it missed. Once nothing ends
        the restarts (no Job counts them) and the cycle only repeats, the next exit no longer
        wakes the run: such a pod would keep a simulation going for ever.
        """
        key = f"{_md(pod).get('namespace')}/{_md(pod).get('name')}"
        try:
            before = _restarting(pod)
        except ValueError:
            return False  # a status this kubelet did not write: leave the pod as it is
        after = advance(before, duration, self.ctx.now())
        drive = not (endless(pod) and settled(after.restarts, duration))
        if after == before:
            self._wake(after.next_event(duration), key, drive=drive)
            return False
        exit_code = self._exit_code(pod)
        status = clone(pod.get("status") or {})
        if not status.get("containerStatuses"):  # a pod restored Running without them
            status["containerStatuses"] = [
                {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": True, "started": True,
                 "restartCount": before.restarts, "state": {"running": {"startedAt": format_time(before.since())}}}
                for c in (pod.get("spec") or {}).get("containers") or []]
        since = format_time(after.since())
        delay = int(restart_delay(after.restarts, after.last.finished - after.last.started).total_seconds()) if (
            after.running_since is None and after.last is not None) else 0
        for cs in status.get("containerStatuses") or []:
            cs["restartCount"] = after.restarts
            if after.last is not None:
                cs["lastState"] = {"terminated": {
                    "exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                    "startedAt": format_time(after.last.started), "finishedAt": format_time(after.last.finished)}}
            if after.running_since is not None:
                cs.update(ready=True, started=True, state={"running": {"startedAt": since}})
            else:
                cs.update(ready=False, started=False, state={"waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {_go_seconds(delay)} restarting failed container={cs.get('name')} "
                               f"pod={_md(pod).get('name')}_{_md(pod).get('namespace')}({_md(pod).get('uid')})"}})
        conds = status.setdefault("conditions", [])
        for cond_type in ("ContainersReady", "Ready"):
            if after.running_since is not None:
                _set_condition(conds, cond_type, "True", since)
            else:
                _set_condition(conds, cond_type, "False", since, reason="ContainersNotReady")
        if status == (pod.get("status") or {}):
            return False  # nothing this kubelet can show (no containers)
        if not self._write_status(pod, status):
            return True
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        exited = f"exit code {exit_code} after {text} ({SIM_DURATION_ANNOTATION}); "
        if after.running_since is None:
            message = f"{exited}back-off {_go_seconds(delay)} (restartPolicy {policy})"
        elif after.last is not None and after.running_since == after.last.finished:
            message = f"{exited}restarted at once (restartPolicy {policy})"
        else:
            message = f"containers restarted after back-off (restart {after.restarts})"
        if after.restarts - before.restarts > 1:
            message += f"; {after.restarts - before.restarts} restarts since {format_time(before.since())}"
        self.ctx.decide(self.name, "restart", pod, message)
        self._wake(after.next_event(duration), key, drive=drive)
        return True

    def _exit_code(self, pod: Obj) -> int:
        """The containers' exit code when the pod ends: ``drasched.io/sim-exit-code``, else 0."""
        text = (_md(pod).get("annotations") or {}).get(SIM_EXIT_CODE_ANNOTATION)
        if text is None:
            return 0
        try:
            return int(text)
        except ValueError:
            self._warn_once(pod, "InvalidSimExitCode", f"annotation {SIM_EXIT_CODE_ANNOTATION}: {text!r} is not "
                                                       "an integer; the pod succeeds")
            return 0

    def _finish_deletion(self, pod: Obj) -> bool:
        md = _md(pod)
        stops = self._stop_time(pod)
        if stops is not None and self.ctx.now() < stops:
            self._wake(stops, f"{md.get('namespace')}/{md.get('name')}")
            return False
        claims, _, _ = self._claims_ready(pod)
        self._unprepare(pod, claims)
        if (pod.get("status") or {}).get("phase") == "Running":
            return self._stopped(pod)
        try:
            self.ctx.store.delete(kinds.POD, md.get("name", ""), md.get("namespace"), uid=md.get("uid"),
                                  grace_period_seconds=0)
        except NotFound:
            self.pods.forget(md.get("name", ""), md.get("namespace"))
            return False
        except Conflict:
            return True  # replaced meanwhile: look again on the next pass
        self.pods.forget(md.get("name", ""), md.get("namespace"))
        self.ctx.decide(self.name, "remove", pod, "containers stopped; pod deleted (grace period 0)")
        return True

    def _stopped(self, pod: Obj) -> bool:
        """A deleted pod whose containers were killed goes to a terminal phase before the
        kubelet removes it (upstream since 1.27: ``Failed`` unless it had succeeded), so the
        Job controller reads its last status (a ``DisruptionTarget`` condition, say) as
        upstream's does through its tracking finalizer. Removed on the next pass."""
        now = format_time(self.ctx.now())
        status = clone(pod.get("status") or {})
        status["phase"] = "Failed"
        conds = status.setdefault("conditions", [])
        for cond_type in ("PodReadyToStartContainers", "ContainersReady", "Ready"):
            _set_condition(conds, cond_type, "False", now, reason="PodFailed")
        for cs in status.get("containerStatuses") or []:
            state = cs.get("state") or {}
            if "terminated" in state:
                continue
            started_at = (state.get("running") or {}).get("startedAt", now)
            cs.update(ready=False, started=False, state={"terminated": {
                "exitCode": 137, "reason": "Error", "startedAt": started_at, "finishedAt": now}})
        return self._write_status(pod, status) or True

    def _stop_time(self, pod: Obj) -> datetime | None:
        """When a deleted pod's containers have stopped (``None``: at once)."""
        md = _md(pod)
        text = (md.get("annotations") or {}).get(SIM_TERMINATION_ANNOTATION)
        if text is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return None
        try:
            stop = parse_go_duration(text)
            deadline = parse_time(md.get("deletionTimestamp") or "")
        except ValueError as exc:
            self._warn_once(pod, "InvalidSimTermination", f"annotation {SIM_TERMINATION_ANNOTATION}: {exc}; "
                                                          "the pod stops at once")
            return None
        grace = timedelta(seconds=int(md.get("deletionGracePeriodSeconds") or 0))
        return deadline - grace + min(stop, grace)  # deletionTimestamp is the deadline: requested + grace

    # ---- helpers -------------------------------------------------------------------------------
    def _wake(self, when: datetime, key: str, *, drive: bool = True) -> None:
        """Look at the pod ``key`` again at ``when``; ``drive``: the runner advances virtual time to
        it (otherwise the pod is looked at once virtual time got there for something else)."""
        if (when, key) not in self._scheduled:
            self._scheduled.add((when, key))
            heapq.heappush(self._deadlines, (when, key))
            if drive:
                self.ctx.wake_at(when)

    def _write_status(self, pod: Obj, status: Obj) -> bool:
        """Patch the status subresource under the pod's resourceVersion; False on a lost race."""
        md = _md(pod)
        try:
            updated = self.ctx.store.patch(
                kinds.POD, md.get("name", ""), md.get("namespace"),
                {"metadata": {"resourceVersion": md.get("resourceVersion")}, "status": status},
                subresource="status")
        except (Conflict, NotFound):
            return False
        except ApiError as exc:
            self._warn_once(pod, "FailedStatusUpdate", exc.message)
            return False
        self.pods.put(updated)
        return True

    def _warn_once(self, pod: Obj, reason: str, message: str) -> None:
        key = (_md(pod).get("uid", ""), reason)
        if self._warned.get(key) == message:
            return
        self._warned[key] = message
        self.ctx.event(pod, "Warning", reason, message, component=self.name)
        self.ctx.decide(self.name, reason, pod, message)


class SimNodeDriverController:
    """The simulated nodes' DRA drivers (their kubelet plugins) run apart from the kubelet's pod
    pass, so that :func:`drasched.sim.registry.build_default_controllers` can run them before the
    scheduler in each round; they share the kubelet's driver registry."""

    name = "sim-node-drivers"

    def __init__(self, kubelet: SimulatedKubelet) -> None:
        self.kubelet = kubelet

    def reconcile(self, ctx: ControllerContext) -> bool:
        return self.kubelet.sync_drivers(ctx)
