"""The first list of a kind the server does not serve: said plainly, and a stop is not kept waiting."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import NotFound
from drasched.store.informer import SharedInformers
from drasched.store.memory import MemoryStore


class NoCrds(MemoryStore):
    """A server without drasched's CRDs: listing them is a 404, as kube-apiserver answers."""

    def list(self, rt: Any, *args: Any, **kwargs: Any) -> Any:
        if rt.group == kinds.DRASCHED:
            raise NotFound("the server could not find the requested resource")
        return super().list(rt, *args, **kwargs)


def test_a_missing_crd_says_to_install_the_crds_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    informers = SharedInformers(NoCrds())
    with caplog.at_level(logging.ERROR):
        informers.start([kinds.QUEUE])
        assert not informers.wait_for_sync(timeout=0.5)
    informers.stop()
    records = [r for r in caplog.records if "Queue informer: list failed" in r.getMessage()]
    assert records and records[0].exc_info is None
    assert ("scheduling.drasched.io/v1alpha1 queues is not served: install drasched's CRDs, "
            "kubectl apply -f deploy/crds/ or the Helm chart") in records[0].getMessage()


def test_waiting_for_the_first_lists_ends_when_asked_to_stop() -> None:
    """serve's SIGTERM sets ``stop`` while the first lists still fail: the wait ends then, not
    after its hour (before, it waited the whole timeout: 112 s under serve's 120)."""
    informers = SharedInformers(NoCrds())
    informers.start([kinds.QUEUE])
    stop = threading.Event()
    stop.set()
    assert not informers.wait_for_sync(timeout=3600.0, stop=stop)
    informers.stop()
