"""What drasched accepts, the real API server accepts: broken copies of the shipped examples
and scenarios judged by both (``tests/fuzz/parity.py`` says how).

A deterministic sample: seeds ``DRASCHED_PARITY_SEED`` (default 0) onwards,
``DRASCHED_PARITY_MUTATIONS`` of them (default 400, about 25 s on the 2-core dev
machine). The long run (docs/testing.md):

    DRASCHED_PARITY_MUTATIONS=10000 pytest tests/contract/test_mutation_parity.py -s

prints a ``PARITY`` line with the counts, including what drasched refuses and the server
accepts (reported, not failed).
"""

from __future__ import annotations

import json
import os

import pytest

from drasched.testing.apiserver import LocalCluster
from tests.fuzz.parity import run

pytestmark = pytest.mark.e2e

FIRST_SEED = int(os.environ.get("DRASCHED_PARITY_SEED", "0"))
MUTATIONS = int(os.environ.get("DRASCHED_PARITY_MUTATIONS", "400"))


def test_drasched_refuses_every_broken_object_the_api_server_refuses(local_cluster: LocalCluster) -> None:
    tally = run(range(FIRST_SEED, FIRST_SEED + MUTATIONS), local_cluster)
    print("PARITY", json.dumps(tally.summary(), indent=1, ensure_ascii=False))
    assert not tally.baseline, "the server refused unbroken objects:\n" + "\n".join(tally.baseline)
    assert tally.inputs >= MUTATIONS * 0.9
    assert not tally.server_only_refuses, "accepted by drasched, refused by the API server:\n" + "\n".join(
        tally.server_only_refuses)
    assert not tally.unnamed, "refusals that do not name the broken document:\n" + "\n".join(tally.unnamed)
