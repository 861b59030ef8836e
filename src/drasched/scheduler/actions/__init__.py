"""Session actions, run in the order the configuration lists them.

``allocate`` places what fits (nominated preemptors first); ``reclaim``, ``preempt`` and
``consolidate`` evict to make room for what does not.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from drasched.scheduler.actions.allocate import allocate
from drasched.scheduler.actions.consolidate import consolidate
from drasched.scheduler.actions.preempt import preempt
from drasched.scheduler.actions.reclaim import reclaim
from drasched.scheduler.session import Session

Action = Callable[[Session, dict[str, dict[str, Fraction]]], None]

ACTIONS: dict[str, Action] = {"allocate": allocate, "reclaim": reclaim, "preempt": preempt, "consolidate": consolidate}
