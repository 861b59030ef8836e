"""Typed errors in the API server's vocabulary (Status reason + HTTP code)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Cause:
    """One field-level problem, as in ``Status.details.causes``."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass
class ApiError(Exception):
    """An error the API (memory store or real server) returned for one request."""

    message: str
    code: int = 500
    reason: str = "InternalError"
    kind: str = ""
    name: str = ""
    causes: list[Cause] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message

    def to_status(self) -> dict:
        """The ``Status`` object the API server would send for this error."""
        details: dict = {}
        if self.name:
            details["name"] = self.name
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [
                {"reason": c.reason, "message": c.message, "field": c.field} for c in self.causes
            ]
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            status["details"] = details
        return status


class NotFound(ApiError):
    def __init__(self, message: str, kind: str = "", name: str = "") -> None:
        super().__init__(message, 404, "NotFound", kind, name)


class AlreadyExists(ApiError):
    def __init__(self, message: str, kind: str = "", name: str = "") -> None:
        super().__init__(message, 409, "AlreadyExists", kind, name)


class Conflict(ApiError):
    def __init__(self, message: str, kind: str = "", name: str = "") -> None:
        super().__init__(message, 409, "Conflict", kind, name)


class Invalid(ApiError):
    def __init__(
        self, message: str, kind: str = "", name: str = "", causes: list[Cause] | None = None
    ) -> None:
        super().__init__(message, 422, "Invalid", kind, name, list(causes or []))


class Forbidden(ApiError):
    """Refused by admission (HTTP 403), e.g. a pod naming a PriorityClass that does not exist."""

    def __init__(self, message: str, kind: str = "", name: str = "") -> None:
        super().__init__(message, 403, "Forbidden", kind, name)


class BadRequest(ApiError):
    def __init__(self, message: str, kind: str = "", name: str = "") -> None:
        super().__init__(message, 400, "BadRequest", kind, name)


class TooManyRequests(ApiError):
    """HTTP 429: the eviction subresource refusing a pod its PodDisruptionBudget protects."""

    def __init__(self, message: str, kind: str = "", name: str = "", causes: list[Cause] | None = None) -> None:
        super().__init__(message, 429, "TooManyRequests", kind, name, list(causes or []))


class Gone(ApiError):
    """The requested resourceVersion is too old (HTTP 410): relist."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 410, "Expired")


def invalid(kind: str, name: str, causes: list[Cause]) -> Invalid:
    """Build an Invalid error whose message reads like the API server's."""
    detail = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    if len(causes) > 1:  # apimachinery's NewInvalid prints several as an aggregate: "[a, b]"
        detail = f"[{detail}]"
    return Invalid(f'{kind} "{name}" is invalid: {detail}', kind, name, causes)


def from_status(status: dict) -> ApiError:
    """Turn a ``Status`` body from a real API server into the matching typed error."""
    code = int(status.get("code") or 500)
    reason = status.get("reason") or ""
    message = status.get("message") or reason or f"HTTP {code}"
    details = status.get("details") or {}
    kind = details.get("kind", "")
    name = details.get("name", "")
    causes = [
        Cause(c.get("field", ""), c.get("message", ""), c.get("reason", ""))
        for c in details.get("causes") or []
    ]
    if code == 404:
        return NotFound(message, kind, name)
    if code == 409 and reason == "AlreadyExists":
        return AlreadyExists(message, kind, name)
    if code == 409:
        return Conflict(message, kind, name)
    if code == 422:
        return Invalid(message, kind, name, causes)
    if code == 410:
        return Gone(message)
    if code == 400:
        return BadRequest(message, kind, name)
    if code == 403:
        return Forbidden(message, kind, name)
    if code == 429:
        return TooManyRequests(message, kind, name, causes)
    return ApiError(message, code, reason or "InternalError", kind, name, causes)
