"""Server-side SVG charts (pure: no Django): grouped bars with an axis, a legend and a
``<title>`` per bar for the hover. The markup is escaped here; the page marks it safe.

A hand-written module rather than a chart library: a bar chart is a few rectangles, and
this keeps every page free of JavaScript and of any CDN (pygal, the Python choice, ships
its tooltips as JavaScript from a CDN by default)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from html import escape

from django.utils.translation import gettext as _

PALETTE = ("#2563eb", "#16a34a", "#f59e0b", "#dc2626", "#7c3aed", "#0891b2")


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[Decimal | float | int | None]


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(10 * magnitude)


def bar_chart(
    *,
    labels: Sequence[str],
    series: Sequence[Series],
    title: str,
    unit: str = "",
    max_value: float | None = None,
    width: int = 720,
    height: int = 240,
) -> str:
    """An SVG of grouped bars: one group per label, one bar per series."""
    left, right, top, bottom = 56, 12, 28, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(
        (float(v) for s in series for v in s.values if v is not None),
        default=0.0,
    )
    top_value = max_value if max_value is not None else _nice_max(peak)
    n = max(len(labels), 1)
    group_w = plot_w / n
    bar_w = max(group_w * 0.8 / max(len(series), 1), 1.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="100%" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="chart-title">{escape(title)}</text>',
    ]
    for i in range(5):
        value = top_value * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e7eb"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">'
            f"{escape(_tick(value, unit))}</text>"
        )
    every = max(1, len(labels) // 15)
    for i, label in enumerate(labels):
        x0 = left + i * group_w + group_w * 0.1
        for j, s in enumerate(series):
            v = s.values[i] if i < len(s.values) else None
            if v is None:
                continue
            h = plot_h * min(float(v) / top_value, 1.0) if top_value else 0.0
            x = x0 + j * bar_w
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w:.1f}" '
                f'height="{h:.1f}" fill="{PALETTE[j % len(PALETTE)]}">'
                "<title>"
                + escape(
                    # Translators: a bar's hover text: the period, the series, the value.
                    _("%(period)s · %(series)s: %(value)s")
                    % {"period": label, "series": s.name, "value": _tick(float(v), unit)}
                )
                + "</title></rect>"
            )
        if i % every == 0:
            parts.append(
                f'<text x="{left + i * group_w + group_w / 2:.1f}" y="{top + plot_h + 14}" '
                f'text-anchor="middle" font-size="10">{escape(label)}</text>'
            )
    for j, s in enumerate(series):
        x = left + j * 160
        parts.append(
            f'<rect x="{x}" y="{height - 14}" width="10" height="10" '
            f'fill="{PALETTE[j % len(PALETTE)]}"/>'
            f'<text x="{x + 14}" y="{height - 5}" font-size="11">{escape(s.name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _tick(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.0f}%"
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1_000:.0f}k"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}".rstrip("0").rstrip(".")
