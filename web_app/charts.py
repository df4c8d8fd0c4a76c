"""Small server-side SVG line charts for PromQL range results: one polyline per series, a legend,
min/max on the axis. No JavaScript, no library; everything textual is escaped."""

from __future__ import annotations

import json
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from agents_app.api import QUERY_PROMQL

WIDTH, HEIGHT, PAD_LEFT, PAD_TOP, PAD_BOTTOM = 480, 150, 48, 8, 18
# Line colours; the legend's swatches use the same, as classes swatch-0… in ongrid.css (no inline
# styles: the Content-Security-Policy forbids them).
PALETTE = ("#0b62d6", "#d9480f", "#2b8a3e", "#9c36b5", "#e67700", "#1098ad", "#c2255c", "#5c940d")
MAX_SERIES = 8


def _series_of(content: Any) -> list[dict]:
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            return []
    if not isinstance(content, dict):
        return []
    series = content.get("series") or []
    return [s for s in series if isinstance(s, dict) and len(s.get("points") or []) >= 2]


def series_label(labels: dict) -> str:
    name = labels.get("__name__", "")
    rest = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return f"{name}{{{rest}}}" if rest else (name or "{}")


def chart_for_tool(name: str, content: Any) -> SafeString | str:
    if name != QUERY_PROMQL.name:
        return ""
    series = _series_of(content)[:MAX_SERIES]
    return line_chart(series) if series else ""


def _points(series: list[dict]) -> list[list[tuple[float, float]]]:
    out = []
    for s in series:
        pts = []
        for p in s["points"]:
            try:
                pts.append((float(p[0]), float(p[1])))
            except (TypeError, ValueError, IndexError):
                continue
        out.append(pts)
    return out


def line_chart(series: list[dict]) -> SafeString:
    all_points = _points(series)
    xs = [x for pts in all_points for x, _ in pts]
    ys = [y for pts in all_points for _, y in pts]
    if not xs:
        return mark_safe("")
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = y1 if y1 > y0 else y0 + 1
    plot_w, plot_h = WIDTH - PAD_LEFT - 4, HEIGHT - PAD_TOP - PAD_BOTTOM
    base = PAD_TOP + plot_h

    def sx(x: float) -> float:
        return PAD_LEFT + (x - x0) / (x1 - x0) * plot_w

    def sy(y: float) -> float:
        return PAD_TOP + plot_h - (y - y0) / (y1 - y0) * plot_h

    lines = []
    for i, pts in enumerate(all_points):
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        color = PALETTE[i % len(PALETTE)]
        lines.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{path}"/>')
    legend = "".join(
        f'<li><span class="swatch swatch-{i % len(PALETTE)}"></span>'
        f"{escape(series_label(s.get('labels') or {}))}</li>"
        for i, s in enumerate(series)
    )
    svg = (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="PromQL range chart">'
        f'<line x1="{PAD_LEFT}" y1="{PAD_TOP}" x2="{PAD_LEFT}" y2="{base}" class="axis"/>'
        f'<line x1="{PAD_LEFT}" y1="{base}" x2="{WIDTH - 4}" y2="{base}" class="axis"/>'
        f'<text x="{PAD_LEFT - 4}" y="{PAD_TOP + 8}" text-anchor="end" class="tick">{_fmt(y1)}</text>'
        f'<text x="{PAD_LEFT - 4}" y="{base}" text-anchor="end" class="tick">{_fmt(y0)}</text>'
        + "".join(lines)
        + "</svg>"
    )
    return mark_safe(f'<figure class="chart-figure">{svg}<ul class="legend">{legend}</ul></figure>')  # noqa: S308


def _fmt(value: float) -> str:
    if abs(value) >= 1e9:
        return f"{value / 1e9:.1f}G"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.1f}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.3g}"
