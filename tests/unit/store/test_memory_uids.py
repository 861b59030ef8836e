"""The memory store's uids are version 4 UUIDs drawn from its seeded generator, so a
``drasched simulate`` run names every object the same way each time it runs."""

from __future__ import annotations

import random
import uuid

from drasched.store.memory import MemoryStore


def test_uids_are_the_seeded_generators_version_4_uuids() -> None:
    store = MemoryStore(seed=7, auto_namespaces=True)
    uids = [store.create({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": f"c{i}", "namespace": "default"}})["metadata"]["uid"]
            for i in range(200)]
    draws = random.Random(7)
    draws.getrandbits(128)  # the auto-created namespace's uid came first
    assert uids == [str(uuid.UUID(int=draws.getrandbits(128), version=4)) for _ in range(200)]
    assert all(uuid.UUID(u).version == 4 and uuid.UUID(u).variant == uuid.RFC_4122 for u in uids)
