"""Session-wide fixtures: one real kube-apiserver + etcd for every e2e test of the run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from drasched.scheduler.snapshot import CHECK_ENV
from drasched.store.watchlog import CHECK_ENV as SHARED_CHECK_ENV
from drasched.testing.apiserver import LocalCluster

# Every snapshot built change by change is compared with one built from scratch, in this
# process and in the serve processes the fault and e2e tests start (they inherit it).
os.environ.setdefault(CHECK_ENV, "1")
# Every object the memory store shares with its watchers is checked for mutation on each hand-out.
os.environ.setdefault(SHARED_CHECK_ENV, "1")


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalCluster]:
    """etcd and kube-apiserver on loopback, started once (the binaries are built if missing)."""
    with LocalCluster() as cluster:
        yield cluster
