"""A legal Event name for any legal object name.

Upstream's recorder names an Event ``<object name>.<hex timestamp>``, which is longer than
the 253 characters a name may have when the object's own name is near that limit, so the
API server refuses the Event and the warning is lost. drasched keeps upstream's form when
it fits and otherwise shortens the object's name, keeping it unique with a hash of the
whole name: ``<first characters>-<8 hex of sha256(name)>.<suffix>``.
"""

from __future__ import annotations

import hashlib

MAX_NAME_LENGTH = 253
"""A DNS-1123 subdomain, the rule for Event names (``ValidateObjectMeta`` upstream)."""


def event_name(object_name: str, suffix: str) -> str:
    """``<object name>.<suffix>``, shortened to a legal name when it would be too long."""
    name = f"{object_name}.{suffix}"
    if len(name) <= MAX_NAME_LENGTH:
        return name
    digest = hashlib.sha256(object_name.encode()).hexdigest()[:8]
    room = MAX_NAME_LENGTH - len(suffix) - 1 - len(digest) - 1
    # cut, then drop a trailing '-' or '.': each dot-separated part must end alphanumeric
    head = object_name[:room].rstrip("-.")
    return f"{head}-{digest}.{suffix}" if head else f"{digest}.{suffix}"
