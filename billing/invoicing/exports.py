"""The fapiao export for the tax software: one CSV row per issued document and tax rate.

Finance issues the 发票 in the tax system from these rows: each payment document (and
each credit note, 红字, with negative amounts and the number of the document it corrects)
gives one row per tax category and rate, with the buyer's details as they were recorded
when the document was issued. Cells a spreadsheet would run as formulas are escaped
(``core.csv.write_csv``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.http import HttpResponse
from django.utils import timezone

from billing.models import CreditNote, Invoice, InvoiceStatus
from core.csv import csv_download, write_csv

COLUMNS = (
    "document_number",
    "document_kind",
    "issued_on",
    "order_number",
    "corrects_number",
    "fapiao_type",
    "buyer_title",
    "buyer_tax_id",
    "buyer_address_phone",
    "buyer_bank_account",
    "tax_category",
    "tax_rate",
    "net",
    "vat",
    "gross",
    "currency",
    "status",
)

# Amounts are written as plain numbers (a credit note's are negative): never escaped.
NUMERIC = frozenset({"tax_rate", "net", "vat", "gross"})


def _buyer(snapshot: dict[str, Any]) -> dict[str, str]:
    return {
        "fapiao_type": snapshot.get("type", ""),
        "buyer_title": snapshot.get("title", ""),
        "buyer_tax_id": snapshot.get("tax_id", ""),
        "buyer_address_phone": snapshot.get("address_phone", ""),
        "buyer_bank_account": snapshot.get("bank_account", ""),
    }


def _day(moment: datetime, tz: Any) -> str:
    return moment.astimezone(tz).date().isoformat()


def _grouped(lines: Iterable[tuple[str, Decimal, Decimal, Decimal]]) -> list[tuple]:
    groups: dict[tuple[str, Decimal], list[Decimal]] = {}
    for category, rate, net, vat in lines:
        acc = groups.setdefault((category, rate), [Decimal("0"), Decimal("0")])
        acc[0] += net
        acc[1] += vat
    return [(c, r, n, v) for (c, r), (n, v) in sorted(groups.items())]


def fapiao_rows(
    *, invoices: Iterable[Invoice], credit_notes: Iterable[CreditNote] = ()
) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for invoice in invoices:
        if invoice.status == InvoiceStatus.VOID:
            continue
        tz = invoice.order.site.tzinfo
        lines = [(li.tax_category, li.vat_rate, li.net, li.vat) for li in invoice.lines.all()]
        if not lines:  # documents issued before lines were kept: one row at the quote's rate
            lines = [("", invoice.order.quote.vat_rate, invoice.net_total, invoice.vat_total)]
        for category, rate, net, vat in _grouped(lines):
            rows.append(
                {
                    "document_number": invoice.number,
                    "document_kind": "invoice",
                    "issued_on": _day(invoice.issued_at, tz),
                    "order_number": invoice.order.number,
                    "corrects_number": "",
                    **_buyer(invoice.fapiao),
                    "tax_category": category,
                    "tax_rate": str(rate),
                    "net": str(net),
                    "vat": str(vat),
                    "gross": str(net + vat),
                    "currency": invoice.currency,
                    "status": invoice.status,
                }
            )
    for note in credit_notes:
        tz = note.order.site.tzinfo
        lines = [
            (
                line.get("tax_category", ""),
                Decimal(line.get("vat_rate", "0")),
                Decimal(line["net"]),
                Decimal(line["vat"]),
            )
            for line in note.lines
        ]
        for category, rate, net, vat in _grouped(lines):
            rows.append(
                {
                    "document_number": note.number,
                    "document_kind": "credit_note",
                    "issued_on": _day(note.issued_at, tz),
                    "order_number": note.order.number,
                    "corrects_number": note.invoice.number,
                    **_buyer(note.fapiao),
                    "tax_category": category,
                    "tax_rate": str(rate),
                    "net": str(net),
                    "vat": str(vat),
                    "gross": str(net + vat),
                    "currency": note.currency,
                    "status": "issued",
                }
            )
    return rows


def fapiao_csv(*, invoices: Iterable[Invoice], credit_notes: Iterable[CreditNote] = ()) -> str:
    """The export as CSV text (UTF-8 with a BOM so spreadsheets read the Chinese)."""
    return write_csv(
        fapiao_rows(invoices=invoices, credit_notes=credit_notes),
        columns=COLUMNS,
        verbatim=NUMERIC,
    )


def fapiao_csv_response(
    *, invoices: Iterable[Invoice] = (), credit_notes: Iterable[CreditNote] = ()
) -> HttpResponse:
    """The export as a download (staff only: called from the back office)."""
    invoices = (
        invoices.select_related("order__site", "order__quote").prefetch_related("lines")
        if hasattr(invoices, "select_related")
        else invoices
    )
    credit_notes = (
        credit_notes.select_related("order__site", "invoice")
        if hasattr(credit_notes, "select_related")
        else credit_notes
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    return csv_download(
        fapiao_csv(invoices=invoices, credit_notes=credit_notes),
        filename=f"fapiao-requests-{stamp}.csv",
    )
