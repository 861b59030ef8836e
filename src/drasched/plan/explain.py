"""``explain``: why one pod is not placed, node by node, in the scheduler's own words.

The objects are loaded into an embedded control plane and run until quiet (a simulate
output or a snapshot of a settled cluster stays as it is). The pod is then tried once per
node by the scheduler's own placement step (``place_task``, restricted to that node, on a
fresh session over the final state, rolled back afterwards), so each node's reasons are the
same filters, vector fit and allocator reasons that build the PodScheduled message, for that
node alone. What holds for every node (a queue over its limit, a claim not created yet, a
gang its queue or PodGroup holds back: a queue that does not exist, a KAI parent queue)
is said once; a pod that fits a node on its own but still waits is held back by its gang
or its queue, as its PodScheduled message says. A pod with ``spec.schedulingGates`` is not
tried at all (upstream's SchedulingGates PreEnqueue keeps it out of the queue): its gates are
named instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from drasched.api import kinds
from drasched.dra.extended import DeviceClassByResource
from drasched.plan.outcome import object_key
from drasched.scheduler.actions.task import MSG_OUTSIDE_DOMAIN, place_task
from drasched.scheduler.controller import SchedulerController
from drasched.scheduler.session import Session, Statement
from drasched.scheduler.snapshot import GroupInfo
from drasched.sim.runner import Simulation

Obj = dict[str, Any]

_MESSAGE = re.compile(r"^0/(?P<n>\d+) nodes are available: (?P<body>.*)\.$", re.S)
_OUTSIDE = re.compile(r"(^|, )\d+ " + re.escape(MSG_OUTSIDE_DOMAIN))
_QUEUE_LIMIT = re.compile(r"queue (?P<queue>\S+) over its limit for (?P<dim>[^\s;,]+?)\.?(?=[\s;,]|$)")
_BEYOND_LIMIT = re.compile(r"needs? \S+ (?P<dim>\S+?),?(?: together,)? more than the limit \S+ "
                           r"of queue (?P<queue>[^\s:;,()]+)")
"""A gang (or pod) whose own request exceeds a queue's limit: it never fits there."""


def _limit(text: str) -> re.Match[str] | None:
    return _QUEUE_LIMIT.search(text) or _BEYOND_LIMIT.search(text)
"""The dimension ends before a space, ``;`` or ``,``, and a sentence's closing period is not part of it."""


class ExplainError(LookupError):
    """The pod is not in the input."""


@dataclass
class Explanation:
    pod: str
    node: str | None
    """Where it is bound, if it is."""
    message: str
    """Its PodScheduled condition's message (empty when it is bound)."""
    everywhere: str | None = None
    """A reason that holds on every node (the node-by-node list is then empty)."""
    nodes: dict[str, str] = field(default_factory=dict)
    """node -> why the pod cannot go there ("" when it fits there on its own)."""
    gang: str | None = None
    """The pod's gang, when it has one: how many of it must fit together."""
    hints: list[str] = field(default_factory=list)
    gates: list[str] = field(default_factory=list)
    """Its ``spec.schedulingGates`` names: while any is left, no scheduler tries it."""

    def lines(self) -> list[str]:
        if self.node:
            return [f"pod {self.pod} is bound to {self.node}"]
        out = [f"pod {self.pod} is pending: {self.message or 'not tried yet'}"]
        if self.gates:
            out.append(f"  gated: scheduling gates {', '.join(self.gates)}: no scheduler tries it, on any node, "
                       "until every gate is removed from spec.schedulingGates")
            return out
        if self.gang:
            out.append(f"  gang: {self.gang}")
        if self.everywhere:
            out.append(f"  on every node: {self.everywhere}")
        for node, why in self.nodes.items():
            out.append(f"  {node}: {why or 'fits on its own (held back by its gang or queue: see the message)'}")
        out += [f"  to fit: {h}" for h in self.hints]
        return out


def _one_node_reasons(message: str) -> str:
    """The reasons of a message computed for one node: the other nodes' "outside" count removed."""
    m = _MESSAGE.match(message)
    if m is None:
        return message
    body = _OUTSIDE.sub("", m["body"]).lstrip(", ")
    return body[2:] if body.startswith("1 ") else body


def _scheduler(sim: Simulation) -> SchedulerController:
    for c in sim.controllers:
        if isinstance(c, SchedulerController):
            return c
    raise ExplainError("the control plane has no scheduler")


def explain(objects: Sequence[Obj], pod: str, *, max_rounds: int = 100_000) -> Explanation:
    """Why ``pod`` (``namespace/name``) is where it is, after the objects are run until quiet."""
    sim = Simulation()
    sim.load(objects)
    sim.run(max_rounds)
    namespace, _, name = pod.rpartition("/")
    obj = sim.store.peek(kinds.POD, name, namespace or "default")
    if obj is None:
        raise ExplainError(f"no pod {pod} in the input")
    node = (obj.get("spec") or {}).get("nodeName")
    message = next((str(c.get("message") or c.get("reason") or "")
                    for c in (obj.get("status") or {}).get("conditions") or []
                    if c.get("type") == "PodScheduled" and c.get("status") == "False"), "")
    out = Explanation(pod, node, message)
    if node:
        return out
    gates = (obj.get("spec") or {}).get("schedulingGates") or []
    out.gates = [str(g.get("name")) for g in gates if isinstance(g, dict)]
    if out.gates:
        return out
    tried = _try_each_node(sim, pod)
    if tried is None:
        return out
    raw, group = tried
    failures = set(raw.values())
    if group.blocked is not None:  # its queue or PodGroup holds the whole gang back, whatever the nodes say
        out.everywhere = group.blocked
    elif len(failures) == 1 and None not in failures and _about_the_pod(next(iter(failures)) or "", len(raw)):
        out.everywhere = _one_node_reasons(next(iter(failures)) or "")
    else:
        out.nodes = {name: "" if why is None else _one_node_reasons(why) for name, why in raw.items()}
    if not group.implicit:
        out.gang = (f"pod group {group.key} needs {group.min_member} pods placed together; "
                    f"{group.placed} placed, {len(group.pending)} pending")
    out.hints = _hints(out, sim)
    return out


def _try_each_node(sim: Simulation, pod: str) -> tuple[dict[str, str | None], GroupInfo] | None:
    """node -> why ``pod`` cannot be placed there alone (None: it can), with the pod's gang.

    A fresh scheduler session over the final state, the pod offered one node at a time to
    the placement step every action uses; each attempt is rolled back.
    """
    ctl = _scheduler(sim)
    ctl.cache.sync(sim.store, None)
    snap = ctl.builder.build(ctl.cache)
    info = snap.pods.get(pod)
    group = snap.groups.get(snap.group_of.get(pod, ""))
    if info is None or group is None:
        return None
    session = Session(snap, ctl.config, now=sim.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
    raw: dict[str, str | None] = {}
    for j, n in enumerate(snap.nodes):
        stmt = Statement(session)
        mask = np.zeros(snap.n_nodes, dtype=bool)
        mask[j] = True
        raw[n.name] = place_task(session, stmt, group, info, mask)
        stmt.rollback()
    return raw, group


def _about_the_pod(failure: str, n_nodes: int) -> bool:
    """Whether a failure computed for one node holds before any node is looked at (a queue
    limit, a claim still missing): it then does not count the other nodes as outside."""
    return (n_nodes > 1 and MSG_OUTSIDE_DOMAIN not in failure) or _limit(failure) is not None


_INSUFFICIENT = re.compile(r"Insufficient (?P<res>[^\s,;]+)")
_NOT_ENOUGH = re.compile(r"not enough (?P<cls>\S+) devices")


def _hints(e: Explanation, sim: Simulation) -> list[str]:
    """Cheap suggestions: how far a queue is over its limit, and on a full node the pods whose
    leaving would give back what is missing (they ask for that resource, or hold devices of
    that class there); none are named where no pod holds it."""
    hints = []
    limit = _limit(e.everywhere or e.message)
    if limit:
        hints.append(_limit_hint(sim, limit["queue"], limit["dim"]))
    objects = sim.store.all_objects()
    index = DeviceClassByResource.build(o for o in objects if o.get("kind") == "DeviceClass")
    unprovided: list[str] = []
    for node, why in e.nodes.items():
        resources = [m["res"] for m in _INSUFFICIENT.finditer(why)]
        classes = [m["cls"] for m in _NOT_ENOUGH.finditer(why)]
        for r in resources:
            if r not in unprovided and r not in index and not _provided_by_a_node(objects, r):
                unprovided.append(r)
        wanted = set(classes) | {c for r in resources if (c := index.class_for(r)) is not None}
        pods = _running_on(objects, node)
        holders = {key for key, pod in pods.items() if any(_asks_for(pod, r) for r in resources)}
        holders |= _holding_class(objects, node, wanted) & set(pods)
        if holders:
            hints.append(f"{node}: room once one of these leaves it: {', '.join(sorted(holders))}")
        if "in use" in why:
            held = _devices_held_on(sim, node)
            if held:
                hints.append(f"{node}: devices in use: {'; '.join(held)}")
    hints += [f"no node and no DeviceClass provides {r}: no pod leaving makes room for it" for r in unprovided]
    return hints


def _running_on(objects: list[Obj], node: str) -> dict[str, Obj]:
    return {object_key(o): o for o in objects
            if o.get("kind") == "Pod" and (o.get("spec") or {}).get("nodeName") == node
            and (o.get("status") or {}).get("phase") not in ("Succeeded", "Failed")}


def _provided_by_a_node(objects: list[Obj], resource: str) -> bool:
    return any(o.get("kind") == "Node" and resource in ((o.get("status") or {}).get("allocatable") or {})
               for o in objects)


def _asks_for(pod: Obj, resource: str) -> bool:
    """Whether a container of ``pod`` requests (or limits) ``resource``: its leaving gives it back."""
    spec = pod.get("spec") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        if resource in (res.get("requests") or {}) or resource in (res.get("limits") or {}):
            return True
    return False


def _holding_class(objects: list[Obj], node: str, classes: set[str]) -> set[str]:
    """Pods (``NS/NAME``) a claim is reserved for that holds devices of ``classes`` on ``node``'s pools.

    The class is the one the allocated request (or subrequest) names; a device another class
    also selects is not seen.
    """
    if not classes:
        return set()
    pools = _pools_of(objects, node)
    out: set[str] = set()
    for c in (o for o in objects if o.get("kind") == "ResourceClaim"):
        st = c.get("status") or {}
        results = ((st.get("allocation") or {}).get("devices") or {}).get("results") or []
        if any((r.get("driver"), r.get("pool")) in pools and _request_class(c, str(r.get("request", ""))) in classes
               for r in results):
            ns = (c.get("metadata") or {}).get("namespace", "")
            out |= {f"{ns}/{r.get('name')}" for r in st.get("reservedFor") or [] if r.get("resource") == "pods"}
    return out


def _request_class(claim: Obj, name: str) -> str | None:
    """The device class of a claim's request ``name`` (``request/subrequest`` for firstAvailable)."""
    main, _, sub = name.partition("/")
    for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if r.get("name") != main:
            continue
        if sub:
            return next((s.get("deviceClassName") for s in r.get("firstAvailable") or [] if s.get("name") == sub), None)
        return (r.get("exactly") or {}).get("deviceClassName") or r.get("deviceClassName")
    return None


def _pools_of(objects: list[Obj], node: str) -> set[tuple[Any, Any]]:
    return {((o.get("spec") or {}).get("driver"), ((o.get("spec") or {}).get("pool") or {}).get("name"))
            for o in objects if o.get("kind") == "ResourceSlice" and (o.get("spec") or {}).get("nodeName") == node}


def _devices_held_on(sim: Simulation, node: str) -> list[str]:
    """``device by claim NS/NAME (pods)`` for each allocated device of the slices of ``node``."""
    objects = sim.store.all_objects()
    pools = _pools_of(objects, node)
    out = []
    for c in (o for o in objects if o.get("kind") == "ResourceClaim"):
        st = c.get("status") or {}
        ns = (c.get("metadata") or {}).get("namespace", "")
        pods = ", ".join(f"{ns}/{r.get('name')}" for r in st.get("reservedFor") or [])
        for r in ((st.get("allocation") or {}).get("devices") or {}).get("results") or []:
            if (r.get("driver"), r.get("pool")) in pools:
                out.append(f"{r.get('device')} by claim {object_key(c)}" + (f" ({pods})" if pods else ""))
    return sorted(out)


def _limit_hint(sim: Simulation, queue: str, dim: str) -> str:
    q = sim.store.peek(kinds.QUEUE, queue) or {}
    limit = (((q.get("spec") or {}).get("resources") or {}).get(dim) or {}).get("limit")
    allocated = ((q.get("status") or {}).get("allocated") or {}).get(dim, "0")
    return (f"queue {queue} holds {allocated} of its limit {limit} for {dim}: raise the limit "
            f"by what the pod asks, or let the queue's running pods finish")
