"""The customer's side of a quote: the unguessable link from the email, its PDF, accept/reject."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.models import Membership
from accounts.throttle import client_ip
from billing.models import QUOTE_SENT_STATUSES, Order, Quote, QuoteStatus
from billing.orders import acceptance
from billing.quotes import documents as quote_documents
from billing.quotes import services as quote_services
from billing.quotes.views import documents
from core.errors import DomainError, NotEnoughCapacity


def _quote_for(request: HttpRequest, token: str) -> Quote:
    """The quote behind a token, or 404: unknown tokens, unsent quotes, and logged-in
    customers of another organisation all get the same answer."""
    quote = (
        Quote.objects.select_related("organisation", "site", "created_by", "price_book")
        .prefetch_related("lines")
        .filter(token=token, status__in=QUOTE_SENT_STATUSES)
        .first()
    )
    if quote is None:
        raise Http404
    user = request.user
    if (
        user.is_authenticated
        and not user.is_staff
        and not Membership.objects.filter(user=user, organisation_id=quote.organisation_id).exists()
    ):
        raise Http404
    return quote


@require_GET
def quote_public(request: HttpRequest, token: str) -> HttpResponse:
    quote = _quote_for(request, token)
    newer = Quote.objects.filter(previous=quote).exclude(status__in=["draft"]).first()
    order = Order.objects.filter(quote=quote).only("number", "status").first()
    return render(
        request,
        "billing/quote_public.html",
        {
            "quote": quote,
            "lines": quote.lines.all(),
            "newer": newer if newer and newer.status in QUOTE_SENT_STATUSES else None,
            "can_decide": quote.status == QuoteStatus.SENT,
            "order": order,
            "expiry": quote.expiry,
            "holds": quote_documents.quote_holds(quote) if quote.status == QuoteStatus.SENT else [],
            "default_name": request.user.get_full_name() if request.user.is_authenticated else "",
        },
    )


@require_POST
def quote_public_accept(request: HttpRequest, token: str) -> HttpResponse:
    quote = _quote_for(request, token)
    name = request.POST.get("name", "")
    try:
        order = acceptance.quote_accept(
            quote=quote, user=request.user, name=name, ip=client_ip(request)
        )
    except quote_services.NodesGone as exc:
        try:
            fresh = acceptance.quote_refresh(quote=quote)
        except NotEnoughCapacity as capacity:
            messages.error(
                request,
                _("%(gone)s %(capacity)s Your account manager has been told and will contact you.")
                % {"gone": exc.message, "capacity": capacity.message},
            )
            return redirect("quote_public", token=token)
        except DomainError as other:  # e.g. a revision exists already
            messages.error(request, f"{exc.message} {other.message}")
            return redirect("quote_public", token=token)
        messages.warning(
            request,
            _("%(gone)s Here is a fresh quote with other nodes (v%(version)s).")
            % {"gone": exc.message, "version": fresh.version},
        )
        return redirect("quote_public", token=fresh.token)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("quote_public", token=token)
    messages.success(
        request,
        _("Thank you: quote %(quote)s is accepted and order %(order)s is waiting for "
          "payment. The nodes stay held for you until the payment deadline.")
        % {"quote": quote.number, "order": order.number},
    )  # fmt: skip
    return redirect("order_pay", order.number)


@require_POST
def quote_public_reject(request: HttpRequest, token: str) -> HttpResponse:
    quote = _quote_for(request, token)
    try:
        acceptance.quote_reject(
            quote=quote,
            user=request.user,
            name=request.POST.get("name", ""),
            ip=client_ip(request),
            reason=request.POST.get("reason", ""),
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.info(request, _("The quote was rejected; the held nodes are released."))
    return redirect("quote_public", token=token)


@require_GET
def quote_public_pdf(request: HttpRequest, token: str) -> HttpResponse:
    quote = _quote_for(request, token)
    language = translation.get_language() or quote.language
    return documents.quote_pdf_response(
        request,
        quote=quote,
        language=language,
        filename=f"{quote.number}-v{quote.version}.pdf",
        back_url=reverse("quote_public", args=[token]),
    )
