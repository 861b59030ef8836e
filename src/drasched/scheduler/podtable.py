"""Counted pods by namespace and by label, kept by the snapshot builder between cycles.

The inter-pod plugins (required and preferred pod affinity, topology spread) count, per node,
the pods matching a term. Walking every pod of the cluster for that once a cycle cost 45-65 ms
at 20,000 pods; this table is built once per world (on first use) and then follows each pod
change the builder applies, so a cycle reads only the pods a term's first label narrows to.

It also memoises arrays derived from the nodes alone (topology domains, node-affinity and
toleration masks, the static filters' verdicts per pod shape): the node columns of a world are
fixed for its life (a node change that is not a heartbeat rebuilds the world).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from drasched.scheduler.podinfo import PodInfo

_EMPTY: dict[str, str] = {}
T = TypeVar("T")
RECENT_NODE_MEMOS = 256
"""How many per-pod-shape node memos a world keeps (:meth:`PodTable.recent_node_memo`)."""
KEPT_COUNTS = 64
"""How many per-node pod counts (:meth:`PodTable.counts`) a world follows at most."""
IDLE_COUNT_CHANGES = 20_000
"""A kept count not asked for during this many pod changes is dropped (each one costs a
predicate call per change of a pod in its namespaces)."""


@dataclass(slots=True)
class _Count:
    """Per node column, the counted pods of ``namespaces`` matching ``pred``."""

    namespaces: frozenset[str]
    pred: Callable[[PodInfo], bool]
    per_node: np.ndarray
    last_used: int


def _labels(p: PodInfo) -> Mapping[str, str]:
    labels: Mapping[str, str] | None = (p.obj.get("metadata") or {}).get("labels")
    return labels or _EMPTY


class PodTable:
    """Namespace -> pod key -> (pod, node column) of the pods counted on a node (bound, or
    placed by a pending BindRequest; not finished), and (namespace, label key) -> label value
    -> pod keys for the label keys asked about so far."""

    def __init__(self, pods: Mapping[str, PodInfo], on_node: Mapping[int, Iterable[str]]) -> None:
        """``pods`` and ``on_node``: the world's own mappings, read when the table is first used."""
        self._pods = pods
        self._on_node = on_node
        self._by_ns: dict[str, dict[str, tuple[PodInfo, int]]] | None = None
        self._tables: dict[tuple[str, str], dict[str, set[str]]] = {}
        self._keys_of_ns: dict[str, list[str]] = {}
        """Namespace -> the label keys with a table there (followed on every change)."""
        self._node_memo: dict[str, Any] = {}
        self._recent: dict[str, Any] = {}
        self._counts: dict[str, _Count] = {}
        self._counts_of_ns: dict[str, list[_Count]] = {}
        self._changes = 0
        """Pod changes followed (the clock of :attr:`_Count.last_used`)."""

    # ------------------------------------------------------------------ reads

    def _built(self) -> dict[str, dict[str, tuple[PodInfo, int]]]:
        by_ns = self._by_ns
        if by_ns is None:
            by_ns = {}
            pods = self._pods
            for j, keys in self._on_node.items():
                for key in keys:
                    p = pods.get(key)
                    if p is None:
                        continue
                    entries = by_ns.get(p.namespace)
                    if entries is None:
                        entries = by_ns[p.namespace] = {}
                    entries[key] = (p, j)
            self._by_ns = by_ns
        return by_ns

    def namespace(self, ns: str) -> Mapping[str, tuple[PodInfo, int]]:
        """The counted pods of namespace ``ns``: key -> (pod, node column)."""
        return self._built().get(ns) or {}

    def namespaces(self) -> Iterable[str]:
        """The namespaces with a counted pod."""
        return [ns for ns, entries in self._built().items() if entries]

    def with_label(self, ns: str, key: str, values: Iterable[str]) -> list[str]:
        """Keys of the pods of ``ns`` whose label ``key`` has one of ``values``."""
        table = self._tables.get((ns, key))
        if table is None:
            table = self._tables[(ns, key)] = {}
            self._keys_of_ns.setdefault(ns, []).append(key)
            for pod_key, (p, _) in self.namespace(ns).items():
                v = _labels(p).get(key)
                if v is not None:
                    table.setdefault(v, set()).add(pod_key)
        out: list[str] = []
        for v in values:
            out += table.get(v, ())
        return out

    def counts(self, ident: str, namespaces: Iterable[str], pred: Callable[[PodInfo], bool], n_nodes: int,
               narrowed: tuple[str, tuple[str, ...]] | None = None) -> np.ndarray:
        """Per node column, the counted pods of ``namespaces`` for which ``pred`` holds; kept
        and followed change by change after the first ask, so a term asked again in a later
        cycle costs nothing (read-only: copy it to change it).

        ``ident`` names ``pred``, which must depend on the pod alone (its namespace, labels,
        deletion): the caller's term, with whatever it read of the cluster in the ident.
        ``narrowed``: a label key and values every pod ``pred`` holds for carries one of.
        """
        spaces = frozenset(namespaces)
        key = f"{ident}|{sorted(spaces)}"
        kept = self._counts.get(key)
        if kept is None:
            kept = _Count(spaces, pred, self.walk(spaces, pred, n_nodes, narrowed), self._changes)
            if len(self._counts) >= KEPT_COUNTS:
                self._drop(min(self._counts, key=lambda k: self._counts[k].last_used))
            self._counts[key] = kept
            for ns in spaces:
                self._counts_of_ns.setdefault(ns, []).append(kept)
        kept.last_used = self._changes
        view = kept.per_node.view()
        view.setflags(write=False)
        return view

    def walk(self, spaces: Iterable[str], pred: Callable[[PodInfo], bool], n_nodes: int,
             narrowed: tuple[str, tuple[str, ...]] | None) -> np.ndarray:
        """Per node column, the counted pods of ``spaces`` for which ``pred`` holds, counted now."""
        hit: list[int] = []
        for ns in spaces:
            entries = self.namespace(ns)
            if not entries:
                continue
            tried: Iterable[tuple[PodInfo, int]]
            if narrowed is None:
                tried = entries.values()
            else:
                tried = [entries[k] for k in self.with_label(ns, *narrowed)]
            hit += [j for p, j in tried if pred(p)]
        if not hit:
            return np.zeros(n_nodes, dtype=np.int64)
        return np.bincount(np.array(hit, dtype=np.int64), minlength=n_nodes).astype(np.int64)

    def _drop(self, key: str) -> None:
        kept = self._counts.pop(key)
        for ns in kept.namespaces:
            same = self._counts_of_ns[ns]
            same.remove(kept)
            if not same:
                del self._counts_of_ns[ns]

    def _follow(self, ns: str, p: PodInfo, j: int, delta: int) -> None:
        """A counted pod of ``ns`` came (``delta`` 1) or went (-1) on column ``j``: every kept count
        of ``ns`` it matches follows; counts idle for :data:`IDLE_COUNT_CHANGES` are dropped."""
        self._changes += 1
        if not self._changes % 1024:
            for k in [k for k, c in self._counts.items() if self._changes - c.last_used > IDLE_COUNT_CHANGES]:
                self._drop(k)
        for c in self._counts_of_ns.get(ns, ()):
            if c.pred(p):
                c.per_node[j] += delta

    def kept_counts(self) -> dict[str, np.ndarray]:
        """The counts followed so far (for comparing with a fresh walk)."""
        return {k: c.per_node for k, c in self._counts.items()}

    def walk_again(self, key: str, n_nodes: int) -> np.ndarray:
        """The kept count ``key`` computed afresh (for the world check)."""
        c = self._counts[key]
        return self.walk(c.namespaces, c.pred, n_nodes, None)

    def node_memo(self, ident: str, build: Callable[[], T]) -> T:
        """``build()`` once per world: for values that depend on the nodes only."""
        hit = self._node_memo.get(ident)
        if hit is None:
            hit = self._node_memo[ident] = build()
        return hit

    def recent_node_memo(self, ident: str, build: Callable[[], T]) -> T:
        """Like :meth:`node_memo`, but only the :data:`RECENT_NODE_MEMOS` latest are kept: for
        values asked per pod shape (static filter verdicts), of which a cluster may have one per
        node (a DaemonSet's pods each name their node)."""
        recent = self._recent
        hit = recent.get(ident)
        if hit is None:
            hit = build()
            if len(recent) >= RECENT_NODE_MEMOS:
                del recent[next(iter(recent))]
        else:
            del recent[ident]  # to the end: the oldest unused goes first
        recent[ident] = hit
        return hit

    # ------------------------------------------------------------------ the builder's changes

    def remove(self, key: str) -> None:
        """Pod ``key`` is no longer counted on a node."""
        if self._by_ns is None:
            return
        ns = key.partition("/")[0]
        entries = self._by_ns.get(ns)
        old = entries.pop(key, None) if entries is not None else None
        if old is None:
            return
        self._follow(ns, old[0], old[1], -1)
        labels = _labels(old[0])
        for label in self._keys_of_ns.get(ns, ()):
            v = labels.get(label)
            if v is not None:
                table = self._tables[(ns, label)]
                same = table.get(v)
                if same is not None:
                    same.discard(key)
                    if not same:
                        del table[v]

    def add(self, key: str, p: PodInfo, j: int) -> None:
        """Pod ``key`` is counted on node column ``j`` (after a :meth:`remove` of its old version)."""
        if self._by_ns is None:
            return
        ns = p.namespace
        entries = self._by_ns.get(ns)
        if entries is None:
            entries = self._by_ns[ns] = {}
        entries[key] = (p, j)
        self._follow(ns, p, j, 1)
        labels = _labels(p)
        for label in self._keys_of_ns.get(ns, ()):
            v = labels.get(label)
            if v is not None:
                self._tables[(ns, label)].setdefault(v, set()).add(key)

    def entries(self) -> dict[str, dict[str, tuple[str, int]]]:
        """Namespace -> pod key -> (pod version, node column), for comparing two tables."""
        return {ns: {k: (str(p.obj.get("metadata", {}).get("resourceVersion")), j) for k, (p, j) in e.items()}
                for ns, e in self._built().items() if e}

    def label_tables(self) -> dict[tuple[str, str], dict[str, set[str]]]:
        """The label tables built so far (for comparing with a fresh build)."""
        return {k: {v: set(s) for v, s in t.items() if s} for k, t in self._tables.items()}
