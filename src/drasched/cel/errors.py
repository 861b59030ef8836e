"""Errors of the DRA CEL environment.

Both carry the expression so a caller can put it into a pod condition or event without
threading it through separately.
"""

from __future__ import annotations


class CELError(Exception):
    """Base class: something is wrong with a selector expression."""

    def __init__(self, message: str, expression: str) -> None:
        super().__init__(message)
        self.message = message
        self.expression = expression

    def __str__(self) -> str:
        return self.message


class CELCompileError(CELError):
    """The expression does not compile (syntax, types, size): the selector is invalid.

    ``position`` is the 1-based (line, column) of the offending token, or ``None`` when the
    problem is the whole expression (for example its length); ``detail`` is the reason alone.
    """

    def __init__(
        self,
        message: str,
        expression: str,
        position: tuple[int, int] | None = None,
        detail: str = "",
        internal: bool = False,
    ) -> None:
        super().__init__(message, expression)
        self.position = position
        self.detail = detail or message  # the bare reason, without position and source excerpt
        self.internal = internal  # compiles, but no program can be built from it (upstream: internal error)


class CELRuntimeError(CELError):
    """Evaluation failed for one device (unknown key, overflow, cost limit, non-bool result).

    Upstream treats this as a failure of the scheduling attempt, not as ``false``.
    """
