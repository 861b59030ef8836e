"""Fuzz target: broken copies of the shipped examples and scenarios through ``drasched simulate``.

The property a user relies on: whatever the file holds, simulate either refuses it (exit 2)
with a message that says which file, which document (or YAML line and column) and which
object, or it simulates (exit 0, or 3 when the run does not settle); it never ends in a
Python traceback. Seeded, so a failure names a seed that reproduces it
(``tests.fuzz.mutate.simulate(seed, tmp)``). ``DRASCHED_FUZZ_EXAMPLES`` raises the count
for a long run (docs/testing.md).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz.mutate import simulate

EXAMPLES = int(os.environ.get("DRASCHED_FUZZ_EXAMPLES", "200"))


def _names_the_place(stderr: str, source: str) -> bool:
    """The first error line names the file, then the document and the object
    (``document 3: Kind namespace/name: field: ...``) or the reader's line and column."""
    first = next((line for line in stderr.splitlines() if line.startswith("error: ")), "")
    where = re.escape(source)
    return bool(re.match(rf"error: {where}: document \d+: \S+ .+: .+", first)
                or re.match(rf"error: {where}: document \d+: expected a Kubernetes object", first)
                or re.match(rf"error: {where}: (line \d+ column \d+: )?(malformed|nested)", first))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_a_broken_manifest_is_refused_with_its_place_or_simulated(seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        outcome = simulate(seed, Path(tmp))
    assert outcome.code in (0, 2, 3), f"seed {seed} ({outcome.origin}): exit {outcome.code}\n{outcome.stderr}"
    if outcome.code == 2:
        assert _names_the_place(outcome.stderr, outcome.source), (
            f"seed {seed} ({outcome.origin}): refusal does not say where:\n{outcome.stderr}")
