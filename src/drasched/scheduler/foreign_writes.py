"""What the scheduler writes about other schedulers' objects it reads translated.

A translated PodGroup or Queue (:mod:`drasched.scheduler.foreign_intake`) does not exist on the
server as a drasched object, so nothing is ever written to one: Events name the object it
was translated from, an upstream PodGroup gets the ``PodGroupInitiallyScheduled`` condition
kube-scheduler writes, and a KAI Queue gets no status (KAI's own queue controller writes it,
in KAI's units), nor does a KAI or scheduler-plugins PodGroup (KAI's scheduler writes the one's,
scheduler-plugins' PodGroup controller the other's: pkg/controllers/podgroup_controller.go).
The I/O edge of the translation; the decisions are pure functions there.
"""

from __future__ import annotations

import logging
from typing import Any

from drasched.api.errors import ApiError
from drasched.api.meta import format_time
from drasched.control import ControllerContext
from drasched.scheduler.foreign_intake import Problem, initially_scheduled_patch, is_translated, source_of

__all__ = ["is_translated", "report_problems", "source_of", "write_upstream_condition"]

Obj = dict[str, Any]
log = logging.getLogger("drasched")


def report_problems(ctx: ControllerContext, controller: str, problems: list[Problem], *, logged: bool = True) -> None:
    """Log each problem (unless ``logged`` is False: ``simulate`` printed them when it read the
    manifests) and record it as a Warning Event on the object it is about."""
    for p in problems:
        if logged:
            log.warning("%s", p.message)
        ctx.event(p.obj, "Warning", p.reason, p.message)
        ctx.decide(controller, "error", p.obj, p.message)


def write_upstream_condition(ctx: ControllerContext, group: Obj | None, scheduled: bool, message: str) -> bool:
    """Patch ``PodGroupInitiallyScheduled`` onto the upstream PodGroup ``group`` was translated
    from (nothing for any other group); whether it was written. A refused write is left to the
    next message: the condition is informational, the pods carry their own."""
    if group is None:
        return False
    planned = initially_scheduled_patch(group, scheduled, message, format_time(ctx.now()))
    if planned is None:
        return False
    rt, patch = planned
    md = group.get("metadata") or {}
    try:
        ctx.store.patch(rt, str(md.get("name", "")), md.get("namespace"), patch, subresource="status")
    except ApiError as exc:
        log.info("cannot write %s status of %s/%s: %s", rt.kind, md.get("namespace"), md.get("name"), exc.message)
        return False
    return True
