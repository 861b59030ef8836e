"""Go ``time.Duration`` strings, as Kubernetes objects write them (``90s``, ``5m``, ``1h30m``)."""

from __future__ import annotations

import re
from datetime import timedelta

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_SECONDS = (2**63 - 1) / 1e9
"""The longest ``time.Duration``: int64 nanoseconds, about 292 years (Go refuses longer)."""
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> timedelta:
    """Parse a Go ``time.Duration`` string (``time.ParseDuration``): ``1h30m``, ``1.5s``, ``0``."""
    s = text.strip()
    sign = 1.0
    if s.startswith(("+", "-")):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return timedelta(0)
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    pos, seconds = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r}: expected a number and a unit (ns, us, ms, s, m, h)")
        seconds += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if seconds > MAX_SECONDS:
        raise ValueError(f"invalid duration {text!r}: longer than Go's time.Duration holds (about 2562047h)")
    return timedelta(seconds=sign * seconds)
