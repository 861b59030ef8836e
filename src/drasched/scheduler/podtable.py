"""Counted pods by namespace and by label, kept by the snapshot builder between cycles.

The inter-pod plugins (required and preferred pod affinity, topology spread) count, per node,
the pods matching a term. Walking every pod of the cluster for that once a cycle cost 45-65 ms
at 20,000 pods; this table is built once per world (on first use) and then follows each pod
change the builder applies, so a cycle reads only the pods a term's first label narrows to.

It also memoises arrays derived from the nodes alone (topology domains, node-affinity and
toleration masks): the node columns of a world are fixed for its life (a node change that is
not a heartbeat rebuilds the world).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from drasched.scheduler.podinfo import PodInfo

_EMPTY: dict[str, str] = {}
T = TypeVar("T")


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

    def node_memo(self, ident: str, build: Callable[[], T]) -> T:
        """``build()`` once per world: for values that depend on the nodes only."""
        hit = self._node_memo.get(ident)
        if hit is None:
            hit = self._node_memo[ident] = build()
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
