"""Name, key and value formats (k8s.io/apimachinery/pkg/util/validation) and the small
helpers every kind's rules use to word a cause as the API server does."""

from __future__ import annotations

import re
from typing import Any

from drasched.api.errors import Cause
from drasched.api.kinds import ResourceType

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def bad(field: str, value: Any, detail: str) -> Cause:
    """``field: Invalid value: <value>: <detail>``."""
    return Cause(field, f"Invalid value: {quote(value)}: {detail}")


def required(field: str) -> Cause:
    return Cause(field, "Required value", "FieldValueRequired")


def quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def check_label(field: str, value: Any) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return [required(field)]
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        return [bad(field, value, LABEL_MSG)]
    return []


def check_subdomain(field: str, value: Any) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return [required(field)]
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.match(value):
        return [bad(field, value, SUBDOMAIN_MSG)]
    return []


def qualified_kind(rt: ResourceType) -> str:
    """``ResourceClaim.resource.k8s.io`` as the API server names a kind in errors."""
    return f"{rt.kind}.{rt.group}" if rt.group else rt.kind
