"""The ClusterStore contract.

Both implementations (``memory`` for embedded mode, ``kube`` for a real kube-apiserver)
pass one contract test suite (tests/contract/test_store_contract.py). Objects are wire-form
dicts; every method returns fresh copies the caller may mutate.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from drasched.api.kinds import ResourceType

Obj = dict[str, Any]


@dataclass
class WatchEvent:
    """One watch notification. ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK."""

    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    object: Obj


@dataclass
class ListResult:
    """A consistent list: the items and the collection resourceVersion to watch from."""

    items: list[Obj]
    resource_version: str


class ClusterStore(Protocol):
    """What drasched needs from an API server. Errors are ``drasched.api.errors.ApiError``."""

    def create(self, obj: Obj) -> Obj:
        """Create an object (``generateName`` honoured); returns it as stored."""
        ...

    def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj: ...

    def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ListResult: ...

    def update(self, obj: Obj) -> Obj:
        """Replace spec/metadata; ``metadata.resourceVersion`` if set is a precondition."""
        ...

    def update_status(self, obj: Obj) -> Obj:
        """Replace the status subresource; ``metadata.resourceVersion`` is a precondition."""
        ...

    def patch(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None,
        patch: Obj,
        subresource: str | None = None,
    ) -> Obj:
        """JSON merge patch (RFC 7386) of the object or of its ``status`` subresource."""
        ...

    def delete(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Obj | None:
        """Delete; with finalizers the object stays with ``deletionTimestamp`` set and is returned.

        So does a pod bound to a node unless ``grace_period_seconds`` is 0: its kubelet
        finishes the deletion (``deletionTimestamp`` is then the deadline, now + grace).
        """
        ...

    def bind(self, namespace: str, pod_name: str, node_name: str, pod_uid: str | None = None) -> None:
        """POST the ``pods/binding`` subresource: sets ``spec.nodeName`` once."""
        ...

    def evict(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        """POST the ``pods/eviction`` subresource (a policy/v1 Eviction): a graceful delete.

        Refused with ``TooManyRequests`` (HTTP 429) when the pod's PodDisruptionBudget does
        not allow it; pods that are Pending, done or already being deleted ignore budgets.
        """
        ...

    def watch(
        self,
        rt: ResourceType,
        resource_version: str,
        namespace: str | None = None,
        timeout_seconds: float = 1.0,
    ) -> Iterator[WatchEvent]:
        """Events after ``resource_version``; ends after ``timeout_seconds`` without events.

        Raises ``Gone`` when ``resource_version`` is older than the retained history.
        """
        ...

    def close(self) -> None: ...
