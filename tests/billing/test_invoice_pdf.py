"""Invoice PDFs: what the customer reads in both languages (poppler's pdftotext), stored
once per (invoice, language) with the SHA-256 of its bytes, re-rendered with a PAID stamp
once the invoice is paid."""

import re
import shutil
import subprocess
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from billing.documents.numerals import rmb_upper
from billing.invoicing import documents as invoices
from billing.models import Invoice, InvoiceDocument, InvoiceStatus, SellerEntity
from billing.orders import acceptance
from billing.orders import services as orders
from billing.quotes import services as qs
from core.pdf import sha256_of

pytestmark = pytest.mark.django_db
assert shutil.which("pdftotext"), "poppler-utils is missing: run `make test` to install it"

LEGAL_NAME_ZH = "深圳珠江智算科技有限公司"


def pdf_text(data: bytes, tmp_path: Path, *, layout: bool = True) -> str:
    path = tmp_path / "text.pdf"
    path.write_bytes(data)
    mode = ["-layout"] if layout else []
    return subprocess.run(
        ["pdftotext", *mode, str(path), "-"], capture_output=True, text=True, check=True
    ).stdout


def compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def stored_bytes(document: InvoiceDocument) -> bytes:
    with document.file.open("rb") as fh:
        return fh.read()


@pytest.fixture
def invoice(demo) -> Invoice:
    """The first invoice of an accepted order (2 × H100 for a month, ¥ with 6% VAT)."""
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[
            qs.ItemSpec(kind="node", quantity=Decimal(2), node_type_id=demo["h100"].pk),
            qs.ItemSpec(kind="addon", quantity=Decimal(20), addon_code="checkpoint-storage"),
        ],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    return order.invoices.get()


def money(value: Decimal) -> str:
    return f"¥{value:,.2f}"


def test_chinese_invoice_shows_number_reference_totals_and_capital_numerals(invoice, tmp_path):
    document = invoices.invoice_document(invoice=invoice, language="zh-hans")
    data = stored_bytes(document)
    assert data.startswith(b"%PDF")
    assert document.sha256 == sha256_of(data) and document.size == len(data)
    text = pdf_text(data, tmp_path)
    flat = compact(pdf_text(data, tmp_path, layout=False))

    assert invoice.number in text
    assert invoice.bank_reference in text
    assert invoice.order.number in text
    assert invoice.order.quote.number in text
    assert money(invoice.gross_total) in text
    assert money(invoice.vat_total) in text
    assert money(invoice.net_total) in text
    assert rmb_upper(invoice.gross_total) in flat  # 人民币大写
    # For the fapiao: legal name, tax ID, billing address.
    assert LEGAL_NAME_ZH in flat
    assert "91440300MA5DEM0006" in text
    assert "深圳市南山区科技园1号" in flat
    # The quote's lines, by net amount; the bank account from the settings.
    for line in invoice.order.quote.lines.exclude(kind="free"):
        assert money(line.net) in text, line
    seller = SellerEntity.objects.get(site=invoice.order.site)
    assert compact(seller.account_number) in flat
    assert seller.swift_code in text and seller.cnaps_code in text
    assert "已付" not in flat and "PAID" not in text


def test_english_invoice(invoice, tmp_path):
    document = invoices.invoice_document(invoice=invoice, language="en")
    data = stored_bytes(document)
    assert document.language == "en"
    assert document.sha256 == sha256_of(data)
    text = pdf_text(data, tmp_path)
    assert "PAYMENT REQUEST" in text  # a mainland seller: only the tax system issues a fapiao
    assert "INVOICE" not in text
    assert invoice.number in text
    assert invoice.bank_reference in text
    assert money(invoice.gross_total) in text
    assert rmb_upper(invoice.gross_total) not in compact(text)  # Chinese PDFs only
    issued = timezone.localtime(invoice.issued_at, invoice.order.site.tzinfo)
    due = timezone.localtime(invoice.due_at, invoice.order.site.tzinfo)
    assert issued.strftime("%Y-%m-%d") in text
    assert due.strftime("%Y-%m-%d %H:%M") in text  # in the site's time zone
    assert "Transfer reference" in text


def test_stored_once_per_language_and_rerendered_when_paid(invoice, tmp_path, demo):
    first = invoices.invoice_document(invoice=invoice, language="en")
    again = invoices.invoice_document(invoice=invoice, language="en")
    assert (again.pk, again.sha256, again.file.name) == (first.pk, first.sha256, first.file.name)
    zh = invoices.invoice_document(invoice=invoice, language="zh-hans")
    assert zh.pk != first.pk
    assert InvoiceDocument.objects.filter(invoice=invoice).count() == 2

    orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-77", actor=demo["sales"])
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.PAID
    paid = invoices.invoice_document(invoice=invoice, language="en")
    assert paid.pk == first.pk  # the same row, a new file
    assert paid.sha256 != first.sha256
    data = stored_bytes(paid)
    assert paid.sha256 == sha256_of(data)
    text = pdf_text(data, tmp_path)
    assert "PAID" in text and "CMB-77" in text
    assert InvoiceDocument.objects.filter(invoice=invoice).count() == 2
    # Paid stays paid: no further rendering.
    assert invoices.invoice_document(invoice=invoice, language="en").sha256 == paid.sha256


def test_language_codes_are_normalised(invoice):
    assert invoices.invoice_document(invoice=invoice, language="zh-Hans").language == "zh-hans"
    with pytest.raises(ValueError, match="no PDF language"):
        invoices.invoice_document(invoice=invoice, language="fr")
