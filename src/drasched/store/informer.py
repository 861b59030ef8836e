"""A local copy of one kind, kept current from the store's watch: list once, then deltas.

Controllers read from it instead of listing every round, so a pass costs what changed,
not a copy of the whole cluster (DESIGN: "no full relist per cycle"). It uses only the
``ClusterStore`` contract, so the same controller runs on the memory store and on a real
API server. Cached objects are shared: callers copy before they change one.
"""

from __future__ import annotations

from collections.abc import Iterator

from drasched.api.errors import Gone
from drasched.api.kinds import ResourceType
from drasched.store.base import ClusterStore, Obj

_Key = tuple[str, str]


def _key(obj: Obj) -> _Key:
    md = obj.get("metadata") or {}
    return (md.get("namespace") or "", md.get("name") or "")


class Informer:
    """Objects of one kind by (namespace, name), updated by :meth:`sync`."""

    def __init__(self, store: ClusterStore, rt: ResourceType, watch_timeout: float = 0.0) -> None:
        self.store = store
        self.rt = rt
        self.watch_timeout = watch_timeout
        self._objects: dict[_Key, Obj] = {}
        self._rv: str | None = None

    def sync(self) -> bool:
        """Catch up with the store; True when any object was added, changed or removed."""
        if self._rv is None:
            return self._relist()
        changed = False
        try:
            for ev in self.store.watch(self.rt, self._rv, timeout_seconds=self.watch_timeout):
                rv = (ev.object.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self._rv = rv
                if ev.type == "BOOKMARK":
                    continue
                key = _key(ev.object)
                if ev.type == "DELETED":
                    changed = self._objects.pop(key, None) is not None or changed
                else:
                    changed = changed or self._objects.get(key) != ev.object
                    self._objects[key] = ev.object
        except Gone:
            return self._relist()
        return changed

    def _relist(self) -> bool:
        result = self.store.list(self.rt)
        fresh = {_key(o): o for o in result.items}
        changed = fresh != self._objects
        self._objects = fresh
        self._rv = result.resource_version
        return changed

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        return self._objects.get(((namespace or "") if self.rt.namespaced else "", name))

    def values(self) -> Iterator[Obj]:
        """Every cached object, in (namespace, name) order so passes are deterministic."""
        for key in sorted(self._objects):
            yield self._objects[key]

    def __len__(self) -> int:
        return len(self._objects)

    def put(self, obj: Obj) -> None:
        """Record the result of our own write now, before its watch event arrives."""
        self._objects[_key(obj)] = obj

    def forget(self, name: str, namespace: str | None = None) -> None:
        """Drop an object we just deleted."""
        self._objects.pop(((namespace or "") if self.rt.namespaced else "", name), None)
