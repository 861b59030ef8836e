"""Upstream InterPodAffinity's Filter: required pod affinity and anti-affinity.

As ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`` decides, per node:

* the pod's required ``podAffinity`` terms: every term's ``topologyKey`` on the node, and in
  that domain a pod matching ALL the terms (``satisfyPodAffinity``); unless no pod anywhere
  matches them and the pod matches its own terms (the first pod of a series with affinity to
  itself), when any node with every key will do;
* the pod's required ``podAntiAffinity`` terms: no pod matching a term in the node's domain of
  that term's key (``satisfyPodAntiAffinity``);
* the existing pods' required anti-affinity (symmetry): no pod whose term matches this pod in
  a domain of the node (``satisfyExistingPodsAntiAffinity``).

"Pods" are the pods bound or assumed on nodes (terminating ones included, as upstream's
NodeInfo counts them) and the pods this cycle already placed. A term selects by
``labelSelector`` (absent: nothing) and ``namespaces`` / ``namespaceSelector`` (neither: the
term owner's namespace; ``{}``: every namespace), with ``matchLabelKeys`` /
``mismatchLabelKeys`` merged from the owner's labels. The pods of the gangs the cycle's victim
search evicts count nowhere while evicted (upstream ``RemovePod``, which the preemption dry run
calls for each victim).

For preemption (upstream ``Filter``'s status codes): a node failing the pod's affinity is
``UnschedulableAndUnresolvable``, since removing pods never adds a match (:meth:`unresolvable`:
no victim is looked for there); one failing anti-affinity, the pod's own or an existing pod's,
is ``Unschedulable``, and the pods whose removal may lift it are those matching one of the pod's
anti-affinity terms or with a term matching the pod (:meth:`lifted_by_removing`).

Its Score (``scoring.go``): per topology domain, the weights of the pod's preferred affinity
terms matched by pods there, minus those of its preferred anti-affinity terms; plus what the
pods there give it through their own terms (preferred affinity +weight, preferred
anti-affinity -weight, required affinity +1, ``hardPodAffinityWeight``); a node scores the sum
over its domains, normalised min-max to 0..100 (``NormalizeScore``). Skipped (PreScore
``Skip``) when nothing scores: no preferred term of its own and no pod whose terms match it.
"""

from __future__ import annotations

from collections import Counter as Tally
from functools import partial
from typing import Any

import numpy as np

from drasched.scheduler.framework.api import ADD, DELETE, MAX_NODE_SCORE, UPDATE, ClusterEvent, PodState
from drasched.scheduler.plugins.podindex import (
    PREFERRED,
    Counter,
    CycleIndex,
    Term,
    constraints_of,
    count_first_failures,
    cycle_index,
    pod_labels,
    preferences_of,
    required_terms,
)
from drasched.scheduler.podinfo import PodInfo

MSG_AFFINITY = "node(s) didn't match pod affinity rules"
MSG_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
MSG_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


class InterPodAffinity:
    """Required inter-pod affinity and anti-affinity (upstream InterPodAffinity, Filter only).

    Disabled: ``requiredDuringScheduling…`` podAffinity and podAntiAffinity are ignored, the
    pod's own and the running pods' alike.
    """

    name = "interPodAffinity"
    messages = (MSG_AFFINITY, MSG_ANTI_AFFINITY, MSG_EXISTING_ANTI_AFFINITY)

    def __init__(self, weight: float = 2.0) -> None:
        self.weight = weight
        self._last: tuple[PodState, dict[str, dict[int, int]]] | None = None

    def events(self) -> tuple[ClusterEvent, ...]:
        # upstream EventsToRegister: pods added, relabelled or deleted; nodes added or relabelled
        return (ClusterEvent("Pod", ADD), ClusterEvent("Pod", UPDATE), ClusterEvent("Pod", DELETE),
                ClusterEvent("Node", ADD), ClusterEvent("Node", UPDATE))

    def signature(self, pod: PodInfo) -> Any:
        """The pod's required terms, with its namespace and labels (its terms read them: the
        owner's namespace, matchLabelKeys, the self-match of affinity); ``None`` without terms.

        A pod without terms is read through its labels only by running pods' anti-affinity;
        they are left out of its ``eq_key`` so that gangs differing only in labels stay
        equivalent (docs: the README's plugin table).
        """
        affinity, anti = required_terms(pod, "podAffinity"), required_terms(pod, "podAntiAffinity")
        if not affinity and not anti:
            return None
        return [pod.namespace, dict(pod_labels(pod)), affinity, anti]

    def filter(self, state: PodState, among: np.ndarray) -> np.ndarray:
        bad = self._rejected(state)
        if bad is None:
            return among
        return among & ~(bad[0] | bad[1] | bad[2])

    def reasons(self, state: PodState, among: np.ndarray, into: Tally[str]) -> np.ndarray:
        bad = self._rejected(state)
        if bad is None:
            return np.zeros_like(among)
        return count_first_failures(among, bad, (MSG_AFFINITY, MSG_ANTI_AFFINITY, MSG_EXISTING_ANTI_AFFINITY), into)

    # ------------------------------------------------------------------ preemption

    def unresolvable(self, state: PodState, among: np.ndarray) -> np.ndarray:
        """The nodes of ``among`` failing the pod's required affinity: upstream's
        ``UnschedulableAndUnresolvable``, no candidates for preemption."""
        bad = self._rejected(state)
        return np.zeros_like(among) if bad is None else among & bad[0]

    def lifted_by_removing(self, state: PodState, running: PodInfo) -> bool:
        """Whether removing ``running`` may lift an anti-affinity rejection of ``state.pod``: it
        matches one of the pod's anti-affinity terms, or one of its own matches the pod (the two
        counts upstream ``RemovePod`` lowers that the Filter reads as ``Unschedulable``)."""
        pod, ns = state.pod, state.session.snap.namespace_labels
        if any(t.matches(running, ns) for t in constraints_of(pod).anti):
            return True
        return any(t.matches(pod, ns) for t in constraints_of(running).anti)

    # ------------------------------------------------------------------ score

    def score_signature(self, pod: PodInfo) -> Any:
        """The pod's preferred terms, with its namespace and labels (others' terms read them);
        ``None`` without preferred terms (the labels then only weigh in the node order)."""
        affinity = (pod.obj.get("spec") or {}).get("affinity") or {}
        preferred = [(affinity.get(k) or {}).get(PREFERRED) for k in ("podAffinity", "podAntiAffinity")]
        if not any(preferred):
            return None
        return [pod.namespace, dict(pod_labels(pod)), preferred]

    def skips(self, state: PodState, candidates: np.ndarray) -> bool:
        prefs = preferences_of(state.pod)
        if prefs.affinity or prefs.anti:
            return False
        if not state.session.snap.affinity_scoring:
            return True  # no pod, placed or pending, has terms that score others
        topology = self._topology_score(state)
        self._last = (state, topology) if topology else None  # score() comes next for this pod
        return not topology

    def score(self, state: PodState, candidates: np.ndarray) -> np.ndarray:
        last, self._last = self._last, None  # (not kept: it holds the session)
        topology = last[1] if last is not None and last[0] is state else self._topology_score(state)
        out = np.zeros(len(candidates))
        if not topology:
            return out
        idx = cycle_index(state.session)
        for key, per_domain in topology.items():
            codes, values = idx.domains(key)
            table = np.zeros(len(values) + 1)
            for code, v in per_domain.items():
                table[code] = v
            out += table[codes[candidates]]  # a node without the key: the trailing 0
        return out

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """Upstream ``NormalizeScore``: min-max to 0..100, truncated to whole numbers."""
        if scores.size == 0:
            return scores
        lo, hi = float(scores.min()), float(scores.max())
        if hi == lo:
            return np.zeros_like(scores, dtype=float)
        return np.trunc(MAX_NODE_SCORE * (scores - lo) / (hi - lo))

    def _topology_score(self, state: PodState) -> dict[str, dict[int, int]]:
        """Per topology key and domain, the pod's score there (upstream ``preScoreState.topologyScore``)."""
        pod = state.pod
        idx = cycle_index(state.session)
        prefs = preferences_of(pod)
        out = {k: dict(v) for k, v in idx.scored_by_others(pod).items()}
        for sign, weighted in ((1, prefs.affinity), (-1, prefs.anti)):
            for w, t in weighted:
                per_node = idx.counter("any:" + t.ident, partial(_term_counter, idx, t))
                counts = idx.domain_counts(t.key, per_node)
                _, values = idx.domains(t.key)
                per_key = out.setdefault(t.key, {})
                for code in np.flatnonzero(counts[:len(values)]):
                    per_key[int(code)] = per_key.get(int(code), 0) + sign * w * int(counts[code])
        return {k: v for k, v in out.items() if any(v.values())}

    # ------------------------------------------------------------------ per attempt

    def _rejected(self, state: PodState) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Nodes failing the pod's affinity, its anti-affinity, the running pods' anti-affinity
        (``None``: no rule applies to this pod)."""
        pod = state.pod
        c = constraints_of(pod)
        snap = state.session.snap
        if not c.affinity and not c.anti and not snap.anti_affinity:
            idx = cycle_index(state.session)
            if not idx.placed_anti:
                return None
        else:
            idx = cycle_index(state.session)
        n = idx.n
        none = np.zeros(n, dtype=bool)
        affinity = _affinity(idx, pod, c.affinity) if c.affinity else none
        anti = none.copy()
        for t in c.anti:
            per_node = idx.counter("any:" + t.ident, partial(_term_counter, idx, t))
            codes, _ = idx.domains(t.key)
            anti |= (codes >= 0) & (idx.domain_counts(t.key, per_node)[codes] > 0)
        existing = none.copy()
        for key, doms in idx.blocked(pod).items():
            codes, _ = idx.domains(key)
            existing |= np.isin(codes, np.fromiter(doms, dtype=np.int64, count=len(doms)))
        return affinity, anti, existing


def _term_counter(idx: CycleIndex, t: Term) -> Counter:
    ns = idx.ns_labels
    # kept across cycles: the namespaces a namespaceSelector picks are part of the count's key
    return Counter(idx, idx.namespaces([t]), lambda p: t.matches(p, ns), skip_deleting=False, hint=t.selector,
                   memo="any:" + t.ident)


def _affinity(idx: CycleIndex, pod: PodInfo, terms: tuple[Term, ...]) -> np.ndarray:
    """Nodes failing ``satisfyPodAffinity``."""
    ns = idx.ns_labels

    def build() -> Counter:
        # kept across cycles unless a later term's namespaceSelector reads namespace labels
        # the count's key (the first term's namespaces) does not hold
        kept = all(t.ns_selector is None for t in terms[1:])
        return Counter(idx, idx.namespaces(terms[:1]), lambda p: all(t.matches(p, ns) for t in terms),
                       skip_deleting=False, hint=terms[0].selector,
                       memo="all:" + "|".join(t.ident for t in terms) if kept else None)

    per_node = idx.counter("all:" + "|".join(t.ident for t in terms), build)
    exists = np.ones(idx.n, dtype=bool)
    labelled = np.ones(idx.n, dtype=bool)
    total = 0
    for t in terms:
        codes, _ = idx.domains(t.key)
        counts = idx.domain_counts(t.key, per_node)
        total += int(counts.sum())
        has = codes >= 0
        labelled &= has
        exists &= has & (counts[codes] > 0)
    if total == 0 and all(t.matches(pod, ns) for t in terms):
        return ~labelled  # no pod matches anywhere and the pod matches its own terms
    return ~exists
