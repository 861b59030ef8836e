"""Semantic versions as github.com/blang/semver/v4 parses and orders them.

DRA ``version`` attributes and CEL's ``semver()`` use blang/semver, which is stricter than
many Python packages (no leading zeros, exactly three numeric parts, no ``v`` prefix), so it
is ported here rather than borrowed.
"""

from __future__ import annotations

from functools import lru_cache, total_ordering
from typing import Final, final

__all__ = ["Semver", "SemverError"]

_ALNUM: Final = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_NUM: Final = frozenset("0123456789")
_MAX_UINT64: Final = (1 << 64) - 1


class SemverError(ValueError):
    """Not a semantic version (message in blang/semver's words)."""


def _parse_uint(s: str, what: str) -> int:
    if not s or not set(s) <= _NUM:
        raise SemverError(f"Invalid character(s) found in {what} {s!r}")
    if len(s) > 1 and s[0] == "0":
        raise SemverError(f"{what.capitalize()} number must not contain leading zeroes {s!r}")
    v = int(s) if len(s) <= 20 else _MAX_UINT64 + 1  # longer is out of range (and too long for int())
    if v > _MAX_UINT64:
        raise SemverError(f"{what} {s!r} out of range")
    return v


def _pr_part(s: str) -> int | str:
    if not s:
        raise SemverError("Prerelease is empty")
    if set(s) <= _NUM:
        if len(s) > 1 and s[0] == "0":
            raise SemverError(f"Prerelease number must not contain leading zeroes {s!r}")
        if len(s) > 20 or int(s) > _MAX_UINT64:  # blang parses it with strconv.ParseUint(s, 10, 64)
            raise SemverError(f"prerelease {s!r} out of range")
        return int(s)
    if not set(s) <= _ALNUM:
        raise SemverError(f"Invalid character(s) found in prerelease {s!r}")
    return s


@final
@total_ordering
class Semver:
    """An immutable semantic version; ``==``/ordering ignore build metadata, as blang's Compare."""

    __slots__ = ("build", "major", "minor", "patch", "pre")

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...]
    build: tuple[str, ...]

    def __init__(
        self,
        major: int,
        minor: int,
        patch: int,
        pre: tuple[int | str, ...] = (),
        build: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "major", major)
        object.__setattr__(self, "minor", minor)
        object.__setattr__(self, "patch", patch)
        object.__setattr__(self, "pre", pre)
        object.__setattr__(self, "build", build)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Semver is immutable")

    @staticmethod
    def parse(s: str) -> Semver:
        """blang ``semver.Parse`` (cached)."""
        return _parse(s)

    @staticmethod
    def parse_normalized(s: str) -> Semver:
        """Upstream CEL ``normalizeAndParse``: drop a ``v``, pad to three parts, drop leading zeros."""
        if s.startswith("v"):
            s = s[1:]
        parts = s.split(".", 2)
        for i, p in enumerate(parts):
            if len(p) > 1:
                p = p.lstrip("0")
                if not p or p[0] not in _NUM:
                    p = "0" + p
                parts[i] = p
        if len(parts) < 3:
            if any(c in parts[-1] for c in "+-"):
                raise SemverError("short version cannot contain PreRelease/Build meta data")
            parts += ["0"] * (3 - len(parts))
        return _parse(".".join(parts))

    def compare(self, other: Semver) -> int:
        """blang ``Compare``: -1, 0 or 1."""
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if not self.pre and not other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for x, y in zip(self.pre, other.pre):
            c = _cmp_pr(x, y)
            if c:
                return c
        n, m = len(self.pre), len(other.pre)
        return 0 if n == m else (-1 if n < m else 1)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) == 0

    def __lt__(self, other: Semver) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) < 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (Semver, (self.major, self.minor, self.patch, self.pre, self.build))


def _cmp_pr(x: int | str, y: int | str) -> int:
    xi, yi = isinstance(x, int), isinstance(y, int)
    if xi and yi:
        return (x > y) - (x < y)  # type: ignore[operator]
    if xi:
        return -1
    if yi:
        return 1
    return (x > y) - (x < y)  # type: ignore[operator]


@lru_cache(maxsize=4096)
def _parse(s: str) -> Semver:
    if not s:
        raise SemverError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _parse_uint(parts[0], "major")
    minor = _parse_uint(parts[1], "minor")
    rest = parts[2]
    build: tuple[str, ...] = ()
    pre: tuple[int | str, ...] = ()
    idx = min((i for i in (rest.find("+"), rest.find("-")) if i >= 0), default=-1)
    patch_s = rest if idx < 0 else rest[:idx]
    patch = _parse_uint(patch_s, "patch")
    if idx >= 0:
        tail = rest[idx:]
        if tail[0] == "-":
            prstr, _, buildstr = tail[1:].partition("+")
            has_build = "+" in tail[1:]
            pre = tuple(_pr_part(p) for p in prstr.split("."))
        else:
            buildstr = tail[1:]
            has_build = True
        if has_build:
            b = buildstr.split(".")
            for part in b:
                if not part:
                    raise SemverError("Build meta data is empty")
                if not set(part) <= _ALNUM:
                    raise SemverError(f"Invalid character(s) found in build meta data {part!r}")
            build = tuple(b)
    return Semver(major, minor, patch, pre, build)
