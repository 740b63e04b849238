"""The fapiao export for the tax software: one CSV row per line of each paid document.

Finance issues the 发票 in the tax system from these rows, which carry what the system
asks of each line: the item name (``*简称*名称``), specification, unit, quantity, unit
price, amount (金额, excl. VAT, where 数量 × 单价 = 金额), tax rate, tax, and the tax
classification code (税收分类编码) of the line's tax category. A discount is a line of
its own right after its item (折扣行, negative amount); an SLA credit on an invoice and
every line of a credit note (红字, with the number of the document it corrects) are their
own negative lines, never netted into a charge. Only paid invoices are exported (a
fapiao is issued once the money is in); credit notes are exported as issued. The buyer's
details are those recorded when the document was issued. Cells a spreadsheet would run as
formulas are escaped (``core.csv.write_csv``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.http import HttpResponse
from django.utils import timezone

from billing.models import (
    TAX_CLASSIFICATION,
    CreditNote,
    Invoice,
    InvoiceLine,
    InvoiceLineKind,
    InvoiceStatus,
)
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
    "line",
    "line_kind",
    "item_name",
    "specification",
    "unit",
    "quantity",
    "unit_price",
    "amount",
    "tax_rate",
    "tax",
    "tax_code",
    "tax_category",
    "currency",
)

# Amounts are written as plain numbers (credits and discounts negative): never escaped.
NUMERIC = frozenset({"quantity", "unit_price", "amount", "tax_rate", "tax"})

# Units as the fapiao writes them (the line's unit, times its billing period).
UNITS_ZH = {
    "node": "台",
    "GPU": "卡",
    "card": "卡",
    "tb": "TB",
    "tb_month": "TB·月",
    "ip_month": "个·月",
    "each": "个",
    "service": "项",
    "month": "月",
    "day": "天",
}
PERIODS_ZH = {"month": "月", "day": "天"}
CENT = Decimal("0.01")


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


def _item_name(category: str, name: str) -> str:
    short = TAX_CLASSIFICATION.get(category, ("", ""))[1]
    return f"*{short}*{name}" if short else name


def _unit(unit: str, period_unit: str) -> str:
    base = UNITS_ZH.get(unit, unit)
    per = PERIODS_ZH.get(period_unit, "")
    return f"{base}·{per}" if per and base and base != per else base


def _vat(amount: Decimal, rate: Decimal) -> Decimal:
    return (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP)


def _invoice_rows(line: InvoiceLine) -> list[dict[str, str]]:
    """The line, and its discount as a line of its own (the two taxes add up to the
    line's tax)."""
    name = line.description_zh or line.description
    code, category = TAX_CLASSIFICATION.get(line.tax_category, ("", ""))[0], line.tax_category
    common = {
        "specification": line.code,
        "tax_rate": str(line.vat_rate),
        "tax_code": code,
        "tax_category": category,
    }
    if line.kind == InvoiceLineKind.CREDIT:
        return [
            {
                **common,
                "line_kind": "credit",
                "item_name": _item_name(category, name),
                "specification": "",
                "unit": "",
                "quantity": "-1",
                "unit_price": str(-line.net),
                "amount": str(line.net),
                "tax": str(line.vat),
            }
        ]
    quantity = (Decimal(line.quantity) * Decimal(line.periods)).normalize()
    list_amount = line.list_amount if line.list_amount is not None else line.net
    unit_price = line.unit_price if line.unit_price is not None else list_amount
    if line.unit_price is None or quantity * unit_price != list_amount:
        # Not a clean quantity × price (metered in odd units): one unit at the amount.
        quantity, unit_price = Decimal("1"), list_amount
    discount_tax = _vat(line.discount, line.vat_rate) if line.discount else Decimal("0")
    rows = [
        {
            **common,
            "line_kind": "item",
            "item_name": _item_name(category, name),
            "unit": _unit(line.unit, line.period_unit),
            "quantity": f"{quantity:f}",
            "unit_price": str(unit_price),
            "amount": str(list_amount),
            "tax": str(line.vat + discount_tax),
        }
    ]
    if line.discount:
        rows.append(
            {
                **common,
                "line_kind": "discount",
                "item_name": _item_name(category, name),
                "unit": "",
                "quantity": "",
                "unit_price": "",
                "amount": str(-line.discount),
                "tax": str(-discount_tax),
            }
        )
    return rows


def fapiao_rows(
    *, invoices: Iterable[Invoice], credit_notes: Iterable[CreditNote] = ()
) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for invoice in invoices:
        if invoice.status != InvoiceStatus.PAID:
            continue  # a fapiao is issued for money received
        tz = invoice.order.site.tzinfo
        head = {
            "document_number": invoice.number,
            "document_kind": "invoice",
            "issued_on": _day(invoice.issued_at, tz),
            "order_number": invoice.order.number,
            "corrects_number": "",
            **_buyer(invoice.fapiao),
            "currency": invoice.currency,
        }
        lines = list(invoice.lines.all())
        body: list[dict[str, str]] = []
        for line in lines:
            body += _invoice_rows(line)
        if not lines:  # documents issued before lines were kept: one line at the quote's rate
            body = [
                {
                    "line_kind": "item",
                    "item_name": invoice.order.quote.number,
                    "specification": "",
                    "unit": "",
                    "quantity": "1",
                    "unit_price": str(invoice.net_total),
                    "amount": str(invoice.net_total),
                    "tax_rate": str(invoice.order.quote.vat_rate),
                    "tax": str(invoice.vat_total),
                    "tax_code": "",
                    "tax_category": "",
                }
            ]
        rows += [{**head, "line": str(i + 1), **row} for i, row in enumerate(body)]
    for note in credit_notes:
        tz = note.order.site.tzinfo
        head = {
            "document_number": note.number,
            "document_kind": "credit_note",
            "issued_on": _day(note.issued_at, tz),
            "order_number": note.order.number,
            "corrects_number": note.invoice.number,
            **_buyer(note.fapiao),
            "currency": note.currency,
        }
        for i, line in enumerate(note.lines):
            category = line.get("tax_category", "")
            net = Decimal(line["net"])
            rows.append(
                {
                    **head,
                    "line": str(i + 1),
                    "line_kind": "credit",
                    "item_name": _item_name(
                        category, line.get("description_zh") or line["description"]
                    ),
                    "specification": "",
                    "unit": "",
                    "quantity": "-1",
                    "unit_price": str(-net),
                    "amount": str(net),
                    "tax_rate": str(line.get("vat_rate", "0")),
                    "tax": str(line["vat"]),
                    "tax_code": TAX_CLASSIFICATION.get(category, ("", ""))[0],
                    "tax_category": category,
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
