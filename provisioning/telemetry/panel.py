"""The customer's monitoring panel: which series an order may see and how they are read.

A customer chooses only a metric key and a range from fixed tables; the PromQL is built
here from the hostnames of the nodes that filled the order's slots, never from anything
in the request. Each node's points are then cut to its tenure in the order (a spare from
when it came in, a failed node until it left, nobody before the order's start), so a
node's earlier or later customers never show, and any series whose ``node`` label is not
one of the order's is dropped (a second guard).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from html import escape

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from billing.models import Order
from provisioning.models import NodeSwap, RunKind, RunNode, RunNodeState
from provisioning.telemetry import exposition as m
from provisioning.telemetry import prometheus


@dataclass(frozen=True)
class PanelMetric:
    key: str
    title: object  # lazy translation
    unit: str
    expr: str  # ``{sel}`` and ``{r}`` (rate window) filled in


METRICS: dict[str, PanelMetric] = {
    p.key: p
    for p in (
        PanelMetric("sm", _("SM activity"), "%", m.SM_ACTIVE + "{{{sel}}} * 100"),
        PanelMetric("util", _("GPU utilisation"), "%", m.GPU_UTIL + "{{{sel}}}"),
        PanelMetric("memory", _("GPU memory used"), "GiB", m.FB_USED + "{{{sel}}} / 1024"),
        PanelMetric("temperature", _("Temperature"), "°C", m.GPU_TEMP + "{{{sel}}}"),
        PanelMetric("power", _("Power"), "W", m.POWER + "{{{sel}}}"),
        PanelMetric(
            "nvlink",
            _("NVLink throughput"),
            "GB/s",
            "rate(" + m.NVLINK_BANDWIDTH + "{{{sel}}}[{r}]) / 1e9",
        ),
        PanelMetric(
            "ib",
            _("InfiniBand throughput"),
            "Gb/s",
            "sum by (node) (rate("
            + m.IB_XMIT
            + "{{{sel}}}[{r}]) + rate("
            + m.IB_RCV
            + "{{{sel}}}[{r}])) * 8 / 1e9",
        ),
    )
}
RANGES: dict[str, tuple[object, int]] = {
    "hour": (_("last hour"), 3600),
    "day": (_("last day"), 86400),
    "week": (_("last week"), 7 * 86400),
}
POINTS = 120


@dataclass
class Series:
    node: str
    gpu: str
    points: list[tuple[float, float]]

    @property
    def name(self) -> str:
        return f"{self.node} GPU {self.gpu}" if self.gpu else self.node


def order_tenures(order: Order) -> dict[str, tuple[datetime, datetime]]:
    """Per hostname that served the order: from when to when it was the order's."""
    end_all = order.end_at
    swaps = list(NodeSwap.objects.filter(order=order, spare_node__isnull=False))
    out: dict[str, tuple[datetime, datetime]] = {}
    for rn in RunNode.objects.filter(run__order=order, run__kind=RunKind.PROVISION).select_related(
        "node"
    ):
        start, end = order.start_at, end_all
        for swap in swaps:
            if swap.spare_node_id == rn.node_id:
                start = max(start, swap.failed_at)
            if swap.failed_node_id == rn.node_id and rn.state == RunNodeState.SWAPPED_OUT:
                end = min(end, swap.failed_at)
        if start < end and start < timezone.now():
            out[rn.node.hostname] = (start, end)
    return out


def series(
    order: Order, *, metric: str, range_key: str, now: float | None = None
) -> tuple[PanelMetric, list[Series]]:
    """The order's series of ``metric`` over ``range_key``; unknown keys raise KeyError."""
    panel_metric = METRICS[metric]
    seconds = RANGES[range_key][1]
    tenures = order_tenures(order)
    if not tenures:
        return panel_metric, []
    end = now if now is not None else timezone.now().timestamp()
    start = end - seconds
    step = max(seconds / POINTS, 1.0)
    promql = panel_metric.expr.format(
        sel=prometheus.node_selector(list(tenures)), r=f"{max(int(step * 2), 60)}s"
    )
    out: list[Series] = []
    for labels, values in prometheus.query_range(promql, start=start, end=end, step=step):
        node = labels.get("node", "")
        if node not in tenures:
            continue  # not the order's: never shown
        since, until = (t.timestamp() for t in tenures[node])
        points = [(t, v) for t, v in values if since <= t <= until and math.isfinite(v)]
        if points:
            out.append(Series(node, labels.get("gpu", ""), points))
    out.sort(key=lambda s: (s.node, int(s.gpu) if s.gpu.isdigit() else 0))
    return panel_metric, out


def gpu_inventory(order: Order) -> list[dict[str, str]]:
    """The GPUs the order's current nodes report (index, UUID, serial, model)."""
    hosts = list(
        RunNode.objects.filter(
            run__order=order, run__kind=RunKind.PROVISION, state=RunNodeState.ACTIVE
        ).values_list("node__hostname", flat=True)
    )
    if not hosts:
        return []
    rows = prometheus.query(
        "last_over_time(" + m.GPU_TEMP + "{" + prometheus.node_selector(hosts) + "}[10m])"
    )
    out = [
        {
            "node": r.labels.get("node", ""),
            "gpu": r.labels.get("gpu", ""),
            "uuid": r.labels.get("UUID", ""),
            "serial": r.labels.get("serial", ""),
            "model": r.labels.get("modelName", ""),
        }
        for r in rows
        if r.labels.get("node") in hosts
    ]
    return sorted(out, key=lambda g: (g["node"], int(g["gpu"]) if g["gpu"].isdigit() else 0))


PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563")


def svg_chart(
    series_list: list[Series],
    *,
    unit: str,
    start: float | None = None,
    end: float | None = None,
    width: int = 720,
    height: int = 220,
) -> str:
    """A line chart as inline SVG (drawn on the server; no script, no CDN)."""
    pad_l, pad_r, pad_t, pad_b = 48, 8, 8, 22
    points = [p for s in series_list for p in s.points]
    if not points:
        return ""
    t0 = start if start is not None else min(p[0] for p in points)
    t1 = end if end is not None else max(p[0] for p in points)
    v1 = max(max(p[1] for p in points), 1e-9)
    v1 = v1 * 1.1
    span_t = max(t1 - t0, 1.0)
    w, h = width - pad_l - pad_r, height - pad_t - pad_b

    def x(t: float) -> float:
        return pad_l + (t - t0) / span_t * w

    def y(v: float) -> float:
        return pad_t + h - max(v, 0.0) / v1 * h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'class="chart" role="img" data-points="{len(points)}">',
        f'<line x1="{pad_l}" y1="{pad_t + h}" x2="{pad_l + w}" y2="{pad_t + h}" stroke="#999"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + h}" stroke="#999"/>',
        f'<text x="{pad_l - 4}" y="{pad_t + 10}" text-anchor="end" font-size="10">'
        f"{v1:.3g} {escape(unit)}</text>",
        f'<text x="{pad_l - 4}" y="{pad_t + h}" text-anchor="end" font-size="10">0</text>',
    ]
    for ts, anchor in ((t0, "start"), (t1, "end")):
        label = datetime.fromtimestamp(ts, tz=timezone.get_current_timezone()).strftime(
            "%m-%d %H:%M"
        )
        parts.append(
            f'<text x="{x(ts):.1f}" y="{height - 6}" text-anchor="{anchor}" font-size="10">'
            f"{label}</text>"
        )
    for i, s in enumerate(series_list):
        coords = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in s.points)
        colour = PALETTE[i % len(PALETTE)]
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coords}">'
            f"<title>{escape(s.name)}</title></polyline>"
        )
        last_t, last_v = s.points[-1]  # the latest value, visible even as a single point
        parts.append(
            f'<circle cx="{x(last_t):.1f}" cy="{y(last_v):.1f}" r="2.5" fill="{colour}">'
            f"<title>{escape(s.name)}: {last_v:.3g} {escape(unit)}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)
