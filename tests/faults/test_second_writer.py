"""A second writer changes claims, pods and slices under the scheduler while it places a
burst: labels on claims and pods (so that serve's updates meet 409 Conflicts and must
re-read), ResourceSlices republished with a new pool generation, and pods deleted (bound
ones included, grace period 0, as a user's ``kubectl delete --force`` would): their
claims must be released and the generated ones deleted, their devices free for others.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from pathlib import Path

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster
from tests.faults.harness import (
    NAMESPACE,
    SIZE,
    Replica,
    Report,
    check_invariants,
    create_burst,
    finish,
    read_audit,
    settle,
    slice_for,
)

pytestmark = pytest.mark.e2e

CHANGES = SIZE.pods * 3
DELETES = SIZE.pods // 10


class SecondWriter:
    """Seeded random changes, one every ``pause`` seconds, until ``CHANGES`` are made."""

    def __init__(self, store: KubeStore, seed: int) -> None:
        self.store = store
        self.rng = random.Random(seed)
        self.counts: Counter[str] = Counter()
        self.generations: dict[str, int] = {}
        self.deleted: set[str] = set()

    def run(self, stop: threading.Event, pause: float = 0.05) -> None:
        while sum(self.counts.values()) < CHANGES and not stop.wait(pause):
            action = self.rng.choice(("claim", "claim", "pod", "slice", "delete"))
            try:
                getattr(self, action)()
            except Conflict:
                self.counts[f"{action}_conflict"] += 1
            except ApiError:
                self.counts[f"{action}_error"] += 1

    def _label(self, rt: kinds.ResourceType) -> None:
        items = self.store.list(rt, NAMESPACE).items
        if not items:
            return
        obj = self.rng.choice(items)
        obj["metadata"].setdefault("labels", {})["touched-by"] = f"second-writer-{self.rng.randrange(1000)}"
        self.store.update(obj)  # with its resourceVersion: a Conflict if serve wrote first
        self.counts[f"{rt.kind}_labelled"] += 1

    def claim(self) -> None:
        self._label(kinds.RESOURCE_CLAIM)

    def pod(self) -> None:
        self._label(kinds.POD)

    def slice(self) -> None:
        node = f"n{self.rng.randrange(SIZE.nodes):03d}"
        current = self.store.get(kinds.RESOURCE_SLICE, f"{node}-gpus")
        generation = self.generations.get(node, 1) + 1
        new = slice_for(node, generation)
        new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        self.store.update(new)  # the same devices in a new pool generation, as a driver restart
        self.generations[node] = generation
        self.counts["slice_republished"] += 1

    def delete(self) -> None:
        if len(self.deleted) >= DELETES:
            return
        pods = self.store.list(kinds.POD, NAMESPACE).items
        if not pods:
            return
        victim = self.rng.choice(pods)["metadata"]["name"]
        self.store.delete(kinds.POD, victim, NAMESPACE, grace_period_seconds=0)
        self.deleted.add(victim)
        self.counts["pod_deleted"] += 1


def test_a_second_writer_changing_claims_pods_and_slices_breaks_no_invariant(
    cluster: LocalCluster, admin: KubeStore, tmp_path: Path
) -> None:
    replica = Replica(cluster, "serve-0", tmp_path / "serve-0.log")
    replica.start()
    writer = SecondWriter(cluster.store(), seed=7)
    stop = threading.Event()
    burst = threading.Thread(target=create_burst, args=(cluster.store(), SIZE.pods, 0.05))
    other = threading.Thread(target=writer.run, args=(stop,))
    burst.start()
    other.start()
    try:
        burst.join()
        other.join()
        settle(admin, SIZE.pods - len(writer.deleted))
    finally:
        stop.set()
        replica.stop()
    report = Report("a second writer under the scheduler")
    check_invariants(admin, report, [replica], read_audit(tmp_path))
    report.counts.update({f"writer_{k}": v for k, v in sorted(writer.counts.items())})
    assert writer.counts["pod_deleted"] > 0 and writer.counts["slice_republished"] > 0
    finish(report)
