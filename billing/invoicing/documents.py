"""Invoice PDFs: ``templates/pdf/invoice.html`` through ``core.pdf.render_pdf``.

``invoice_document(invoice=..., language=...)`` returns the stored ``InvoiceDocument`` of
an invoice in a language, with the SHA-256 of its exact bytes.

When an invoice is re-rendered: an invoice's content is fixed when it is issued (its
totals, lines and due date never change), but its status does: issued → paid (the PDF
then carries a PAID stamp with the date) or issued → void (a VOID stamp). So the stored
PDF is kept **per (invoice, language) and status**: the status the file was rendered in
is part of its file name (``I-SZ-2026-000001-en-issued.pdf``); while the invoice keeps
that status every call returns the stored file unchanged; once the status moves on the
next call renders again and replaces the row's file, SHA-256 and ``created_at`` (the old
file is deleted after commit). No model field is needed for that. The customer's details
(legal name, tax ID, billing address) are those in force when the PDF was rendered.

Safe to call from several workers at once, like ``billing.quotes.documents.quote_document``: the
unique (invoice, language) row decides which rendering is kept.
"""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.utils import timezone, translation
from django.utils.translation import gettext as _

from accounts.models import FapiaoType
from billing.documents.common import (
    bank_details,
    basis_text,
    line_note,
    periods_text,
    provider,
    quantity_text,
)
from billing.documents.numerals import rmb_upper
from billing.models import (
    AddonPrice,
    Invoice,
    InvoiceDocument,
    InvoiceLine,
    InvoiceLineKind,
    InvoiceStatus,
    PaymentStatus,
    QuoteLine,
)
from billing.pricing.terms import online_methods_text
from billing.quotes.documents import single_rate, tax_notes
from core.documents import DocumentKind, register
from core.pdf import css_content, normalise_language

logger = logging.getLogger(__name__)

TEMPLATE = "pdf/invoice.html"


def _lines(invoice: Invoice, language: str) -> list[dict[str, Any]]:
    """The invoice's lines: the quote's priced lines when they add up to the invoice's
    net total (the order's first invoice), else one line for the order."""
    quote = invoice.order.quote
    issued_lines = list(invoice.lines.all())
    if issued_lines:
        by_position = {line.position: line for line in quote.lines.all()}
        addon_notes_zh = {
            (a.code, a.note): a.note_zh
            for a in AddonPrice.objects.filter(price_book_id=quote.price_book_id).exclude(
                note_zh=""
            )
        }
        rows = []
        for line in issued_lines:
            whole = by_position.get(line.detail.get("quote_line"))
            if whole is not None and whole.net == line.net and whole.vat == line.vat:
                # The period charges the quote's whole line (a one-period term, a one-off
                # line): the line as quoted, with its list price and discounts.
                rows.append(
                    {
                        "description": whole.localized_description(language),
                        "note": line_note(whole, addon_notes_zh, language),
                        "quantity": quantity_text(whole.quantity, whole.unit),
                        "unit_price": whole.unit_price,
                        "basis": basis_text(whole.unit, whole.period_unit),
                        "periods": periods_text(whole.periods, whole.period_unit),
                        "list": whole.list_amount,
                        "discount": whole.discount_amount,
                        "net": line.net,
                        "vat_rate": line.vat_rate,
                        "tax_category": line.get_tax_category_display(),
                        "vat": line.vat,
                    }
                )
                continue
            period_unit = line.period_unit or line.detail.get("period_unit", "once")
            rows.append(
                {
                    "description": line.localized_description(language),
                    "note": _line_explanation(line, language),
                    "quantity": quantity_text(line.quantity, line.unit) if line.unit else "1",
                    "unit_price": line.unit_price if line.unit_price is not None else line.net,
                    "basis": basis_text(line.unit, period_unit) if line.unit else "",
                    # quantity × unit price × periods = list; list − discount = net.
                    "periods": periods_text(line.periods, period_unit)
                    if line.period_unit and line.period_unit != "once"
                    else "—",
                    "list": line.list_amount if line.list_amount is not None else line.net,
                    "discount": line.discount,
                    "net": line.net,
                    "vat_rate": line.vat_rate,
                    "tax_category": line.get_tax_category_display(),
                    "vat": line.vat,
                }
            )
        return rows
    quote_lines: list[QuoteLine] = [line for line in quote.lines.all() if line.kind != "free"]
    if quote_lines and sum((line.net for line in quote_lines), Decimal("0")) == invoice.net_total:
        addon_notes_zh = {
            (a.code, a.note): a.note_zh
            for a in AddonPrice.objects.filter(price_book_id=quote.price_book_id).exclude(
                note_zh=""
            )
        }
        return [
            {
                "description": line.localized_description(language),
                "note": line_note(line, addon_notes_zh, language),
                "quantity": quantity_text(line.quantity, line.unit),
                "unit_price": line.unit_price,
                "basis": basis_text(line.unit, line.period_unit),
                "periods": periods_text(line.periods, line.period_unit),
                "list": line.list_amount,
                "discount": line.discount_amount,
                "net": line.net,
                "vat_rate": line.vat_rate or quote.vat_rate,
                "tax_category": line.get_tax_category_display(),
                "vat": line.vat,
            }
            for line in quote_lines
        ]
    return [
        {
            "description": _("Services of order %(order)s (quote %(quote)s v%(version)s)")
            % {"order": invoice.order.number, "quote": quote.number, "version": quote.version},
            "note": "",
            "quantity": "1",
            "unit_price": invoice.net_total,
            "basis": "",
            "periods": "—",
            "list": invoice.net_total,
            "discount": Decimal("0"),
            "net": invoice.net_total,
            "vat_rate": quote.vat_rate,
            "tax_category": "",
            "vat": invoice.vat_total,
        }
    ]


def _line_explanation(line: InvoiceLine, language: str) -> str:
    """The explanation and evidence of an SLA credit line (empty for other lines)."""
    if line.kind != InvoiceLineKind.CREDIT:
        return ""
    zh = language.lower().startswith("zh")
    return str(line.detail.get("evidence_zh" if zh else "evidence_en", ""))


def invoice_context(invoice: Invoice, *, language: str) -> dict[str, Any]:
    """Everything ``pdf/invoice.html`` shows, translated into ``language``."""
    invoice = (
        Invoice.objects.select_related("organisation", "order__site", "order__quote")
        .prefetch_related("order__quote__lines", "lines")
        .get(pk=invoice.pk)
    )
    order = invoice.order
    quote = order.quote
    site = order.site
    tz = site.tzinfo
    start_at = invoice.period_start or order.start_at
    end_at = invoice.period_end or order.end_at
    with translation.override(language):
        the_provider = provider(language, site)
        party = invoice.organisation.legal_name or invoice.organisation.name
        amount_in_words = ""
        if language.lower().startswith("zh") and invoice.currency == "CNY":
            amount_in_words = rmb_upper(invoice.gross_total)
        return {
            "invoice": invoice,
            "order": order,
            "quote": quote,
            "organisation": invoice.organisation,
            "site": site,
            "site_timezone": site.timezone,
            "provider": the_provider,
            "issued": timezone.localtime(invoice.issued_at, tz),
            "due": timezone.localtime(invoice.due_at, tz),
            "period_start": start_at,
            "period_end": end_at,
            "paid": timezone.localtime(invoice.paid_at, tz) if invoice.paid_at else None,
            "is_paid": invoice.status == InvoiceStatus.PAID,
            "is_void": invoice.status == InvoiceStatus.VOID,
            "currency": invoice.currency,
            "vat_rate": quote.vat_rate,
            "vat_applies": quote.vat_rate > Decimal("0"),
            "lines": (lines := _lines(invoice, language)),
            "settlements": _settlements(invoice, tz),
            "amount_due": invoice.amount_due,
            "tax_notes": tax_notes(quote.lines.all()),
            "single_rate": single_rate(lines, quote.vat_rate),
            "amount_in_words": amount_in_words,
            "bank": bank_details(site, language),
            "is_payment_request": the_provider.issues_fapiao,
            # Only the online methods this portal takes (none without Stripe's keys).
            "online_methods": online_methods_text(),
            "fapiao_type": invoice.organisation.get_fapiao_type_display(),
            "fapiao": _fapiao(invoice),
            "running_left_css": css_content(
                f"{the_provider.brand} · "
                + (_("Payment request") if the_provider.issues_fapiao else _("Invoice"))
            ),
            "running_right_css": css_content(f"{invoice.number} · {party}"),
            "footer_left_css": css_content(f"{the_provider.name} · {the_provider.website}"),
        }


def _settlements(invoice: Invoice, tz: Any) -> list[dict[str, Any]]:
    """Every payment (with its reference and value date) and every credit applied to the
    invoice, in order: what the PDF lists above what is still due."""
    out: list[dict[str, Any]] = []
    for payment in invoice.payments.filter(
        status__in=(PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED), duplicate_of__isnull=True
    ).order_by("succeeded_at", "pk"):
        at = payment.succeeded_at or payment.created_at
        out.append(
            {
                "kind": "payment",
                "label": payment.get_method_display(),
                "reference": payment.reference or payment.stripe_payment_intent or "",
                "day": payment.value_date or timezone.localtime(at, tz).date(),
                "amount": payment.amount,
            }
        )
    for application in invoice.credit_applications.select_related("credit_note"):
        out.append(
            {
                "kind": "credit",
                "label": _("Credit note %(n)s") % {"n": application.credit_note.number},
                "reference": application.credit_note.number,
                "day": timezone.localtime(application.applied_at, tz).date(),
                "amount": application.amount,
            }
        )
    return sorted(out, key=lambda row: row["day"])


def _fapiao(invoice: Invoice) -> dict[str, str]:
    """The fapiao request recorded when the document was issued (the organisation's
    present details for documents issued before it was recorded)."""
    org = invoice.organisation
    snap = invoice.fapiao or {}
    return {
        "title": snap.get("title", org.fapiao_buyer),
        "tax_id": snap.get("tax_id", org.tax_id),
        "address_phone": snap.get("address_phone", org.fapiao_address_phone),
        "bank_account": snap.get("bank_account", org.fapiao_bank_account),
        "type": str(FapiaoType(snap["type"]).label)
        if snap.get("type") in FapiaoType.values
        else str(org.get_fapiao_type_display()),
    }


# --- Stored documents -------------------------------------------------------------------

RENDER_TASK = "billing.tasks.document_render_invoice"


class InvoiceKind(DocumentKind[Invoice, InvoiceDocument]):
    """Kept per (invoice, language) and status: the status is part of the file name."""

    name = "invoice"
    template = TEMPLATE
    render_task = RENDER_TASK
    model = InvoiceDocument
    owner_field = "invoice"

    def context(self, owner: Invoice, *, language: str) -> dict[str, Any]:
        return invoice_context(owner, language=language)

    def filename(self, owner: Invoice, *, language: str) -> str:
        return f"{_file_stem(owner, language)}.pdf"

    def is_current(
        self, document: InvoiceDocument, owner: Invoice, *, since: datetime | None = None
    ) -> bool:
        """Whether a stored document was rendered in the invoice's present status.

        The storage may add a suffix (``_AbC1234``) to a name that is taken; the stem
        before it is ours.
        """
        stem = Path(document.file.name or "").stem
        expected = _file_stem(owner, document.language)
        return stem == expected or stem.startswith(expected + "_")

    def refreshed(self, owner: Invoice) -> Invoice:
        return Invoice.objects.get(pk=owner.pk)


def _file_stem(invoice: Invoice, language: str) -> str:
    """Number, language, status, and how many payments and credits it lists (a partial
    payment or a credit changes the document without changing its status)."""
    stem = f"{invoice.number}-{language}-{invoice.status}"
    settled = (
        invoice.payments.filter(
            status__in=(PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED),
            duplicate_of__isnull=True,
        ).count()
        + invoice.credit_applications.count()
    )
    if invoice.status == InvoiceStatus.ISSUED and settled:
        stem += f"-{settled}"
    return stem


INVOICE = register(InvoiceKind())


def render_invoice_pdf(*, invoice: Invoice, language: str) -> bytes:
    """A fresh rendering of the invoice (not stored)."""
    return INVOICE.render(invoice, language=normalise_language(language))


def invoice_document(*, invoice: Invoice, language: str) -> InvoiceDocument:
    """The invoice's PDF in ``language``, stored with its SHA-256 (see the module docstring)."""
    return INVOICE.document(invoice, language=language)
