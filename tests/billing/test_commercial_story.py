"""The quote → order → contract → payment path tells one story on every page, email and
PDF (review of 2026-12-01): the contract names the customer's legal entity, placement and
billing periods are written one way, the status says what is still missing, the quote is
never valid past the last day accepting can meet its start, and the documents' texts are
in the document's language."""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import translation

from accounts.models import MemberRole, Membership, Organisation, tax_id_problem
from billing.contracts import documents as contract_documents
from billing.contracts import gate
from billing.contracts import services as cs
from billing.documents.common import placement_text
from billing.invoicing import documents as invoice_documents
from billing.models import Contract, ContractStatus, Order, OrderStatus, QuoteStatus
from billing.orders import acceptance
from billing.orders import services as orders
from billing.pricing.periods import site_today
from billing.quotes import documents as quote_documents
from billing.quotes import services as qs
from billing.quotes.services.emails import quote_email_send
from core.errors import DomainError
from core.timezones import period_days, period_text
from inventory.models import Reservation, ReservationStatus

pytestmark = pytest.mark.django_db

SHANGHAI = ZoneInfo("Asia/Shanghai")
VALID_USCC = "91350100M000100Y43"  # a published example with a correct check character


@pytest.fixture(autouse=True)
def _signing(signing, signatory):
    return signing


def pdf_text(data: bytes, tmp_path) -> str:
    path = tmp_path / "doc.pdf"
    path.write_bytes(data)
    out = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True)
    return " ".join(out.stdout.split())


def url(name, *args, lang="en"):
    with translation.override(lang):
        return reverse(name, args=args)


def new_customer(demo, name="星河智能实验室"):
    """A freshly signed-up organisation: no legal name, registration number or address."""
    org = Organisation.objects.create(name=name, country="CN")
    user = type(demo["customer"]).objects.create_user(
        username="xinghe", email="owner@xinghe.example", password="pw-xinghe-2026"
    )
    Membership.objects.create(organisation=org, user=user, role=MemberRole.OWNER)
    return org, user


def sales_quote(demo, org, *, term="month", duration=2, start=None, valid_days=14):
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=org,
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term=term,
        duration=duration,
        start_date=start or demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(2), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
        valid_days=valid_days,
    )
    return qs.quote_send(quote=quote, actor=demo["sales"])


def sign(contract, user):
    cs.signing_code_send(contract=contract, user=user)
    code = re.search(r" is (\d{6})\.", mail.outbox[-1].body)[1]
    draft = contract_documents.draft_document(contract=contract)
    return cs.contract_sign(
        contract=contract,
        user=user,
        full_name="Li Wei",
        title="CTO",
        consent=True,
        code=code,
        pdf_sha256=draft.sha256,
        ip="203.0.113.9",
        user_agent="pytest",
    )


# --- 1. The contract names the customer's legal entity ------------------------------------


def test_an_order_keeps_its_hold_and_its_contract_waits_for_the_legal_entity(client, demo):
    org, owner = new_customer(demo)
    order = acceptance.quote_accept(
        quote=sales_quote(demo, org), user=owner, name="Li Wei", ip="203.0.113.9"
    )
    # Accepted: the nodes are held for the order, but no contract names "星河智能实验室, —".
    assert {r.status for r in Reservation.objects.filter(group=order.reservation_group)} == {
        ReservationStatus.HOLD
    }
    assert not Contract.objects.filter(order=order).exists()
    with pytest.raises(cs.LegalEntityMissing) as refused:
        cs.contract_draft(order=order)
    assert refused.value.missing == [
        "legal name",
        "unified social credit code (统一社会信用代码)",
        "registered address",
    ]

    # The order page says what is missing and links to the organisation's form, and back.
    client.force_login(owner)
    order_url = url("dashboard_order", order.number)
    page = client.get(order_url).content.decode()
    assert 'id="legal-entity"' in page
    assert (
        "it is drafted as soon as its legal name, unified social credit code (统一社会信用代码), "
        "registered address are on file"
    ) in page
    settings_url = url("accounts:organisation_settings")
    assert f'href="{settings_url}?next={order_url}"' in page

    # A mistyped code is refused on the form, which keeps everything typed.
    form = {
        "name": "星河智能实验室",
        "legal_name": "深圳星河智能科技有限公司",
        "country": "CN",
        "tax_id": VALID_USCC[:-1] + "4",
        "billing_address": "深圳市南山区科技园 2 号",
        "billing_email": "finance@xinghe.example",
        "fapiao_type": "ordinary",
        "next": order_url,
    }
    page = client.post(settings_url, form)
    assert page.status_code == 400
    html = page.content.decode()
    assert "typing error" in html
    assert "深圳星河智能科技有限公司" in html and "深圳市南山区科技园 2 号" in html
    assert not Contract.objects.filter(order=order).exists()

    # Saved with a valid code: back to the order, whose contract now names the entity.
    page = client.post(settings_url, {**form, "tax_id": VALID_USCC})
    assert page.status_code == 302 and page["Location"] == order_url
    contract = Contract.objects.get(order=order)
    assert contract.status == ContractStatus.DRAFTED
    assert contract.parties["customer"]["legal_name"] == "深圳星河智能科技有限公司"
    assert contract.parties["customer"]["tax_id"] == VALID_USCC
    assert contract.parties["customer"]["address"] == "深圳市南山区科技园 2 号"
    page = client.get(order_url).content.decode()
    assert 'id="legal-entity"' not in page
    # Saving again drafts nothing more.
    client.post(settings_url, {**form, "tax_id": VALID_USCC})
    assert Contract.objects.filter(order=order).count() == 1


def test_a_contract_drafted_without_the_entity_cannot_be_signed_and_is_drafted_again(client, demo):
    org, owner = new_customer(demo)
    order = acceptance.quote_accept(
        quote=sales_quote(demo, org), user=owner, name="Li Wei", ip=None
    )
    # A contract drafted before the legal entity was required (its parties are empty).
    Organisation.objects.filter(pk=org.pk).update(
        legal_name="深圳星河智能科技有限公司", tax_id=VALID_USCC, billing_address="深圳"
    )
    org.refresh_from_db()
    order = Order.objects.get(pk=order.pk)
    stale = cs.contract_draft(order=order)
    Contract.objects.filter(pk=stale.pk).update(
        parties={"customer": {"name": org.name, "legal_name": "", "tax_id": "", "address": ""}}
    )
    stale.refresh_from_db()
    with pytest.raises(cs.LegalEntityMissing, match="legal name"):
        cs.signing_code_issue(contract=stale, user=owner)
    client.force_login(owner)
    page = client.get(url("dashboard_contract", order.number)).content.decode()
    assert 'id="legal-entity"' in page and "Sign the contract" not in page

    drafted = cs.contracts_draft_waiting(organisation=org)
    stale.refresh_from_db()
    assert stale.status == ContractStatus.CANCELLED
    assert [c.parties["customer"]["legal_name"] for c in drafted] == ["深圳星河智能科技有限公司"]
    assert gate.gate_state(order).contract == drafted[0]
    sign(drafted[0], owner)  # the fresh draft can be signed


def test_hong_kong_registration_numbers_are_checked_by_their_form():
    assert tax_id_problem(country="HK", tax_id="12345678") is None
    assert tax_id_problem(country="HK", tax_id="12345678-000") is None
    assert "8 digits" in tax_id_problem(country="HK", tax_id="1234567")
    org = Organisation(name="Kowloon AI", country="HK", legal_name="Kowloon AI Limited")
    org.billing_address = "1 Nathan Road, Kowloon"
    assert org.legal_entity_missing() == ["business registration number (BR)"]
    org.tax_id = "12345678"
    assert org.legal_entity_missing() == []


# --- 2. and 3. One placement sentence, one way to write a period -------------------------


def test_periods_are_shown_by_their_first_and_last_day():
    # Stored [2026-12-05 00:00, 2027-01-05 00:00) Shanghai time: the last day is 01-04.
    start = datetime(2026, 12, 5, tzinfo=SHANGHAI)
    end = datetime(2027, 1, 5, tzinfo=SHANGHAI)
    assert period_days(start, end, SHANGHAI) == (date(2026, 12, 5), date(2027, 1, 4))
    assert period_text(start, end, "Asia/Shanghai") == "2026-12-05 – 2027-01-04"
    # The same instants stored in UTC read the same in the site's time zone.
    assert (
        period_text(start.astimezone(UTC), end.astimezone(UTC), SHANGHAI)
        == "2026-12-05 – 2027-01-04"
    )
    assert period_text(date(2026, 12, 5), date(2027, 1, 5)) == "2026-12-05 – 2027-01-04"
    with translation.override("zh-hans"):
        assert period_text(start, end, SHANGHAI) == "2026-12-05 至 2027-01-04"


def test_pages_and_pdfs_write_placement_and_periods_the_same_way(client, demo, tmp_path):
    order = acceptance.quote_accept(
        quote=sales_quote(demo, demo["org"]), user=demo["customer"], name="Li Wei", ip=None
    )
    contract = Contract.objects.get(order=order)
    invoice = order.invoices.get()
    group = order.quote.placement["groups"][0]
    tz = demo["sz"].tzinfo
    first = invoice.period_start.astimezone(tz).date()
    last = (invoice.period_end.astimezone(tz) - timedelta(days=1)).date()
    with translation.override("zh-hans"):
        where = placement_text(group)
    assert (
        where
        == "2 台节点，位于 1 个可扩展单元，8 台轨道交换机，分布于 1 个机柜，InfiniBand NDR 400G"
    )
    period = f"{first.isoformat()} 至 {last.isoformat()}"
    contract_zh = pdf_text(
        contract_documents.render_contract_pdf(contract=contract, language="zh-hans"), tmp_path
    )
    quote_zh = pdf_text(
        quote_documents.render_quote_pdf(quote=order.quote, language="zh-hans"), tmp_path
    )
    invoice_zh = pdf_text(
        invoice_documents.render_invoice_pdf(invoice=invoice, language="zh-hans"), tmp_path
    )
    flat = where.replace(" ", "")
    for text in (contract_zh, quote_zh):
        assert flat in text.replace(" ", ""), text
    assert "叶交换机" not in contract_zh
    # Table 4.1's first period and the payment request's period: the same last day.
    assert period in contract_zh and period in invoice_zh
    client.force_login(demo["customer"])
    page = client.get(url("dashboard_order", order.number, lang="zh-hans")).content.decode()
    assert where in page


# --- 4. The status says what is still missing ------------------------------------------------


def test_the_order_status_follows_what_is_missing(client, demo):
    order = acceptance.quote_accept(
        quote=sales_quote(demo, demo["org"]), user=demo["customer"], name="Li Wei", ip=None
    )
    client.force_login(demo["customer"])

    def shown() -> tuple[str, str]:
        order_page = client.get(url("dashboard_order", order.number)).content.decode()
        h1 = re.search(r'<h1>.*?class="status[^"]*">([^<]*)</span></h1>', order_page, re.S)[1]
        listed = client.get(url("dashboard")).content.decode()
        row = re.search(
            rf"{order.number}</a></td>\s*<td><span class=\"status[^\"]*\">([^<]*)<", listed
        )[1]
        return h1, row

    assert shown() == ("awaiting contract and payment",) * 2
    contract = Contract.objects.get(order=order)
    sign(contract, demo["customer"])
    assert shown() == ("awaiting contract and payment",) * 2  # countersignature still due
    cs.contract_countersign(contract=contract, actor=demo["manager"])
    assert shown() == ("awaiting payment",) * 2
    with translation.override("zh-hans"):
        assert gate.gate_state(order).status_label == "待付款"

    # Paid before the contract is signed: only the contract is missing.
    other = acceptance.quote_accept(
        quote=sales_quote(demo, demo["org"]), user=demo["customer"], name="Li Wei", ip=None
    )
    orders.invoice_mark_paid_by_transfer(
        invoice=other.invoices.get(), reference="CMB-1", actor=demo["admin"]
    )
    other.refresh_from_db()
    assert other.status == OrderStatus.PAID
    assert gate.gate_state(other).status_label == "paid, awaiting contract"


# --- 5. Signing before asking for a code -----------------------------------------------------


def test_signing_before_asking_for_a_code_says_how_to_get_one(client, demo):
    order = acceptance.quote_accept(
        quote=sales_quote(demo, demo["org"]), user=demo["customer"], name="Li Wei", ip=None
    )
    contract = Contract.objects.get(order=order)
    draft = contract_documents.draft_document(contract=contract)
    client.force_login(demo["customer"])
    page = client.post(
        url("dashboard_contract_sign", order.number),
        {
            "full_name": "Li Wei",
            "title": "CTO",
            "code": "123456",
            "consent": "on",
            "pdf_sha256": draft.sha256,
        },
    )
    assert page.status_code == 400
    html = page.content.decode()
    assert "No code has been sent to you for this contract yet" in html
    assert "Email me a one-time code" in html and "expired" not in html
    assert 'value="Li Wei"' in html and 'value="CTO"' in html  # what was typed is kept
    # Once a code was sent and a fresh one replaced it, the old one "expired or was used".
    cs.signing_code_send(contract=contract, user=demo["customer"])
    with pytest.raises(DomainError, match="not right"):
        cs.contract_sign(
            contract=contract,
            user=demo["customer"],
            full_name="Li Wei",
            title="CTO",
            consent=True,
            code="000000" if "000000" not in mail.outbox[-1].body else "999999",
            pdf_sha256=draft.sha256,
            ip=None,
            user_agent="pytest",
        )


# --- 6. A quote is never valid past the last day accepting can meet its start ---------------


def test_the_validity_ends_when_accepting_could_no_longer_meet_the_start(demo, online_payments):
    site = demo["sz"]
    assert site.lead_time_hours == 24
    start = site_today(site) + timedelta(days=4)
    quote = sales_quote(demo, demo["org"], start=start, valid_days=14)
    # Valid 14 days, but the nodes need 24 hours before the start (start 00:00, site time):
    # the quote closes at the start of its eve, when a transfer's hold ends too.
    eve = datetime.combine(start - timedelta(days=1), datetime.min.time(), tzinfo=site.tzinfo)
    assert quote.expiry == eve
    assert quote.expiry_text == f"{(start - timedelta(days=1)).isoformat()} 00:00"
    assert quote.validity_shortened
    transfer = next(r for r in quote_documents.quote_holds(quote) if not r["online"])
    assert transfer["pay_by"] == quote.expiry_text
    # Past that moment the quote no longer accepts, and says when it expired.
    Quote = type(quote)
    Quote.objects.filter(pk=quote.pk).update(expires_at=datetime.now(tz=UTC))
    quote.refresh_from_db()
    with pytest.raises(DomainError, match="expired at"):
        acceptance.quote_accept(quote=quote, user=demo["customer"], name="Li Wei", ip=None)
    assert Quote.objects.get(pk=quote.pk).status == QuoteStatus.SENT
    assert not Order.objects.filter(quote=quote).exists()


def test_the_quote_pdf_and_its_email_print_the_same_expiry(demo, tmp_path):
    start = site_today(demo["sz"]) + timedelta(days=4)
    quote = sales_quote(demo, demo["org"], start=start, valid_days=14)
    eve = f"{(start - timedelta(days=1)).isoformat()} 00:00"
    document = quote_documents.quote_document(quote=quote, language="en")
    with document.file.open("rb") as fh:
        text = pdf_text(fh.read(), tmp_path)
    assert f"Valid until {eve}" in text
    assert quote.valid_until.isoformat() not in text  # not the validity date typed by sales
    assert quote_email_send(quote_id=quote.pk) == "sent"
    email = mail.outbox[-1]
    assert eve in email.body and quote.valid_until.isoformat() not in email.body


# --- 7. The documents speak the document's language ------------------------------------------


def test_a_mainland_contract_has_its_margins_in_chinese(demo, tmp_path):
    order = acceptance.quote_accept(
        quote=sales_quote(demo, demo["org"]), user=demo["customer"], name="Li Wei", ip=None
    )
    contract = Contract.objects.get(order=order)
    # Rendered for an English reader, the mainland contract still prevails in Chinese.
    text = pdf_text(
        contract_documents.render_contract_pdf(contract=contract, language="en"), tmp_path
    )
    assert "GPU Cloud · 服务合同" in text and "第 2 页，共" in text
    assert "Page 2 of" not in text and "GPU Cloud · Contract" not in text
    assert "深圳市智算云科技有限公司 · gpucloud.example" in text


def test_the_payment_request_offers_only_the_methods_configured(
    demo, no_stripe, settings, tmp_path
):
    order = acceptance.quote_accept(
        quote=sales_quote(demo, demo["org"], term="quarter", duration=1),
        user=demo["customer"],
        name="Li Wei",
        ip=None,
    )
    invoice = order.invoices.get()
    zh = pdf_text(
        invoice_documents.render_invoice_pdf(invoice=invoice, language="zh-hans"), tmp_path
    )
    assert "支付宝" not in zh and "微信支付" not in zh and "使用卡" not in zh
    assert "以便我们与本付款通知书核对" in zh.replace(" ", "") and "本发票" not in zh
    # Chinese punctuation on a Chinese document.
    assert "CNY，增值税 6%" in zh and "CNY, " not in zh
    quote_zh = pdf_text(
        quote_documents.render_quote_pdf(quote=order.quote, language="zh-hans"), tmp_path
    )
    assert "季付，1 个季度" in quote_zh and "季付, " not in quote_zh
    assert "CNY，增值税 6%" in quote_zh
    # With Stripe's keys, the configured online methods are offered (one source).
    settings.STRIPE_SECRET_KEY = "sk_test_offline"
    settings.STRIPE_PUBLISHABLE_KEY = "pk_test_offline"
    settings.STRIPE_PAYMENT_METHODS = ["card", "alipay", "wechat_pay"]
    zh = pdf_text(
        invoice_documents.render_invoice_pdf(invoice=invoice, language="zh-hans"), tmp_path
    )
    assert "或在门户的订单页面使用卡、支付宝或微信支付付款" in zh.replace(" ", "")
