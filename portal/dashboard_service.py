"""The customer's view of dunning and renewals under ``/<lang>/account/orders/<number>/``:
the order's suspension (why, since when, how to resume) and its renewal offer.

Every view looks the order up with ``request.organisation``: another organisation's order
answers 404, exactly like one that does not exist.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.decorators import customer_required
from billing.dunning import services as dunning
from billing.models import Order, Renewal, SuspensionEvent
from portal import dashboard_selectors as selectors


def _order(request: HttpRequest, number: str) -> Order:
    order = selectors.order_for_org(request.organisation, number)
    if order is None:
        raise Http404
    return order


def service_context(order: Order) -> dict[str, object]:
    """What the order page shows of dunning and renewal (two small queries)."""
    return {
        "open_suspension": dunning.open_suspension(order),
        "announced_suspension": dunning.announced_suspension(order),
        "renewal": Renewal.objects.filter(order=order).select_related("quote").first(),
    }


@customer_required
@require_GET
def order_suspension(request: HttpRequest, number: str) -> HttpResponse:
    order = _order(request, number)
    suspensions = list(order.suspensions.select_related("invoice").order_by("-suspended_at"))
    events = list(
        SuspensionEvent.objects.filter(suspension__order=order)
        .select_related("suspension__invoice")
        .order_by("created_at", "pk")
    )
    return render(
        request,
        "dashboard/suspension.html",
        {
            "order": order,
            "site_timezone": order.site.timezone,
            "suspensions": suspensions,
            "events": events,
            **service_context(order),
        },
    )


@customer_required
@require_GET
def order_renewal(request: HttpRequest, number: str) -> HttpResponse:
    order = _order(request, number)
    renewal = Renewal.objects.filter(order=order).select_related("quote").first()
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
