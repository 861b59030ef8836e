"""Progress of a long ``drasched simulate`` run: one status line on a terminal, rewritten in place.

A run over thousands of objects can take minutes of wall time with nothing to show; on a
terminal, stderr carries one line that says how far it got (objects loaded, virtual time
reached, pods placed, rounds) and is cleared when the run ends, so the summary that follows
prints as usual. Piped or redirected (not a TTY), nothing is written: logs and captured
output stay clean.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TextIO

from drasched.api import kinds
from drasched.store.memory import MemoryStore

CLEAR_LINE = "\r\x1b[K"
"""Back to the start of the line and erase it (ANSI EL), as progress bars do."""


def format_duration(seconds: float) -> str:
    """``45s``, ``12m05s``, ``3h02m00s``, ``2d04h00m``: virtual time at a glance."""
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    if hours:
        return f"{hours}h{minutes:02d}m{s:02d}s"
    if minutes:
        return f"{minutes}m{s:02d}s"
    return f"{s}s"


class Progress:
    """Writes the status line at most every ``interval`` seconds of wall time, only on a TTY."""

    def __init__(self, stream: TextIO, *, interval: float = 0.25,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.enabled = _is_tty(stream)
        self.interval = interval
        self.monotonic = monotonic
        self.objects = 0
        self.start: datetime | None = None
        self._last: float | None = None
        self._shown = False

    def loaded(self, objects: int, now: datetime) -> None:
        """``objects`` were loaded; virtual time counts from ``now``."""
        self.objects, self.start = objects, now
        self._write(f"{objects:,} objects loaded")

    def tick(self, store: MemoryStore, now: datetime, rounds: int) -> None:
        """After a round: rewrite the line if ``interval`` passed since the last write."""
        if not self.enabled:
            return
        wall = self.monotonic()
        if self._last is not None and wall - self._last < self.interval:
            return
        pods = placed = 0
        for pod in store.iter_kind(kinds.POD):
            pods += 1
            placed += bool((pod.get("spec") or {}).get("nodeName"))
        elapsed = (now - self.start).total_seconds() if self.start is not None else 0.0
        self._write(f"{self.objects:,} objects loaded, virtual time +{format_duration(elapsed)}, "
                    f"{placed:,} of {pods:,} pods placed, round {rounds:,}")

    def done(self) -> None:
        """Erase the line, so that what follows starts on a clean one."""
        if self._shown:
            self.stream.write(CLEAR_LINE)
            self.stream.flush()
            self._shown = False

    def _write(self, text: str) -> None:
        if not self.enabled:
            return
        self._last = self.monotonic()
        self.stream.write(f"{CLEAR_LINE}drasched simulate: {text}")
        self.stream.flush()
        self._shown = True


def _is_tty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed or detached stream
        return False
