"""Selector results memoised by (expression, device content), owned by whoever builds allocators.

Evaluating a selector is pure in the expression and what the device exposes to CEL, so one
cache can serve every allocator a scheduler builds, cycle after cycle. It is an object (not a
module global) so that two schedulers, or two tests, never share or clear each other's
results; its size is bounded.
"""

from __future__ import annotations

from typing import Any, Final

from drasched.cel import CELCompileError, CELRuntimeError, compile_selector
from drasched.dra.pools import DeviceEntry

__all__ = ["DEFAULT_LIMIT", "SelectorCache"]

DEFAULT_LIMIT: Final = 2_000_000


class SelectorCache:
    """``evaluate`` gives a selector's result for a device: True/False, or an error message."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._results: dict[tuple[str, Any], bool | tuple[str, str]] = {}

    def __len__(self) -> int:
        return len(self._results)

    def clear(self) -> None:
        """Forget every result (memory pressure; benchmarks measuring cold evaluation)."""
        self._results.clear()

    def evaluate(self, expr: str, dev: DeviceEntry, where: str) -> bool | str:
        """``expr`` on ``dev``; an error (compile, runtime, unconvertible attribute) as a message
        that starts with ``where``."""
        try:
            view = dev.cel_view()
        except ValueError as exc:  # an attribute upstream cannot convert: reported on evaluation
            return f"{where}: device {dev.name}: {exc}"
        key = (expr, view.cache_key)
        hit = self._results.get(key)
        if hit is None:
            try:
                hit = bool(compile_selector(expr).evaluate(view))
            except CELCompileError as exc:
                hit = ("compile", str(exc))
            except CELRuntimeError as exc:
                hit = ("runtime", str(exc))
            if len(self._results) >= self.limit:
                self._results.clear()
            self._results[key] = hit
        if isinstance(hit, bool):
            return hit
        return f"{where}: CEL {hit[0]} error: {hit[1]}"
