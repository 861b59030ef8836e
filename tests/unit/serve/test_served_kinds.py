"""Which optional kinds serve reads: one it may not list is said loudly, not taken for absent."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import Forbidden, NotFound
from drasched.serve.main import served_taint_rules


class ListOnly:
    """A store whose list answers per kind: an error to raise, or an empty list."""

    def __init__(self, errors: dict[Any, Exception]) -> None:
        self.errors = errors

    def list(self, rt: Any, *args: Any, **kwargs: Any) -> Any:
        if rt in self.errors:
            raise self.errors[rt]
        return []


def test_a_forbidden_taint_rule_list_is_an_error_naming_the_grant(caplog: pytest.LogCaptureFixture) -> None:
    store = ListOnly({kinds.DEVICE_TAINT_RULE: Forbidden('devicetaintrules is forbidden: User "sa" cannot list'),
                      kinds.DEVICE_TAINT_RULE_V1BETA2: NotFound("the server could not find the requested resource")})
    with caplog.at_level(logging.INFO):
        assert served_taint_rules(store) is None  # type: ignore[arg-type]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "grant drasched's ServiceAccount get, list and watch on resource.k8s.io devicetaintrules" in \
        errors[0].getMessage()
    assert "devices tainted by a DeviceTaintRule are handed out" in errors[0].getMessage()


def test_taint_rules_served_as_v1_are_read() -> None:
    assert served_taint_rules(ListOnly({})) is kinds.DEVICE_TAINT_RULE  # type: ignore[arg-type]


def test_scheduler_plugins_podgroups_are_read_where_their_crd_is_served() -> None:
    """scheduler-plugins' coscheduling PodGroup (``podgroups.scheduling.x-k8s.io``) is read as KAI's
    CRDs are: only where the server serves it; without it serve carries on with the rest."""
    from drasched.serve.main import served_foreign_kinds

    missing = NotFound("the server could not find the requested resource")
    served = served_foreign_kinds(ListOnly({kinds.KAI_QUEUE: missing}))  # type: ignore[arg-type]
    assert served == (kinds.UPSTREAM_POD_GROUP, kinds.UPSTREAM_WORKLOAD, kinds.KAI_POD_GROUP,
                      kinds.COSCHEDULING_POD_GROUP)
    served = served_foreign_kinds(ListOnly({kinds.COSCHEDULING_POD_GROUP: missing}))  # type: ignore[arg-type]
    assert kinds.COSCHEDULING_POD_GROUP not in served and kinds.KAI_QUEUE in served
