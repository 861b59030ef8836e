"""A many-to-many index kept one source object at a time (client-go's indexers, by hand).

Each source key (a pod, a claim) contributes a set of index values (the claims it names,
the owners it has); :meth:`MultiIndex.put` replaces what the previous version contributed,
so a change costs what it touched, never a pass over every object.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)


class MultiIndex(Generic[K, V]):
    """Source key -> index values, and index value -> source keys."""

    def __init__(self) -> None:
        self.by_value: dict[V, set[K]] = {}
        self.of: dict[K, frozenset[V]] = {}

    def put(self, key: K, values: Iterable[V]) -> frozenset[V]:
        """Set ``key``'s values (none: forget it); returns the old ones."""
        new = frozenset(values)
        old = self.of.get(key, frozenset())
        for v in old - new:
            keys = self.by_value.get(v)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_value[v]
        for v in new - old:
            self.by_value.setdefault(v, set()).add(key)
        if new:
            self.of[key] = new
        else:
            self.of.pop(key, None)
        return old

    def keys_for(self, value: V) -> set[K]:
        """The source keys that contribute ``value`` (a copy)."""
        return set(self.by_value.get(value, ()))
