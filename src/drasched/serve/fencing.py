"""Writes fenced by leadership: a replica that is not sure it still leads writes nothing.

Every write of every controller goes through :class:`FencedStore`, which asks the
elector right before the request leaves whether this process renewed the Lease within
its renew deadline. The deadline is shorter than the lease duration, so by the time
another replica may take the Lease over, the old leader's writes are already refused:
a leader paused past its lease (SIGSTOP, a stalled node) that resumes mid-cycle cannot
bind a pod or allocate a device from its stale cache. Reads are not fenced.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from drasched.api.kinds import ResourceType
from drasched.store.base import ClusterStore, ListResult, Obj, WatchEvent


class LeadershipLost(RuntimeError):
    """A write was refused because this process no longer holds a fresh Lease."""


class Fence(Protocol):
    def may_write(self) -> bool: ...


class FencedStore:
    """A :class:`ClusterStore` whose writes pass only while ``fence.may_write()``."""

    def __init__(self, inner: ClusterStore, fence: Fence) -> None:
        self.inner = inner
        self.fence = fence
        self.refused = 0
        """Writes refused so far (exported as a metric)."""

    def _check(self, what: str) -> None:
        if not self.fence.may_write():
            self.refused += 1
            raise LeadershipLost(f"{what}: not written, this replica is not the leader (or its lease is stale)")

    def create(self, obj: Obj) -> Obj:
        self._check(f"create {obj.get('kind')}")
        return self.inner.create(obj)

    def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj:
        return self.inner.get(rt, name, namespace)

    def list(self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> ListResult:
        return self.inner.list(rt, namespace, label_selector, field_selector)

    def update(self, obj: Obj) -> Obj:
        self._check(f"update {obj.get('kind')}")
        return self.inner.update(obj)

    def update_status(self, obj: Obj) -> Obj:
        self._check(f"update {obj.get('kind')} status")
        return self.inner.update_status(obj)

    def patch(self, rt: ResourceType, name: str, namespace: str | None, patch: Obj,
              subresource: str | None = None) -> Obj:
        self._check(f"patch {rt.kind}")
        return self.inner.patch(rt, name, namespace, patch, subresource)

    def delete(self, rt: ResourceType, name: str, namespace: str | None = None, *, uid: str | None = None,
               resource_version: str | None = None, grace_period_seconds: int | None = None) -> Obj | None:
        self._check(f"delete {rt.kind}")
        return self.inner.delete(rt, name, namespace, uid=uid, resource_version=resource_version,
                                 grace_period_seconds=grace_period_seconds)

    def bind(self, namespace: str, pod_name: str, node_name: str, pod_uid: str | None = None) -> None:
        self._check("bind Pod")
        self.inner.bind(namespace, pod_name, node_name, pod_uid)

    def evict(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        self._check("evict Pod")
        self.inner.evict(namespace, name, uid=uid)

    def watch(self, rt: ResourceType, resource_version: str, namespace: str | None = None,
              timeout_seconds: float = 1.0) -> Iterator[WatchEvent]:
        return self.inner.watch(rt, resource_version, namespace, timeout_seconds)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # request(), server, ... of the wrapped store
        return getattr(self.inner, name)
