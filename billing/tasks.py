"""Thin Celery tasks for billing: take ids, re-fetch, return early if done, call a service."""

from __future__ import annotations

import logging
from smtplib import SMTPException

from celery import shared_task
from django.conf import settings
from django.core.mail import EmailMessage
from django.db import InterfaceError, OperationalError
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation

from billing.models import Quote, QuoteStatus
from billing.services import quotes as quote_services

logger = logging.getLogger(__name__)


@shared_task
def order_expire_unpaid_task() -> int:
    """Expire orders not paid by their deadline and free their nodes (beat). Idempotent."""
    from billing.services.orders import order_expire_unpaid

    return order_expire_unpaid()


@shared_task
def quote_expire_due_task() -> int:
    """Expire sent quotes past their validity (Celery beat). Idempotent."""
    return quote_services.quote_expire_due()


@shared_task(
    autoretry_for=(SMTPException, ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=5,
)
def quote_email(quote_id: int) -> str:
    """Email a sent quote to its contact with the PDF attached and the link to accept it.

    Sends once: ``emailed_at`` is claimed before sending, so a second run (or a second
    worker) returns early.
    """
    quote = Quote.objects.select_related("organisation", "site", "created_by").get(pk=quote_id)
    if quote.status != QuoteStatus.SENT or quote.emailed_at:
        return "skipped"
    from billing import documents

    document = documents.quote_document(quote=quote, language=quote.language)
    with translation.override(quote.language):
        link = settings.PORTAL_BASE_URL + reverse("quote_public", args=[quote.token])
        context = {"quote": quote, "link": link}
        subject = render_to_string("email/quote_sent_subject.txt", context).strip()
        body = render_to_string("email/quote_sent.txt", context)
    message = EmailMessage(
        subject=subject,
        body=body,
        to=[quote.contact_email],
        reply_to=[quote.created_by.email] if quote.created_by.email else None,
    )
    with document.file.open("rb") as fh:
        message.attach(f"{quote.number}-v{quote.version}.pdf", fh.read(), "application/pdf")
    # Claim the sending first: a second worker, or a retry after the mail server took the
    # message, finds it claimed and sends nothing. A failed send gives the claim back.
    claimed = Quote.objects.filter(pk=quote.pk, emailed_at__isnull=True).update(
        emailed_at=timezone.now()
    )
    if not claimed:
        return "skipped"
    try:
        message.send()
    except Exception:
        Quote.objects.filter(pk=quote.pk).update(emailed_at=None)
        raise
    return "sent"


# --- Documents (routed to the ``documents`` queue by the ``document_`` prefix) ----------


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    max_retries=3,
)
def document_render_quote(quote_id: int, language: str) -> str:
    """Render and store a quote's PDF (the ``documents`` queue); return its SHA-256.

    Idempotent: a sent quote's stored document is returned as it is, never re-rendered,
    so a second run (or a redelivery after a worker crash) changes nothing.
    """
    from billing import documents

    quote = Quote.objects.get(pk=quote_id)
    return documents.quote_document(quote=quote, language=language).sha256


@shared_task(acks_late=True)
def document_render_invoice(invoice_id: int, language: str) -> str:
    """Render and store an invoice's PDF for its current status (the ``documents``
    queue); return its SHA-256. Idempotent: the stored document for the same status is
    returned as it is."""
    from billing import invoices
    from billing.models import Invoice

    invoice = Invoice.objects.get(pk=invoice_id)
    return invoices.invoice_document(invoice=invoice, language=language).sha256


# --- Payments (the ``billing`` queue) ---------------------------------------------------


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    max_retries=5,
)
def stripe_event_process_task(event_id: str) -> str:
    """Act on a stored Stripe webhook event (by its Stripe id); returns its status.

    Idempotent: an event already processed, ignored or flagged is left as it is, and each
    handler is safe to run twice, so a redelivery changes nothing.
    """
    from billing.services.payments import stripe_event_process

    return stripe_event_process(event_id=event_id)


@shared_task
def stripe_events_retry_task(older_than_minutes: int = 5) -> int:
    """Re-run webhook events left received or failed (Celery beat). Stripe got its 200 and
    will not redeliver, so this is what makes a handler error or a lost task recoverable.
    Returns how many were re-run; each run is idempotent."""
    from datetime import timedelta

    from billing.models import StripeEvent, StripeEventStatus
    from billing.services.payments import stripe_event_process

    cutoff = timezone.now() - timedelta(minutes=older_than_minutes)
    stuck = list(
        StripeEvent.objects.filter(
            status__in=[StripeEventStatus.RECEIVED, StripeEventStatus.FAILED],
            received_at__lte=cutoff,
        )
        .order_by("received_at")
        .values_list("stripe_id", flat=True)[:100]
    )
    for event_id in stuck:
        stripe_event_process(event_id=event_id)
    return len(stuck)
