"""The session's undo journal: typed operations, each with its reverse (as KAI's Statement keeps).

Every change a cycle makes to its session is an :class:`Operation`, applied and recorded by
:meth:`~drasched.scheduler.session.Session.apply` only; a Statement rolls back to a mark by
reverting the operations recorded since, newest first. Keeping the operations typed (rather
than closures) says what a rollback undoes and lets a test inspect it.
"""

from __future__ import annotations

from typing import Protocol


class Operation(Protocol):
    """One change to a session and its exact reverse."""

    def apply(self) -> None: ...

    def revert(self) -> None: ...


class Inverse:
    """``op`` the other way round: applying it reverts ``op`` (a released pod taken back, say)."""

    __slots__ = ("op",)

    def __init__(self, op: Operation) -> None:
        self.op = op

    def apply(self) -> None:
        self.op.revert()

    def revert(self) -> None:
        self.op.apply()


class Journal:
    """Applied operations, oldest first."""

    __slots__ = ("_ops",)

    def __init__(self) -> None:
        self._ops: list[Operation] = []

    def __len__(self) -> int:
        return len(self._ops)

    def record(self, op: Operation) -> None:
        """Apply ``op`` and remember it for a rollback."""
        op.apply()
        self._ops.append(op)

    def undo_to(self, mark: int) -> None:
        """Revert every operation recorded after ``mark`` (a length), newest first."""
        ops = self._ops
        while len(ops) > mark:
            ops.pop().revert()

    def forget(self) -> None:
        """Drop the record once nothing will be rolled back: each operation points back at
        its session, so a kept record makes the session's whole graph a reference cycle that
        only the cyclic collector frees (in ``drasched serve``, most of what it collected)."""
        self._ops.clear()

    def operations(self) -> tuple[Operation, ...]:
        """What is recorded now (for tests and diagnostics)."""
        return tuple(self._ops)
