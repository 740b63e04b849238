"""Issue 9, points 9–11: the seller entity per site, mainland payment requests carrying
the customer's fapiao request, Hong Kong invoices in HKD, and lines a finance team can
check, in both languages (pdftotext)."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from billing.invoicing import documents as invoices
from billing.models import Invoice, SellerEntity
from billing.orders import acceptance
from billing.quotes import documents as quote_documents
from billing.quotes import services as qs

pytestmark = pytest.mark.django_db


def pdf_text(data: bytes, tmp_path: Path) -> str:
    path = tmp_path / "doc.pdf"
    path.write_bytes(data)
    return subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout


def compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _invoice(demo, site_key: str, node_type_key: str = "h100", count: int = 1) -> Invoice:
    org = demo["org"]
    org.fapiao_type = "special"
    org.fapiao_title = "深圳珠江智算科技有限公司"
    org.fapiao_address_phone = "深圳市南山区科技园 1 号 0755-8888 0000"
    org.fapiao_bank_account = "招商银行深圳分行 7559 1234 5678 901"
    org.full_clean()
    org.save()
    quote = qs.quote_create(
        site=demo[site_key],
        organisation=org,
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="quarter",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[
            qs.ItemSpec(kind="node", quantity=Decimal(count), node_type_id=demo[node_type_key].pk),
            qs.ItemSpec(kind="addon", quantity=Decimal(10), addon_code="checkpoint-storage"),
        ],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    return order.invoices.get()


def _render(invoice: Invoice, language: str, tmp_path: Path) -> str:
    return pdf_text(invoices.render_invoice_pdf(invoice=invoice, language=language), tmp_path)


def test_a_mainland_payment_request_in_english(demo, tmp_path):
    invoice = _invoice(demo, "sz")
    seller = SellerEntity.objects.get(site=demo["sz"])
    text = _render(invoice, "en", tmp_path)
    flat = " ".join(text.split())
    assert "PAYMENT REQUEST" in text and "INVOICE" not in text
    # The seller: legal name, 统一社会信用代码, address, bank with CNAPS and SWIFT.
    assert seller.legal_name in flat
    assert "Unified social credit code" in flat and seller.registration_number in text
    assert seller.account_name in text and seller.account_number in text
    assert seller.cnaps_code in text and seller.swift_code in text
    # The customer's fapiao request.
    assert "Fapiao to be issued to" in text
    assert "special VAT fapiao (专票)" in flat
    assert "深圳珠江智算科技有限公司" in text
    assert demo["org"].tax_id in text
    assert "0755-8888 0000" in flat and "7559 1234 5678 901" in flat
    # Lines a finance team can check.
    for heading in ("Unit price", "Quantity", "Periods", "Discount", "Tax rate", "Tax"):
        assert heading in text
    quote = invoice.order.quote
    for line in quote.lines.exclude(kind="free"):
        assert f"{line.unit_price:,.2f}" in text
        assert f"{line.vat:,.2f}" in text
        if line.discount_amount:
            assert f"{abs(line.discount_amount):,.2f}" in text
    assert "6%" in text


def test_a_mainland_payment_request_in_chinese(demo, tmp_path):
    invoice = _invoice(demo, "sz")
    seller = SellerEntity.objects.get(site=demo["sz"])
    text = compact(_render(invoice, "zh-hans", tmp_path))
    assert seller.legal_name_zh in text
    assert compact(seller.address_zh) in text
    assert seller.bank_name_zh in text
    assert seller.registration_number in text and seller.cnaps_code in text
    assert "深圳珠江智算科技有限公司" in text and demo["org"].tax_id in text


def test_hong_kong_invoices_come_from_the_hong_kong_entity_in_hkd(demo, tmp_path):
    invoice = _invoice(demo, "hk")
    seller = SellerEntity.objects.get(site=demo["hk"])
    assert invoice.currency == "HKD"
    text = _render(invoice, "en", tmp_path)
    flat = " ".join(text.split())
    assert "INVOICE" in text and "PAYMENT REQUEST" not in text
    assert "GPU Cloud (Hong Kong) Limited" in flat
    assert seller.registration_number in text and "HSBCHKHHHKH" in text
    assert "Fapiao to be issued to" not in text
    assert "HKD" in text
    zh = compact(_render(invoice, "zh-hans", tmp_path))
    assert "智算云（香港）有限公司" in zh and "香港上海滙豐銀行有限公司" in zh


def test_quotes_carry_the_seller_the_bank_and_the_stamp_area(demo, tmp_path):
    invoice = _invoice(demo, "sz")
    quote = invoice.order.quote
    seller = SellerEntity.objects.get(site=demo["sz"])
    text = pdf_text(quote_documents.render_quote_pdf(quote=quote, language="en"), tmp_path)
    flat = " ".join(text.split())
    assert seller.legal_name in flat and seller.registration_number in text
    assert "Bank details" in text and seller.account_number in text and seller.cnaps_code in text
    assert "For the seller (company seal)" in flat
    zh = compact(
        pdf_text(quote_documents.render_quote_pdf(quote=quote, language="zh-hans"), tmp_path)
    )
    assert seller.legal_name_zh in zh and seller.bank_name_zh in zh


def test_the_account_name_must_be_the_legal_name_and_the_code_valid(demo):
    seller = SellerEntity.objects.get(site=demo["sz"])
    seller.account_name = "Someone Else Ltd."
    with pytest.raises(ValidationError, match="exactly the legal name"):
        seller.full_clean()
    seller.account_name = seller.legal_name_zh
    seller.registration_number = "91440300MA5H2K8L08"  # wrong check character
    with pytest.raises(ValidationError, match="typing error"):
        seller.full_clean()


def test_a_special_fapiao_needs_the_full_details(demo):
    org = demo["org"]
    org.fapiao_type = "special"
    org.fapiao_address_phone = ""
    with pytest.raises(ValidationError, match="special VAT fapiao"):
        org.full_clean()
