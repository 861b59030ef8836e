"""The simulate report as one self-contained HTML file: charts a person reads at a glance.

No script and no network: inline SVG (:mod:`drasched.plan.svg`) and CSS only. Beside each
chart, a table with the same numbers, for keyboard and screen-reader users (and for tests).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from datetime import datetime
from html import escape
from typing import Any

from drasched.plan.outcome import NOT_ACCELERATORS, object_key
from drasched.plan.svg import Series, bar_chart, grid_chart, step_chart
from drasched.plan.timeline import Sample, Timeline, bind_times
from drasched.sim.report import binding_waits, kubelet_wait, pending_reason, prepare_errors

Obj = dict[str, Any]
POD_GROUP_LABEL = "drasched.io/pod-group"

CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; max-width: 1400px; }
section { margin-bottom: 2.5rem; }
.pair { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
.table-wrap { max-height: 260px; overflow: auto; border: 1px solid #ccc; }
.table-wrap:focus { outline: 3px solid #1b6ac9; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
caption { text-align: left; font-weight: 600; padding: 4px; }
.summary td { font-size: 1rem; }
"""


def _accelerator(resource: str) -> bool:
    return resource not in NOT_ACCELERATORS and not resource.startswith("hugepages-")


def _table(table_id: str, caption: str, header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(_fmt(c))}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<div class="table-wrap" tabindex="0" role="region" aria-label="{escape(caption)}">'
            f'<table id="{table_id}"><caption>{escape(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return "-" if value is None else str(value)


def _section(title: str, chart: str, table: str, note: str = "") -> str:
    note_html = f"<p>{escape(note)}</p>" if note else ""
    return (f'<section><h2>{escape(title)}</h2>{note_html}'
            f'<div class="pair"><figure>{chart}</figure>{table}</div></section>')


# ------------------------------------------------------------------------------ sections


def _queue_sections(samples: list[Sample]) -> list[str]:
    resources = sorted({r for s in samples for q in s.queues.values() for r in q if _accelerator(r)})
    out = []
    for i, res in enumerate(resources):
        queues = sorted({q for s in samples for q, rs in s.queues.items() if res in rs})
        series, rows = [], []
        for q in queues:
            alloc = [(s.seconds, s.queues.get(q, {}).get(res, (0.0, 0.0, None))[0]) for s in samples]
            share = [(s.seconds, s.queues.get(q, {}).get(res, (0.0, 0.0, None))[1]) for s in samples]
            series += [Series(f"{q} allocated", alloc), Series(f"{q} fair share", share, dashed=True)]
            for s in samples:
                a, f, quota = s.queues.get(q, {}).get(res, (0.0, 0.0, None))
                rows.append([s.seconds, q, a, f, quota])
        chart = step_chart(f"queues-{i}", f"{res} allocated per queue, against fair share",
                           f"Allocated {res} (solid) and fair share (dashed) of each queue over virtual time.", series)
        table = _table(f"queues-{i}-table", f"{res} per queue over time",
                       ["virtual s", "queue", "allocated", "fair share", "quota"], rows)
        out.append(_section(f"{res}: allocation per queue, quota and fair share", chart, table))
    return out


def _utilization_section(samples: list[Sample]) -> str:
    used = Series("devices held", [(s.seconds, float(s.devices_used)) for s in samples])
    total = Series("devices in the cluster", [(s.seconds, float(s.devices_total)) for s in samples], dashed=True)
    chart = step_chart("utilization", "GPU and device utilization over time",
                       "Devices held by pods (solid) against devices in the cluster (dashed).", [used, total])
    rows = [[s.seconds, s.devices_used, s.devices_total,
             f"{s.devices_used / s.devices_total:.0%}" if s.devices_total else "-"] for s in samples]
    return _section("Utilization", chart, _table("utilization-table", "Devices held over time",
                                                 ["virtual s", "held", "total", "utilization"], rows))


def device_map(objects: list[Obj]) -> list[tuple[str, list[tuple[str, str]]]]:
    """node -> [(device, holder)]: DRA devices with the pods of their claims, device-plugin
    GPUs with the pods that requested them (a shared device lists every holder)."""
    pods_of_claim: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for c in (o for o in objects if o.get("kind") == "ResourceClaim"):
        st = c.get("status") or {}
        ns = (c.get("metadata") or {}).get("namespace", "")
        holders = [f"{ns}/{r.get('name')}" for r in st.get("reservedFor") or []] or [object_key(c)]
        for res in ((st.get("allocation") or {}).get("devices") or {}).get("results") or []:
            pods_of_claim[(str(res.get("driver")), str(res.get("pool")), str(res.get("device")))] += holders
    rows: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for sl in sorted((o for o in objects if o.get("kind") == "ResourceSlice"), key=object_key):
        spec = sl.get("spec") or {}
        node = spec.get("nodeName") or "(not on one node)"
        for d in spec.get("devices") or []:
            key = (str(spec.get("driver")), str((spec.get("pool") or {}).get("name")), str(d.get("name")))
            rows[node].append((f"{key[1]}/{key[2]}", ", ".join(sorted(set(pods_of_claim.get(key, []))))))
    for n in sorted((o for o in objects if o.get("kind") == "Node"), key=object_key):
        name = object_key(n)
        for res, q in ((n.get("status") or {}).get("allocatable") or {}).items():
            if not _accelerator(res) or not str(q).isdigit():
                continue
            holders = []
            for p in (o for o in objects if o.get("kind") == "Pod"):
                spec, st = p.get("spec") or {}, p.get("status") or {}
                if spec.get("nodeName") != name or st.get("phase") in ("Succeeded", "Failed") \
                        or st.get("extendedResourceClaimStatus"):
                    continue
                want = sum(int(str((c.get("resources") or {}).get("requests", {}).get(res, 0)))
                           for c in spec.get("containers") or [])
                holders += [object_key(p)] * want
            rows[name] += [(f"{res} #{i}", holders[i] if i < len(holders) else "") for i in range(int(str(q)))]
    return sorted(rows.items())


def _device_section(timeline: Timeline) -> str:
    rows = device_map(timeline.peak_objects or timeline.result.objects)
    chart = grid_chart("devices", "Node by device map",
                       f"Which pod holds each device at {timeline.peak_seconds:g} virtual seconds, "
                       "when the most devices were held; grey cells are free.", rows)
    table_rows = [[node, device, holder or "free"] for node, cells in rows for device, holder in cells]
    return _section(f"Devices by node (at {timeline.peak_seconds:g} s, the busiest moment)", chart,
                    _table("devices-table", "Device holders", ["node", "device", "held by"], table_rows))


def pending_by_reason(objects: list[Obj]) -> dict[str, list[str]]:
    """Pods not placed, by why; and pods placed whose kubelet could not prepare their claims
    (Pending, upstream's ``FailedPrepareDynamicResources``), by the error."""
    out: dict[str, list[str]] = defaultdict(list)
    waits = binding_waits(objects)
    errors = prepare_errors(objects)
    for p in (o for o in objects if o.get("kind") == "Pod"):
        why = kubelet_wait(p, errors) if (p.get("spec") or {}).get("nodeName") else pending_reason(p, waits)
        if why is not None:
            out[why].append(object_key(p))
    return dict(sorted(out.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def _pending_section(objects: list[Obj]) -> str:
    groups = pending_by_reason(objects)
    if not groups:
        return "<section><h2>Pending pods by reason</h2><p>No pod is pending at the end of the run.</p></section>"
    labels = [str(i + 1) for i in range(len(groups))]
    chart = bar_chart("pending", "Pending pods by reason", "How many pods wait for each reason at the end.",
                      labels, [("pending pods", [float(len(v)) for v in groups.values()])])
    rows = [[label, reason, len(pods), ", ".join(pods)] for label, (reason, pods) in zip(labels, groups.items(),
                                                                                       strict=True)]
    return _section("Pending pods by reason", chart,
                    _table("pending-table", "Pending pods", ["bar", "reason", "pods", "which"], rows))


def _workload(pod: Obj) -> str:
    md = pod.get("metadata") or {}
    owner = next((r for r in md.get("ownerReferences") or [] if r.get("controller")), None)
    if owner:
        return f"{owner.get('kind')} {md.get('namespace')}/{owner.get('name')}"
    group = (md.get("labels") or {}).get(POD_GROUP_LABEL)
    if group:
        return f"PodGroup {md.get('namespace')}/{group}"
    return f"Pod {object_key(pod)}"


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def wait_times(timeline: Timeline) -> dict[str, list[float]]:
    """workload -> seconds each of its bound pods waited between creation and binding."""
    bound = bind_times(timeline.result)
    out: dict[str, list[float]] = defaultdict(list)
    for p in (o for o in timeline.result.objects if o.get("kind") == "Pod"):
        when = bound.get(object_key(p))
        created = (p.get("metadata") or {}).get("creationTimestamp")
        if when is None or not created:
            continue
        start = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
        out[_workload(p)].append(max(0.0, (when - start).total_seconds()))
    return dict(sorted(out.items()))


def _wait_section(timeline: Timeline) -> str:
    waits = wait_times(timeline)
    labels = list(waits)
    p50 = [percentile(v, 50) for v in waits.values()]
    p90 = [percentile(v, 90) for v in waits.values()]
    chart = bar_chart("waits", "Wait time per workload", "p50 and p90 of the virtual seconds pods waited to be bound.",
                      labels, [("p50", p50), ("p90", p90)])
    rows = [[i + 1, w, len(waits[w]), a, b] for i, (w, a, b) in enumerate(zip(labels, p50, p90, strict=True))]
    return _section("Wait time per workload", chart,
                    _table("waits-table", "Wait before binding (virtual seconds)",
                           ["bar", "workload", "pods", "p50", "p90"], rows))


def _decisions_section(timeline: Timeline) -> str:
    decisions = timeline.result.decisions
    start = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
    per: dict[str, list[float]] = defaultdict(list)
    for d in decisions:
        per[d["controller"]].append((datetime.fromisoformat(d["time"].replace("Z", "+00:00")) - start).total_seconds())
    series = []
    for controller, times in sorted(per.items()):
        counts = Counter(times)
        running, pts = 0, []
        for t in sorted(counts):
            running += counts[t]
            pts.append((t, float(running)))
        series.append(Series(controller, pts))
    chart = step_chart("decisions", "Decisions over time", "Decisions each controller made, cumulative.", series)
    actions = Counter((d["controller"], d["action"]) for d in decisions)
    rows: list[list[Any]] = [[c, a, n] for (c, a), n in sorted(actions.items())]
    return _section("Decisions timeline", chart, _table("decisions-table", "Decisions", ["controller", "action",
                                                                                          "count"], rows))


def html_report(timeline: Timeline) -> str:
    result = timeline.result
    pods = [o for o in result.objects if o.get("kind") == "Pod"]
    placed = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
    summary = _table("summary-table", "Run summary", ["pods", "placed", "pending", "rounds", "decisions", "end"],
                     [[len(pods), placed, len(pods) - placed, result.rounds, len(result.decisions),
                       "quiescent" if result.quiescent else "round limit"]])
    sections = [*_queue_sections(timeline.samples), _utilization_section(timeline.samples),
                _device_section(timeline), _pending_section(result.objects), _wait_section(timeline),
                _decisions_section(timeline)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>drasched simulate report</title>"
            f"<style>{CSS}</style></head><body><main><h1>drasched simulate report</h1>{summary}"
            + "".join(sections) + "</main></body></html>\n")
