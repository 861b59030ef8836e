"""The scheduler's loop in an embedded run: drain watch events, run one cycle, write its decisions.

All I/O of the scheduler lives here; :func:`~drasched.scheduler.cycle.run_cycle` is pure.
Writes are idempotent and tolerate conflicts: a write that loses a race is simply redone
by a later cycle from fresher state.
"""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, NotFound
from drasched.api.meta import format_time
from drasched.scheduler.cache import SchedulerCache
from drasched.scheduler.config import ConfigError, SchedulerConfig, config_from_yaml
from drasched.scheduler.constants import DEFAULT_QUEUE, POD_SCHEDULED
from drasched.scheduler.cycle import CycleResult, run_cycle
from drasched.scheduler.snapshot import Snapshot, SnapshotBuilder
from drasched.sim.context import SimContext

Obj = dict[str, Any]


CONFIG_MAP_KEY = "kube-system/drasched-scheduler"
"""A ConfigMap here with a ``config.yaml`` key configures an embedded run (on top of the defaults)."""


class SchedulerController:
    """``scheduler`` in the embedded control plane."""

    name = "scheduler"

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.base_config = config or SchedulerConfig.embedded()
        self.config = self.base_config
        self.cache = SchedulerCache()
        self.builder = SnapshotBuilder(self.config)
        self._config_rv: str | None = None
        self.last: CycleResult | None = None
        self.cycles = 0
        self._group_messages: dict[str, str] = {}
        self._mismatch_noted: set[str] = set()

    def reconcile(self, ctx: SimContext) -> bool:
        if not self.cache.sync(ctx.store):
            return False
        self._load_config(ctx)
        snap = self.builder.build(self.cache)
        result = run_cycle(snap, self.config, format_time(ctx.now()))
        self.last = result
        self.cycles += 1
        return self._write(ctx, snap, result)

    def _load_config(self, ctx: SimContext) -> None:
        """Apply the ConfigMap's configuration when it changes; a bad one is reported and ignored."""
        cm = self.cache.get(kinds.CONFIG_MAP, CONFIG_MAP_KEY)
        rv = None if cm is None else str(cm["metadata"].get("resourceVersion"))
        if rv == self._config_rv:
            return
        self._config_rv = rv
        config = self.base_config
        if cm is not None:
            try:
                config = config_from_yaml(str((cm.get("data") or {}).get("config.yaml", "")), self.base_config,
                                          where=f"ConfigMap {CONFIG_MAP_KEY}")
            except ConfigError as exc:
                ctx.event(cm, "Warning", "InvalidConfiguration", f"{exc}; using the defaults")
                ctx.decide(self.name, "config", cm, str(exc))
        self.config = config
        self.builder = SnapshotBuilder(config)

    # ------------------------------------------------------------------ writes

    def _write(self, ctx: SimContext, snap: Snapshot, result: CycleResult) -> bool:
        store = ctx.store
        wrote = False
        for br in result.replace_bind_requests:
            md = br["metadata"]
            try:
                store.delete(kinds.BIND_REQUEST, md["name"], md["namespace"], uid=md.get("uid"))
                wrote = True
            except NotFound:
                pass
            except ApiError as exc:
                ctx.decide(self.name, "error", br, f"cannot delete failed BindRequest: {exc.message}")
        for br, placement in zip(result.bind_requests, result.placements):
            try:
                store.create(br)
                wrote = True
                claims = ", ".join(c["name"] for c in br["spec"].get("resourceClaimAllocations", []))
                ctx.decide(self.name, "place", placement.pod.obj,
                           f"node {br['spec']['selectedNode']}" + (f"; claims {claims}" if claims else ""))
            except AlreadyExists:
                pass
            except ApiError as exc:
                ctx.decide(self.name, "error", placement.pod.obj, f"cannot create BindRequest: {exc.message}")
        for pod, cond in result.pod_conditions:
            wrote |= self._set_condition(ctx, pod.obj, cond)
        for queue, status in result.queue_statuses:
            try:
                store.update_status({**queue, "status": status})
                wrote = True
            except ApiError as exc:  # Conflict: a fresher cycle rewrites it
                ctx.decide(self.name, "error", queue, f"cannot write queue status: {exc.message}")
        if result.create_default_queue:
            try:
                store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue",
                              "metadata": {"name": DEFAULT_QUEUE}, "spec": {}})
                wrote = True
            except AlreadyExists:
                pass
        wrote |= self._group_events(ctx, snap, result)
        return wrote

    def _set_condition(self, ctx: SimContext, pod: Obj, cond: Obj) -> bool:
        conds = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != POD_SCHEDULED]
        patch = {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]},
                 "status": {"conditions": [*conds, cond]}}
        md = pod["metadata"]
        try:
            ctx.store.patch(kinds.POD, md["name"], md["namespace"], patch, subresource="status")
        except ApiError:
            return False  # changed meanwhile (or gone): the next cycle decides again
        ctx.event(pod, "Warning", "FailedScheduling", cond["message"])
        ctx.decide(self.name, "unschedulable", pod, cond["message"])
        return True

    def _group_events(self, ctx: SimContext, snap: Snapshot, result: CycleResult) -> bool:
        wrote = False
        for key, n in result.groups_placed.items():
            g = snap.groups[key]
            self._group_messages.pop(key, None)
            if g.obj is not None:
                ctx.event(g.obj, "Normal", "Scheduled",
                          f"placed {n} pod(s); {g.placed + n} of {len(g.pods)} placed (minMember {g.min_member})")
                wrote = True
        for key, message in result.group_messages.items():
            g = snap.groups[key]
            if g.obj is None or self._group_messages.get(key) == message:
                continue
            self._group_messages[key] = message
            ctx.event(g.obj, "Warning", "Unschedulable", message)
            wrote = True
        for g in snap.groups.values():
            for p in g.label_mismatch:
                if p.uid in self._mismatch_noted:
                    continue
                self._mismatch_noted.add(p.uid)
                ctx.event(p.obj, "Warning", "QueueLabelIgnored",
                          f"label drasched.io/queue={p.queue_label} ignored: PodGroup {g.key} sets queue {g.queue}")
                wrote = True
        return wrote
