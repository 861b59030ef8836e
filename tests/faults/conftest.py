"""Fixtures of the fault suite: a fresh audited API server per test (see harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster
from tests.faults.harness import SIZE, create_inventory, fault_cluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """An API server with the serve users, an audit log and the DRA inventory, per test:
    invariants are read from the whole cluster, so nothing may leak from another test."""
    with fault_cluster(tmp_path) as c:
        create_inventory(c.store(), SIZE.nodes)
        yield c


@pytest.fixture
def admin(cluster: LocalCluster) -> KubeStore:
    return cluster.store()
