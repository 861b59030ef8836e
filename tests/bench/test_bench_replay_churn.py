"""``drasched bench replay`` and ``drasched bench churn`` work end to end, at a tiny size.

Not measurements (no timing is asserted): the replay must place exactly the gangs its free
GPUs hold, whole, in the cycle after they arrive (and in a fresh scheduler's first cycle over
everything) and nothing in the others; the churn run must keep pods
going through a real ``drasched serve`` and report its memory and its log.
"""

from __future__ import annotations

import re

import pytest

from drasched.bench.churn import run_churn, scan_log
from drasched.bench.replay import GANG, run_replay, shape
from drasched.cli import main


def test_replay_shape_at_full_size_is_the_published_one() -> None:
    s = shape()
    assert (s.nodes, s.gpus_per_node, s.pods) == (4000, 8, 140_000)
    assert s.running_gangs * GANG == 28_800 and s.pending_gangs * GANG == 10_000
    assert s.free_gpus == 3_200  # the waiting gangs ask three times what is free


def test_tiny_replay_places_the_arriving_gang_once_and_nothing_in_the_other_rounds() -> None:
    result = run_replay(nodes=4, pods=100)
    s = result.shape
    assert (s.running_gangs, s.pending_gangs, s.free_gpus) == (3, 1, 8)
    assert result.cold_start.placed == 0  # nothing waits before the gangs arrive
    assert result.arrival.placed == 8  # one whole gang on the one free node
    assert result.quiet.placed == 0
    assert result.restart is not None and result.restart.placed == 8  # a fresh scheduler over everything
    assert result.arrival.seconds > 0 and result.peak_rss_mib > 0
    text = "\n".join(result.lines())
    for label, placed in (("cold start", 0), ("arrival", 8), ("quiet", 0), ("restart", 8)):
        assert re.search(rf"replay  {label} +[\d.]+ s wall +[\d.]+ s CPU +placed {placed} ", text), text
        assert re.search(rf"replay  {label}: +\w", text), text  # and what the round measures
    assert "(created in " in text and "MiB with the restart" in text


def test_tiny_replay_without_the_restart_reports_the_rounds_in_operation() -> None:
    result = run_replay(nodes=4, pods=100, restart=False)
    assert result.restart is None and result.arrival.placed == 8
    assert not any("restart" in line for line in result.lines())


def test_tiny_replay_runs_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "replay", "--nodes", "4", "--pods", "100"]) == 0
    out = capsys.readouterr().out
    assert "pods=100" in out and "peak RSS" in out


def test_the_log_scan_finds_errors_and_tracebacks_not_info() -> None:
    errors, warnings = scan_log("2026-01-01 00:00:00,000 INFO binder bind x\n"
                                "2026-01-01 00:00:00,000 WARNING scheduler: slow\n"
                                "2026-01-01 00:00:00,000 ERROR bind default/p: boom\n"
                                "Traceback (most recent call last):\n")
    assert len(errors) == 2 and warnings == 1


@pytest.mark.e2e
def test_tiny_churn_keeps_pods_going_through_serve_and_reports_rss_and_a_clean_log() -> None:
    result = run_churn(nodes=2, duration=6.0, interval=2.0, in_flight=3)
    assert result.completed > 3  # every pod in flight was bound, completed and replaced at least once
    assert result.created == result.completed + 3
    assert len(result.samples) >= 3 and all(s.rss_mib > 0 for s in result.samples)
    assert result.errors == [] and result.driver_errors == []
    assert any("rss growth after warm-up" in line for line in result.lines())
