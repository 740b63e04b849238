"""Document renders (the ``documents`` queue), all with ``core.documents.DOCUMENT_TASK_OPTIONS``:
each takes ids, re-reads, and calls its kind's ``document`` (``core.documents``)."""

from __future__ import annotations

from celery import shared_task

from billing.contracts import documents as contract_documents
from billing.contracts import services as contract_services
from billing.contracts import signatures
from billing.credits import documents as credit_note_documents
from billing.invoicing import documents as invoice_documents
from billing.models import Contract, CreditNote, Invoice, Quote
from billing.quotes import documents as quote_documents
from billing.shop import estimates
from core.documents import DOCUMENT_TASK_OPTIONS


@shared_task(name=quote_documents.QUOTE.render_task, **DOCUMENT_TASK_OPTIONS)
def document_render_quote(quote_id: int, language: str) -> str:
    """Render and store a quote's PDF; return its SHA-256. Idempotent: a sent quote's
    stored document is returned as it is, never re-rendered."""
    quote = Quote.objects.get(pk=quote_id)
    return quote_documents.quote_document(quote=quote, language=language).sha256


@shared_task(name=estimates.ESTIMATE.render_task, **DOCUMENT_TASK_OPTIONS)
def document_render_estimate(estimate_id: int) -> str:
    """Render and store an anonymous estimate's PDF; return its SHA-256. Idempotent."""
    return estimates.estimate_render(estimate_id=estimate_id)


@shared_task(name=invoice_documents.INVOICE.render_task, **DOCUMENT_TASK_OPTIONS)
def document_render_invoice(invoice_id: int, language: str) -> str:
    """Render and store an invoice's PDF for its current status; return its SHA-256.
    Idempotent: the stored document for the same status is returned as it is."""
    invoice = Invoice.objects.get(pk=invoice_id)
    return invoice_documents.invoice_document(invoice=invoice, language=language).sha256


@shared_task(name=credit_note_documents.CREDIT_NOTE.render_task, **DOCUMENT_TASK_OPTIONS)
def document_render_credit_note(credit_note_id: int, language: str) -> str:
    """Render and keep a credit note's PDF; return its SHA-256. Idempotent."""
    note = CreditNote.objects.get(pk=credit_note_id)
    return credit_note_documents.credit_note_document(note=note, language=language).sha256


@shared_task(name=contract_documents.DRAFT.render_task, **DOCUMENT_TASK_OPTIONS)
def document_render_contract(contract_id: int, language: str) -> str:
    """Render and keep the contract's PDF for signature; return its SHA-256. Idempotent:
    a stored draft is returned as it is."""
    contract = Contract.objects.get(pk=contract_id)
    document = contract_documents.draft_document(contract=contract, language=language)
    contract_services.contract_document_rendered(contract=contract, document=document)
    return document.sha256


# Sealing calls the timestamping authority: an outage is retried with backoff too.
SIGNING_TASK_OPTIONS = {
    **DOCUMENT_TASK_OPTIONS,
    "autoretry_for": (*DOCUMENT_TASK_OPTIONS["autoretry_for"], signatures.SigningFailed),
}


@shared_task(name=contract_documents.SEALED.render_task, **SIGNING_TASK_OPTIONS)
def document_seal_contract(contract_id: int, language: str) -> str:
    """Render the countersigned contract with its audit page and seal it (PAdES); return
    the SHA-256. Idempotent: a sealed document is never made twice."""
    contract = Contract.objects.get(pk=contract_id)
    sealed = contract_documents.sealed_document(contract=contract, language=language)
    contract_services.contract_sealed(contract=contract, document=sealed.document)
    return sealed.document.sha256


@shared_task(name=contract_documents.AUDIT.render_task, **SIGNING_TASK_OPTIONS)
def document_render_contract_audit(contract_id: int, language: str) -> str:
    """Render and seal a sealed contract's audit record; return its SHA-256. Idempotent."""
    contract = Contract.objects.get(pk=contract_id)
    return contract_documents.AUDIT.document(contract, language=language).sha256
