"""The scheduler's loop in an embedded run: drain watch events, run one cycle, write its decisions.

All I/O of the scheduler lives here; :func:`~drasched.scheduler.cycle.run_cycle` is pure.
Writes are idempotent and tolerate conflicts: a write that loses a race is simply redone
by a later cycle from fresher state.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, TypeVar

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, Conflict, NotFound
from drasched.api.kinds import ResourceType
from drasched.api.meta import format_time, parse_time
from drasched.api.resource import FINALIZER
from drasched.control import SCHEDULER_CONFIG_MAP, BindHandoff, ControllerContext
from drasched.dra.claimrules import claim_names_of, status_claim_names
from drasched.scheduler.backoff import BindBackoff
from drasched.scheduler.bindrecord import assumed_bind_request, needs_bind_request, pod_moved_on
from drasched.scheduler.cache import WATCHED, SchedulerCache, object_key
from drasched.scheduler.config import ConfigError, SchedulerConfig, config_from_yaml
from drasched.scheduler.constants import DEFAULT_QUEUE, POD_SCHEDULED
from drasched.scheduler.cycle import CycleResult, run_cycle
from drasched.scheduler.eviction import (
    DISRUPTION_MESSAGES,
    DISRUPTION_TARGET,
    EVENT_REASONS,
    PREEMPTION_BY_SCHEDULER,
    Eviction,
)
from drasched.scheduler.foreign_writes import is_translated, report_problems, source_of, write_upstream_condition
from drasched.scheduler.groups import GroupInfo
from drasched.scheduler.groupstatus import pod_group_status
from drasched.scheduler.groupstatus import status_changed as group_status_changed
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.session import Placement
from drasched.scheduler.snapshot import Snapshot, SnapshotBuilder
from drasched.scheduler.unconfirmed import UnconfirmedCreates, may_have_been_applied

Obj = dict[str, Any]
log = logging.getLogger("drasched")
_T = TypeVar("_T")
_R = TypeVar("_R")


REFUSED_BACKOFF = timedelta(minutes=1)
"""How long a pod whose eviction the API refused is not chosen as a victim again."""
WRITE_RETRY_SECONDS = 1.0
"""After a cycle whose writes failed, the next cycle runs this soon even if nothing changes."""
MAX_PARKED_SECONDS = 300
"""A gang that failed is tried again after this long even if nothing freed anything (upstream:
``podMaxInUnschedulablePodsDuration``, 5 minutes)."""
QUICK_ROUND_INTERVAL = 0.01
"""Serve's rest between two scheduler rounds while at most ``QUICK_ROUND_PODS`` pods wait."""
QUICK_ROUND_PODS = 32
GANG_BACKOFF_INITIAL = 1.0
GANG_BACKOFF_MAX = 10.0
"""With ``gang_backoff`` (serve), a gang that failed n times in a row is not tried again for
``GANG_BACKOFF_INITIAL * 2**(n-1)`` seconds, at most ``GANG_BACKOFF_MAX``, whatever happens
meanwhile (upstream's backoff queue: ``podInitialBackoffSeconds`` 1, ``podMaxBackoffSeconds`` 10)."""
_KEEP = object()

CONFIG_MAP_KEY = SCHEDULER_CONFIG_MAP
"""A ConfigMap here with a ``config.yaml`` key configures an embedded run (on top of the defaults)."""


def config_from_config_map(cm: Obj, base: SchedulerConfig, any_module: bool = True,
                           key: str = CONFIG_MAP_KEY) -> SchedulerConfig:
    """The configuration in the ConfigMap's ``data["config.yaml"]`` on top of ``base``; a ConfigMap of
    any shape gives a configuration or a :class:`ConfigError` naming the key, never another exception.

    Without ``any_module`` it may load only the external plugin modules ``base`` names.
    """
    where = f"ConfigMap {key}"
    data = cm.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: data must be a map of strings, got {type(data).__name__}")
    text = data.get("config.yaml", "")
    if not isinstance(text, str):
        raise ConfigError(f"{where}: data.config.yaml must be a string, got {type(text).__name__}")
    modules = None if any_module else {s.module for s in base.plugins if s.module}
    return config_from_yaml(text, base, where=where, modules=modules)


def pod_signature(p: PodInfo) -> tuple[Any, ...]:
    """A waiting pod's part of :func:`gang_signature`."""
    status = p.obj.get("status") or {}
    return (p.key, p.uid, p.eq_key, p.static_key, p.priority, p.phase, p.deleting, p.gated, p.node_name,
            status.get("resourceClaimStatuses"), status.get("nominatedNodeName"))


def group_signature(pg: Obj | None) -> tuple[Any, ...]:
    """What a cycle reads of a PodGroup: not its ``resourceVersion``, which the scheduler's own
    status write moves (a gang's ``phase`` and ``Scheduled`` condition are no change, as the
    PodScheduled condition written on its pods is none)."""
    if pg is None:
        return ()
    md = pg.get("metadata") or {}
    return (md.get("uid"), md.get("deletionTimestamp"), md.get("labels"), md.get("annotations"), pg.get("spec"),
            (pg.get("status") or {}).get("resourceClaimStatuses"))


def gang_signature(g: GroupInfo, pod_part: Callable[[PodInfo], tuple[Any, ...]] = pod_signature) -> tuple[Any, ...]:
    """What a cycle reads of a gang and its waiting pods, apart from the condition the scheduler
    writes on them: when it changes, the gang may fit now."""
    return (group_signature(g.obj), g.min_member, g.placed, g.blocked, g.queue, g.priority, len(g.pods),
            tuple(map(pod_part, g.pending)))


class PodSignatures:
    """:func:`pod_signature` of each waiting pod, kept while the snapshot holds the same PodInfo
    (one per version of the pod): in a burst hundreds of gangs wait, parked, for their claims,
    and every cycle asks whether each changed."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[PodInfo, tuple[Any, ...]]] = {}
        self._used: dict[int, tuple[PodInfo, tuple[Any, ...]]] = {}

    def __call__(self, p: PodInfo) -> tuple[Any, ...]:
        hit = self._kept.get(id(p))
        if hit is None or hit[0] is not p:  # the entry keeps its PodInfo alive: an id is not reused
            hit = (p, pod_signature(p))
        self._used[id(p)] = hit
        return hit[1]

    def sweep(self) -> None:
        """Forget the pods not asked about since the last sweep."""
        self._kept, self._used = self._used, {}


def waits_for_an_object(message: str) -> bool:
    """Whether an unschedulable message says the pod waits for its claims to be created: held
    back for the claim-wait grace (a PodGroup, template or queue that does not exist is said at
    once, as the serve tests of the gang API expect)."""
    return " to be created" in message


def missing_claims(g: GroupInfo, claims: Mapping[str, Any]) -> frozenset[str]:
    """The claims (``namespace/name``) the gang's waiting pods name, by ``resourceClaimName`` or
    by their status for a template entry, that ``claims`` lacks: the pods wait for these to be
    created, and the creation of any of them changes nothing in the pods themselves."""
    group_names = status_claim_names(g.obj) if g.obj is not None else {}
    missing: set[str] = set()
    for p in g.pending:
        names = claim_names_of(p.obj) | {n for e in p.claim_entries if (n := group_names.get(e.name))}
        missing.update(k for n in names if (k := f"{p.namespace}/{n}") not in claims)
    return frozenset(missing)


class SchedulerController:
    """``scheduler`` in the embedded control plane."""

    name = "scheduler"

    def __init__(self, config: SchedulerConfig | None = None, *, claim_wait_grace: float | None = None,
                 write_workers: int = 1, idle_cycle_period: float | None = None,
                 claims_queued: Callable[[str], bool] | None = None, config_map_modules: bool = True,
                 config_map: str = CONFIG_MAP_KEY,
                 allocation_wall_time: float | None = None,
                 taint_rules: ResourceType | None = kinds.DEVICE_TAINT_RULE,
                 foreign: tuple[ResourceType, ...] = (), queue_status_period: float | None = None,
                 gang_backoff: bool = False, log_foreign_problems: bool = True,
                 bind_handoff: BindHandoff | None = None) -> None:
        self.bind_handoff = bind_handoff
        """``drasched serve``: lone pods' placements go to the binder through it, not as written
        BindRequests (:mod:`~drasched.scheduler.bindrecord`); embedded: None, every placement is
        written, for the output's record."""
        self.log_foreign_problems = log_foreign_problems
        """Whether what the translation of ``foreign`` objects cannot use is logged, beside its Warning
        Event (``drasched serve``); embedded: the manifest loader printed each already."""
        self.gang_backoff = gang_backoff
        """``drasched serve``: a failed gang backs off (see ``GANG_BACKOFF_INITIAL``); embedded: no,
        it is tried as soon as something may help (virtual time, every decision reproducible)."""
        self.queue_status_period = queue_status_period
        """``drasched serve``: seconds between two writes of a queue's usage (see
        :meth:`_usage_write_later`); embedded: None, every change is written at once."""
        self._queue_written: dict[str, datetime] = {}
        self._cycle_due: datetime | None = None
        """When a cycle runs even if nothing changed: a queue's usage held back by
        ``queue_status_period`` is to be written, or a parked gang's backoff ends."""
        self.config_map_modules = config_map_modules
        self.config_map = config_map
        """``namespace/name`` of the ConfigMap applied on top of the base configuration."""
        self.allocation_wall_time = allocation_wall_time
        """``drasched serve``: seconds one device allocation search may run on top of its step
        budget, so no input stalls a live scheduler; embedded: None, the steps alone decide and
        a run gives the same answer on any machine."""
        """Whether the ConfigMap may load plugin modules the configuration file does not name
        (``drasched serve``: no, importing a module runs its code; embedded: yes)."""
        self.claim_wait_grace = claim_wait_grace
        """``drasched serve``: seconds a pod may wait for the claim controller to create its
        template claims before it is marked unschedulable for that (None: at once, as embedded)."""
        self.claims_queued = claims_queued
        """``drasched serve --enable-claim-controller``: whether the in-process claim controller
        has this pod (by uid) queued for a later pass of a burst; its grace starts after."""
        self.idle_cycle_period = idle_cycle_period
        """``drasched serve``: while every pod of ours is bound, finished or placed by a live
        BindRequest, changes (the binder's own writes, mostly) start a cycle at most this
        often; it would only refresh queue statuses. Embedded: None, a cycle per change."""
        self._last_cycle: datetime | None = None
        self._refresh_at: datetime | None = None
        self.write_workers = write_workers
        """Writes in flight at once (``drasched serve``: a cycle's creates are round trips to
        the API server, one after another they would cap a cycle at the server's latency;
        embedded: 1, in order, so a run is deterministic)."""
        self._pool: ThreadPoolExecutor | None = None
        self._waiting_since: dict[tuple[str, str], datetime] = {}
        """(pod uid, message) -> the first cycle that saw the pod wait for a claim to be created."""
        self.base_config = config or SchedulerConfig.embedded()
        self.config = self.base_config
        # DeviceTaintRules taint devices for allocation; serve watches them in the version
        # the API server serves (v1 from Kubernetes 1.37, v1beta2 before), if any.
        self.cache = SchedulerCache((*WATCHED, taint_rules) if taint_rules is not None else WATCHED,
                                    foreign=foreign)  # other schedulers' kinds the server serves
        self.builder = SnapshotBuilder(self.config, allocation_wall_time=allocation_wall_time)
        self._config_rv: str | None = None
        self._good_config_rv: str | None = None
        """The resourceVersion of the ConfigMap whose configuration is in force (None: the base)."""
        self.last: CycleResult | None = None
        self.cycles = 0
        self.waiting_pods = 0
        """Pods the last cycle looked at to place, and those parked until their claims exist (see
        :meth:`round_interval`)."""
        self._group_messages: dict[str, str] = {}
        self._mismatch_noted: set[str] = set()
        self._wake: datetime | None = None
        self._refused: dict[str, datetime] = {}
        """Pod uid -> until when it is not chosen as a victim again (the eviction API refused it)."""
        self.bind_backoff = BindBackoff()
        """Pods whose bind failed wait (1 s doubling to 10 s, as upstream) before they are placed again."""
        self._parked: dict[str, tuple[tuple[Any, ...], int, datetime, datetime]] = {}
        """Gang key -> (the gang as it failed, the builder's ``freed`` then, when to try it anyway,
        until when it backs off)."""
        self._signatures = PodSignatures()
        self._parked_as: dict[str, GroupInfo] = {}
        """Parked gang key -> the builder's GroupInfo last found to read as it did when parked. The
        builder makes a new GroupInfo only when the gang's pods or PodGroup change, so the same
        object needs no signature: in a burst hundreds of gangs wait parked, each asked every cycle."""
        self._awaiting: dict[str, frozenset[str]] = {}
        """Parked gang key -> the claims its pods waited for to be created: the first of them to
        arrive brings it back (upstream's claim Add event hint), though the pods did not change."""
        self._status_due: set[str] | None = None
        """Groups changed since their PodGroup statuses were last looked at (``None``: any)."""
        self._pod_waits: dict[str, int] = {}
        """Parked gang -> the builder's ``pod_changes`` when it failed for other pods (inter-pod
        affinity, topology spread: a filter whose ``events()`` name Pod): a pod change retries it."""
        self._failures: dict[str, int] = {}
        """Gang key -> cycles in a row that tried it and placed nothing (its backoff grows with them)."""
        self._parked_wake: datetime | None = None
        """The earliest minRuntime end seen while gangs were parked: every gang is tried then."""
        self._write_failures = 0
        """Writes of the current cycle the API server refused (counted across the write workers)."""
        self._shadow_noted: set[tuple[str, str, str, str | None]] = set()
        """DeviceClasses already told that another class serves their extendedResourceName."""
        self._unconfirmed = UnconfirmedCreates()
        """BindRequests whose create may have been applied though it failed: no cycle runs until
        each is read back (:mod:`~drasched.scheduler.unconfirmed`)."""

    def reconcile(self, ctx: ControllerContext) -> bool:
        now = ctx.now()
        due = self._wake is not None and now >= self._wake
        refresh = self._refresh_at is not None and now >= self._refresh_at
        cycle_due = self._cycle_due is not None and now >= self._cycle_due
        changed = self.cache.sync(ctx.store, ctx.informers)
        if self.bind_handoff is not None:
            changed = self._settle_assumed(ctx, self.bind_handoff) or changed
        if not changed and not due and not refresh and not cycle_due and not self._unconfirmed:
            return False
        if self._unconfirmed and not self._unconfirmed.settle(ctx.store, self.cache, ctx.informers):
            self._retry_soon(ctx, now)  # the API server does not answer: decide nothing until it does
            return False
        report_problems(ctx, self.name, self.cache.take_problems(), logged=self.log_foreign_problems)
        self._load_config(ctx)
        snap = self.builder.build(self.cache, self.bind_backoff, now)
        self._note_touched(snap)
        self._report_shadowed_classes(ctx, snap)
        idle_until = self._idle_until(now, due or cycle_due)
        if idle_until is not None and not self.builder.has_pending():
            return self._rest(ctx, snap, idle_until)  # nothing to place: only statuses would change
        last_cycle = self._last_cycle
        self._refresh_at, self._last_cycle, self._cycle_due = None, now, None
        if due:
            self._parked.clear()  # a minRuntime or a backoff ended: victims or room may be there now
            self._parked_as.clear()
            self._parked_wake = None
        full, snap = snap, self._without_parked(snap, now)
        # Pods parked until their claims exist are arriving too: counted, a burst whose claims the
        # claim controller creates one by one still gets burst rounds that place several pods a cycle
        # (at 10 ms each placed about one: 1,007 cycles for 1,000 pods, 3x the CPU; BENCHMARKS.md).
        self.waiting_pods = sum(len(g.pending) for g in snap.pending_groups) + sum(
            len(g.pending) for key in self._awaiting if (g := full.groups.get(key)) is not None)
        if self._cycle_due is not None:
            ctx.wake_at(self._cycle_due)
        if not snap.pending_groups and idle_until is not None:
            # Every waiting gang is parked (most often: pods waiting for their claims to be
            # created): a cycle would place nothing. Under churn every watch event of a bound
            # pod or its claim came here and ran one all the same (BENCHMARKS.md).
            self._last_cycle = last_cycle
            return self._rest(ctx, snap, idle_until)  # the parked gangs' PodGroups keep what they say
        self._refused = {uid: until for uid, until in self._refused.items() if until > now}
        result = run_cycle(snap, self.config, format_time(now), avoid=frozenset(self._refused))
        self.last = result
        self.cycles += 1
        self._wake = min((t for t in (result.wake_at, self._parked_wake, *snap.backing_off.values()) if t is not None),
                         default=None)
        if self._wake is not None:
            ctx.wake_at(self._wake)
        self._write_failures = 0
        try:
            wrote = self._write(ctx, snap, result)
        except Exception:
            self._retry_soon(ctx, now)  # the writes were cut short (the API server, the lease): decide again
            raise
        if self._write_failures:
            self._retry_soon(ctx, now)  # a refused write changes nothing the cache would see
        else:
            # Parked only once their conditions are written: a gang is not left waiting unreported.
            self._park(snap, result, now)
            if self._parked and result.wake_at is not None:
                # A parked gang is not tried, so it notes no wake-up of its own: keep the one it was parked with.
                self._parked_wake = min(result.wake_at, self._parked_wake or result.wake_at)
        return wrote

    def _idle_until(self, now: datetime, due: bool) -> datetime | None:
        """Until when a build with nothing to place may skip the cycle (``idle_cycle_period``
        after the last one; None: run it now, as a wake-up is due or no idle period is set)."""
        if self.idle_cycle_period is None or due or self._last_cycle is None:
            return None
        next_cycle = self._last_cycle + timedelta(seconds=self.idle_cycle_period)
        return next_cycle if now < next_cycle else None

    def _rest(self, ctx: ControllerContext, snap: Snapshot, until: datetime) -> bool:
        """No cycle this time: the statuses of the groups that changed are written, and the
        cycle that refreshes queue statuses runs at ``until``."""
        self._refresh_at = until
        ctx.wake_at(until)
        return self._write_group_statuses(ctx, snap, CycleResult())

    def _settle_assumed(self, ctx: ControllerContext, handoff: BindHandoff) -> bool:
        """Take the binder's word on the binds handed to it: a failed one stands as a failed
        BindRequest would (backoff, then placed again); one whose pod is bound or gone is over."""
        if handoff.informers is None:
            handoff.informers = ctx.informers
        changed = False
        assumed = self.cache.assumed()
        for br in handoff.take_reports():
            key = object_key(br)
            held = assumed.get(key)
            if held is not None and held["metadata"]["uid"] == br["metadata"]["uid"]:
                self.cache.assume(br)
                changed = True
        for key in [k for k, br in assumed.items() if pod_moved_on(br, self.cache.get(kinds.POD, k))]:
            self.cache.forget_assumed(key)
            changed = True
        return changed

    def _report_shadowed_classes(self, ctx: ControllerContext, snap: Snapshot) -> None:
        """Say once, on each DeviceClass that loses it, that another class serves the same
        ``extendedResourceName`` (upstream: the class created later wins, at the same
        creation time the name sorted first; upstream says nothing, and a user who added a
        class for ``nvidia.com/gpu`` next to the driver's would not know why it is unused)."""
        by_resource = snap.accounting.by_resource
        for resource, losers in by_resource.shadowed.items():
            winner = by_resource.class_for(resource)
            for name in losers:
                dc = self.cache.get(kinds.DEVICE_CLASS, name)
                if dc is None:
                    continue
                key = (name, str((dc.get("metadata") or {}).get("resourceVersion")), resource, winner)
                if key in self._shadow_noted:
                    continue
                self._shadow_noted.add(key)
                message = (f"extendedResourceName {resource} is also set on DeviceClass {winner}, which serves it "
                           f"(the class created later wins; at the same creationTimestamp, the name sorted "
                           f"first): pods asking for {resource} get no devices of this class")
                ctx.event(dc, "Warning", "ExtendedResourceNameTaken", message)
                ctx.decide(self.name, "warning", dc, message)

    def round_interval(self, burst: float) -> float:
        """The shortest rest between two rounds in serve: short while few pods wait, so each is
        placed as soon as it can be; ``burst`` while many do, so that the rest of a burst
        arrives while one cycle runs and joins the next (a cycle each for a few pods costs
        its fixed part again and again: fewer pods a second, measured in BENCHMARKS.md)."""
        return QUICK_ROUND_INTERVAL if self.waiting_pods <= QUICK_ROUND_PODS else burst

    def _retry_soon(self, ctx: ControllerContext, now: datetime) -> None:
        retry = now + timedelta(seconds=WRITE_RETRY_SECONDS)
        self._wake = retry if self._wake is None else min(self._wake, retry)
        ctx.wake_at(retry)

    def _without_parked(self, snap: Snapshot, now: datetime) -> Snapshot:
        """Leave out the gangs that failed and that nothing has helped since: the same gang
        (:func:`gang_signature`: the PodScheduled condition written for it is no change) and no pod or claim gave
        anything back. Upstream's scheduling queue keeps such pods in its unschedulable set
        until an event its plugins' queueing hints name, or ``podMaxInUnschedulablePodsDuration``
        (5 minutes) passes."""
        if not self._parked:
            return snap
        self._signatures.sweep()
        # Each gang asked once (its signature is a tuple over its waiting pods: in a burst,
        # hundreds of gangs wait for their claims, and every cycle asks about each).
        held = [self._still_parked(g, snap, now) for g in snap.pending_groups]
        keep = [g for g, h in zip(snap.pending_groups, held, strict=True) if not h]
        self._parked = {g.key: self._parked[g.key] for g, h in zip(snap.pending_groups, held, strict=True) if h}
        self._parked_as = {k: g for k, g in self._parked_as.items() if k in self._parked}
        self._awaiting = {k: v for k, v in self._awaiting.items() if k in self._parked}
        self._pod_waits = {k: v for k, v in self._pod_waits.items() if k in self._parked}
        self._failures = {g.key: self._failures[g.key] for g in snap.pending_groups if g.key in self._failures}
        ends = [hit[3] for g in snap.pending_groups if (hit := self._parked.get(g.key)) is not None
                and now < hit[3] and (hit[1] != snap.freed or self._pods_moved(g.key, snap)
                                      or not self._reads_as_parked(g, hit[0]))]
        if ends:  # something that may help came while it backs off: look again when the backoff ends
            self._cycle_due = min(ends) if self._cycle_due is None else min(self._cycle_due, min(ends))
        if len(keep) == len(snap.pending_groups):
            return snap
        return dataclasses.replace(snap, pending_groups=tuple(keep))

    def _still_parked(self, g: GroupInfo, snap: Snapshot, now: datetime) -> bool:
        hit = self._parked.get(g.key)
        if hit is None or now >= hit[2]:
            return False
        if now < hit[3]:
            return True  # backing off: whatever changed waits for the backoff to end
        awaited = self._awaiting.get(g.key)
        if awaited and any(k in snap.claims for k in awaited):
            return False  # a claim it waited for is there now
        if self._pods_moved(g.key, snap):
            return False  # it failed for other pods (affinity, spread), and pods changed since
        return hit[1] == snap.freed and self._reads_as_parked(g, hit[0])

    def _reads_as_parked(self, g: GroupInfo, signature: tuple[Any, ...]) -> bool:
        """Whether the gang reads as it did when parked (``signature``, its :func:`gang_signature` then)."""
        if self._parked_as.get(g.key) is g:
            return True
        if signature != gang_signature(g, self._signatures):
            return False
        self._parked_as[g.key] = g
        return True

    def _pods_moved(self, key: str, snap: Snapshot) -> bool:
        seen = self._pod_waits.get(key)
        return seen is not None and seen != snap.pod_changes

    def _park(self, snap: Snapshot, result: CycleResult, now: datetime) -> None:
        until = now + timedelta(seconds=MAX_PARKED_SECONDS)
        messages = {pod.key: cond.get("message") or "" for pod, cond in result.pod_conditions}
        for key in result.failed_gangs:
            # A pod still waiting for its claims to be created was not really tried (upstream holds
            # such a pod before its queue, in PreEnqueue): its claims' arrival retries it at once.
            if any(waits_for_an_object(messages.get(p.key, "")) for p in snap.groups[key].pending):
                # Tried again once the claim-wait grace ends if its condition was held back for it,
                # so a claim that never comes (a resourceClaimName nobody creates) is reported then.
                retry = min([until, *(t for t in self._grace_ends(snap.groups[key], messages) if t > now)])
                self._parked[key] = (gang_signature(snap.groups[key], self._signatures), snap.freed, retry, now)
                self._parked_as[key] = snap.groups[key]
                self._awaiting[key] = missing_claims(snap.groups[key], snap.claims)
                continue
            self._awaiting.pop(key, None)
            self._pod_waits.pop(key, None)
            pod_rules = snap.profile.messages_requeued_on("Pod")
            # every message of the cycle: a condition written before and unchanged is not in ``messages``
            if pod_rules and any(m in result.unschedulable.get(p.key, "") for p in snap.groups[key].pending
                                 for m in pod_rules):
                self._pod_waits[key] = snap.pod_changes
            failures = self._failures[key] = self._failures.get(key, 0) + 1
            backoff = min(GANG_BACKOFF_INITIAL * 2 ** (failures - 1), GANG_BACKOFF_MAX) if self.gang_backoff else 0.0
            self._parked[key] = (gang_signature(snap.groups[key], self._signatures), snap.freed, until,
                                 now + timedelta(seconds=backoff))
            self._parked_as[key] = snap.groups[key]

    def _grace_ends(self, g: GroupInfo, messages: Mapping[str, str]) -> list[datetime]:
        """When the claim-wait grace of the gang's pods ends, for those whose condition it holds back."""
        if self.claim_wait_grace is None:
            return []
        grace = timedelta(seconds=self.claim_wait_grace)
        return [since + grace for p in g.pending
                if (since := self._waiting_since.get((p.uid, messages.get(p.key, "")))) is not None]

    def _load_config(self, ctx: ControllerContext) -> None:
        """Apply the ConfigMap's configuration when it changes. A bad one is reported (a log line
        and a Warning Event on the ConfigMap naming the key and the field) and ignored: the last
        good configuration stays in force, as kube-scheduler keeps running with the one it has
        until a restart; the next good edit applies. A ConfigMap deleted gives the base
        (``--config``) configuration back."""
        cm = self.cache.get(kinds.CONFIG_MAP, self.config_map)
        rv = None if cm is None else str((cm.get("metadata") or {}).get("resourceVersion"))
        if rv == self._config_rv:
            return
        self._config_rv = rv
        config = self.base_config
        if cm is not None:
            try:
                config = config_from_config_map(cm, self.base_config, self.config_map_modules, self.config_map)
            except ConfigError as exc:
                kept = (f"keeping the last good configuration (ConfigMap resourceVersion {self._good_config_rv})"
                        if self._good_config_rv is not None else "keeping the configuration without the ConfigMap")
                message = f"{exc}; {kept}"
                log.warning("%s", message)
                ctx.event(cm, "Warning", "InvalidConfiguration", message)
                ctx.decide(self.name, "config", cm, message)
                return
        self._good_config_rv = rv
        self.config = config
        self.builder = SnapshotBuilder(config, allocation_wall_time=self.allocation_wall_time)

    # ------------------------------------------------------------------ writes

    def _write(self, ctx: ControllerContext, snap: Snapshot, result: CycleResult) -> bool:
        store = ctx.store
        wrote = False
        for br in result.replace_bind_requests:
            md = br["metadata"]
            if object_key(br) in self.cache.assumed():
                self.cache.forget_assumed(object_key(br))  # never written: nothing to delete
                continue
            try:
                store.delete(kinds.BIND_REQUEST, md["name"], md["namespace"], uid=md.get("uid"))
                wrote = True
            except NotFound:
                pass
            except ApiError as exc:
                self._write_failures += 1
                ctx.decide(self.name, "error", br, f"cannot delete failed BindRequest: {exc.message}")
        to_write: list[Obj] = []
        written: list[Placement] = []
        handed: list[Obj] = []
        for br, placement in zip(result.bind_requests, result.placements, strict=True):
            if self.bind_handoff is None or needs_bind_request(placement, snap.groups[placement.group]):
                to_write.append(br)
                written.append(placement)
                continue
            assumed = assumed_bind_request(br, format_time(ctx.now()))
            self.cache.assume(assumed)
            handed.append(assumed)
            self._decide_placed(ctx, assumed, placement)
            wrote = True
        if handed and self.bind_handoff is not None:
            self.bind_handoff.hand(handed)
        for br, placement, error in self._create_all(store, to_write, written):
            if error is None:
                wrote = True
                self._decide_placed(ctx, br, placement)
            else:
                if may_have_been_applied(error):
                    self._unconfirmed.note(br)  # the next cycle reads it back before it decides
                if not isinstance(error, AlreadyExists):
                    self._write_failures += 1
                    ctx.decide(self.name, "error", placement.pod.obj, f"cannot create BindRequest: {error.message}")
        wrote |= self._evict(ctx, result)
        nominated = {pod.key: node for pod, node in result.nominations}
        still = {(pod.uid, cond["message"]) for pod, cond in result.pod_conditions}
        self._waiting_since = {k: t for k, t in self._waiting_since.items() if k in still}
        conditions = [(pod.obj, cond, nominated.pop(pod.key, _KEEP)) for pod, cond in result.pod_conditions
                      if not self._claim_wait_pending(ctx, pod.uid, pod.created, cond["message"])]
        wrote |= any(self._each(lambda job: self._set_condition(ctx, *job), conditions))
        for pod, node in result.nominations:
            if pod.key in nominated:
                wrote |= self._patch_status(ctx, pod.obj, {"nominatedNodeName": node})
        for claim in result.delete_claims:
            wrote |= self._delete_stale_claim(ctx, claim)
        for pod, claim in result.deallocate_claims:
            wrote |= self._deallocate_claim(ctx, pod, claim)
        for queue, status in result.queue_statuses:
            if is_translated(queue):
                continue  # a KAI Queue: drasched writes no status there (docs/design.md)
            if self._usage_write_later(ctx, queue, status):
                continue
            try:
                store.update_status({**queue, "status": status})
                wrote = True
            except ApiError as exc:  # Conflict: a fresher cycle rewrites it
                ctx.decide(self.name, "error", queue, f"cannot write queue status: {exc.message}")
        wrote |= self._write_group_statuses(ctx, snap, result)
        if result.create_default_queue:
            try:
                store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue",
                              "metadata": {"name": DEFAULT_QUEUE}, "spec": {}})
                wrote = True
            except AlreadyExists:
                pass
        wrote |= self._group_events(ctx, snap, result)
        return wrote

    def _decide_placed(self, ctx: ControllerContext, br: Obj, placement: Placement) -> None:
        claims = ", ".join(c["name"] for c in br["spec"].get("resourceClaimAllocations", []))
        ext = "; extended resources through DRA" if placement.extended is not None else ""
        ctx.decide(self.name, "place", placement.pod.obj,
                   f"node {br['spec']['selectedNode']}" + (f"; claims {claims}" if claims else "") + ext)

    def _note_touched(self, snap: Snapshot) -> None:
        """Keep the groups each build changed until their PodGroup statuses are looked at (a
        build without a cycle, nothing pending, still moves them: pods start running, finish)."""
        if snap.touched_groups is None:
            self._status_due = None
        elif self._status_due is not None:
            self._status_due |= snap.touched_groups

    def _write_group_statuses(self, ctx: ControllerContext, snap: Snapshot, result: CycleResult) -> bool:
        statuses = self._pod_group_statuses(snap, result, format_time(ctx.now()))
        self._status_due = set()
        return any(self._each(lambda job: self._write_group_status(ctx, *job), statuses))

    def _pod_group_statuses(self, snap: Snapshot, result: CycleResult, now: str) -> list[tuple[Obj, Obj]]:
        """(PodGroup, new status) for drasched's own PodGroups whose status this cycle changes
        (:mod:`~drasched.scheduler.groupstatus`); a group with no pod gets none."""
        out: list[tuple[Obj, Obj]] = []
        keys: Iterable[str] = self.cache.objects(kinds.POD_GROUP)
        if self._status_due is not None:  # only the groups a change or this cycle can move
            keys = {*self._status_due, *(g.key for g in snap.pending_groups), *result.groups_placed,
                    *result.group_messages}
        for key in sorted(keys):
            g = snap.groups.get(key)
            if g is None or g.obj is None or g.implicit or is_translated(g.obj):
                continue
            status = pod_group_status(g, result.groups_placed.get(key, 0), result.group_messages.get(key),
                                      key in result.beyond_limit, now)
            if group_status_changed(g.obj, status):
                out.append((g.obj, status))
        return out

    def _write_group_status(self, ctx: ControllerContext, pg: Obj, status: Obj) -> bool:
        """Write a PodGroup's status with its resourceVersion: a Conflict (the claim controller
        wrote its claims meanwhile) comes back as a change, and the next cycle writes it again."""
        try:
            ctx.store.update_status({**pg, "status": status})
        except NotFound:
            return False
        except ApiError as exc:
            ctx.decide(self.name, "error", pg, f"cannot write PodGroup status: {exc.message}")
            return False
        return True

    def _usage_write_later(self, ctx: ControllerContext, queue: Obj, status: Obj) -> bool:
        """Whether a queue's new usage waits for a later cycle: with ``queue_status_period``, a
        queue whose status was written less than that long ago and whose Valid condition is
        unchanged gets its numbers with the first cycle after the period (each placement and
        each finished pod moves them; written every time, under churn they were a write per
        few pods, each a round trip in the scheduler's thread)."""
        if self.queue_status_period is None:
            return False
        name = str((queue.get("metadata") or {}).get("name", ""))
        now = ctx.now()
        last = self._queue_written.get(name)
        same_condition = ((queue.get("status") or {}).get("conditions") == status.get("conditions"))
        if last is not None and same_condition and now < last + timedelta(seconds=self.queue_status_period):
            due = last + timedelta(seconds=self.queue_status_period)
            self._cycle_due = due if self._cycle_due is None else min(self._cycle_due, due)
            ctx.wake_at(due)
            return True
        self._queue_written[name] = now
        return False

    def _each(self, write: Callable[[_T], _R], jobs: list[_T]) -> list[_R]:
        """``write`` each job, ``write_workers`` at a time; the results in order."""
        if self.write_workers <= 1 or len(jobs) <= 1:
            return [write(j) for j in jobs]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.write_workers, thread_name_prefix="scheduler-write")
        return list(self._pool.map(write, jobs))

    def _create_all(self, store: Any, objs: list[Obj], tags: list[Any]) -> list[tuple[Obj, Any, ApiError | None]]:
        """Create ``objs`` (``write_workers`` at a time); each with its tag and its error, in order."""
        def one(obj: Obj) -> ApiError | None:
            try:
                store.create(obj)
            except ApiError as exc:
                return exc
            return None

        return list(zip(objs, tags, self._each(one, objs), strict=True))

    def close(self) -> None:
        """Stop the write workers (serve mode)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _claim_wait_pending(self, ctx: ControllerContext, uid: str, created: str, message: str) -> bool:
        """Whether to hold back "waiting for a ResourceClaim to be created [from template]" for now.

        In a cluster the claim controller runs beside the scheduler, so the scheduler sees
        most new pods a moment before their claims exist, and the claim's watch event can
        arrive after the pod status that names it; writing a condition and an Event for
        each would double the API writes per pod for a state that lasts milliseconds
        (upstream's scheduler holds such pods back without a status write).
        """
        if self.claim_wait_grace is None or not waits_for_an_object(message) or not created:
            return False
        if self.claims_queued is not None and self.claims_queued(uid):
            return True  # in the claim controller's queue: it gets its claims in a later pass
        # The grace runs from whichever is later: the pod's creation, or the first cycle
        # that saw it wait for this (a claim recorded just now is a watch event away).
        since = max(parse_time(created), self._waiting_since.setdefault((uid, message), ctx.now()))
        due = since + timedelta(seconds=self.claim_wait_grace)
        if ctx.now() >= due:
            return False
        ctx.wake_at(due)
        return True

    def _evict(self, ctx: ControllerContext, result: CycleResult) -> bool:
        """Evict through the eviction API (it enforces PodDisruptionBudgets); an Event on each victim."""
        wrote = False
        for ev in result.evictions:
            victim = ev.victim
            marked = self._mark_disruption_target(ctx, ev)
            if marked is None:
                continue  # gone meanwhile
            try:
                ctx.store.evict(victim.namespace, victim.name, uid=victim.uid)
            except NotFound:
                continue
            except ApiError as exc:  # 429 from a budget, or a conflict: choose another victim for a while
                if marked:
                    self._unmark_disruption_target(ctx, victim)
                self._refused[victim.uid] = ctx.now() + REFUSED_BACKOFF
                message = f"cannot evict pod {victim.key} for it: {exc.message}"
                ctx.event(ev.preemptor.obj, "Warning", "EvictionRefused", message)
                ctx.decide(self.name, "error", victim.obj, f"eviction refused: {exc.message}")
                continue
            ctx.event(victim.obj, "Normal", EVENT_REASONS[ev.action], ev.message())
            ctx.decide(self.name, "evict", victim.obj, ev.message())
            wrote = True
        return wrote

    def _mark_disruption_target(self, ctx: ControllerContext, ev: Eviction) -> bool | None:
        """``DisruptionTarget=True`` on the victim before it is evicted, as upstream's preemption
        does before it deletes one (pkg/scheduler/framework/preemption ``prepareCandidate``):
        reason ``PreemptionByScheduler``, message ``<schedulerName>: preempting to accommodate a
        higher priority pod``; a reclaim or a consolidation says so in the message. A Job's
        ``podFailurePolicy`` matches it. True when written, False when not (a refused write: the
        eviction goes on), None when the victim is gone."""
        victim = ev.victim
        scheduler = str((ev.preemptor.obj.get("spec") or {}).get("schedulerName") or "default-scheduler")
        cond: Obj = {"type": DISRUPTION_TARGET, "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": format_time(ctx.now()), "reason": PREEMPTION_BY_SCHEDULER,
                     "message": f"{scheduler}: {DISRUPTION_MESSAGES[ev.action]}"}
        pod = victim.obj
        conds = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != DISRUPTION_TARGET]
        md = pod["metadata"]
        patch = {"metadata": {"resourceVersion": md["resourceVersion"]}, "status": {"conditions": [*conds, cond]}}
        try:
            ctx.store.patch(kinds.POD, md["name"], md["namespace"], patch, subresource="status")
        except NotFound:
            return None
        except ApiError:
            self._write_failures += 1
            return False  # changed meanwhile: the eviction API still writes its own DisruptionTarget
        return True

    def _unmark_disruption_target(self, ctx: ControllerContext, victim: PodInfo) -> None:
        """Take back the condition of a victim the eviction API refused: it is not disrupted
        (upstream's disruption controller resets such a stale condition)."""
        try:
            pod = ctx.store.get(kinds.POD, victim.name, victim.namespace)
        except ApiError:
            return
        if (pod.get("metadata") or {}).get("uid") != victim.uid:
            return
        conds = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != DISRUPTION_TARGET]
        patch = {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]}, "status": {"conditions": conds}}
        try:
            ctx.store.patch(kinds.POD, victim.name, victim.namespace, patch, subresource="status")
        except ApiError:
            self._write_failures += 1

    def _patch_status(self, ctx: ControllerContext, pod: Obj, status: Obj) -> bool:
        md = pod["metadata"]
        patch = {"metadata": {"resourceVersion": md["resourceVersion"]}, "status": status}
        try:
            ctx.store.patch(kinds.POD, md["name"], md["namespace"], patch, subresource="status")
        except ApiError:
            self._write_failures += 1
            return False  # changed meanwhile, gone, or refused: the next cycle decides again
        if "nominatedNodeName" in status:
            node = status["nominatedNodeName"]
            ctx.decide(self.name, "nominate", pod, f"node {node}" if node else "nomination cleared")
        return True

    def _set_condition(self, ctx: ControllerContext, pod: Obj, cond: Obj, nominated: object = _KEEP) -> bool:
        """Write PodScheduled=False (and ``status.nominatedNodeName`` unless ``nominated`` is ``_KEEP``)."""
        conds = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != POD_SCHEDULED]
        status: Obj = {"conditions": [*conds, cond]}
        if nominated is not _KEEP:
            status["nominatedNodeName"] = nominated
        if not self._patch_status(ctx, pod, status):
            return False
        ctx.event(pod, "Warning", "FailedScheduling", cond["message"])
        ctx.decide(self.name, "unschedulable", pod, cond["message"])
        return True

    def _delete_stale_claim(self, ctx: ControllerContext, claim: Obj) -> bool:
        """Delete an extended-resource claim a failed bind left (upstream: finalizer off, then delete).

        Its pod is not bound, so no kubelet prepared it. A conflict or a replaced claim is
        left to the next cycle, which decides again from fresh state.
        """
        md = claim["metadata"]
        name, ns, uid = md["name"], md.get("namespace"), md.get("uid")
        try:
            current = ctx.store.get(kinds.RESOURCE_CLAIM, name, ns)
            if current["metadata"].get("uid") != uid:
                return False
            finalizers = list(current["metadata"].get("finalizers") or [])
            if FINALIZER in finalizers:
                current["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
                current = ctx.store.update(current)
            if not current["metadata"].get("deletionTimestamp"):
                ctx.store.delete(kinds.RESOURCE_CLAIM, name, ns, uid=uid)
        except NotFound:
            return False
        except ApiError as exc:
            ctx.decide(self.name, "error", claim, f"cannot delete stale extended-resource claim: {exc.message}")
            return False
        ctx.decide(self.name, "delete", claim, "extended-resource claim left by a failed bind")
        return True

    def _deallocate_claim(self, ctx: ControllerContext, pod: PodInfo, claim: Obj) -> bool:
        """Clear an allocated claim that keeps ``pod`` off every node it could use (upstream
        DynamicResources ``PostFilter``): ``status.allocation``, ``reservedFor`` and ``devices``
        in one status update with the claim's resourceVersion, so nothing that changed since the
        cycle looked is undone. A claim gone or changed meanwhile is left to the next cycle, which
        decides again from fresh state. The delete-protection finalizer stays, as upstream's: the
        claim controller removes it when the claim is deleted unallocated, and the binder's next
        allocation needs it anyway.
        """
        status = {k: v for k, v in (claim.get("status") or {}).items()
                  if k not in ("allocation", "reservedFor", "devices")}
        try:
            ctx.store.update_status({**claim, "status": status})
        except NotFound:
            return False
        except Conflict:
            self._write_failures += 1  # changed meanwhile: look again soon, whatever the change was
            return False
        except ApiError as exc:
            self._write_failures += 1
            ctx.decide(self.name, "error", claim, f"cannot deallocate ResourceClaim for pod {pod.key}: {exc.message}")
            return False
        ctx.decide(self.name, "deallocate", claim,
                   f"allocated where pod {pod.key} cannot run, reserved for no other consumer: deallocated so "
                   "that it can be allocated again where the pod fits")
        return True

    def _group_events(self, ctx: ControllerContext, snap: Snapshot, result: CycleResult) -> bool:
        wrote = False
        for key, n in result.groups_placed.items():
            g = snap.groups[key]
            self._group_messages.pop(key, None)
            if g.obj is not None:
                message = f"placed {n} pod(s); {g.placed + n} of {len(g.pods)} placed (minMember {g.min_member})"
                ctx.event(source_of(g.obj), "Normal", "Scheduled", message)
                write_upstream_condition(ctx, g.obj, g.placed + n >= g.min_member, message)
                wrote = True
        for key, message in result.group_messages.items():
            g = snap.groups[key]
            if g.obj is None or self._group_messages.get(key) == message:
                continue
            self._group_messages[key] = message
            ctx.event(source_of(g.obj), "Warning", "Unschedulable", message)
            write_upstream_condition(ctx, g.obj, False, message)
            wrote = True
        for g in snap.mismatched:
            for p in g.label_mismatch:
                if p.uid in self._mismatch_noted:
                    continue
                self._mismatch_noted.add(p.uid)
                ctx.event(p.obj, "Warning", "QueueLabelIgnored",
                          f"label drasched.io/queue={p.queue_label} ignored: PodGroup {g.key} sets queue {g.queue}")
                wrote = True
        return wrote
