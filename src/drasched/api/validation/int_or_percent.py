"""IntOrString counts that are a number or a percentage (``pkg/apis/apps/validation``:
``ValidatePositiveIntOrPercent``, ``IsNotMoreThan100Percent``, ``getIntOrPercentValue``), shared by
PodDisruptionBudgets and the rolling-update strategies of Deployments and DaemonSets."""

from __future__ import annotations

import re
from typing import Any

from drasched.api.errors import Cause
from drasched.api.validation.names import bad

PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
               "'93%', regex used for validation is '[0-9]+%')")
"""apimachinery ``validation.IsValidPercent``'s message (two spaces before "or", as upstream prints it)."""
_PERCENT = re.compile(r"[0-9]+%")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _percent(value: Any) -> int | None:
    """The number before ``%`` of a valid percentage string, else None."""
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        return int(value[:-1])
    return None


def check_positive_int_or_percent(value: Any, path: str) -> list[Cause]:
    """A non-negative integer or a ``N%`` string; an unset value passes (defaulting fills it)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [] if _percent(value) is not None else [bad(path, value, PERCENT_MSG)]
    if _is_int(value):
        return [bad(path, value, "must be greater than or equal to 0")] if value < 0 else []
    return [bad(path, value, "must be an integer or percentage (e.g '5%')")]


def check_not_more_than_100_percent(value: Any, path: str) -> list[Cause]:
    percent = _percent(value)
    return [bad(path, value, "must not be greater than 100%")] if percent is not None and percent > 100 else []


def int_or_percent_value(value: Any) -> int:
    """upstream ``getIntOrPercentValue``: a percentage's number, an integer, or 0 (a string that is
    not a percentage reads as ``strconv.Atoi`` would, 0 on failure)."""
    percent = _percent(value)
    if percent is not None:
        return percent
    if _is_int(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0
