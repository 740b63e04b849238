"""Day two on the customer's side: the monitoring panel of an order (charts drawn on the
server as SVG and refreshed by htmx, CSV and JSON export), the replacement policy and the
approval of a replacement that waits for the customer."""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, datetime

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.decorators import customer_required
from core.errors import DomainError
from inventory.models import Node
from portal.dashboard.views.common import order_or_404
from portal.dashboard.views.orders import ACCESS_EDITORS
from provisioning.health import selectors as health_selectors
from provisioning.health import services as health_services
from provisioning.health.utilisation import POINTERS
from provisioning.models import HealthIncident, IncidentStatus
from provisioning.telemetry import panel
from provisioning.telemetry.prometheus import PrometheusUnavailable


def _choice(request: HttpRequest, name: str, table: dict[str, object], default: str) -> str:
    """A key from a fixed table; anything else is the default (never passed on)."""
    value = request.GET.get(name, default)
    return value if value in table else default


@customer_required
@require_GET
def order_monitoring(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    range_key = _choice(request, "range", panel.RANGES, "hour")
    try:
        gpus = panel.gpu_inventory(order)
        unavailable = False
    except PrometheusUnavailable:
        gpus, unavailable = [], True
    tenures = panel.order_tenures(order)
    alert = health_selectors.order_latest_alert(order)
    return render(
        request,
        "dashboard/monitoring.html",
        {
            "order": order,
            "range_key": range_key,
            "ranges": [(k, v[0]) for k, v in panel.RANGES.items()],
            "metrics": list(panel.METRICS.values()),
            "gpus": gpus,
            "nodes": [
                {"node": n, "since": tenures[n.hostname][0], "until": tenures[n.hostname][1]}
                for n in Node.objects.filter(hostname__in=list(tenures)).order_by("hostname")
            ],
            "incidents": health_selectors.order_incidents(order),
            "low_utilisation": alert,
            "low_utilisation_pointer": alert and POINTERS.get(alert.pointer, alert.pointer),
            "unavailable": unavailable,
            "refresh_s": settings.PORTAL_PANEL_REFRESH_S,
        },
    )


@customer_required
@require_GET
def order_monitoring_chart(request: HttpRequest, number: str, metric: str) -> HttpResponse:
    order = order_or_404(request, number)
    if metric not in panel.METRICS:
        raise Http404
    range_key = _choice(request, "range", panel.RANGES, "hour")
    try:
        panel_metric, rows = panel.series(order, metric=metric, range_key=range_key)
        error = ""
    except PrometheusUnavailable:
        panel_metric, rows, error = panel.METRICS[metric], [], _("Monitoring is unavailable.")
    return render(
        request,
        "dashboard/_monitoring_chart.html",
        {
            "order": order,
            "metric": panel_metric,
            "range_key": range_key,
            "svg": panel.svg_chart(
                rows,
                unit=panel_metric.unit,
                start=time.time() - panel.RANGES[range_key][1],
                end=time.time(),
            ),
            "legend": [(s.name, panel.PALETTE[i % len(panel.PALETTE)]) for i, s in enumerate(rows)],
            "error": error,
        },
    )


@customer_required
@require_GET
def order_monitoring_export(request: HttpRequest, number: str, fmt: str) -> HttpResponse:
    order = order_or_404(request, number)
    if fmt not in ("csv", "json"):
        raise Http404
    metric = _choice(request, "metric", panel.METRICS, "sm")
    range_key = _choice(request, "range", panel.RANGES, "hour")
    try:
        panel_metric, rows = panel.series(order, metric=metric, range_key=range_key)
    except PrometheusUnavailable:
        return HttpResponse(_("Monitoring is unavailable."), status=503)
    records = [
        {
            "time": datetime.fromtimestamp(t, tz=UTC).isoformat(),
            "node": s.node,
            "gpu": s.gpu,
            "metric": panel_metric.key,
            "unit": panel_metric.unit,
            "value": round(v, 4),
        }
        for s in rows
        for t, v in s.points
    ]
    filename = f"{order.number}-{metric}-{range_key}"
    if fmt == "json":
        response = JsonResponse({"order": order.number, "series": records})
        response["Content-Disposition"] = f'attachment; filename="{filename}.json"'
        return response
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["time", "node", "gpu", "metric", "unit", "value"])
    writer.writeheader()
    writer.writerows(records)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    return response


@customer_required
@require_POST
def order_replacement_policy(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    target = reverse("dashboard_order", args=[order.number]) + "#health"
    if request.membership.role not in ACCESS_EDITORS:
        messages.error(request, _("Only owners and members choose the replacement policy."))
        return redirect(target)
    try:
        minutes = int(request.POST.get("ask_minutes", "30"))
    except ValueError:
        minutes = -1
    try:
        health_services.policy_set(
            order=order, mode=request.POST.get("mode", ""), ask_minutes=minutes, actor=request.user
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Replacement policy saved."))
    return redirect(target)


@customer_required
@require_POST
def order_incident_approve(request: HttpRequest, number: str, incident_id: int) -> HttpResponse:
    order = order_or_404(request, number)
    target = reverse("dashboard_order", args=[order.number]) + "#health"
    incident = HealthIncident.objects.filter(
        pk=incident_id, order=order, status=IncidentStatus.AWAITING
    ).first()
    if incident is None:
        messages.error(request, _("This replacement is not waiting for approval."))
        return redirect(target)
    if request.membership.role not in ACCESS_EDITORS:
        messages.error(request, _("Only owners and members approve a replacement."))
        return redirect(target)
    try:
        health_services.incident_approve(incident=incident, actor=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Approved: the node is being replaced."))
    return redirect(target)
