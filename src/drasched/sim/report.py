"""Human-readable accounts of an embedded run: the stderr summary and the Markdown report.

The report answers the what-if questions ``drasched simulate`` is for: where did every
pod go and with which devices, what is still pending and why, how full is each node, and
what does each queue hold against its fair share.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from drasched.sim.runner import SimResult

Obj = dict[str, Any]


def _md(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _key(o: Obj) -> str:
    md = _md(o)
    return f"{md['namespace']}/{md.get('name')}" if md.get("namespace") else str(md.get("name"))


def _of_kind(result: SimResult, kind: str) -> list[Obj]:
    return [o for o in result.objects if o.get("kind") == kind]


def binding_waits(objects: list[Obj]) -> dict[str, str]:
    """Pod key -> why its bind waits (a BindRequest still ``Pending`` with a reason, e.g. binding
    conditions not met yet): such a pod is placed, its claims allocated, but it carries no
    PodScheduled condition, as upstream's pod waiting in PreBind."""
    waits: dict[str, str] = {}
    for br in objects:
        status = br.get("status") or {}
        if br.get("kind") == "BindRequest" and status.get("phase") == "Pending" and status.get("reason"):
            pod = (br.get("spec") or {}).get("podName")
            waits[f"{_md(br).get('namespace')}/{pod}"] = str(status.get("message") or status["reason"])
    return waits


PREPARE_FAILED = "FailedPrepareDynamicResources"
PREPARE_FAILED_PREFIX = "Failed to prepare dynamic resources: "
"""How upstream's kubelet (kuberuntime_manager.go ``SyncPod``) and the simulated one word that
Warning before the error; the reason already says as much, so the report shows the error alone."""


def prepare_errors(objects: list[Obj]) -> dict[str, str]:
    """Pod UID -> why the kubelet could not prepare its claims: the error of the last
    ``FailedPrepareDynamicResources`` Warning about it, without its :data:`PREPARE_FAILED_PREFIX`.
    Upstream's kubelet keeps such a pod Pending, its containers waiting in ``ContainerCreating``,
    and says why only in that event (no status field holds it)."""
    last: dict[str, tuple[tuple[str, str], str]] = {}
    for ev in objects:
        if ev.get("kind") != "Event" or ev.get("reason") != PREPARE_FAILED or ev.get("type") != "Warning":
            continue
        inv = ev.get("involvedObject") or {}
        if inv.get("kind") != "Pod" or not inv.get("uid"):
            continue
        order = (str(ev.get("lastTimestamp") or ""), str(_md(ev).get("name") or "").rsplit(".", 1)[-1])
        if inv["uid"] not in last or order >= last[inv["uid"]][0]:
            last[inv["uid"]] = (order, str(ev.get("message") or "").removeprefix(PREPARE_FAILED_PREFIX))
    return {uid: message for uid, (_, message) in last.items()}


def kubelet_wait(pod: Obj, errors: dict[str, str]) -> str | None:
    """Why a bound pod still Pending waits on its node's kubelet (a claim it could not prepare), or None."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if not (pod.get("spec") or {}).get("nodeName") or phase != "Pending":
        return None
    message = errors.get(str(_md(pod).get("uid") or ""))
    return f"{PREPARE_FAILED}: {message}" if message is not None else None


def pending_reason(pod: Obj, waits: dict[str, str] | None = None) -> str:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or c.get("reason") or "")
    if waits:
        wait = waits.get(_key(pod))
        if wait is not None:
            return wait
    return "not scheduled yet"


def summary_lines(result: SimResult) -> list[str]:
    """One line of totals, then one line per pending pod with its reason."""
    pods = _of_kind(result, "Pod")
    errors = prepare_errors(result.objects)
    phases: Counter[str] = Counter()
    for p in pods:
        if (p.get("spec") or {}).get("nodeName") and kubelet_wait(p, errors) is None:
            phase = (p.get("status") or {}).get("phase") or "Pending"
            phases["Bound" if phase == "Pending" else phase] += 1  # bound, not started: as the table says
        else:
            phases["Pending"] += 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(phases.items())) or "no pods"
    state = "quiescent" if result.quiescent else "stopped at the round limit"
    lines = [f"drasched simulate: {len(pods)} pods ({summary}); {result.rounds} rounds, {state}; "
             f"{len(result.decisions)} decisions"]
    waits = binding_waits(result.objects)
    lines += [f"  pending {_key(p)}: {pending_reason(p, waits)}" for p in pods
              if not (p.get("spec") or {}).get("nodeName")]
    lines += [f"  pending {_key(p)} on {p['spec']['nodeName']}: {why}" for p in pods
              if (why := kubelet_wait(p, errors)) is not None]
    lines += [f"  warning {d['object']}: {d['message']}" for d in result.decisions if d.get("action") == "warning"]
    return lines


def _claim_devices(claim: Obj) -> list[str]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results]


def _pod_claim_names(pod: Obj) -> list[str]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    generated = {s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []}
    names = [e.get("resourceClaimName") or generated.get(e.get("name")) for e in spec.get("resourceClaims") or []]
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    return [n for n in [*names, extended] if n]


def pod_devices(pod: Obj, claims: dict[str, Obj]) -> list[str]:
    """The devices a pod holds (``driver/pool/device`` of its claims' allocations), or, on a
    node where the device plugin serves its extended resources, what it asked for there."""
    ns = _md(pod).get("namespace", "")
    devices = [d for n in _pod_claim_names(pod) for d in _claim_devices(claims.get(f"{ns}/{n}", {}))]
    if (pod.get("spec") or {}).get("nodeName") and not devices:
        devices = [f"{r}={q} (device plugin)" for r, q in sorted(_extended_requests(pod).items())]
    return devices


def _extended_requests(pod: Obj) -> dict[str, str]:
    """Requests of a pod's containers for resources other than cpu, memory and storage."""
    out: dict[str, str] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        for r, q in (((c.get("resources") or {}).get("requests")) or {}).items():
            if r not in ("cpu", "memory", "ephemeral-storage") and not r.startswith("hugepages-"):
                out[r] = str(q) if r not in out else f"{out[r]}+{q}"
    return out


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") if text not in (None, "") else "-"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def markdown_report(result: SimResult) -> str:
    """The run as Markdown: pods, pending reasons, nodes, claims, queues, decisions."""
    claims = {_key(c): c for c in _of_kind(result, "ResourceClaim")}
    pods = sorted(_of_kind(result, "Pod"), key=_key)
    lines = ["# drasched simulate report", "", *summary_lines(result)[:1], ""]

    lines += ["## Pods", ""]
    pod_rows = []
    per_node: dict[str, list[str]] = defaultdict(list)
    for p in pods:
        devices = pod_devices(p, claims)
        node = (p.get("spec") or {}).get("nodeName")
        if node:
            per_node[node].append(_key(p))
        pod_rows.append([_key(p), node, (p.get("status") or {}).get("phase"),
                         (_md(p).get("labels") or {}).get("drasched.io/queue", ""),
                         ", ".join(devices)])
    lines += [*_table(["pod", "node", "phase", "queue label", "devices"], pod_rows), ""]

    errors = prepare_errors(result.objects)
    pending = [p for p in pods if not (p.get("spec") or {}).get("nodeName") or kubelet_wait(p, errors)]
    if pending:
        lines += ["## Pending pods", ""]
        waits = binding_waits(result.objects)
        lines += [*_table(["pod", "why"], [[_key(p), kubelet_wait(p, errors) or pending_reason(p, waits)]
                                           for p in pending]), ""]

    lines += ["## Nodes", ""]
    node_rows = []
    for n in sorted(_of_kind(result, "Node"), key=_key):
        alloc = (n.get("status") or {}).get("allocatable") or {}
        node_rows.append([_key(n), len(per_node.get(_key(n), [])), ", ".join(f"{k}={v}" for k, v in alloc.items()),
                          "yes" if (n.get("spec") or {}).get("unschedulable") else ""])
    lines += [*_table(["node", "pods", "allocatable", "cordoned"], node_rows), ""]

    if claims:
        lines += ["## ResourceClaims", ""]
        claim_rows = []
        for key in sorted(claims):
            c = claims[key]
            reserved = [r.get("name") for r in (c.get("status") or {}).get("reservedFor") or []]
            claim_rows.append([key, ", ".join(_claim_devices(c)) or "not allocated", ", ".join(reserved)])
        lines += [*_table(["claim", "devices", "reserved for"], claim_rows), ""]

    queues = sorted(_of_kind(result, "Queue"), key=_key)
    if queues:
        lines += ["## Queues", ""]
        rows = []
        for q in queues:
            st = q.get("status") or {}
            for res in sorted(set(st.get("allocated") or {}) | set(st.get("requested") or {})
                              | set(st.get("fairShare") or {})):
                rows.append([_key(q), (q.get("spec") or {}).get("parentQueue", ""), res,
                             (st.get("allocated") or {}).get(res, "0"), (st.get("requested") or {}).get(res, "0"),
                             (st.get("fairShare") or {}).get(res, "0")])
        lines += [*_table(["queue", "parent", "resource", "allocated", "requested", "fair share"], rows), ""]

    counts = Counter((d["controller"], d["action"]) for d in result.decisions)
    lines += ["## Decisions", ""]
    lines += _table(["controller", "action", "count"], [[c, a, n] for (c, a), n in sorted(counts.items())])
    return "\n".join(lines) + "\n"
