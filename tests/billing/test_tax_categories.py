"""Issue 9, point 12: each priced line has a tax category with a rate per site (data);
documents show the category and rate per line and the reason in a note."""

from __future__ import annotations

import subprocess
from decimal import Decimal

import pytest

from billing.invoicing import documents as invoices
from billing.models import AddonPrice, NodePrice, PriceBook, PriceChange
from billing.orders import acceptance
from billing.pricing import services as pricebooks
from billing.quotes import documents as quote_documents
from billing.quotes import services as qs
from core.errors import DomainError

pytestmark = pytest.mark.django_db


def _quote(demo, *, egress: int = 10):
    return qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=demo["start"],
        items=[
            qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk),
            qs.ItemSpec(kind="addon", quantity=Decimal(egress), addon_code="egress"),
        ],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )


def text_of(data: bytes, tmp_path) -> str:
    path = tmp_path / "doc.pdf"
    path.write_bytes(data)
    out = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True)
    return " ".join(out.stdout.split())


def test_lines_are_taxed_by_what_is_sold(demo):
    quote = _quote(demo)
    by_code = {line.code: line for line in quote.lines.all()}
    node, egress = by_code["h100-8x-nvlink"], by_code["egress"]
    assert (node.tax_category, node.vat_rate) == ("it_service", Decimal("0.0600"))
    assert (egress.tax_category, egress.vat_rate) == ("telecom", Decimal("0.0900"))
    assert egress.vat == (egress.net * Decimal("0.09")).quantize(Decimal("0.01"))
    assert quote.vat_total == sum(line.vat for line in quote.lines.all())


def test_a_rate_is_data_not_code(demo):
    book = demo["sz_book"]
    book.tax_rates = {**book.tax_rates, "equipment_lease": "0.13"}
    book.save(update_fields=["tax_rates"])
    NodePrice.objects.filter(price_book=book, node_type=demo["h100"]).update(
        tax_category="equipment_lease"
    )
    AddonPrice.objects.filter(price_book=book, code="egress").update(tax_category="it_service")
    quote = _quote(demo)
    by_code = {line.code: line for line in quote.lines.all()}
    assert by_code["h100-8x-nvlink"].vat_rate == Decimal("0.1300")
    assert by_code["egress"].vat_rate == Decimal("0.0600")


def test_documents_show_category_rate_and_reason(demo, tmp_path):
    quote = qs.quote_send(quote=_quote(demo), actor=demo["sales"])
    text = text_of(quote_documents.render_quote_pdf(quote=quote, language="en"), tmp_path)
    assert "IDC / IT service (信息技术服务) · VAT 6%" in text
    assert "basic telecom (基础电信服务) · VAT 9%" in text
    assert "VAT by what is sold" in text and "VAT (rates per line)" in text
    # Each note names its category once, then says why: the label is not repeated.
    assert "IDC / IT service (信息技术服务): VAT 6%. The provider operates the servers" in text
    assert text.count("IDC / IT service (信息技术服务):") == 1
    order = acceptance.quote_accept(quote=quote, user=demo["customer"], name="Li Wei", ip=None)
    invoice = order.invoices.get()
    text = text_of(invoices.render_invoice_pdf(invoice=invoice, language="en"), tmp_path)
    assert "Basic telecom (基础电信服务): VAT 9%. Bandwidth and traffic." in text


def test_rates_are_edited_through_the_price_book_service(demo):
    book = PriceBook.objects.get(pk=demo["sz_book"].pk)
    # A book used by sent quotes is frozen; a fresh copy starting later is editable.
    copy = pricebooks.price_book_create(
        site=demo["sz"],
        name="SZ next",
        effective_from=book.effective_from.replace(year=book.effective_from.year + 5),
        actor=None,
        copy_from=book,
    )
    assert copy.tax_rates == book.tax_rates  # the rates carry over to the copy
    with pytest.raises(DomainError, match="Unknown tax category"):
        pricebooks.price_book_update(
            book=copy,
            actor=None,
            name=copy.name,
            effective_from=copy.effective_from,
            notes="",
            tax_rates={"gold_plating": "0.5"},
        )
    pricebooks.price_book_update(
        book=copy,
        actor=None,
        name=copy.name,
        effective_from=copy.effective_from,
        notes="",
        tax_rates={**copy.tax_rates, "telecom": "0.06"},
    )
    copy.refresh_from_db()
    assert copy.tax_rates["telecom"] == "0.06"
    assert PriceChange.objects.filter(price_book=copy, what="PriceBook tax_rates").exists()
