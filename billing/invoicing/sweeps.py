"""Beat sweeps that finish work a dead worker or a lost message left undone.

The outbox makes sure every piece of work is published once its transaction commits;
a worker killed mid-task (or a broker that loses a message, like the embedded
filesystem broker on ``kill -9``) can still leave a sent quote without its PDF or email
or an invoice without the PDF of its present status. These sweeps find such rows older
than a few minutes and enqueue the work again; the consumers are idempotent, so work
that was merely slow is not done twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from billing.invoicing import documents as invoices
from billing.models import QUOTE_SENT_STATUSES, Invoice, Quote, QuoteDocument, QuoteStatus
from core import jobs, outbox

# How far back the invoice sweep looks (invoice documents are checked in Python).
INVOICE_WINDOW = timedelta(days=90)


@dataclass(frozen=True)
class SweepResult:
    quote_documents: int
    quote_emails: int
    invoice_documents: int


def _enqueue_once(steps: list[tuple[str, tuple]]) -> bool:
    if outbox.pending_like(steps):
        return False  # already waiting for the broker
    jobs.enqueue_chain(steps)
    return True


def documents_sweep(
    *, older_than: timedelta = timedelta(minutes=5), now: datetime | None = None
) -> SweepResult:
    """Enqueue again the quote PDFs, quote emails and invoice PDFs that should exist by
    now and do not. Safe to run twice: a second run finds the work pending."""
    now = now or timezone.now()
    cutoff = now - older_than
    unsent = list(
        Quote.objects.filter(
            status=QuoteStatus.SENT, emailed_at__isnull=True, sent_at__lte=cutoff
        ).values_list("pk", "language")
    )
    emails = sum(
        _enqueue_once(
            [
                ("billing.tasks.document_render_quote", (pk, language)),
                ("billing.tasks.quote_email", (pk,)),
            ]
        )
        for pk, language in unsent
    )
    final_document = QuoteDocument.objects.filter(
        quote=OuterRef("pk"), language=OuterRef("language"), created_at__gte=OuterRef("sent_at")
    )
    missing = (
        Quote.objects.filter(status__in=QUOTE_SENT_STATUSES, sent_at__lte=cutoff)
        .exclude(pk__in=[pk for pk, _language in unsent])
        .exclude(Exists(final_document))
        .values_list("pk", "language")
    )
    quote_documents = sum(
        _enqueue_once([("billing.tasks.document_render_quote", (pk, language))])
        for pk, language in missing
    )
    candidates = (
        Invoice.objects.filter(issued_at__lte=cutoff, issued_at__gte=now - INVOICE_WINDOW)
        .filter(Q(paid_at__isnull=True) | Q(paid_at__lte=cutoff))
        .select_related("order__quote")
        .prefetch_related("documents")
    )
    invoice_documents = 0
    for invoice in candidates:
        language = invoice.order.quote.language
        documents = [d for d in invoice.documents.all() if d.language == language]
        if not any(invoices.INVOICE.is_current(d, invoice) for d in documents):
            invoice_documents += _enqueue_once(
                [("billing.tasks.document_render_invoice", (invoice.pk, language))]
            )
    return SweepResult(
        quote_documents=quote_documents, quote_emails=emails, invoice_documents=invoice_documents
    )
