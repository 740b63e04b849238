"""Thin Celery tasks for billing: take ids, re-fetch, return early if done, call a service.

Tasks import services, never the reverse: services enqueue by task name through
``core.jobs``. Each task has its own time limit; those that may run twice without harm
acknowledge late, so a worker killed mid-task leaves the message for another.
"""

from __future__ import annotations

from datetime import timedelta
from smtplib import SMTPException

from celery import shared_task
from django.db import InterfaceError, OperationalError

from billing import catalog, contract_pdf, invoices, quote_pdf
from billing.models import Contract, Invoice, Quote
from billing.services import contracts as contract_services
from billing.services import dunning, dunning_emails, estimates, orders, payments, renewals, sweeps
from billing.services import quotes as quote_services
from billing.services.quotes.emails import quote_email_send

# Seconds: (soft, hard). The soft limit raises inside the task so it can stop cleanly.
SWEEP_LIMITS = {"soft_time_limit": 120, "time_limit": 150}
PDF_LIMITS = {"soft_time_limit": 120, "time_limit": 150}
MAIL_LIMITS = {"soft_time_limit": 60, "time_limit": 90}
STRIPE_LIMITS = {"soft_time_limit": 60, "time_limit": 90}
# Document renders are safe to run twice (stored once per owner and language): they are
# acknowledged late, re-run when their worker dies, and retried on database errors.
DOCUMENT_TASK = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "max_retries": 3,
    **PDF_LIMITS,
}


@shared_task(soft_time_limit=50, time_limit=60)
def catalog_calendar_refresh_task() -> int:
    """Compute the landing page's availability calendar (beat, every minute; also asked
    for by the page when none is stored). Idempotent: each run replaces the stored one.
    The limits keep a run inside its minute; if one is cut short, the calendar stored
    before stays shown."""
    return catalog.calendar_refresh()


@shared_task(**SWEEP_LIMITS)
def order_expire_unpaid_task() -> int:
    """Expire orders not paid by their deadline and free their nodes (beat). Idempotent."""
    return orders.order_expire_unpaid()


@shared_task(**SWEEP_LIMITS)
def quote_expire_due_task() -> int:
    """Expire sent quotes past their validity (Celery beat). Idempotent."""
    return quote_services.quote_expire_due()


@shared_task(
    autoretry_for=(SMTPException, ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=5,
    **MAIL_LIMITS,
)
def quote_email(quote_id: int) -> str:
    """Email a sent quote with its PDF and accept link; sends once (see the service)."""
    return quote_email_send(quote_id=quote_id)


# --- Documents (routed to the ``documents`` queue by the ``document_`` prefix) ----------


@shared_task(**DOCUMENT_TASK)
def document_render_quote(quote_id: int, language: str) -> str:
    """Render and store a quote's PDF; return its SHA-256. Idempotent: a sent quote's
    stored document is returned as it is, never re-rendered."""
    quote = Quote.objects.get(pk=quote_id)
    return quote_pdf.quote_document(quote=quote, language=language).sha256


@shared_task(**DOCUMENT_TASK)
def document_render_estimate(estimate_id: int) -> str:
    """Render and store an anonymous estimate's PDF; return its SHA-256. Idempotent."""
    return estimates.estimate_render(estimate_id=estimate_id)


@shared_task(**DOCUMENT_TASK)
def document_render_invoice(invoice_id: int, language: str) -> str:
    """Render and store an invoice's PDF for its current status; return its SHA-256.
    Idempotent: the stored document for the same status is returned as it is."""
    invoice = Invoice.objects.get(pk=invoice_id)
    return invoices.invoice_document(invoice=invoice, language=language).sha256


# --- Payments (the ``billing`` queue) ---------------------------------------------------


@shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    max_retries=5,
    **STRIPE_LIMITS,
)
def stripe_event_process_task(event_id: str) -> str:
    """Act on a stored Stripe webhook event (by its Stripe id); returns its status.
    Idempotent: an event already processed, ignored or flagged is left as it is."""
    return payments.stripe_event_process(event_id=event_id)


@shared_task(**SWEEP_LIMITS)
def stripe_events_retry_task(older_than_minutes: int = 5) -> int:
    """Re-run webhook events left received or failed (Celery beat)."""
    return payments.stripe_events_retry(older_than=timedelta(minutes=older_than_minutes))


@shared_task(
    autoretry_for=(ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=5,
    **STRIPE_LIMITS,
)
def payment_intents_cancel(intents: list[str], order_number: str) -> int:
    """Cancel the open PaymentIntents of an order that expired (its nodes were freed)."""
    return payments.payment_intents_cancel(intents=intents, order_number=order_number)


@shared_task(**SWEEP_LIMITS)
def documents_sweep_task(older_than_minutes: int = 5) -> dict[str, int]:
    """Enqueue again the PDFs and quote emails that should exist by now (Celery beat)."""
    result = sweeps.documents_sweep(older_than=timedelta(minutes=older_than_minutes))
    return {
        "quote_documents": result.quote_documents,
        "quote_emails": result.quote_emails,
        "invoice_documents": result.invoice_documents,
    }


# --- Contracts --------------------------------------------------------------------------


@shared_task(**DOCUMENT_TASK)
def document_render_contract(contract_id: int, language: str) -> str:
    """Render and keep the contract's PDF for signature; return its SHA-256. Idempotent:
    a stored draft is returned as it is."""
    contract = Contract.objects.get(pk=contract_id)
    document = contract_pdf.draft_document(contract=contract, language=language)
    contract_services.contract_document_rendered(contract=contract, document=document)
    return document.sha256


@shared_task(**DOCUMENT_TASK)
def document_seal_contract(contract_id: int, language: str) -> str:
    """Render the countersigned contract with its audit page and seal it (PAdES); return
    the SHA-256. Idempotent: a sealed document is never made twice."""
    contract = Contract.objects.get(pk=contract_id)
    sealed = contract_pdf.sealed_document(contract=contract, language=language)
    contract_services.contract_sealed(contract=contract, document=sealed.document)
    return sealed.document.sha256


@shared_task(**SWEEP_LIMITS)
def contracts_activate_task() -> int:
    """Countersigned contracts become active at the start and end at the end (beat)."""
    return contract_services.contracts_activate_and_end()


# --- Dunning and renewals ---------------------------------------------------------------


@shared_task(**SWEEP_LIMITS)
def dunning_run_task() -> dict[str, int]:
    """Reminders, suspensions and resumptions of unpaid invoices (beat). Idempotent."""
    result = dunning.dunning_run()
    return {
        "reminders": result.reminders,
        "skipped": result.skipped,
        "suspended": result.suspended,
        "resumed": result.resumed,
    }


@shared_task(**SWEEP_LIMITS)
def renewals_offer_task() -> dict[str, int]:
    """Renewal quotes for orders ending within ``PORTAL_RENEWAL_DAYS`` (beat). Idempotent."""
    result = renewals.renewals_offer()
    return {"offered": result.offered, "unavailable": result.unavailable}


_MAIL_TASK = {
    "autoretry_for": (SMTPException, ConnectionError, TimeoutError),
    "retry_backoff": True,
    "max_retries": 5,
    **MAIL_LIMITS,
}


@shared_task(**_MAIL_TASK)
def dunning_notice_email(notice_id: int) -> str:
    """Email one dunning reminder; sends once (see the service)."""
    return dunning_emails.dunning_notice_email_send(notice_id=notice_id)


@shared_task(**_MAIL_TASK)
def suspension_email(suspension_id: int, kind: str) -> str:
    """Tell the customer their order was suspended or resumed; sends once each."""
    return dunning_emails.suspension_email_send(suspension_id=suspension_id, kind=kind)


@shared_task(**_MAIL_TASK)
def renewal_email(renewal_id: int) -> str:
    """Email the renewal offer; sends once."""
    return dunning_emails.renewal_email_send(renewal_id=renewal_id)


# Money over the term: period invoices, credit notes (named ``billing.tasks.*``).
from billing.tasks_money import *  # noqa: E402, F403
