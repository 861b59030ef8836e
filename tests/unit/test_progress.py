"""Progress of ``drasched simulate`` on stderr: one line rewritten in place on a terminal,
nothing at all when stderr is a file or a pipe."""

from __future__ import annotations

import io
import itertools
import sys
from pathlib import Path

import pytest

from drasched.api.manifest import load_paths
from drasched.cli import main
from drasched.sim.progress import CLEAR_LINE, Progress, format_duration
from drasched.sim.runner import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class FakeTerminal(io.StringIO):
    """What a terminal looks like to the code: a stream whose ``isatty()`` is true."""

    def isatty(self) -> bool:
        return True


def job_gang() -> list[dict]:
    return [item.obj for item in load_paths([str(EXAMPLES / "job-gang")])]


def test_on_a_terminal_one_line_is_rewritten_with_objects_virtual_time_and_pods_placed() -> None:
    term = FakeTerminal()
    ticks = itertools.count(step=1.0)  # a second of wall time between writes: every round shows
    objects = job_gang()
    result = simulate(objects, progress=Progress(term, monotonic=lambda: next(ticks)))
    assert result.quiescent
    text = term.getvalue()
    assert "\n" not in text, "one line, rewritten in place"
    frames = [f.removeprefix("drasched simulate: ") for f in text.split(CLEAR_LINE) if f]
    assert frames[0] == f"{len(objects)} objects loaded"
    last = frames[-1]
    assert last.startswith(f"{len(objects)} objects loaded, virtual time +")
    assert "8 of 8 pods placed" in last  # the Job's eight pods ran (30 min of virtual time each)
    assert any("virtual time +30m00s" in f for f in frames)
    assert text.endswith(CLEAR_LINE), "the line is cleared at the end, so the summary prints on a clean one"


def test_writes_are_throttled_to_the_interval() -> None:
    term = FakeTerminal()
    simulate(job_gang(), progress=Progress(term, interval=60.0, monotonic=lambda: 0.0))
    frames = [f for f in term.getvalue().split(CLEAR_LINE) if f]
    assert frames == [f"drasched simulate: {len(job_gang())} objects loaded"]


def test_nothing_is_written_when_the_stream_is_not_a_terminal() -> None:
    plain = io.StringIO()
    simulate(job_gang(), progress=Progress(plain, interval=0.0))
    assert plain.getvalue() == ""


def test_the_cli_shows_progress_on_a_terminal_and_not_in_a_pipe(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLES / "quickstart")]) == 0
    assert CLEAR_LINE not in capsys.readouterr().err  # captured: not a TTY
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(["simulate", str(EXAMPLES / "quickstart")]) == 0
    err = term.getvalue()
    assert err.startswith(CLEAR_LINE + "drasched simulate: 7 objects loaded")  # a quick run: the first frame
    summary = err.rsplit(CLEAR_LINE, 1)[1]
    assert summary.startswith("drasched simulate: 1 pods"), "the summary follows on the cleared line"


@pytest.mark.parametrize(("seconds", "text"), [(45, "45s"), (725, "12m05s"), (10920, "3h02m00s"),
                                               (187200, "2d04h00m")])
def test_virtual_time_is_short_to_read(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
