"""Fixtures for the ClusterStore contract: every test runs on the memory store and on a
real kube-apiserver (one LocalCluster for the whole session, a fresh namespace per test).

The ``kube`` parameter carries the ``e2e`` marker, so ``pytest -m "not e2e"`` deselects
it on a machine without the kube-apiserver build; it is never skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from drasched.store.base import ClusterStore
from drasched.store.memory import MemoryStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace


@dataclass
class Backend:
    """A store under test plus the one thing the contract cannot express: compaction."""

    name: str
    store: ClusterStore
    compact: Callable[[], object]
    """Make every resourceVersion handed out so far too old to watch from (410 Gone).
    Memory: forget the watch history. Kube: compact etcd (ConfigMaps only: the other
    kinds are served from the watch cache, which compaction does not touch)."""


@pytest.fixture(params=["memory", pytest.param("kube", marks=pytest.mark.e2e)])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "memory":
        mem = MemoryStore()
        yield Backend("memory", mem, mem.compact)
        return
    cluster: LocalCluster = request.getfixturevalue("local_cluster")
    store = cluster.store()
    yield Backend("kube", store, cluster.compact)


@pytest.fixture
def store(backend: Backend) -> ClusterStore:
    return backend.store


@pytest.fixture
def ns(store: ClusterStore) -> str:
    """A namespace of its own (and its default ServiceAccount, which pods need)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    ensure_namespace(store, name)
    return name
