"""Staff pages of the operations console, under ``/<lang>/staff/operations/``. Each names
the permission it needs (403 before anything is looked up): the calendar
``inventory.view_reservation``; maintenance ``inventory.view_maintenanceplan`` to see,
``inventory.add_maintenanceplan`` to plan, ``inventory.override_booking`` to plan over an
active booking, ``inventory.change_maintenanceplan`` to cancel or complete; utilisation and
revenue ``inventory.see_operations_reports`` (Operations and Finance)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from dateutil.relativedelta import relativedelta
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.csv import csv_download, write_csv
from core.errors import DomainError
from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from inventory.models import MaintenancePlan, MaintenanceScope
from portal.operations import charts, forms, reports, selectors, services
from portal.operations.calendar import ZOOM_DAYS, calendar_window
from portal.support import selectors as support_selectors
from provisioning.views import staff_permission_required

VIEW_CALENDAR = "inventory.view_reservation"
VIEW_MAINTENANCE = "inventory.view_maintenanceplan"
PLAN_MAINTENANCE = "inventory.add_maintenanceplan"
OVERRIDE_BOOKING = "inventory.override_booking"
CHANGE_MAINTENANCE = "inventory.change_maintenanceplan"
VIEW_REPORTS = "inventory.see_operations_reports"

TICK_HOURS = {"day": 3, "week": 24, "month": 24 * 2, "quarter": 24 * 7}


def _ticks(zoom: str, start: Any, end: Any) -> list[dict[str, Any]]:
    step = timedelta(hours=TICK_HOURS[zoom])
    span = (end - start).total_seconds()
    out, at = [], start
    while at < end:
        local = timezone.localtime(at, start.tzinfo)
        out.append(
            {
                "left": round(100 * (at - start).total_seconds() / span, 3),
                "label": local.strftime("%H:%M") if zoom == "day" else local.strftime("%m-%d"),
            }
        )
        at += step
    return out


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The "Operations" link of every staff page: the calendar for staff who may see it,
    else utilisation and revenue, else 403. The link itself checks no permission (that
    would cost every page two queries); this view does."""
    user = request.user
    if not (user.is_authenticated and user.is_staff):
        raise PermissionDenied
    if user.has_perm(VIEW_CALENDAR):
        return redirect("operations:calendar")
    if user.has_perm(VIEW_REPORTS):
        return redirect("operations:reports")
    raise PermissionDenied


@staff_permission_required(VIEW_CALENDAR)
@require_GET
def calendar(request: HttpRequest) -> HttpResponse:
    form = forms.CalendarFilterForm(request.GET or None)
    if request.GET and not form.is_valid():
        return render(request, "operations/calendar.html", {"form": form, "cal": None}, status=400)
    if not request.GET:
        form = forms.CalendarFilterForm({"zoom": "week"})
        form.is_valid()
    zoom, start, end = form.window()
    data = form.cleaned_data
    with timezone.override(start.tzinfo):
        cal = calendar_window(
            start=start,
            end=end,
            site_id=data["site"].pk if data.get("site") else None,
            node_type_id=data["node_type"].pk if data.get("node_type") else None,
            status=data.get("status") or "",
            organisation_id=data["customer"].pk if data.get("customer") else None,
            page=data.get("page") or 1,
            page_size=settings.PORTAL_CALENDAR_PAGE_SIZE,
        )
    params = {k: v for k, v in request.GET.items() if k not in ("page", "start")}
    params.setdefault("zoom", zoom)
    days = ZOOM_DAYS[zoom]

    def link(**changes: Any) -> str:
        return "?" + urlencode({**params, **changes})

    now = timezone.now()
    context = {
        "form": form,
        "cal": cal,
        "zoom": zoom,
        "zooms": [(z, label, link(zoom=z, start=start.date())) for z, label in forms.ZOOM_CHOICES],
        "ticks": _ticks(zoom, start, end),
        "earlier": link(start=(start - timedelta(days=days)).date()),
        "later": link(start=(start + timedelta(days=days)).date()),
        "today": link(),
        "page_prev": link(start=start.date(), page=cal.page - 1) if cal.page > 1 else "",
        "page_next": link(start=start.date(), page=cal.page + 1) if cal.page < cal.pages else "",
        "now_left": round(100 * (now - start) / (end - start), 3) if start <= now < end else None,
        "kinds": [
            ("hold", _("hold")),
            ("firm", _("firm booking")),
            ("cleaning", _("cleaning")),
            ("maintenance", _("maintenance")),
            ("faulty", _("faulty")),
            ("swap", _("swap")),
        ],
        "zone": str(start.tzinfo),
    }
    return render(request, "operations/calendar.html", context)


# --- Maintenance -----------------------------------------------------------------------


@staff_permission_required(VIEW_MAINTENANCE)
@require_GET
def maintenance_list(request: HttpRequest) -> HttpResponse:
    plans = MaintenancePlan.objects.select_related("site", "rack", "switch", "created_by").order_by(
        "-start_at", "-pk"
    )[:200]
    return render(request, "operations/maintenance_list.html", {"plans": plans})


@staff_permission_required(PLAN_MAINTENANCE)
@require_http_methods(["GET", "POST"])
def maintenance_new(request: HttpRequest) -> HttpResponse:
    """Choose nodes, a rack or a switch and a window; *preview* lists every booking,
    order and customer it touches; *confirm* plans it (over bookings only with the
    override permission and a reason)."""
    form = forms.MaintenanceForm(request.POST or None, initial={"scope": MaintenanceScope.NODES})
    context: dict[str, Any] = {
        "form": form,
        "may_override": request.user.has_perm(OVERRIDE_BOOKING),
    }
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        nodes = inventory_selectors.maintenance_scope_nodes(
            scope=data["scope"],
            node_ids=data.get("node_ids", ()),
            rack=data.get("rack"),
            switch=data.get("switch"),
        )
        clashes = inventory_selectors.maintenance_clashes(
            node_ids=[n.pk for n in nodes], start_at=data["start"], end_at=data["end"]
        )
        affected = selectors.affected_bookings(clashes)
        context.update(
            nodes=nodes,
            affected=affected,
            customers=selectors.organisations_of(affected),
            previewed=True,
            firm=any(a.status == "firm" for a in affected),
        )
        if request.POST.get("action") == "confirm":
            if affected and not context["may_override"]:
                raise PermissionDenied
            try:
                plan = inventory_services.maintenance_plan_create(
                    title=data["title"],
                    scope=data["scope"],
                    start_at=data["start"],
                    end_at=data["end"],
                    node_ids=[n.pk for n in nodes],
                    rack=data.get("rack"),
                    switch=data.get("switch"),
                    notice_days=data["notice_days"],
                    override_reason=data.get("override_reason", "") if affected else "",
                    actor=request.user,
                )
            except DomainError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, _("Maintenance planned."))
                return redirect("operations:maintenance_detail", plan_id=plan.pk)
    status = 400 if request.method == "POST" and not form.is_valid() else 200
    return render(request, "operations/maintenance_new.html", context, status=status)


@staff_permission_required(VIEW_MAINTENANCE)
@require_GET
def maintenance_detail(request: HttpRequest, plan_id: int) -> HttpResponse:
    plan = get_object_or_404(
        MaintenancePlan.objects.select_related("site", "rack", "switch", "created_by"), pk=plan_id
    )
    affected = services.plan_affected(plan)
    return render(
        request,
        "operations/maintenance_detail.html",
        {
            "plan": plan,
            "nodes": [
                w.node for w in plan.windows.select_related("node").order_by("node__hostname")
            ],
            "affected": affected,
            "notices": plan.notices.select_related("organisation"),
            "events": plan.events.select_related("actor").order_by("-created_at", "-id"),
            "reason_form": forms.ReasonForm(),
            "zone": plan.site.timezone,
        },
    )


def _plan_action(request: HttpRequest, plan_id: int, action: str) -> HttpResponse:
    plan = get_object_or_404(MaintenancePlan, pk=plan_id)
    form = forms.ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Say why."))
        return redirect("operations:maintenance_detail", plan_id=plan.pk)
    try:
        if action == "cancel":
            inventory_services.maintenance_plan_cancel(
                plan=plan, actor=request.user, reason=form.cleaned_data["reason"]
            )
            messages.success(request, _("Maintenance called off: the nodes are free again."))
        else:
            inventory_services.maintenance_plan_complete(
                plan=plan, actor=request.user, reason=form.cleaned_data["reason"]
            )
            messages.success(request, _("Maintenance completed."))
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("operations:maintenance_detail", plan_id=plan.pk)


@staff_permission_required(CHANGE_MAINTENANCE)
@require_POST
def maintenance_cancel(request: HttpRequest, plan_id: int) -> HttpResponse:
    return _plan_action(request, plan_id, "cancel")


@staff_permission_required(CHANGE_MAINTENANCE)
@require_POST
def maintenance_complete(request: HttpRequest, plan_id: int) -> HttpResponse:
    return _plan_action(request, plan_id, "complete")


# --- Utilisation and revenue -------------------------------------------------------------


def _svg(markup: str) -> SafeString:
    """A chart's markup: ``charts.bar_chart`` escapes every text it writes."""
    return mark_safe(markup)  # noqa: S308


def _percent(value: Decimal | None) -> Decimal | None:
    return None if value is None else (value * 100).quantize(Decimal("0.1"))


@staff_permission_required(VIEW_REPORTS)
@require_GET
def reports_page(request: HttpRequest) -> HttpResponse:
    form = forms.ReportForm(request.GET or None)
    if request.GET and not form.is_valid():
        return render(request, "operations/reports.html", {"form": form}, status=400)
    data = form.cleaned_data if form.is_bound else {}
    today = timezone.localdate()
    by = data.get("by") or "day"
    last = data.get("last") or today
    first = data.get("first") or (
        last - timedelta(days=29)
        if by == "day"
        else (last - relativedelta(months=11)).replace(day=1)
    )
    util = reports.utilisation(first=first, last=last, by=by)
    money = reports.revenue(first=first.replace(day=1) if by == "day" else first, last=last)
    table = request.GET.get("csv")
    if table == "utilisation":
        return _utilisation_csv(util, first=first, last=last)
    if table == "revenue":
        return _revenue_csv(money, first=first, last=last)
    query = urlencode({"first": str(first), "last": str(last), "by": by})
    return render(
        request,
        "operations/reports.html",
        {
            "form": form,
            "first": first,
            "last": last,
            "by": by,
            "util_charts": _utilisation_charts(util, by=by),
            "money_charts": _revenue_charts(money),
            "spares": reports.spare_pool(),
            "csv_utilisation": f"{reverse('operations:reports')}?{query}&csv=utilisation",
            "csv_revenue": f"{reverse('operations:reports')}?{query}&csv=revenue",
            # The support desk's missed clocks (issue 22), for the roles that see tickets.
            "missed": support_selectors.missed_clocks_summary()
            if request.user.has_perm("support.view_ticket")
            else None,
        },
    )


def _utilisation_csv(util: list[reports.UtilisationRow], *, first: Any, last: Any) -> HttpResponse:
    return csv_download(
        write_csv(
            (
                [
                    r.site.code,
                    r.node_type.code,
                    r.period.isoformat(),
                    r.available_hours,
                    r.reserved_hours,
                    "" if r.utilisation is None else r.utilisation,
                ]
                for r in util
            ),
            columns=[
                "site",
                "node_type",
                "period",
                "available_node_hours",
                "reserved_node_hours",
                "utilisation",
            ],
            verbatim=("available_node_hours", "reserved_node_hours", "utilisation"),
        ),
        filename=f"utilisation-{first}-{last}.csv",
    )


def _revenue_csv(money: list[reports.RevenueRow], *, first: Any, last: Any) -> HttpResponse:
    return csv_download(
        write_csv(
            (
                [
                    r.month.strftime("%Y-%m"),
                    r.currency,
                    r.booked,
                    r.invoiced,
                    r.collected,
                    r.pipeline,
                    r.pipeline_quotes,
                ]
                for r in money
            ),
            columns=[
                "month",
                "currency",
                "booked",
                "invoiced",
                "collected",
                "pipeline",
                "pipeline_quotes",
            ],
            verbatim=("booked", "invoiced", "collected", "pipeline", "pipeline_quotes"),
        ),
        filename=f"revenue-{first}-{last}.csv",
    )


def _utilisation_charts(util: list[reports.UtilisationRow], *, by: str) -> list[dict[str, Any]]:
    """One bar chart per site and node type: reserved over available node-hours."""
    groups: dict[tuple[str, str], list[reports.UtilisationRow]] = {}
    for r in util:
        groups.setdefault((r.site.code, r.node_type.display_name), []).append(r)
    return [
        {
            "title": f"{site} · {name}",
            "svg": _svg(
                charts.bar_chart(
                    labels=[r.period.strftime("%m-%d" if by == "day" else "%Y-%m") for r in rows],
                    series=[
                        charts.Series(_("utilisation"), [_percent(r.utilisation) for r in rows])
                    ],
                    title=f"{site} · {name}: {_('reserved / available node-hours')}",
                    unit="%",
                    max_value=100.0,
                )
            ),
            "rows": rows,
        }
        for (site, name), rows in groups.items()
    ]


def _revenue_charts(money: list[reports.RevenueRow]) -> list[dict[str, Any]]:
    """One bar chart per currency: booked, invoiced, collected and the pipeline."""
    currencies: dict[str, list[reports.RevenueRow]] = {}
    for m in money:
        currencies.setdefault(m.currency, []).append(m)
    return [
        {
            "currency": cur,
            "svg": _svg(
                charts.bar_chart(
                    labels=[m.month.strftime("%Y-%m") for m in rows],
                    series=[
                        charts.Series(_("booked"), [m.booked for m in rows]),
                        charts.Series(_("invoiced"), [m.invoiced for m in rows]),
                        charts.Series(_("collected"), [m.collected for m in rows]),
                        charts.Series(_("pipeline"), [m.pipeline for m in rows]),
                    ],
                    title=f"{cur}: {_('revenue per month')}",
                )
            ),
            "rows": rows,
        }
        for cur, rows in currencies.items()
    ]
