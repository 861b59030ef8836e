"""Create-time checks of a device selector, in the API server's words.

pkg/apis/resource/validation validateCELSelector compiles every selector of a DeviceClass,
ResourceClaim and ResourceClaimTemplate when the object is written: an expression over
CELSelectorExpressionMaxLength bytes is ``Too long`` (and not compiled), one that does not
compile or does not evaluate to bool is ``Invalid value``, one that compiles but cannot be
made into a program (a constant regex outside the literal validator's reach) is ``Internal
error``, and one whose estimated worst-case cost exceeds CELSelectorExpressionMaxCost is
``Forbidden: too complex, exceeds cost limit``.
The caller adds the field path (``...selectors[0].cel.expression``).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from drasched.cel.compiler import COST_LIMIT, MAX_EXPRESSION_LENGTH, compile_selector
from drasched.cel.errors import CELCompileError

__all__ = ["SelectorError", "selector_errors"]


class SelectorError(NamedTuple):
    """One refusal: the message after the field path, and the API reason (a ``Cause`` type)."""

    message: str
    reason: str


def selector_errors(expression: str) -> list[SelectorError]:
    """Why the API server would refuse ``expression`` as a device selector (empty: accepted)."""
    if len(expression.encode("utf-8")) > MAX_EXPRESSION_LENGTH:
        return [SelectorError(f"Too long: may not be more than {MAX_EXPRESSION_LENGTH} bytes", "FieldValueTooLong")]
    try:
        compiled = compile_selector(expression)
    except CELCompileError as e:
        if e.internal:
            return [SelectorError(f"Internal error: {e.detail}", "InternalError")]
        return [SelectorError(f"Invalid value: {_go_quote(expression)}: {_upstream_detail(e)}", "FieldValueInvalid")]
    if compiled.max_cost > COST_LIMIT:
        return [SelectorError("Forbidden: too complex, exceeds cost limit", "FieldValueForbidden")]
    return []


def _upstream_detail(e: CELCompileError) -> str:
    """cel-go's issues.String() behind "compilation failed: ", or the non-bool result message."""
    if e.detail.startswith("must evaluate to "):
        return e.detail
    if e.position is None:
        return f"compilation failed: ERROR: <input>:1:1: {e.detail}"
    line, col = e.position
    lines = e.expression.split("\n")
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"compilation failed: ERROR: <input>:{line}:{col}: {e.detail}\n | {src}\n | {'.' * (col - 1)}^"


def _go_quote(value: str) -> str:
    """The value as Go's %q prints it in a field.Invalid message."""
    return json.dumps(value, ensure_ascii=False)
