"""Session actions, run in the order the configuration lists them."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from drasched.scheduler.actions.allocate import allocate
from drasched.scheduler.session import Session

Action = Callable[[Session, dict[str, dict[str, Fraction]]], None]

ACTIONS: dict[str, Action] = {"allocate": allocate}
