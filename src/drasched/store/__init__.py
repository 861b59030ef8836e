"""ClusterStore: the API surface drasched needs, with an in-memory and a real-server implementation."""

from drasched.store.base import ClusterStore, ListResult, WatchEvent

__all__ = ["ClusterStore", "ListResult", "WatchEvent"]
