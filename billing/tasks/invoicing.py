"""Invoices over the term and the documents sweep."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task

from billing.invoicing import services as invoicing
from billing.invoicing import sweeps
from billing.tasks.options import SWEEP_LIMITS
from core.queues import CeleryQueue


@shared_task(
    name="billing.tasks.invoices_issue_due_task",
    queue=CeleryQueue.BILLING,
    soft_time_limit=240,
    time_limit=300,
)
def invoices_issue_due_task() -> int:
    """Issue the billing periods (and usage documents) now due (beat). Idempotent: the
    unique (order, period) row means a second run issues nothing twice."""
    return invoicing.invoices_issue_due()


@shared_task(name="billing.tasks.documents_sweep_task", queue=CeleryQueue.DOCUMENTS, **SWEEP_LIMITS)
def documents_sweep_task(older_than_minutes: int = 5) -> dict[str, int]:
    """Enqueue again the PDFs and quote emails that should exist by now (Celery beat)."""
    result = sweeps.documents_sweep(older_than=timedelta(minutes=older_than_minutes))
    return {
        "quote_documents": result.quote_documents,
        "quote_emails": result.quote_emails,
        "invoice_documents": result.invoice_documents,
    }
