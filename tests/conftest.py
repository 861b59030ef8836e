"""Session-wide fixtures: one real kube-apiserver + etcd for every e2e test of the run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drasched.testing.apiserver import LocalCluster


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalCluster]:
    """etcd and kube-apiserver on loopback, started once (the binaries are built if missing)."""
    with LocalCluster() as cluster:
        yield cluster
