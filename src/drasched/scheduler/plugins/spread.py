"""Upstream PodTopologySpread's Filter: ``topologySpreadConstraints`` with ``whenUnsatisfiable: DoNotSchedule``.

As ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go`` and ``common.go``
decide: the eligible nodes carry every constraint's ``topologyKey`` and, per constraint,
match the pod's ``nodeSelector`` and required node affinity (``nodeAffinityPolicy: Honor``,
the default) and, with ``nodeTaintsPolicy: Honor`` (default ``Ignore``), have no taint the pod
does not tolerate. Per domain (value of the key over eligible nodes) the pods of the pod's
namespace matching ``labelSelector`` (with ``matchLabelKeys`` merged) are counted, terminating
pods left out, the pods this cycle placed counted in; an empty selector counts none (upstream's
``countPodsMatchSelector``). A node passes when ``count(its domain) + (1 if the pod matches
the selector) - min(count over domains) <= maxSkew``, the minimum being 0 while fewer domains
than ``minDomains`` exist; a node without the key fails. ``ScheduleAnyway`` constraints and
the default constraints only score upstream and are left out. The pods of the gangs the
cycle's victim search evicts are not counted while evicted (upstream ``RemovePod``).

For preemption (upstream ``Filter``'s status codes): a node without a constraint's key is
``UnschedulableAndUnresolvable`` (:meth:`unresolvable`); one over the skew is ``Unschedulable``,
and the pods whose removal may bring it back are the counted ones, in the pod's namespace and
matching a constraint's selector (:meth:`lifted_by_removing`).

Its Score (``scoring.go``) for ``ScheduleAnyway`` constraints: per constraint, a node's
domain count of matching pods times ``log(domains + 2)`` plus ``maxSkew - 1`` (per node for
``kubernetes.io/hostname``), summed and rounded; fewer is better (``NormalizeScore``:
``100 * (max + min - score) / max``). Nodes lacking a key are left out (score 0) when the pod has a
nodeSelector or node affinity. The system default constraints (spreading by Service or
ReplicaSet when a pod has none) are not applied: drasched's default node order bin-packs.
"""

from __future__ import annotations

import math
from collections import Counter as Tally
from functools import partial
from typing import Any

import numpy as np

from drasched.scheduler.framework.api import ADD, DELETE, MAX_NODE_SCORE, UPDATE, ClusterEvent, PodState
from drasched.scheduler.plugins.podindex import (
    Counter,
    CycleIndex,
    Spread,
    constraints_of,
    count_first_failures,
    cycle_index,
    pod_labels,
    preferences_of,
)
from drasched.scheduler.podinfo import PodInfo

MSG_SPREAD = "node(s) didn't match pod topology spread constraints"
MSG_SPREAD_LABEL = MSG_SPREAD + " (missing required label)"
MAX_INT32 = 2**31 - 1
HOSTNAME = "kubernetes.io/hostname"
IGNORED = -1.0
"""A raw score for a node the score leaves out (upstream ``invalidScore``)."""


class PodTopologySpread:
    """Hard topology spread (upstream PodTopologySpread, Filter only).

    Disabled: ``DoNotSchedule`` topology spread constraints are ignored.
    """

    name = "podTopologySpread"
    messages = (MSG_SPREAD,)  # MSG_SPREAD_LABEL starts with it

    def __init__(self, weight: float = 2.0) -> None:
        self.weight = weight

    def events(self) -> tuple[ClusterEvent, ...]:
        # upstream EventsToRegister: pods added, relabelled or deleted; nodes added, deleted,
        # relabelled or retainted
        return (ClusterEvent("Pod", ADD), ClusterEvent("Pod", UPDATE), ClusterEvent("Pod", DELETE),
                ClusterEvent("Node", ADD), ClusterEvent("Node", UPDATE), ClusterEvent("Node", DELETE))

    def signature(self, pod: PodInfo) -> Any:
        constraints = [c for c in (pod.obj.get("spec") or {}).get("topologySpreadConstraints") or ()
                       if isinstance(c, dict) and c.get("whenUnsatisfiable") == "DoNotSchedule"]
        if not constraints:
            return None
        return [pod.namespace, dict(pod_labels(pod)), constraints]

    def filter(self, state: PodState, among: np.ndarray) -> np.ndarray:
        bad = self._rejected(state)
        if bad is None:
            return among
        return among & ~(bad[0] | bad[1])

    def reasons(self, state: PodState, among: np.ndarray, into: Tally[str]) -> np.ndarray:
        bad = self._rejected(state)
        if bad is None:
            return np.zeros_like(among)
        # a node's first failing constraint decides, missing label or skew
        return count_first_failures(among, bad, (MSG_SPREAD_LABEL, MSG_SPREAD), into)

    # ------------------------------------------------------------------ preemption

    def unresolvable(self, state: PodState, among: np.ndarray) -> np.ndarray:
        """The nodes of ``among`` whose first failing constraint lacks its topology key
        (upstream ``ErrReasonNodeLabelNotMatch``, ``UnschedulableAndUnresolvable``)."""
        bad = self._rejected(state)
        return np.zeros_like(among) if bad is None else among & bad[0]

    def lifted_by_removing(self, state: PodState, running: PodInfo) -> bool:
        """Whether removing ``running`` lowers a count a constraint of ``state.pod`` reads (upstream
        ``updateWithPod``: same namespace, matching the selector; terminating pods are not counted)."""
        pod = state.pod
        if running.namespace != pod.namespace or running.deleting:
            return False
        labels = pod_labels(running)
        return any(not c.selector.empty and c.selector.matches(labels) for c in constraints_of(pod).spread)

    # ------------------------------------------------------------------ score

    def score_signature(self, pod: PodInfo) -> Any:
        constraints = [c for c in (pod.obj.get("spec") or {}).get("topologySpreadConstraints") or ()
                       if isinstance(c, dict) and c.get("whenUnsatisfiable") == "ScheduleAnyway"]
        if not constraints:
            return None
        return [pod.namespace, dict(pod_labels(pod)), constraints]

    def skips(self, state: PodState, candidates: np.ndarray) -> bool:
        return not preferences_of(state.pod).soft_spread

    def score(self, state: PodState, candidates: np.ndarray) -> np.ndarray:
        """Upstream ``Score`` per candidate; :data:`IGNORED` for the nodes it leaves out."""
        pod = state.pod
        soft = preferences_of(pod).soft_spread
        idx = cycle_index(state.session)
        has_all = np.ones(idx.n, dtype=bool)
        for c in soft:
            has_all &= idx.domains(c.key)[0] >= 0
        affinity = (pod.obj.get("spec") or {}).get("affinity") or {}
        require_all = bool(pod.node_selector) or bool(affinity.get("nodeAffinity"))
        ignored = ~has_all[candidates] if require_all else np.zeros(len(candidates), dtype=bool)
        considered = candidates[~ignored]
        total = np.zeros(len(candidates))
        for c in soft:
            codes, _ = idx.domains(c.key)
            per_node = idx.counter(f"spread:{pod.namespace}:{c.selector.ident}", partial(_spread_counter, idx, pod, c))
            own = codes[candidates]
            if c.key == HOSTNAME:
                size = len(considered)
                counts = per_node[candidates]
            else:
                present = np.unique(codes[considered])
                present = present[present >= 0]
                size = len(present)
                eligible = has_all.copy()
                if c.honor_affinity:
                    eligible &= idx.node_affinity_mask(pod)
                if c.honor_taints:
                    eligible &= idx.tolerated_mask(pod)
                per_domain = idx.domain_counts(c.key, per_node, eligible)
                counts = per_domain[own]
            weight = math.log(size + 2)
            total += np.where(own >= 0, counts * weight + (c.max_skew - 1), 0.0)
        raw = np.floor(total + 0.5)  # Go's math.Round for non-negative values
        raw[ignored] = IGNORED
        return raw

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """Upstream ``NormalizeScore``: ``100 * (max + min - score) // max`` (fewer pods, more
        points), 100 for every node when the highest is 0, 0 for a node left out."""
        valid = scores != IGNORED
        if not valid.any():
            return np.zeros_like(scores, dtype=float)
        hi, lo = int(scores[valid].max()), int(scores[valid].min())
        if hi == 0:
            return np.where(valid, float(MAX_NODE_SCORE), 0.0)
        out = (MAX_NODE_SCORE * (hi + lo - scores.astype(np.int64))) // hi
        return np.where(valid, out, 0).astype(float)

    def _rejected(self, state: PodState) -> tuple[np.ndarray, np.ndarray] | None:
        """Nodes failing for a missing key, and for the skew (``None``: no constraint)."""
        pod = state.pod
        spread = constraints_of(pod).spread
        if not spread:
            return None
        idx = cycle_index(state.session)
        n = idx.n
        labelled = np.ones(n, dtype=bool)
        for c in spread:
            labelled &= idx.domains(c.key)[0] >= 0
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        decided = np.zeros(n, dtype=bool)
        own = pod_labels(pod)
        for c in spread:
            codes, values = idx.domains(c.key)
            eligible = labelled.copy()
            if c.honor_affinity:
                eligible &= idx.node_affinity_mask(pod)
            if c.honor_taints:
                eligible &= idx.tolerated_mask(pod)
            per_node = idx.counter(f"spread:{pod.namespace}:{c.selector.ident}", partial(_spread_counter, idx, pod, c))
            counts = idx.domain_counts(c.key, per_node, eligible)
            present = np.zeros(len(values) + 1, dtype=bool)
            present[np.unique(codes[eligible])] = True
            present[-1] = False
            domains = int(present.sum())
            least = int(counts[present].min()) if domains else MAX_INT32
            if domains < c.min_domains:
                least = 0
            self_match = 1 if c.selector.matches(own) else 0
            has = codes >= 0
            lacks = ~has & ~decided
            missing |= lacks
            decided |= lacks
            over = has & ~decided & (counts[codes] + self_match - least > c.max_skew)
            skewed |= over
            decided |= over
        return missing, skewed


def _spread_counter(idx: CycleIndex, pod: PodInfo, c: Spread) -> Counter:
    ns, selector = pod.namespace, c.selector
    if selector.empty:  # upstream counts no pod for an empty selector
        return Counter(idx, (), lambda p: False, skip_deleting=True)
    return Counter(idx, (ns,), lambda p: p.namespace == ns and not p.deleting and selector.matches(pod_labels(p)),
                   skip_deleting=True, hint=selector, memo=f"spread:{ns}:{selector.ident}")
