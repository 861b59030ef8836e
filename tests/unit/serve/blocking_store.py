"""A memory store whose watch blocks like a real API server's, safe to share between threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from drasched.api.kinds import ResourceType
from drasched.store.base import ListResult, Obj, WatchEvent
from drasched.store.memory import MemoryStore


class BlockingStore:
    """Every call under one lock; ``watch`` waits until an event arrives or its timeout passes.

    ``paused`` holds watch events back (the store still changes), to test what a consumer
    sees before the watch catches up. ``gets`` counts reads that reached the store.
    """

    def __init__(self) -> None:
        self.inner = MemoryStore(auto_namespaces=True)
        self._cond = threading.Condition()
        self.paused = False
        self.gets = 0

    def _write(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        with self._cond:
            result = fn(*args, **kwargs)
            self._cond.notify_all()
            return result

    def create(self, obj: Obj) -> Obj:
        return self._write(self.inner.create, obj)  # type: ignore[no-any-return]

    def update(self, obj: Obj) -> Obj:
        return self._write(self.inner.update, obj)  # type: ignore[no-any-return]

    def update_status(self, obj: Obj) -> Obj:
        return self._write(self.inner.update_status, obj)  # type: ignore[no-any-return]

    def patch(self, rt: ResourceType, name: str, namespace: str | None, patch: Obj,
              subresource: str | None = None) -> Obj:
        return self._write(self.inner.patch, rt, name, namespace, patch, subresource)  # type: ignore[no-any-return]

    def delete(self, rt: ResourceType, name: str, namespace: str | None = None, **kwargs: Any) -> Obj | None:
        return self._write(self.inner.delete, rt, name, namespace, **kwargs)  # type: ignore[no-any-return]

    def bind(self, namespace: str, pod_name: str, node_name: str, pod_uid: str | None = None) -> None:
        self._write(self.inner.bind, namespace, pod_name, node_name, pod_uid)

    def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj:
        with self._cond:
            self.gets += 1
            return self.inner.get(rt, name, namespace)

    def list(self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> ListResult:
        with self._cond:
            return self.inner.list(rt, namespace, label_selector, field_selector)

    def resume(self) -> None:
        with self._cond:
            self.paused = False
            self._cond.notify_all()

    def watch(self, rt: ResourceType, resource_version: str, namespace: str | None = None,
              timeout_seconds: float = 1.0) -> Iterator[WatchEvent]:
        deadline = time.monotonic() + timeout_seconds
        with self._cond:
            while True:
                events = [] if self.paused else list(self.inner.watch(rt, resource_version, namespace))
                left = deadline - time.monotonic()
                if events or left <= 0:
                    break
                self._cond.wait(left)
        yield from events

    def close(self) -> None:
        pass
