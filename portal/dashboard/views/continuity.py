"""The customer's view of dunning and renewals under ``/<lang>/account/orders/<number>/``:
the order's suspension (why, since when, how to resume) and its renewal offer."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.decorators import customer_required
from portal.dashboard import selectors
from portal.dashboard.views.common import order_or_404


@customer_required
@require_GET
def order_suspension(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    return render(
        request,
        "dashboard/suspension.html",
        {
            "order": order,
            "site_timezone": order.site.timezone,
            "suspensions": selectors.order_suspensions(order),
            "events": selectors.order_suspension_events(order),
            **selectors.order_continuity(order),
        },
    )


@customer_required
@require_GET
def order_renewal(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    renewal = selectors.order_renewal(order)
    quote = renewal.quote if renewal is not None else None
    new_order = getattr(quote, "order", None) if quote is not None else None
    return render(
        request,
        "dashboard/renewal.html",
        {
            "order": order,
            "site_timezone": order.site.timezone,
            "renewal": renewal,
            "quote": quote,
            "new_order": new_order,
            "renewal_days": settings.PORTAL_RENEWAL_DAYS,
        },
    )
