"""The virtual clock of an embedded run: time moves only when the runner advances it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)


class VirtualClock:
    def __init__(self, start: datetime = DEFAULT_START) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance_to(self, when: datetime) -> None:
        if when > self._now:
            self._now = when

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
