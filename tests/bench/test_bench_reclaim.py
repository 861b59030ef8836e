"""bench_reclaim works end to end at a tiny size (not a measurement: BENCHMARKS.md has those)."""

from __future__ import annotations

import re

import pytest

from tests.bench import bench_reclaim


@pytest.mark.parametrize("route", ["dra", "device-plugin"])
def test_b_reaches_its_fair_share_with_exactly_the_evictions_it_needs(route: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_reclaim.main(["--nodes", "4", "--gpus", "2", "--a-pods", "8", "--b-pods", "4",
                               "--gpu-route", route, "--stop", "5s"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"B holds its fair share after +[\d.]+ s wall +5\.0 s virtual", out), out
    assert re.search(r"evictions +4 +nominations 4", out), out
    assert "pods running at the end          A 4, B 4" in out
