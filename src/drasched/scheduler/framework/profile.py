"""The enabled plugins of one configuration, bound into one list per extension point.

Built once per configuration (the snapshot builder holds it), so a cycle's hot path only
walks short lists. The pod memo keys are built here from the enabled plugins' signatures.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from drasched.scheduler.framework.api import (
    ClaimAllocation,
    ClusterEvent,
    Filter,
    GangOrder,
    Plugin,
    PodState,
    QueueOrder,
    RowFilter,
    Scorer,
    ScorerBase,
    StaticFilter,
    VictimFilter,
)
from drasched.scheduler.framework.registry import BUILTINS, PluginSetting, build
from drasched.scheduler.plugins.dra import ExtendedResources
from drasched.scheduler.plugins.topology import Topology

if TYPE_CHECKING:
    from drasched.scheduler.config import SchedulerConfig
    from drasched.scheduler.plugins.fit import RowNeed
    from drasched.scheduler.podinfo import PodInfo
    from drasched.scheduler.snapshot import GroupInfo


class Profile:
    """One list of plugins per extension point, in configuration order (built-ins first)."""

    def __init__(self, plugins: Sequence[Plugin], names: Sequence[str] | None = None) -> None:
        self.plugins = tuple(plugins)
        self.by_name: dict[str, Plugin] = dict(zip(names or [p.name for p in plugins], plugins, strict=True))
        self.static_filters = [p for p in plugins if isinstance(p, StaticFilter)]
        self.row_filters = [p for p in plugins if isinstance(p, RowFilter)]
        self.claim_allocation = next((p for p in plugins if isinstance(p, ClaimAllocation)), None)
        self.dra_extended = self.claim_allocation is not None and any(
            isinstance(p, ExtendedResources) for p in plugins)
        """Whether DRA devices may serve extended resources (else only device plugins do)."""
        self.filters = [p for p in plugins if isinstance(p, Filter)]
        """Dynamic filters beyond the vector fit and the extended-resource routes (external ones)."""
        self.scorers = [p for p in plugins if isinstance(p, Scorer)]
        self._scoring = [(s, getattr(s, "skips", None), _raw_orders(s)) for s in self.scorers if s.weight > 0]
        """Scorers with a weight: each with its ``skips`` (if any), and whether its raw scores
        order nodes as its normalised ones do (the default ``normalize``, :func:`min_max`)."""
        self.queue_order = next((p for p in plugins if isinstance(p, QueueOrder)), None)
        gang_order = next((p for p in plugins if isinstance(p, GangOrder)), None)
        self._gang_order = gang_order.gang_key if gang_order is not None else None
        self.victim_filters = [p for p in plugins if isinstance(p, VictimFilter)]
        self.topology = any(isinstance(p, Topology) for p in plugins)
        self._all_rows = {"podCount", "resourceFit"} <= {p.name for p in self.row_filters}
        self._signed = [p.signature for p in plugins if not isinstance(p, StaticFilter) and hasattr(p, "signature")]
        self._signed += [p.score_signature for p in self.scorers if hasattr(p, "score_signature")]

    @staticmethod
    def from_config(config: SchedulerConfig) -> Profile:
        """Every built-in the configuration leaves enabled, then its external plugins."""
        settings = {s.name: s for s in config.plugins}
        chosen = [settings.get(name, PluginSetting(name, weight=spec.weight)) for name, spec in BUILTINS.items()]
        chosen += [s for s in config.plugins if s.name not in BUILTINS]
        enabled = [s for s in chosen if s.enabled and s.name not in config.disabled_plugins]
        return Profile([build(s, config.node_order) for s in enabled], [s.name for s in enabled])

    # ------------------------------------------------------------------ memo keys

    def pod_keys(self, pod: PodInfo) -> tuple[str, str]:
        """``static_key`` (equal: same verdict of every static filter on every node) and ``eq_key``
        (equal: same scheduling requirements: requests, claims, and every plugin's signature)."""
        static = json.dumps([f.signature(pod) for f in self.static_filters], sort_keys=True,
                            separators=(",", ":"))
        signed: list[Any] = [sign(pod) for sign in self._signed]
        eq = json.dumps([static, sorted(pod.requests.items()),
                         [(e.name, e.claim_name, e.template_name) for e in pod.claim_entries], signed],
                        sort_keys=True, separators=(",", ":"))
        return static, eq

    # ------------------------------------------------------------------ per pod

    def checks_row(self, need: RowNeed) -> bool:
        return any(f.checks(need) for f in self.row_filters)

    def fit_rows(self, container: list[RowNeed]) -> list[RowNeed]:
        """The container rows the enabled row filters compare (all of them by default: no copy)."""
        if self._all_rows:
            return container
        return [n for n in container if self.checks_row(n)]

    def order(self, state: PodState, candidates: np.ndarray) -> np.ndarray:
        """Candidates best first: weighted sum of normalised scores, ties in node order.

        Scorers with weight 0, and those whose ``skips`` says they would score every candidate
        alike, are left out; one left orders by its raw scores when its ``normalize`` keeps
        their order (the default), without normalising.
        """
        if len(candidates) <= 1 or not self._scoring:
            return candidates
        active = [(s, raw) for s, skips, raw in self._scoring if skips is None or not skips(state, candidates)]
        if not active:
            return candidates
        if len(active) == 1:
            s, raw = active[0]
            total = s.score(state, candidates)
            if not raw:
                total = s.normalize(total)
        else:
            total = np.zeros(len(candidates))
            for s, _ in active:
                total += s.weight * s.normalize(s.score(state, candidates))
        return candidates[np.argsort(-total, kind="stable")]

    # ------------------------------------------------------------------ queue

    def gang_key(self, group: GroupInfo) -> tuple[Any, ...]:
        """The gang order plugin's key, then creation time and name (no plugin: first come, first served)."""
        first = self._gang_order(group) if self._gang_order is not None else ()
        return (*first, group.created, group.key)

    def messages_requeued_on(self, kind: str) -> tuple[str, ...]:
        """The ``messages`` of the filters that name an event on ``kind`` among their ``events()``:
        a gang rejected with one of them may fit after such an event, not only once resources are freed."""
        return tuple(m for p in self.filters if any(e.kind == kind for e in p.events())
                     for m in getattr(p, "messages", ()))

    def requeue_events(self, names: Iterable[str] | None = None) -> frozenset[ClusterEvent]:
        """The events after which a pod rejected by the named plugins (all: ``None``) may fit."""
        chosen = self.by_name.values() if names is None else [self.by_name[n] for n in names if n in self.by_name]
        return frozenset(e for p in chosen for e in p.events())


def _raw_orders(scorer: Scorer) -> bool:
    """Whether ``scorer``'s ``normalize`` is :class:`ScorerBase`'s (:func:`min_max`: it keeps the order)."""
    return getattr(type(scorer), "normalize", None) is ScorerBase.normalize


_DEFAULT: Profile | None = None


def default_profile() -> Profile:
    """The profile of the default configuration (every built-in enabled)."""
    global _DEFAULT
    if _DEFAULT is None:
        from drasched.scheduler.config import SchedulerConfig

        _DEFAULT = Profile.from_config(SchedulerConfig())
    return _DEFAULT
