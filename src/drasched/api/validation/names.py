"""Name, key and value formats (k8s.io/apimachinery/pkg/util/validation) and the small
helpers every kind's rules use to word a cause as the API server does."""

from __future__ import annotations

import json
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


LABEL_REGEX_MSG = (
    LABEL_MSG + " (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_REGEX_MSG = (
    SUBDOMAIN_MSG + " (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
SUBDOMAIN_CASELESS_REGEX_MSG = (
    "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'Example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
"""``IsDNS1123SubdomainCaseless``, the words of the declarative ``k8s-long-name-caseless`` format."""


def as_list(value: Any) -> list[Any]:
    """A list field, or nothing when it holds no list (the decoder reports wrong types)."""
    return value if isinstance(value, list) else []


def dict_items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The indexed objects of a list field."""
    return [(i, v) for i, v in enumerate(as_list(value)) if isinstance(v, dict)]


def bad(field: str, value: Any, detail: str) -> Cause:
    """``field: Invalid value: <value>: <detail>``."""
    return Cause(field, f"Invalid value: {quote(value)}: {detail}")


def required(field: str, detail: str = "") -> Cause:
    return Cause(field, f"Required value: {detail}" if detail else "Required value", "FieldValueRequired")


def quote(value: Any) -> str:
    """A value as apimachinery's field errors print it: strings quoted, nil as null, structs as JSON."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, bool | dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def check_label(field: str, value: Any) -> list[Cause]:
    """``IsDNS1123Label``: at most 63 bytes, then the pattern (both said when both fail)."""
    if not isinstance(value, str) or not value:
        return [required(field)]
    causes = [bad(field, value, "must be no more than 63 bytes")] if len(value) > 63 else []
    if not _DNS1123_LABEL.match(value):
        causes.append(bad(field, value, LABEL_REGEX_MSG))
    return causes


def dns1123_label_errors(value: str) -> list[str]:
    """apimachinery's ``IsDNS1123Label`` in its own words: a length error in characters, and a
    name that would be a valid subdomain told it "must not contain dots"."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _DNS1123_LABEL.match(value):
        errors.append("must not contain dots" if _DNS1123_SUBDOMAIN.match(value) else LABEL_REGEX_MSG)
    return errors


def check_subdomain(field: str, value: Any) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return [required(field)]
    return [bad(field, value, msg) for msg in subdomain_errors(value)]


_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
    "validation is '[A-Za-z_][A-Za-z0-9_]*')"
)


def too_many(field: str, count: int, limit: int) -> Cause:
    """apimachinery's ``field.TooMany``: the count, never the list itself."""
    noun = "item" if limit == 1 else "items"
    return Cause(field, f"Too many: {count}: must have at most {limit} {noun}", "FieldValueTooMany")


def too_long(field: str, limit: int) -> Cause:
    return Cause(field, f"Too long: may not be more than {limit} bytes", "FieldValueTooLong")


def not_supported(field: str, value: Any, supported: list[str]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return Cause(field, f"Unsupported value: {quote(value)}: supported values: {listed}", "FieldValueNotSupported")


def duplicate(field: str, value: Any) -> Cause:
    return Cause(field, f"Duplicate value: {quote(value)}", "FieldValueDuplicate")


def forbidden(field: str, detail: str) -> Cause:
    return Cause(field, f"Forbidden: {detail}", "FieldValueForbidden")


def subdomain_errors(value: str) -> list[str]:
    """apimachinery's ``IsDNS1123Subdomain`` messages."""
    errors = ["must be no more than 253 bytes"] if len(value) > 253 else []
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append(SUBDOMAIN_REGEX_MSG)
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery's ``IsLabelKey`` (``IsQualifiedName``): an optional DNS-subdomain prefix and '/',
    then a name; every message it gives, in its order."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        return [f"a valid label key {QUALIFIED_NAME_MSG.removeprefix('name part ')} with an optional DNS "
                "subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if len(parts) == 2:
        prefix = parts[0]
        errors += ["prefix part must be non-empty"] if not prefix else [
            f"prefix part {e}" for e in subdomain_errors(prefix)]
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 bytes")
    if not _QUALIFIED_NAME_PART.match(name):
        errors.append(QUALIFIED_NAME_MSG)
    return errors


def check_qualified_name(field: str, value: str) -> list[Cause]:
    """A label key, taint key or annotation key (``metav1validation.ValidateLabelName``)."""
    return [bad(field, value, msg) for msg in qualified_name_errors(value)]


def check_label_value(field: str, value: str) -> list[Cause]:
    causes = []
    if len(value) > 63:
        causes.append(bad(field, value, "must be no more than 63 bytes"))
    if not _LABEL_VALUE.match(value):
        causes.append(bad(field, value, LABEL_VALUE_MSG))
    return causes


def check_c_identifier(field: str, value: str, max_len: int = 32) -> list[Cause]:
    causes = [too_long(field, max_len)] if len(value) > max_len else []
    if not C_IDENTIFIER.match(value):
        causes.append(bad(field, value, C_IDENTIFIER_MSG))
    return causes


def check_driver_name(field: str, value: Any, covered: bool = False) -> list[Cause]:
    """``ValidateCSIDriverName``: at most 63 bytes, then a DNS subdomain once lowercased
    (upstream checks ``strings.ToLower(name)``: ``GPU.Example.com`` is a valid driver name).

    ``covered``: a field 1.37 validates declaratively (``+k8s:format=k8s-long-name-caseless``,
    an opaque config's driver and an allocation result's), whose format error is worded as
    ``IsDNS1123SubdomainCaseless`` words it."""
    if not isinstance(value, str) or not value:
        return [required(field)]
    causes = [too_long(field, 63)] if len(value) > 63 else []
    if not _DNS1123_SUBDOMAIN.match(value.lower()):
        causes.append(bad(field, value, SUBDOMAIN_CASELESS_REGEX_MSG if covered else SUBDOMAIN_REGEX_MSG))
    return causes


def qualified_kind(rt: ResourceType) -> str:
    """``ResourceClaim.resource.k8s.io`` as the API server names a kind in errors."""
    return f"{rt.kind}.{rt.group}" if rt.group else rt.kind
