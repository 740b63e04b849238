"""The customers' maintenance calendar (iCal, RFC 5545, written by the ``icalendar``
library): every maintenance window over a booking of one organisation's orders, once its
customers were told (and a cancelled one as cancelled, so subscribed calendars drop it).

Two doors to the same feed: a secret address per organisation (signed, for calendar apps
that cannot log in; ``/maintenance/<token>/calendar.ics``) and the logged-in member's
``/<lang>/account/maintenance.ics``. Either shows only that organisation's windows.
"""

from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET
from icalendar import Calendar, Event

from accounts.decorators import customer_required
from inventory.models import MaintenancePlan, MaintenanceStatus, MaintenanceWindow, Reservation
from portal.operations import selectors, services

SHOWN = (MaintenanceStatus.ANNOUNCED, MaintenanceStatus.COMPLETED, MaintenanceStatus.CANCELLED)


def organisation_windows(organisation_id: int) -> list[MaintenanceWindow]:
    """The windows of told plans over the organisation's bookings (two queries)."""
    booked = Reservation.objects.filter(
        node=OuterRef("node"),
        status__in=selectors.SHOWN_RESERVATION_STATUSES,
        start_at__lt=OuterRef("end_at"),
        held_until__gt=OuterRef("start_at"),
        owner_ref__in=selectors.owner_refs_of_organisation(organisation_id),
    )
    return list(
        MaintenanceWindow.objects.filter(plan__status__in=SHOWN, plan__announced_at__isnull=False)
        .filter(Exists(booked))
        .select_related("plan__site", "node")
        .order_by("plan__start_at", "node__hostname")
    )


def feed(organisation_id: int) -> bytes:
    windows = organisation_windows(organisation_id)
    by_plan: dict[MaintenancePlan, list[MaintenanceWindow]] = defaultdict(list)
    for w in windows:
        if w.plan is not None:
            by_plan[w.plan].append(w)
    cal = Calendar()
    cal.add("prodid", f"-//{settings.PORTAL_PROVIDER_BRAND}//maintenance//EN")
    cal.add("version", "2.0")
    cal.add("x-wr-calname", _("Maintenance"))
    for plan, plan_windows in by_plan.items():
        event = Event()
        event.add("uid", f"maintenance-{plan.pk}@{settings.PORTAL_BASE_URL.split('://')[-1]}")
        event.add("dtstamp", plan.announced_at or timezone.now())
        event.add("dtstart", min(w.start_at for w in plan_windows))
        event.add("dtend", max(w.end_at for w in plan_windows))
        event.add("summary", _("Maintenance: %(title)s") % {"title": plan.title})
        event.add("location", plan.site.display_name)
        event.add(
            "description",
            _("Nodes: %(nodes)s") % {"nodes": ", ".join(w.node.hostname for w in plan_windows)},
        )
        event.add(
            "status", "CANCELLED" if plan.status == MaintenanceStatus.CANCELLED else "CONFIRMED"
        )
        cal.add_component(event)
    return cal.to_ical()


def _response(body: bytes) -> HttpResponse:
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="maintenance.ics"'
    response["Cache-Control"] = "private, max-age=300"
    return response


@require_GET
def feed_by_token(request: HttpRequest, token: str) -> HttpResponse:
    organisation_id = services.feed_organisation_id(token)
    if organisation_id is None:
        raise Http404
    lang = request.GET.get("lang", "")
    languages = {code for code, _name in settings.LANGUAGES}
    with translation.override(lang if lang in languages else settings.LANGUAGE_CODE):
        return _response(feed(organisation_id))


@customer_required
@require_GET
def feed_for_member(request: HttpRequest) -> HttpResponse:
    organisation = request.organisation  # type: ignore[attr-defined]
    return _response(feed(organisation.pk))
