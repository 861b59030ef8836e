"""The inputs of the parity run (tests/contract/test_mutation_parity.py), checked without a server:
a refusal there is only the broken object's doing if drasched accepts every source file as it
is, and a seed reproduces a finding only if it always names the same input."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.fuzz.parity import accepted_files, case, drasched_verdict, served_type


@pytest.mark.parametrize("name", [name for name, _ in accepted_files()])
def test_drasched_accepts_every_source_file_as_it_is(name: str) -> None:
    docs = dict(accepted_files())[name]
    with tempfile.TemporaryDirectory() as tmp:
        verdict = drasched_verdict(list(docs), Path(tmp))
    assert verdict.accepted, verdict.messages


def test_a_seed_names_one_input_and_breaks_one_served_object() -> None:
    for seed in range(50):
        first, again = case(seed), case(seed)
        assert (first.origin, first.index, first.docs) == (again.origin, again.index, again.docs)
        assert served_type(first.original[first.index]) is not None
        assert [d for i, d in enumerate(first.docs) if i != first.index] == [
            d for i, d in enumerate(first.original) if i != first.index]
