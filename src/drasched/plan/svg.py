"""Small inline SVG charts: no script, no network, readable in any browser.

Each chart is an ``<svg role="img">`` with a title and a description, and each drawn value
carries ``class="datum"`` and a ``data-value`` (tests and screen readers read them; the
report puts a table with the same numbers beside each chart).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 40
PALETTE = ("#1b6ac9", "#d1495b", "#2a9d8f", "#e09f3e", "#6a4c93", "#3d405b", "#81b29a", "#f28482")


@dataclass
class Series:
    label: str
    points: list[tuple[float, float]]
    dashed: bool = False


def _scale(lo: float, hi: float, a: float, b: float) -> Callable[[float], float]:
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


LEGEND_PER_ROW = 4


def _frame(chart_id: str, title: str, desc: str, body: list[str], legend: Sequence[tuple[str, str, bool]]) -> str:
    rows = max(1, math.ceil(len(legend) / LEGEND_PER_ROW))
    height = HEIGHT + 16 * (rows - 1)
    items = []
    for i, (label, color, dashed) in enumerate(legend):
        x = LEFT + (i % LEGEND_PER_ROW) * 150
        ly = HEIGHT - 8 + 16 * (i // LEGEND_PER_ROW)
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        items.append(f'<line x1="{x}" y1="{ly}" x2="{x + 18}" y2="{ly}" stroke="{color}" stroke-width="3"{dash}/>'
                     f'<text x="{x + 22}" y="{ly + 4}" font-size="11">{escape(label)}</text>')
    return (f'<svg id="{chart_id}" class="chart" role="img" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
            f'height="{height}" aria-labelledby="{chart_id}-title {chart_id}-desc" xmlns="http://www.w3.org/2000/svg">'
            f'<title id="{chart_id}-title">{escape(title)}</title><desc id="{chart_id}-desc">{escape(desc)}</desc>'
            + "".join(body) + "".join(items) + "</svg>")


def _axes(y_max: float, x_label: str) -> list[str]:
    y = _scale(0, y_max, HEIGHT - BOTTOM, TOP)
    out = [f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#555"/>',
           f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#555"/>',
           f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - BOTTOM + 14}" font-size="11" text-anchor="end">'
           f'{escape(x_label)}</text>']
    for frac in (0.0, 0.5, 1.0):
        v = y_max * frac
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{v:g}</text>')
    return out


def step_chart(chart_id: str, title: str, desc: str, series: Sequence[Series], x_label: str = "virtual seconds",
               y_max: float | None = None) -> str:
    """Piecewise-constant lines: each value holds until the next point."""
    xs = [x for s in series for x, _ in s.points] or [0.0]
    top = y_max if y_max is not None else max([v for s in series for _, v in s.points] + [1.0])
    x = _scale(min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1, LEFT, WIDTH - RIGHT)
    y = _scale(0, top, HEIGHT - BOTTOM, TOP)
    body = _axes(top, x_label)
    legend = []
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        pts = sorted(s.points)
        if not pts:
            continue
        d = f"M{x(pts[0][0]):.1f},{y(pts[0][1]):.1f}"
        for px, pv in pts[1:]:
            d += f" H{x(px):.1f} V{y(pv):.1f}"
        d += f" H{WIDTH - RIGHT}"
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        body.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        body += [f'<circle class="datum" cx="{x(px):.1f}" cy="{y(pv):.1f}" r="2.5" fill="{color}" '
                 f'data-series="{escape(s.label)}" data-x="{px:g}" data-value="{pv:g}"/>' for px, pv in pts]
        legend.append((s.label, color, s.dashed))
    return _frame(chart_id, title, desc, body, legend)


MAX_NAMED_BARS = 6
"""With more groups than this, bars are numbered (the table beside says which is which)."""


def bar_chart(chart_id: str, title: str, desc: str, labels: Sequence[str],
              series: Sequence[tuple[str, Sequence[float]]]) -> str:
    """Grouped bars, one group per label."""
    top = max([v for _, values in series for v in values] + [1.0])
    y = _scale(0, top, HEIGHT - BOTTOM, TOP)
    body = _axes(top, "")
    group = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    bar = group * 0.8 / max(len(series), 1)
    for i, label in enumerate(labels):
        gx = LEFT + i * group + group * 0.1
        for k, (name, values) in enumerate(series):
            v = values[i]
            body.append(f'<rect class="datum" x="{gx + k * bar:.1f}" y="{y(v):.1f}" width="{bar:.1f}" '
                        f'height="{HEIGHT - BOTTOM - y(v):.1f}" fill="{PALETTE[k % len(PALETTE)]}" '
                        f'data-series="{escape(name)}" data-label="{escape(label)}" data-value="{v:g}"/>')
        short = str(i + 1) if len(labels) > MAX_NAMED_BARS else label if len(label) <= 18 else label[:17] + "…"
        body.append(f'<text x="{gx + group * 0.4:.1f}" y="{HEIGHT - BOTTOM + 14}" font-size="10" '
                    f'text-anchor="middle">{escape(short)}</text>')
    legend = [(name, PALETTE[k % len(PALETTE)], False) for k, (name, _) in enumerate(series)]
    return _frame(chart_id, title, desc, body, legend)


def grid_chart(chart_id: str, title: str, desc: str, rows: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> str:
    """One row per node, one cell per device; a held device is coloured by its holder."""
    cell, label_w = 22, 120
    width = label_w + cell * max([len(c) for _, c in rows] + [1]) + 8
    height = cell * max(len(rows), 1) + 8
    colors: dict[str, str] = {}
    body = []
    for r, (node, cells) in enumerate(rows):
        body.append(f'<text x="4" y="{r * cell + 16}" font-size="11">{escape(node)}</text>')
        for c, (device, holder) in enumerate(cells):
            color = "#e6e6e6" if not holder else colors.setdefault(holder, PALETTE[len(colors) % len(PALETTE)])
            body.append(f'<rect class="datum" x="{label_w + c * cell}" y="{r * cell + 2}" width="{cell - 2}" '
                        f'height="{cell - 2}" fill="{color}" data-label="{escape(node)}/{escape(device)}" '
                        f'data-value="{escape(holder or "free")}"><title>{escape(device)}: '
                        f'{escape(holder or "free")}</title></rect>')
    return (f'<svg id="{chart_id}" class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" aria-labelledby="{chart_id}-title {chart_id}-desc" xmlns="http://www.w3.org/2000/svg">'
            f'<title id="{chart_id}-title">{escape(title)}</title><desc id="{chart_id}-desc">{escape(desc)}</desc>'
            + "".join(body) + "</svg>")
