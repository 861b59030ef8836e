"""Pods counted per node for inter-pod constraints, kept for one scheduling cycle.

What kube-scheduler's InterPodAffinity and PodTopologySpread PreFilter compute per pod
(upstream ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`` and
``podtopologyspread/filtering.go``, ``common.go``), shared by both plugins and computed once
per cycle and selector: a :class:`Counter` holds, per node, how many pods match a predicate,
the existing pods (bound, or placed by a pending BindRequest) first, then the pods the
cycle's session placed, followed in step with its placements (a Statement rollback takes
them out again), less the pods the session released: the pods of the gangs it evicted
(upstream's preemption dry run: ``SelectVictimsOnNode`` removes each victim through
``RunPreFilterExtensionRemovePod``, and InterPodAffinity's and PodTopologySpread's
``RemovePod`` take it out of their counts; a rollback puts them back), and the terminating
pods whose room a nominated preemptor holds. The existing pods' counts come from the
snapshot builder's :class:`~drasched.scheduler.podtable.PodTable` (by namespace, narrowed by
a label), kept across cycles and followed change by change, as are the topology domains and
node masks. Nothing here runs for a pod
without such constraints, except the check of the existing pods' required anti-affinity
(symmetry), and that only while some pod has one: the snapshot builder keeps those pods
(:attr:`Snapshot.anti_affinity`).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import numpy as np

from drasched.api.resource import NodeSelector as NodeSelectorView
from drasched.api.resource import decode
from drasched.dra.nodes import node_selector_matches
from drasched.scheduler.podinfo import PodInfo
from drasched.scheduler.podtable import PodTable
from drasched.scheduler.world import counted_node

if TYPE_CHECKING:
    from drasched.scheduler.session import Placement, Session

Obj = dict[str, Any]
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
HARD_POD_AFFINITY_WEIGHT = 1
"""Upstream InterPodAffinityArgs ``hardPodAffinityWeight`` default."""
_EMPTY: dict[str, str] = {}
T = TypeVar("T")


def pod_labels(pod: PodInfo) -> Mapping[str, str]:
    labels: Mapping[str, str] | None = (pod.obj.get("metadata") or {}).get("labels")
    return labels or _EMPTY


def _spec(pod: PodInfo) -> Obj:
    spec: Obj = pod.obj.get("spec") or {}
    return spec


def required_terms(pod: PodInfo, kind: str) -> list[Obj]:
    """The pod's ``spec.affinity.<kind>.requiredDuringSchedulingIgnoredDuringExecution`` terms."""
    affinity = _spec(pod).get("affinity")
    if not affinity:
        return []
    terms: list[Obj] = ((affinity.get(kind) or {}).get(REQUIRED)) or []
    return terms


def count_first_failures(among: np.ndarray, masks: Iterable[np.ndarray], messages: Iterable[str],
                         into: MutableMapping[str, int]) -> np.ndarray:
    """Count each node of ``among`` under the first of ``masks`` it fails (with that mask's
    message), as upstream reports one status per node; return the nodes that failed any."""
    failing = np.zeros_like(among)
    for mask, message in zip(masks, messages, strict=True):
        hit = among & mask & ~failing
        k = int(hit.sum())
        if k:
            into[message] = into.get(message, 0) + k
            failing |= hit
    return failing


def has_required_anti_affinity(pod: PodInfo) -> bool:
    """Whether the pod has required podAntiAffinity terms (the pods the symmetry check reads)."""
    return bool(required_terms(pod, "podAntiAffinity"))


# ---------------------------------------------------------------------- selectors


class Selector:
    """A ``metav1.LabelSelector`` as upstream's ``LabelSelectorAsSelector`` reads it: ``None``
    selects nothing, ``{}`` everything; ``extra`` requirements are ANDed (matchLabelKeys)."""

    __slots__ = ("empty", "exprs", "ident", "labels", "nothing")

    def __init__(self, raw: Obj | None, extra: Iterable[tuple[str, str, tuple[str, ...]]] = ()) -> None:
        self.nothing = raw is None or not isinstance(raw, dict)
        labels: dict[str, str] = {}
        exprs: list[tuple[str, str, frozenset[str]]] = []
        if not self.nothing:
            assert isinstance(raw, dict)
            labels = {str(k): str(v) for k, v in (raw.get("matchLabels") or {}).items()}
            for e in raw.get("matchExpressions") or []:
                op = e.get("operator")
                if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
                    self.nothing = True  # upstream: an error, the term selects nothing
                exprs.append((str(e.get("key", "")), str(op), frozenset(e.get("values") or ())))
            exprs += [(k, op, frozenset(v)) for k, op, v in extra]
        self.labels = labels
        self.exprs = tuple(exprs)
        self.empty = not self.nothing and not labels and not exprs
        self.ident = "-" if self.nothing else json.dumps(
            [sorted(labels.items()), sorted((k, op, sorted(v)) for k, op, v in exprs)], separators=(",", ":"))

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for k, v in self.labels.items():
            if labels.get(k) != v:
                return False
        for key, op, values in self.exprs:
            have = labels.get(key)
            if op == "In":
                if have is None or have not in values:
                    return False
            elif op == "NotIn":
                if have is not None and have in values:
                    return False
            elif op == "Exists":
                if have is None:
                    return False
            elif have is not None:  # DoesNotExist
                return False
        return True


def label_keys(owner: Mapping[str, str], match: Iterable[str] | None,
               mismatch: Iterable[str] | None = None) -> list[tuple[str, str, tuple[str, ...]]]:
    """``matchLabelKeys`` (``key In [value]``) and ``mismatchLabelKeys`` (``key NotIn [value]``)
    of the keys the owner pod carries, as the API server merges them (KEP-3633, KEP-3243)."""
    out: list[tuple[str, str, tuple[str, ...]]] = [(k, "In", (owner[k],)) for k in match or () if k in owner]
    out += [(k, "NotIn", (owner[k],)) for k in mismatch or () if k in owner]
    return out


@dataclass(frozen=True, slots=True)
class Term:
    """One ``PodAffinityTerm`` of a pod (upstream ``framework.AffinityTerm``)."""

    namespaces: frozenset[str]
    ns_selector: Selector | None
    """``namespaceSelector`` (``None``: absent; together with no ``namespaces``, the owner's namespace)."""
    selector: Selector
    key: str
    ident: str

    def namespace_ok(self, namespace: str, ns_labels: Mapping[str, Mapping[str, str]]) -> bool:
        if namespace in self.namespaces:
            return True
        return self.ns_selector is not None and self.ns_selector.matches(ns_labels.get(namespace) or _EMPTY)

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, Mapping[str, str]]) -> bool:
        """Upstream ``AffinityTerm.Matches``: namespace (or namespace selector), then labels."""
        return self.namespace_ok(pod.namespace, ns_labels) and self.selector.matches(pod_labels(pod))


def _parse_term(pod: PodInfo, raw: Obj, labels: Mapping[str, str]) -> Term:
    names = [str(n) for n in raw.get("namespaces") or ()]
    raw_ns = raw.get("namespaceSelector")
    ns_selector = Selector(raw_ns) if raw_ns is not None else None
    namespaces = frozenset(names) if names or ns_selector is not None else frozenset((pod.namespace,))
    selector = Selector(raw.get("labelSelector"),
                        label_keys(labels, raw.get("matchLabelKeys"), raw.get("mismatchLabelKeys")))
    ident = json.dumps([sorted(namespaces), ns_selector.ident if ns_selector else None, selector.ident],
                       separators=(",", ":"))
    return Term(namespaces, ns_selector, selector, str(raw.get("topologyKey", "")), ident)


def parse_terms(pod: PodInfo, kind: str) -> tuple[Term, ...]:
    """The pod's required ``kind`` (podAffinity / podAntiAffinity) terms."""
    labels = pod_labels(pod)
    return tuple(_parse_term(pod, raw, labels) for raw in required_terms(pod, kind) if isinstance(raw, dict))


def parse_weighted(pod: PodInfo, kind: str) -> tuple[tuple[int, Term], ...]:
    """The pod's preferred ``kind`` terms with their weights (upstream ``WeightedAffinityTerm``)."""
    affinity = _spec(pod).get("affinity")
    if not affinity:
        return ()
    labels = pod_labels(pod)
    out = []
    for raw in (affinity.get(kind) or {}).get(PREFERRED) or ():
        if not isinstance(raw, dict) or not isinstance(raw.get("podAffinityTerm"), dict):
            continue
        weight = int(raw.get("weight") or 0)
        if weight:
            out.append((weight, _parse_term(pod, raw["podAffinityTerm"], labels)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Spread:
    """One topology spread constraint (upstream ``podtopologyspread.topologySpreadConstraint``)."""

    max_skew: int
    key: str
    selector: Selector
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def parse_spread(pod: PodInfo, when: str = "DoNotSchedule") -> tuple[Spread, ...]:
    """The pod's constraints with ``whenUnsatisfiable: when`` (upstream ``filterTopologySpreadConstraints``)."""
    out = []
    labels = pod_labels(pod)
    for c in _spec(pod).get("topologySpreadConstraints") or ():
        if not isinstance(c, dict) or c.get("whenUnsatisfiable") != when:
            continue
        selector = Selector(c.get("labelSelector"), label_keys(labels, c.get("matchLabelKeys")))
        out.append(Spread(int(c.get("maxSkew") or 1), str(c.get("topologyKey", "")), selector,
                          int(c.get("minDomains") or 1), (c.get("nodeAffinityPolicy") or "Honor") == "Honor",
                          (c.get("nodeTaintsPolicy") or "Ignore") == "Honor"))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Constraints:
    """What the two plugins read of one pod, parsed once per pod version."""

    affinity: tuple[Term, ...]
    anti: tuple[Term, ...]
    spread: tuple[Spread, ...]

    @property
    def any(self) -> bool:
        return bool(self.affinity or self.anti or self.spread)


_NONE = Constraints((), (), ())


def parse_constraints(pod: PodInfo) -> Constraints:
    spec = _spec(pod)
    if not spec.get("affinity") and not spec.get("topologySpreadConstraints"):
        return _NONE
    c = Constraints(parse_terms(pod, "podAffinity"), parse_terms(pod, "podAntiAffinity"), parse_spread(pod))
    return c if c.any else _NONE


@dataclass(frozen=True, slots=True)
class Preferences:
    """What the two plugins' scores read of one pod, parsed once per pod version."""

    affinity: tuple[tuple[int, Term], ...]
    anti: tuple[tuple[int, Term], ...]
    required_affinity: tuple[Term, ...]
    """Its required podAffinity terms: they score for pods they match (upstream ``hardPodAffinityWeight``)."""
    soft_spread: tuple[Spread, ...]
    """``whenUnsatisfiable: ScheduleAnyway`` constraints."""

    @property
    def any(self) -> bool:
        return bool(self.affinity or self.anti or self.required_affinity or self.soft_spread)

    @property
    def scores_others(self) -> bool:
        """Whether the pod's terms score other pods' nodes (upstream ``PodsWithAffinity``)."""
        return bool(self.affinity or self.anti or self.required_affinity)


_NO_PREFERENCES = Preferences((), (), (), ())


def parse_preferences(pod: PodInfo) -> Preferences:
    spec = _spec(pod)
    affinity = spec.get("affinity")
    if not (affinity and (affinity.get("podAffinity") or affinity.get("podAntiAffinity"))) \
            and not spec.get("topologySpreadConstraints"):
        return _NO_PREFERENCES
    p = Preferences(parse_weighted(pod, "podAffinity"), parse_weighted(pod, "podAntiAffinity"),
                    parse_terms(pod, "podAffinity"), parse_spread(pod, "ScheduleAnyway"))
    return p if p.any else _NO_PREFERENCES


def scores_others(pod: PodInfo) -> bool:
    """Whether the pod has terms that score nodes for other pods (the builder keeps such pods)."""
    affinity = _spec(pod).get("affinity")
    return bool(affinity and (affinity.get("podAffinity") or affinity.get("podAntiAffinity"))
                and preferences_of(pod).scores_others)


# ---------------------------------------------------------------------- counters


def _narrowing(selector: Selector) -> tuple[str, tuple[str, ...]] | None:
    """A label key and values every pod the selector matches carries one of: its first
    ``matchLabels`` pair, or its first ``In`` expression (``None``: neither)."""
    if selector.labels:
        key, value = next(iter(selector.labels.items()))
        return key, (value,)
    first = next((e for e in selector.exprs if e[1] == "In"), None)
    return None if first is None else (first[0], tuple(sorted(first[2])))


class Counter:
    """Per node, the pods matching ``pred`` among the existing pods of ``namespaces`` and the
    pods placed in this session; kept in step with the session's placements."""

    def __init__(self, index: CycleIndex, namespaces: Iterable[str], pred: Callable[[PodInfo], bool],
                 skip_deleting: bool, hint: Selector | None = None, memo: str | None = None) -> None:
        """``hint``: a selector every matching pod satisfies (its first label narrows the pods tried).
        ``memo``: names ``pred`` (a function of the pod alone) so that the existing pods' count is
        kept by the world's pod table and followed across cycles (``None``: counted afresh)."""
        self.pred = pred
        self.skip_deleting = skip_deleting
        if hint is not None and hint.nothing:
            namespaces = ()
        narrowed = _narrowing(hint) if hint is not None else None

        def counted(p: PodInfo) -> bool:
            return not (skip_deleting and p.deleting) and pred(p)

        if memo is not None:
            self.cur = index.table.counts(f"{memo}|{skip_deleting}", namespaces, counted, index.n, narrowed).copy()
        else:
            self.cur = index.table.walk(namespaces, counted, index.n, narrowed)
        self.applied: list[tuple[int, int]] = []
        """(log serial, node or -1) of each placement taken into account."""
        self.lifted: dict[str, int] = {}
        """Pod key -> node it was taken off (-1: it was not counted) for each pod the session released."""
        self.removals = -1
        """The :attr:`CycleIndex.removals` version :attr:`lifted` follows."""

    def sync(self, index: CycleIndex) -> np.ndarray:
        if self.removals != index.removals:
            self._follow_removals(index.removed)
            self.removals = index.removals
        serials, log = index.serials, index.log
        applied = self.applied
        while applied and (len(applied) > len(serials) or serials[len(applied) - 1] != applied[-1][0]):
            _, j = applied.pop()
            if j >= 0:
                self.cur[j] -= 1
        for k in range(len(applied), len(log)):
            pl = log[k]
            j = pl.node if self.pred(pl.pod) else -1
            if j >= 0:
                self.cur[j] += 1
            applied.append((serials[k], j))
        return self.cur

    def _follow_removals(self, removed: Mapping[str, tuple[PodInfo, int]]) -> None:
        """Count back the pods no longer removed, take off the newly removed ones (upstream
        ``RemovePod`` / ``AddPod`` of the preemption dry run)."""
        lifted = self.lifted
        for key in [k for k in lifted if k not in removed]:
            j = lifted.pop(key)
            if j >= 0:
                self.cur[j] += 1
        for key, (p, j) in removed.items():
            if key in lifted:
                continue
            counted = not (self.skip_deleting and p.deleting) and self.pred(p)
            lifted[key] = j if counted else -1
            if counted:
                self.cur[j] -= 1


class CycleIndex:
    """One session's pods by namespace and node, topology domains, and counters (built lazily)."""

    def __init__(self, session: Session) -> None:
        snap = session.snap
        self.session = weakref.ref(session)
        self.snap = snap
        self.n = snap.n_nodes
        self.ns_labels: Mapping[str, Mapping[str, str]] = snap.namespace_labels
        self.log: list[Placement] = []
        self.serials: list[int] = []
        self._serial = 0
        self.placed_anti: dict[int, tuple[PodInfo, int, tuple[Term, ...]]] = {}
        """Log serial -> placed pod with required anti-affinity, its node, its terms."""
        self.placed_scoring: dict[int, tuple[PodInfo, int]] = {}
        """Log serial -> placed pod whose terms score other pods' nodes (:func:`scores_others`), its node."""
        self._scored_by_others: dict[str, dict[str, dict[int, int]]] = {}
        self.table = snap.pod_table if snap.pod_table is not None else PodTable(snap.pods, snap.on_node)
        """The existing pods by namespace and label (kept by the snapshot builder across cycles)."""
        self._counters: dict[str, Counter] = {}
        self._existing_anti: list[tuple[Term, np.ndarray, list[str]]] | None = None
        self._symmetry: dict[str, dict[str, set[int]]] = {}
        self._released_version = 0
        self.removed: dict[str, tuple[PodInfo, int]] = {}
        """Existing pods the session released (pod key -> (pod, node)): counted nowhere while released."""
        self.removals = 0
        """Changes of :attr:`removed` (counters compare it with the version they follow)."""

    # ------------------------------------------------------------------ placements

    def sync(self, session: Session) -> None:
        """Follow the session's placements (added at the end, rolled back last first) and evictions."""
        self._follow_evictions(session)
        placements = session.placements
        log = self.log
        while log and placements.get(log[-1].pod.key) is not log[-1]:
            log.pop()
            serial = self.serials.pop()
            self.placed_anti.pop(serial, None)
            self.placed_scoring.pop(serial, None)
        new = len(placements) - len(log)
        if new < 0:  # not a rollback of the latest placements: start over
            log.clear()
            self.serials.clear()
            self.placed_anti.clear()
            self.placed_scoring.clear()
            new = len(placements)
        if new == 0:
            return
        fresh = list(islice(reversed(placements.values()), new))
        fresh.reverse()
        for pl in fresh:
            self._serial += 1
            log.append(pl)
            self.serials.append(self._serial)
            anti = constraints_of(pl.pod).anti
            if anti:
                self.placed_anti[self._serial] = (pl.pod, pl.node, anti)
            if scores_others(pl.pod):
                self.placed_scoring[self._serial] = (pl.pod, pl.node)

    def _follow_evictions(self, session: Session) -> None:
        """The existing pods the session released as :attr:`removed`: the pods of the gangs it
        evicted, and the terminating pods whose room a nominated preemptor takes
        (``disruption.released``; a rollback brings them back)."""
        state = session.disruption
        if state.released_version == self._released_version:
            return
        self._released_version = state.released_version
        removed: dict[str, tuple[PodInfo, int]] = {}
        for key in sorted(state.released):
            hit = self.table.namespace(key.partition("/")[0]).get(key)
            if hit is not None:
                removed[key] = hit
        if removed.keys() == self.removed.keys():
            return
        self.removed = removed
        self.removals += 1
        self._symmetry.clear()

    # ------------------------------------------------------------------ existing pods

    def namespaces(self, terms: Iterable[Term]) -> set[str]:
        """The namespaces whose pods may match one of ``terms``."""
        out: set[str] = set()
        for t in terms:
            out |= t.namespaces
            if t.ns_selector is not None:
                out |= {ns for ns in self.table.namespaces()
                        if t.ns_selector.matches(self.ns_labels.get(ns) or _EMPTY)}
        return out

    def counter(self, ident: str, build: Callable[[], Counter]) -> np.ndarray:
        c = self._counters.get(ident)
        if c is None:
            c = self._counters[ident] = build()
        return c.sync(self)

    # ------------------------------------------------------------------ topology

    def domains(self, key: str) -> tuple[np.ndarray, list[str]]:
        """Per node, the index of its ``key`` label value in the returned list (-1: no label)."""
        def build() -> tuple[np.ndarray, list[str]]:
            values: dict[str, int] = {}
            codes = np.full(self.n, -1, dtype=np.int64)
            for n in self.snap.nodes:
                v = n.labels.get(key)
                if v is not None:
                    codes[n.index] = values.setdefault(v, len(values))
            return codes, list(values)

        return self.table.node_memo("domains:" + key, build)

    def domain_counts(self, key: str, per_node: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        """Per value of ``key``, the sum of ``per_node`` over its nodes (of ``among``), with a
        trailing 0 so that ``result[codes]`` gives 0 for nodes without the label."""
        codes, values = self.domains(key)
        sel = codes >= 0 if among is None else (codes >= 0) & among
        out = np.zeros(len(values) + 1, dtype=np.int64)
        out[:len(values)] = np.bincount(codes[sel], weights=per_node[sel], minlength=len(values)).astype(np.int64)
        return out

    def mask(self, ident: str, build: Callable[[], np.ndarray]) -> np.ndarray:
        return self.table.node_memo("mask:" + ident, build)

    def node_affinity_mask(self, pod: PodInfo) -> np.ndarray:
        """Nodes matching the pod's ``nodeSelector`` and required node affinity (upstream
        ``nodeaffinity.GetRequiredNodeAffinity(pod).Match``; a bad affinity matches no node)."""
        selector, affinity = pod.node_selector, pod.required_affinity
        if not selector and affinity is None:
            return self.mask("all", lambda: np.ones(self.n, dtype=bool))

        def build() -> np.ndarray:
            view = None
            if affinity is not None:
                try:
                    view = decode(affinity, NodeSelectorView)
                except msgspec.ValidationError:
                    return np.zeros(self.n, dtype=bool)
            out = np.zeros(self.n, dtype=bool)
            for n in self.snap.nodes:
                labels = n.labels
                out[n.index] = (all(labels.get(k) == v for k, v in selector.items())
                                and (view is None or node_selector_matches(view, n.obj)))
            return out

        return self.mask("aff:" + json.dumps([selector, affinity], sort_keys=True), build)

    def tolerated_mask(self, pod: PodInfo) -> np.ndarray:
        """Nodes whose NoSchedule/NoExecute taints the pod tolerates."""
        from drasched.scheduler.plugins.predicates import untolerated_taint

        tolerations = pod.tolerations

        def build() -> np.ndarray:
            return np.array([not n.taints or untolerated_taint(n.taints, tolerations) is None
                             for n in self.snap.nodes], dtype=bool)

        return self.mask("tol:" + json.dumps(tolerations, sort_keys=True), build)

    # ------------------------------------------------------------------ symmetry

    def blocked(self, pod: PodInfo) -> dict[str, set[int]]:
        """Per topology key, the domains (value indices) where a pod's required anti-affinity
        term matches ``pod`` (upstream ``getTPMapMatchingExistingAntiAffinity``), the pods placed
        in this session included, those it evicted left out."""
        out: dict[str, set[int]] = {}
        if self.snap.anti_affinity:
            memo = json.dumps([pod.namespace, sorted(pod_labels(pod).items())], separators=(",", ":"))
            base = self._symmetry.get(memo)
            if base is None:
                base = {}
                for term, nodes, keys in self._existing():
                    if term.matches(pod, self.ns_labels):
                        if self.removed:
                            nodes = nodes[np.array([k not in self.removed for k in keys], dtype=bool)]
                        codes, _ = self.domains(term.key)
                        found = {int(c) for c in np.unique(codes[nodes]) if c >= 0}
                        if found:
                            base.setdefault(term.key, set()).update(found)
                self._symmetry[memo] = base
            for k, v in base.items():
                out[k] = set(v)
        for _, j, terms in self.placed_anti.values():
            for term in terms:
                if term.matches(pod, self.ns_labels):
                    codes, _ = self.domains(term.key)
                    if codes[j] >= 0:
                        out.setdefault(term.key, set()).add(int(codes[j]))
        return out

    def scored_by_others(self, pod: PodInfo) -> dict[str, dict[int, int]]:
        """Per topology key and domain, what other pods' terms give ``pod`` there (upstream
        ``processExistingPod``'s second half): their preferred affinity terms matching it +weight,
        preferred anti-affinity -weight, required affinity +``HARD_POD_AFFINITY_WEIGHT``; the
        pods this session placed included. Pods it evicted still score: upstream's preemption
        dry run re-runs the filters only."""
        memo = json.dumps([pod.namespace, sorted(pod_labels(pod).items())], separators=(",", ":"))
        base = self._scored_by_others.get(memo)
        if base is None:
            base = {}
            snap = self.snap
            for q in snap.affinity_scoring.values():
                j = counted_node(q, snap.assumed, snap.node_pos)
                if j is not None:
                    self._add_scores_of(q, j, pod, base)
            self._scored_by_others[memo] = base
        if not self.placed_scoring:
            return base
        out = {k: dict(v) for k, v in base.items()}
        for q, j in self.placed_scoring.values():
            self._add_scores_of(q, j, pod, out)
        return out

    def _add_scores_of(self, q: PodInfo, j: int, pod: PodInfo, into: dict[str, dict[int, int]]) -> None:
        prefs = preferences_of(q)
        weighted = [*prefs.affinity, *((-w, t) for w, t in prefs.anti),
                    *((HARD_POD_AFFINITY_WEIGHT, t) for t in prefs.required_affinity)]
        for w, t in weighted:
            if t.matches(pod, self.ns_labels):
                code = int(self.domains(t.key)[0][j])
                if code >= 0:
                    per_key = into.setdefault(t.key, {})
                    per_key[code] = per_key.get(code, 0) + w

    def _existing(self) -> list[tuple[Term, np.ndarray, list[str]]]:
        """The existing pods' anti-affinity terms, grouped: each distinct term with its pods'
        nodes and keys (the keys leave out the pods the session evicted)."""
        if self._existing_anti is None:
            snap = self.snap
            grouped: dict[tuple[str, str], tuple[Term, list[int], list[str]]] = {}
            for p in snap.anti_affinity.values():
                j = counted_node(p, snap.assumed, snap.node_pos)
                if j is None:
                    continue
                for term in constraints_of(p).anti:
                    hit = grouped.get((term.ident, term.key))
                    if hit is None:
                        hit = grouped[(term.ident, term.key)] = (term, [], [])
                    hit[1].append(j)
                    hit[2].append(p.key)
            self._existing_anti = [(t, np.array(js, dtype=np.int64), keys) for t, js, keys in grouped.values()]
        return self._existing_anti


# ---------------------------------------------------------------------- per-thread memos

_parsed: dict[str, tuple[PodInfo, Constraints]] = {}
_parsed_lock = threading.Lock()
_local = threading.local()


def _per_version(memo: dict[str, tuple[PodInfo, Any]], pod: PodInfo, parse: Callable[[PodInfo], T], none: T) -> T:
    """``parse(pod)`` once per pod version (memo by key, checked by identity); ``none`` (the
    parse of a pod without such fields) is not kept: cheap to read again, no entry holding the pod."""
    hit = memo.get(pod.key)
    if hit is not None and hit[0] is pod:
        return hit[1]
    parsed = parse(pod)
    if parsed is none:
        return parsed
    with _parsed_lock:
        if len(memo) > 200_000:
            memo.clear()
        memo[pod.key] = (pod, parsed)
    return parsed


def constraints_of(pod: PodInfo) -> Constraints:
    """The pod's constraints, parsed once per pod version."""
    return _per_version(_parsed, pod, parse_constraints, _NONE)


_preferences: dict[str, tuple[PodInfo, Preferences]] = {}


def preferences_of(pod: PodInfo) -> Preferences:
    """The pod's preferences, parsed once per pod version."""
    return _per_version(_preferences, pod, parse_preferences, _NO_PREFERENCES)


def cycle_index(session: Session) -> CycleIndex:
    """The session's :class:`CycleIndex` (one per session and thread; a new session starts afresh)."""
    idx: CycleIndex | None = getattr(_local, "index", None)
    if idx is None or idx.session() is not session:
        idx = CycleIndex(session)
        _local.index = idx
    idx.sync(session)
    return idx
