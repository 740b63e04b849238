"""Tasks for money over the term (imported by ``billing.tasks``, named ``billing.tasks.*``
so that they are routed with the other billing tasks)."""

from __future__ import annotations

from celery import shared_task

from billing import credit_note_pdf
from billing.models import CreditNote
from billing.services import invoicing

__all__ = ["document_render_credit_note", "invoices_issue_due_task"]

# Seconds: (soft, hard), as in ``billing.tasks``.
ISSUE_LIMITS = {"soft_time_limit": 240, "time_limit": 300}
PDF_TASK = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "retry_backoff": True,
    "max_retries": 3,
    "soft_time_limit": 120,
    "time_limit": 150,
}


@shared_task(name="billing.tasks.invoices_issue_due_task", **ISSUE_LIMITS)
def invoices_issue_due_task() -> int:
    """Issue the billing periods (and usage documents) now due (beat). Idempotent: the
    unique (order, period) row means a second run issues nothing twice."""
    return invoicing.invoices_issue_due()


@shared_task(name="billing.tasks.document_render_credit_note", **PDF_TASK)
def document_render_credit_note(credit_note_id: int, language: str) -> str:
    """Render and keep a credit note's PDF; return its SHA-256. Idempotent."""
    note = CreditNote.objects.get(pk=credit_note_id)
    return credit_note_pdf.credit_note_document(note=note, language=language).sha256
