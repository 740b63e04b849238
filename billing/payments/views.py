"""Paying an order: the customer's payment pages (card, Alipay and WeChat Pay through
Stripe's Payment Element; bank transfer details) and Stripe's webhook endpoint."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import DataError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone, translation
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.models import Membership
from billing import stripe_api
from billing.contracts import gate
from billing.documents import common as document_common
from billing.documents.common import issues_payment_requests
from billing.models import InvoiceStatus, Order, OrderStatus
from billing.orders import selectors as order_selectors
from billing.payments import services as payments
from billing.payments import webhooks
from billing.pricing.terms import online_methods_text
from core.errors import DomainError


def _order_for(request: HttpRequest, number: str) -> Order:
    """The order, for staff and the members of its organisation; 404 for anyone else."""
    order = Order.objects.select_related("site", "organisation").filter(number=number).first()
    if order is None:
        raise Http404
    user = request.user
    if not user.is_staff and not (
        Membership.objects.filter(user=user, organisation_id=order.organisation_id).exists()
    ):
        raise Http404
    return order


def _context(order: Order) -> dict[str, Any]:
    later_invoice = order_selectors.order_later_open_invoice(order)
    later = later_invoice is not None
    invoice = later_invoice or order_selectors.order_first_invoice(order)
    due = later_invoice.due_at if later_invoice is not None else order.payment_due_at
    return {
        "order": order,
        "invoice": invoice,
        "due": due,  # shown in the site's timezone
        "site_timezone": order.site.timezone,
        # What is still missing (contract or terms, payment), as on the order's page.
        "order_status_label": gate.gate_state(order).status_label,
        # Mainland sellers send payment requests (付款通知书), Hong Kong ones invoices.
        "payment_request": issues_payment_requests(order.site),
        "payable": later
        or (
            order.status == OrderStatus.AWAITING_PAYMENT
            and invoice is not None
            and invoice.status == InvoiceStatus.ISSUED
            and (due is None or timezone.now() < due)
        ),
    }


@login_required
@require_GET
def order_pay(request: HttpRequest, number: str) -> HttpResponse:
    order = _order_for(request, number)
    context = _context(order)
    context.update(
        {
            "online_methods": (online := online_methods_text()),
            "card_configured": bool(online),
            "not_configured_message": payments.not_configured_message(),
            "bank": document_common.bank_details(order.site, translation.get_language() or "en"),
        }
    )
    return render(request, "billing/pay/order_pay.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def order_pay_card(request: HttpRequest, number: str) -> HttpResponse:
    """POST starts (or reuses) the invoice's PaymentIntent; GET shows its Payment Element.

    Only the POST writes (a PaymentIntent and a Payment row), so a link or an image
    pointing here cannot start a payment for a logged-in customer.
    """
    order = _order_for(request, number)
    try:
        if request.method == "POST":
            payments.payment_card_start(order=order, actor=request.user)
            return redirect("order_pay_card", order.number)
        found = payments.payment_card_resume(order=order)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("order_pay", order.number)
    if found is None:
        return redirect("order_pay", order.number)
    payment, client_secret = found
    language = translation.get_language() or "en"
    context = _context(order)
    context["stripe_config"] = {
        "publishableKey": stripe_api.publishable_key(),
        "clientSecret": client_secret,
        "returnUrl": settings.PORTAL_BASE_URL + reverse("order_pay_return", args=[order.number]),
        "locale": "zh" if language.startswith("zh") else "en",
    }
    context["payment"] = payment
    return render(request, "billing/pay/card.html", context)


@login_required
@require_GET
def order_pay_return(request: HttpRequest, number: str) -> HttpResponse:
    """Where Stripe sends the customer back: processing, paid, or failed."""
    order = _order_for(request, number)
    state, payment = payments.order_payment_state(
        order=order,
        payment_intent_id=request.GET.get("payment_intent", ""),
        redirect_status=request.GET.get("redirect_status", ""),
    )
    context = _context(order)
    context.update({"state": state, "payment": payment})
    return render(request, "billing/pay/return.html", context)


@csrf_exempt
@require_POST
def stripe_webhook(request: HttpRequest) -> HttpResponse:
    """Verify the signature on the raw body, then decode it (400 and nothing stored when
    either fails: a bad, stale or future signature, or a body that is not a JSON object
    we can store), store the event once, and process it in a task after commit. A
    duplicate is answered 200."""
    try:
        event = stripe_api.webhook_event_construct(
            request.body, request.headers.get("Stripe-Signature")
        )
        webhooks.stripe_event_receive(event=event)
    except (stripe_api.SignatureVerificationError, stripe_api.InvalidPayload, DataError):
        # DataError: the database refused the content (the receive rolled back, so nothing
        # is stored); resending it would fail the same way, so it is not a 500.
        return HttpResponseBadRequest(
            "Invalid signature or payload.", content_type="text/plain; charset=utf-8"
        )
    return HttpResponse("ok", content_type="text/plain; charset=utf-8")
