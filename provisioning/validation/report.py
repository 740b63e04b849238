"""The acceptance report of a validation run: its context, SVG charts and stored PDF.

Rendered by WeasyPrint through ``core.pdf`` (templates/pdf/acceptance_report.html) in
zh-Hans or English, stored once per (run, language) with its SHA-256. The charts are SVG
drawn here (no plotting library, nothing fetched): GEMM per GPU against the threshold
line, all-reduce bus bandwidth against message size, cluster scaling. The order's node
swaps up to the run's end are listed (a caller may pass ``swaps`` instead).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone, translation
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from billing.contracts.signatures import seal_pdf
from billing.documents.common import provider, seller_for
from core.documents import DocumentKind, register
from core.pdf import css_content, normalise_language, render_pdf
from provisioning.models import (
    ValidationArtifact,
    ValidationNodeResult,
    ValidationReport,
    ValidationRun,
)
from provisioning.validation.default_rules import SOURCE_TEMPLATES
from provisioning.validation.metrics import METRICS, derive
from provisioning.validation.parsers import ParseError, parse_nccl_tests
from provisioning.validation.reasons import reason_messages, swap_rows

TEMPLATE = "pdf/acceptance_report.html"
GEMM_METRICS = ("gemm_tflops_bf16", "gemm_tflops_fp16", "gemm_gflops_cpu")
ALLREDUCE_METRICS = ("allreduce_busbw_gbps", "allreduce_busbw_gbps_cpu")
PALETTE = ("#0b6bcb", "#e8710a", "#188038", "#a142f4", "#d93025", "#12b5cb", "#5f6368")


# --- SVG --------------------------------------------------------------------------------


def _num(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _size(n: float) -> str:
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= factor:
            return f"{n / factor:g}{unit}"
    return f"{n:g}B"


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if value <= step * exp:
            return step * exp
    return 10 * exp


@dataclass
class Frame:
    """A plot area inside an SVG of ``width`` × ``height`` user units."""

    title: str
    width: int = 640
    height: int = 250
    left: int = 62
    right: int = 16
    top: int = 30
    bottom: int = 48
    parts: list[str] = field(default_factory=list)

    @property
    def plot_w(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> float:
        return self.height - self.top - self.bottom

    def text(self, x: float, y: float, text: str, **attrs: Any) -> None:
        extra = " ".join(f'{k.replace("_", "-")}="{escape(str(v))}"' for k, v in attrs.items())
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" {extra}>{escape(text)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: Any) -> None:
        extra = " ".join(f'{k.replace("_", "-")}="{escape(str(v))}"' for k, v in attrs.items())
        self.parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" {extra}/>'
        )

    def y_axis(self, top_value: float, label: str) -> None:
        for i in range(6):
            value = top_value * i / 5
            y = self.top + self.plot_h * (1 - i / 5)
            self.line(self.left, y, self.left + self.plot_w, y, stroke="#dfe4ea", stroke_width=0.6)
            self.text(self.left - 5, y + 3, _num(value), text_anchor="end", font_size=9)
        self.line(self.left, self.top, self.left, self.top + self.plot_h, stroke="#5f6368")
        self.line(
            self.left,
            self.top + self.plot_h,
            self.left + self.plot_w,
            self.top + self.plot_h,
            stroke="#5f6368",
        )
        self.text(
            14,
            self.top + self.plot_h / 2,
            label,
            font_size=9,
            text_anchor="middle",
            transform=f"rotate(-90 14 {self.top + self.plot_h / 2:.1f})",
        )

    def y(self, value: float, top_value: float) -> float:
        return self.top + self.plot_h * (1 - min(value, top_value) / top_value)

    def svg(self) -> SafeString:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" '
            f'viewBox="0 0 {self.width} {self.height}" width="{self.width}" '
            f'height="{self.height}" font-family="Noto Sans CJK SC, DejaVu Sans, sans-serif">'
        )
        title = (
            f'<text x="{self.width / 2:.1f}" y="16" text-anchor="middle" font-size="11" '
            f'font-weight="700">{escape(self.title)}</text>'
        )
        # Everything above is escaped: numbers are formatted here, texts go through escape.
        return mark_safe(head + title + "".join(self.parts) + "</svg>")  # noqa: S308


def empty_chart(title: str, message: str) -> SafeString:
    frame = Frame(title, height=70)
    frame.text(frame.width / 2, 45, message, text_anchor="middle", font_size=10, fill="#5f6368")
    return frame.svg()


def bar_chart(
    title: str,
    bars: Sequence[tuple[str, float, bool]],
    *,
    unit: str,
    threshold: float | None,
    threshold_label: str,
) -> SafeString:
    """Bars (label, value, passed) with a dashed threshold line."""
    if not bars:
        return empty_chart(title, _("Not measured"))
    frame = Frame(title)
    top_value = _nice_max(max([v for _l, v, _p in bars] + [threshold or 0]) * 1.1)
    frame.y_axis(top_value, unit)
    slot = frame.plot_w / len(bars)
    width = min(38.0, slot * 0.7)
    for i, (label, value, passed) in enumerate(bars):
        x = frame.left + slot * i + (slot - width) / 2
        y = frame.y(value, top_value)
        colour = "#188038" if passed else "#d93025"
        frame.parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" '
            f'height="{frame.top + frame.plot_h - y:.1f}" fill="{colour}"/>'
        )
        frame.text(x + width / 2, y - 3, _num(value), text_anchor="middle", font_size=8)
        frame.text(
            x + width / 2,
            frame.top + frame.plot_h + 12,
            label,
            text_anchor="middle",
            font_size=8 if len(bars) <= 12 else 6,
        )
    if threshold is not None:
        y = frame.y(threshold, top_value)
        frame.line(
            frame.left,
            y,
            frame.left + frame.plot_w,
            y,
            stroke="#d93025",
            stroke_width=1.2,
            stroke_dasharray="5 3",
        )
        frame.text(
            frame.left + frame.plot_w - 2,
            y - 4,
            f"{threshold_label} {_num(threshold)}",
            text_anchor="end",
            font_size=8.5,
            fill="#d93025",
        )
    return frame.svg()


def line_chart(
    title: str,
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    unit: str,
    x_label: str,
) -> SafeString:
    """Series of (message size in bytes, GB/s) on a log2 size axis."""
    points = [p for _name, pts in series for p in pts if p[0] > 0]
    if not points:
        return empty_chart(title, _("Not measured"))
    frame = Frame(title, bottom=62)
    top_value = _nice_max(max(v for _s, v in points) * 1.1)
    frame.y_axis(top_value, unit)
    lo = math.log2(min(s for s, _v in points))
    hi = math.log2(max(s for s, _v in points))
    if hi - lo < 1:
        lo, hi = lo - 1, hi + 1

    def x(size: float) -> float:
        return frame.left + frame.plot_w * (math.log2(size) - lo) / (hi - lo)

    step = max(1, math.ceil((hi - lo) / 8))
    base = frame.top + frame.plot_h
    tick = math.ceil(lo)
    while tick <= hi:
        frame.text(x(2**tick), base + 12, _size(2**tick), text_anchor="middle", font_size=8)
        tick += step
    frame.text(frame.left + frame.plot_w / 2, base + 26, x_label, text_anchor="middle", font_size=9)
    for i, (name, pts) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        pts = sorted(p for p in pts if p[0] > 0)
        coords = [(x(s), frame.y(v, top_value)) for s, v in pts]
        if len(coords) > 1:
            path = " ".join(
                f"{'M' if j == 0 else 'L'}{cx:.1f},{cy:.1f}" for j, (cx, cy) in enumerate(coords)
            )
            frame.parts.append(
                f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
            )
        for cx, cy in coords:
            frame.parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="2.6" fill="{colour}"/>')
        lx = frame.left + 8 + (i % 3) * 200
        ly = frame.height - 10 - 12 * (i // 3)
        frame.parts.append(
            f'<rect x="{lx:.1f}" y="{ly - 7:.1f}" width="9" height="9" fill="{colour}"/>'
        )
        frame.text(lx + 13, ly + 1, name, font_size=8.5)
    return frame.svg()


# --- The context ------------------------------------------------------------------------


_THRESHOLD = re.compile(r"^\s*(>=|>|=)\s*(-?[0-9][0-9.]*)")


def threshold_of(expected: str) -> float | None:
    """The number in a rule result's expected text (``>= 711 (790 -10%)`` → 711)."""
    match = _THRESHOLD.match(expected or "")
    return float(match.group(2)) if match else None


def _measured_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(_measured_text(v) for v in value)
    if isinstance(value, float):
        return _num(value)
    return str(value)


def _checks(result: ValidationNodeResult) -> dict[str, dict[str, Any]]:
    return {str(c.get("name")): c for c in result.report.get("checks", []) if isinstance(c, dict)}


def _gemm_bars(
    results: Sequence[ValidationNodeResult],
) -> tuple[list[tuple[str, float, bool]], float | None, str]:
    bars: list[tuple[str, float, bool]] = []
    threshold: float | None = None
    unit = ""
    for result in results:
        for rr in result.rule_results:
            if rr.get("metric") not in GEMM_METRICS:
                continue
            unit = "GFLOPS" if rr["metric"].endswith("_cpu") else "TFLOPS"
            found = threshold_of(rr.get("expected", ""))
            if found is not None:
                threshold = found
            measured = rr.get("measured")
            values = measured if isinstance(measured, list) else [measured]
            flagged = set(rr.get("flagged_gpus") or [])
            for i, v in enumerate(values):
                if not isinstance(v, int | float):
                    continue
                label = result.hostname if len(values) == 1 else f"{result.hostname}/{i}"
                ok = rr.get("status") != "fail" if len(values) == 1 else i not in flagged
                bars.append((label, float(v), ok))
    return bars, threshold, unit


def _allreduce_series(
    run: ValidationRun, results: Sequence[ValidationNodeResult]
) -> list[tuple[str, list[tuple[float, float]]]]:
    series: list[tuple[str, list[tuple[float, float]]]] = []
    for result in results:
        check = _checks(result).get("allreduce")
        if not check or check.get("status") != "completed":
            continue
        points: list[tuple[float, float]] = []
        if check.get("raw_format") == "nccl-tests":
            try:
                parsed = parse_nccl_tests(str(check.get("raw") or ""))
                points = [
                    (float(r["size_bytes"]), float(r["out_of_place"]["busbw_gbps"]))
                    for r in parsed.get("rows", [])
                ]
            except (ParseError, KeyError, TypeError, ValueError):
                points = []
        if not points and isinstance(check.get("value"), int | float):
            details = check.get("details") or {}
            size = details.get("message_size_bytes") or details.get("bytes")
            if size:
                points = [(float(size), float(check["value"]))]
        if points:
            series.append((_("%(node)s (in the node)") % {"node": result.hostname}, points))
    metrics = (run.cluster_metrics or {}).get("metrics", {})
    size = metrics.get("cluster_message_size_bytes")
    busbw = metrics.get("cluster_allreduce_ring_busbw_gbps")
    curve = metrics.get("cluster_allreduce_curve")
    if isinstance(curve, list) and curve:  # GPU nodes: nccl-tests' rows across the nodes
        points = [
            (float(p[0]), float(p[1]))
            for p in curve
            if isinstance(p, list) and len(p) == 2 and all(isinstance(v, int | float) for v in p)
        ]
        if points:
            series.append((_("cluster (ring)"), points))
    elif size and isinstance(busbw, int | float):
        series.append((_("cluster (ring)"), [(float(size), float(busbw))]))
    return series


def _scaling_chart(run: ValidationRun) -> SafeString:
    title = _("Cluster scaling")
    metrics = (run.cluster_metrics or {}).get("metrics", {})
    n = metrics.get("cluster_ranks_n")
    t_n = metrics.get("cluster_throughput_n_gbps")
    t_2n = metrics.get("cluster_throughput_2n_gbps")
    if not (n and isinstance(t_n, int | float) and isinstance(t_2n, int | float)):
        return empty_chart(title, _("No cluster measurement in this run"))
    efficiency = metrics.get("allreduce_throughput_scaling")
    bars = [
        (_("%(n)s ranks") % {"n": n}, float(t_n), True),
        (_("%(n)s ranks") % {"n": 2 * n}, float(t_2n), True),
    ]
    chart_title = title
    if isinstance(efficiency, int | float):
        chart_title = _(
            "Cluster scaling: all-reduce throughput ratio %(eff)s (not a training-step efficiency)"
        ) % {"eff": f"{efficiency:.2f}"}
    return bar_chart(
        chart_title, bars, unit="GB/s", threshold=2 * float(t_n), threshold_label=_("linear")
    )


def _unit(metric_key: str) -> str:
    spec = METRICS.get(metric_key.split("@", 1)[0])
    return spec.unit if spec else ""


@functools.cache
def _source_patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    """Each seed rule's source template as a pattern that captures its placeholders."""
    patterns = []
    for template in SOURCE_TEMPLATES:
        parts = re.split(r"\{(\w+)\}", template)
        regex = "".join(
            re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+)" for i, part in enumerate(parts)
        )
        patterns.append((re.compile(regex, re.S), template))
    return tuple(patterns)


def localized_source(text: str) -> str:
    """A rule's source in the active language: a seed rule's source (``SOURCE_TEMPLATES``,
    with the GPU facts it names) is rendered from its translated template; a source staff
    wrote themselves is shown as they wrote it."""
    for pattern, template in _source_patterns():
        match = pattern.fullmatch(text)
        if match is not None:
            params = {k: _(v) for k, v in match.groupdict().items()}
            return _(template).format(**params)
    return text


def _node_rows(result: ValidationNodeResult) -> list[dict[str, Any]]:
    rows = []
    for rr in result.rule_results:
        unit = rr.get("unit") or _unit(str(rr.get("metric", "")))
        measured = _measured_text(rr.get("measured"))
        rows.append(
            {
                "metric": rr.get("metric", ""),
                "measured": f"{measured} {unit}".strip() if measured != "—" else measured,
                "expected": f"{rr.get('expected') or '—'} {unit}".strip(),
                "status": rr.get("status", ""),
                "variance": rr.get("variance"),
                "source": localized_source(str(rr.get("source", ""))),
            }
        )
    return rows


def _size_run(check: dict[str, Any], metrics: dict[str, Any]) -> str:
    """What size the check ran at, as its output shows it."""
    name = check.get("name")
    details = check.get("details") or {}
    if name == "allreduce":
        size = metrics.get("allreduce_message_size_bytes") or details.get("message_size_bytes")
        return _size(float(size)) if isinstance(size, int | float) else ""
    if name == "gemm":
        n = details.get("n")
        secs = details.get("seconds")
        return f"{n}³" + (f", {secs:g} s" if isinstance(secs, int | float) else "") if n else ""
    if name == "memory_bandwidth":
        size = details.get("bytes")
        return _size(float(size)) if isinstance(size, int | float) else ""
    if name == "dcgm_diag":
        return f"-r {details['level']}" if details.get("level") else ""
    if name == "ib_write_bw":
        return ", ".join(details.get("devices") or [])
    return ""


def _node_checks(
    result: ValidationNodeResult, artifacts: Sequence[ValidationArtifact], metrics: dict[str, Any]
) -> list[dict[str, Any]]:
    """Per check: status, duration, the size it ran at and its raw output's SHA-256."""
    hashes = {a.check_name: a.sha256 for a in artifacts if a.node_id == result.node_id}
    rows = []
    for check in (result.report or {}).get("checks", []):
        if not isinstance(check, dict):
            continue
        name = str(check.get("name"))
        rows.append(
            {
                "name": name,
                "status": check.get("status", ""),
                "duration_s": check.get("duration_s"),
                "size": _size_run(check, metrics),
                "sha256": hashes.get(name[:48], ""),
            }
        )
    return rows


def _sustained(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """Per GPU, what was sampled during the sustained GEMM (clocks, temperature, power)."""
    temps = metrics.get("gpu_temperature_max_c") or []
    powers = metrics.get("gpu_power_max_w") or []
    clocks = metrics.get("gpu_sm_clock_min_mhz") or []
    tflops = metrics.get("gemm_tflops_bf16") or metrics.get("gemm_tflops_fp16") or []
    fp8 = metrics.get("gemm_tflops_fp8") or []
    rows = []
    for i in range(max(len(temps), len(powers), len(clocks), len(tflops))):
        rows.append(
            {
                "gpu": i,
                "tflops": _measured_text(tflops[i]) if i < len(tflops) else "—",
                "fp8": _measured_text(fp8[i]) if i < len(fp8) else "—",
                "temp": _measured_text(temps[i]) if i < len(temps) else "—",
                "power": _measured_text(powers[i]) if i < len(powers) else "—",
                "clock": _measured_text(clocks[i]) if i < len(clocks) else "—",
            }
        )
    return rows


def _derived_metrics(result: ValidationNodeResult) -> dict[str, Any]:
    if not result.report:
        return {}
    measurement = derive(result.report, node=result.hostname, gpu_model=result.gpu_model)
    return measurement.metrics


def is_simulated(results: Sequence[ValidationNodeResult]) -> bool:
    """A run on simulated hardware (the CPU path) or with nothing measured: no claim."""
    return not results or any(r.gpu_model in ("", "cpu") or r.device == "cpu" for r in results)


def acceptance_report_context(
    run: ValidationRun, *, language: str, swaps: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Everything the report template shows (``swaps``: dicts with ``old``, ``new``,
    ``reason``, ``at``; by default the order's swaps up to the run's end)."""
    order = run.order
    quote = order.quote if order else None
    results = list(
        run.results.select_related("node__rack", "node__leaf_switch", "node__node_type").order_by(
            "hostname"
        )
    )
    artifacts = list(
        ValidationArtifact.objects.filter(run=run)
        .select_related("node")
        .order_by("node__hostname", "pk")
        .only("check_name", "status", "sha256", "size", "raw_format", "node_id", "node__hostname")
    )
    nodes = []
    for result in results:
        host = result.report.get("host", {}) if result.report else {}
        gemm = _checks(result).get("gemm", {})
        metrics = _derived_metrics(result)
        nodes.append(
            {
                "result": result,
                "node": result.node,
                "host": host,
                "allow_tf32": (gemm.get("details") or {}).get("allow_tf32"),
                "rows": _node_rows(result),
                "checks": _node_checks(result, artifacts, metrics),
                "sustained": _sustained(metrics),
                "gemm_seconds": metrics.get("gemm_sustained_s"),
                # Translated from each reason's code and parameters (never the stored
                # English text).
                "reasons": reason_messages(result.reasons),
                "notes": reason_messages(result.notes),
            }
        )
    bars, threshold, unit = _gemm_bars(results)
    site = order.site if order else None
    # The site's seller entity (billing.documents.common.provider, as on quotes).
    the_provider = provider(language, site)
    simulated = is_simulated(results)
    simulated_label = _("SIMULATED HARDWARE: no performance claim")
    issued = timezone.localtime(run.finished_at or timezone.now())
    reference = order.number if order else _("Validation run %(id)s") % {"id": run.pk}
    return {
        "run": run,
        "order": order,
        "quote": quote,
        "organisation": order.organisation if order else None,
        "site": order.site if order else None,
        "placement": (quote.placement or {}) if quote else {},
        "nodes": nodes,
        "cluster_reasons": reason_messages(run.cluster_reasons or []),
        "cluster_results": [
            {**row, "source": localized_source(str(row.get("source", "")))}
            for row in (run.cluster_verdict or {}).get("results", [])
        ],
        "artifacts": artifacts,
        # The swaps of the order up to this run's end, unless the caller gives them.
        "swaps": list(swaps)
        if swaps is not None
        else (swap_rows(order.pk, until=run.finished_at) if order else []),
        "provider": the_provider,
        "issued": issued,
        "gemm_chart": bar_chart(
            _("GEMM throughput per GPU"),
            bars,
            unit=unit or "TFLOPS",
            threshold=threshold,
            threshold_label=_("threshold"),
        ),
        "allreduce_chart": line_chart(
            _("All-reduce bus bandwidth by message size"),
            _allreduce_series(run, results),
            unit="GB/s",
            x_label=_("message size"),
        ),
        "scaling_chart": _scaling_chart(run),
        "simulated": simulated,
        # On every page: a simulated run says so there (the running header).
        "running_left_css": css_content(
            f"{the_provider.brand} · {_('Acceptance report')}"
            + (f" · {simulated_label}" if simulated else "")
        ),
        "running_right_css": css_content(reference),
        "footer_left_css": css_content(_("Validation run %(id)s") % {"id": run.pk}),
    }


RENDER_TASK = "provisioning.validation.tasks.document_render_acceptance_report"


class AcceptanceReportKind(DocumentKind[ValidationRun, ValidationReport]):
    """A finished run's report: rendered and stored once per language, never replaced."""

    name = "acceptance_report"
    template = TEMPLATE
    render_task = RENDER_TASK
    model = ValidationReport
    owner_field = "run"

    def context(self, owner: ValidationRun, *, language: str) -> dict[str, Any]:
        with translation.override(language):
            return acceptance_report_context(owner, language=language)

    def filename(self, owner: ValidationRun, *, language: str) -> str:
        return (
            f"acceptance-{owner.order.number if owner.order else 'run'}-{owner.pk}-{language}.pdf"
        )

    def render(self, owner: ValidationRun, *, language: str) -> bytes:
        return seal(owner, super().render(owner, language=language))


def seal(run: ValidationRun, data: bytes) -> bytes:
    """The report with the same PAdES seal as contracts (billing.contracts.signatures),
    made with the seal certificate of the site's seller entity (the default identity for a
    run without an order)."""
    site = run.order.site if run.order else None
    return seal_pdf(
        data,
        seller=seller_for(site) if site else None,
        reason=f"Acceptance report of validation run {run.pk}"
        + (f", order {run.order.number}" if run.order else ""),
        location=site.code if site else "",
    )


ACCEPTANCE_REPORT = register(AcceptanceReportKind())


def render_acceptance_report(
    *, run: ValidationRun, language: str, swaps: Sequence[dict[str, Any]] | None = None
) -> bytes:
    """A fresh rendering of the run's report (not stored); ``swaps`` as in the context."""
    language = normalise_language(language)
    if swaps is None:
        return ACCEPTANCE_REPORT.render(run, language=language)
    with translation.override(language):
        context = acceptance_report_context(run, language=language, swaps=swaps)
    return seal(run, render_pdf(TEMPLATE, context, language=language))


def acceptance_report_document(*, run: ValidationRun, language: str) -> ValidationReport:
    """The run's stored report in ``language`` (rendered and stored once, with SHA-256)."""
    return ACCEPTANCE_REPORT.document(run, language=language)
