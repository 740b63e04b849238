"""The ledger per organisation and currency (issue 24, point 1): credit notes lower what is
due, an unapplied credit becomes balance applied to the next invoice, payments go to the
oldest open invoice unless one is named, partial payments keep every reference and value
date, large credit notes wait for a second approval; and the late fee (clause 11).

Amounts are computed by hand beside each assertion. The demo's Shenzhen H100 lists at
¥100,000 per node-month; IDC service carries 6 % VAT; two nodes billed monthly from
2027-01-01: each period invoice is 200,000.00 net + 12,000.00 VAT = 212,000.00.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from billing.credits import services as credits
from billing.dunning import services as dunning
from billing.invoicing import ledger
from billing.invoicing import services as invoicing
from billing.models import (
    CreditNote,
    CreditNoteRequest,
    CreditNoteRequestStatus,
    Invoice,
    InvoiceLineKind,
    InvoiceStatus,
    OrderStatus,
    TaxCategory,
)
from billing.orders import services as orders
from billing.pricing.late_fees import late_fee
from core.errors import DomainError
from tests import factories
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db
User = get_user_model()
D = Decimal
START = date(2027, 1, 1)


def line(net: str) -> credits.CreditLine:
    return credits.CreditLine(
        description="Goodwill credit",
        description_zh="商誉抵扣",
        net=D(net),
        vat_rate=D("0.06"),
        tax_category=TaxCategory.IT_SERVICE,
    )


def paid_monthly_order(demo, duration=3):
    order = factories.contract_signed_shortcut(
        make_order(demo, term="month", duration=duration, start=START)
    )
    first = order.invoices.get()
    assert first.gross_total == D("212000.00")  # 2 × 100,000 + 6 % VAT
    orders.transfer_record(
        organisation_id=order.organisation_id,
        currency=order.currency,
        amount=first.gross_total,
        reference="CMB-0",
        value_date=date(2026, 12, 20),
        actor=demo["admin"],
    )
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID
    return order


def test_a_credit_note_lowers_an_open_invoice_and_the_rest_is_balance_for_the_next(demo, client):
    order = paid_monthly_order(demo)
    p = invoicing.order_schedule(order)
    second = invoicing.invoice_issue_period(order=order, seq=2, now=p[1].start - timedelta(days=14))
    assert second.gross_total == D("212000.00")
    # 10,000.00 net + 600.00 VAT = 10,600.00 credited on the open invoice.
    note = credits.credit_note_request(
        invoice=second, lines=[line("10000")], reason="Late delivery", actor=demo["admin"]
    )
    assert isinstance(note, CreditNote) and note.gross_total == D("-10600.00")
    second.refresh_from_db()
    assert second.amount_credited == D("10600.00")
    assert second.amount_due == D("201400.00")  # 212,000 − 10,600: what the pay page asks
    client.force_login(demo["customer"])
    page = client.get(reverse("order_pay", args=[order.number])).content.decode()
    assert "201,400.00" in page
    page = client.get(reverse("dashboard_order", args=[order.number])).content.decode()
    assert "¥201,400.00 still due" in page and "(issued)" not in page
    # Only period 3 is still planned; issued periods are their invoices' rows.
    assert "Still to be invoiced (planned): period 3 from 2027-03-01" in " ".join(page.split())
    assert "planned): period 2" not in " ".join(page.split())
    # Paying the total minus the credit pays it.
    recorded = orders.transfer_record(
        organisation_id=order.organisation_id,
        currency="CNY",
        amount=D("201400.00"),
        reference="CMB-2",
        value_date=date(2027, 1, 30),
        actor=demo["admin"],
    )
    second.refresh_from_db()
    assert second.status == InvoiceStatus.PAID
    assert "now paid in full" in recorded.message()
    # A credit note on the paid invoice: 20,000 + 1,200 VAT = 21,200.00, all balance.
    credits.credit_note_request(
        invoice=second, lines=[line("20000")], reason="SLA goodwill", actor=demo["admin"]
    )
    assert ledger.credit_balance(organisation=order.organisation, currency="CNY") == D("21200.00")
    # The next invoice takes it by itself: 212,000 − 21,200 = 190,800.00 due.
    third = invoicing.invoice_issue_period(order=order, seq=3, now=p[2].start - timedelta(days=14))
    assert third.amount_credited == D("21200.00")
    assert third.amount_due == D("190800.00")
    assert ledger.credit_balance(organisation=order.organisation, currency="CNY") == D("0")
    # The ledger: 3 × 212,000 owed; paid 212,000 + 201,400; credited 10,600 + 21,200.
    entries = ledger.ledger_entries(organisation=order.organisation, currency="CNY")
    owed = sum(e.debit for e in entries) - sum(e.credit for e in entries)
    assert owed == D("190800.00")


def test_partial_payments_keep_every_reference_and_value_date_and_say_what_is_left(demo):
    order = paid_monthly_order(demo)
    p = invoicing.order_schedule(order)
    second = invoicing.invoice_issue_period(order=order, seq=2, now=p[1].start - timedelta(days=14))
    first_part = orders.transfer_record(
        organisation_id=order.organisation_id,
        currency="CNY",
        amount=D("100000.00"),
        reference="CMB-A",
        value_date=date(2027, 1, 25),
        actor=demo["admin"],
        invoice=second,
    )
    second.refresh_from_db()
    # Honest: not "paid", 212,000 − 100,000 = 112,000.00 still due.
    assert second.status == InvoiceStatus.ISSUED
    assert "¥112,000.00 still due" in first_part.message()
    assert "paid in full" not in first_part.message()
    for ref, amount, day in (("CMB-B", "12000.00", 26), ("CMB-C", "100000.00", 27)):
        orders.transfer_record(
            organisation_id=order.organisation_id,
            currency="CNY",
            amount=D(amount),
            reference=ref,
            value_date=date(2027, 1, day),
            actor=demo["admin"],
            invoice=second,
        )
    second.refresh_from_db()
    assert second.status == InvoiceStatus.PAID
    kept = list(second.payments.order_by("value_date").values_list("reference", "value_date"))
    assert kept == [
        ("CMB-A", date(2027, 1, 25)),
        ("CMB-B", date(2027, 1, 26)),
        ("CMB-C", date(2027, 1, 27)),
    ]
    with pytest.raises(DomainError, match="value date"):
        orders.transfer_record(
            organisation_id=order.organisation_id,
            currency="CNY",
            amount=D("1"),
            reference="X",
            value_date=None,
            actor=demo["admin"],
        )


def test_a_payment_naming_no_invoice_pays_the_oldest_open_first(demo):
    order = paid_monthly_order(demo)
    p = invoicing.order_schedule(order)
    second = invoicing.invoice_issue_period(order=order, seq=2, now=p[1].start - timedelta(days=14))
    third = invoicing.invoice_issue_period(order=order, seq=3, now=p[2].start - timedelta(days=14))
    # 250,000 = all of the second (212,000, due first) + 38,000 of the third.
    recorded = orders.transfer_record(
        organisation_id=order.organisation_id,
        currency="CNY",
        amount=D("250000.00"),
        reference="CMB-X",
        value_date=date(2027, 2, 1),
        actor=demo["admin"],
    )
    second.refresh_from_db()
    third.refresh_from_db()
    assert second.status == InvoiceStatus.PAID
    assert (third.status, third.amount_paid, third.amount_due) == (
        InvoiceStatus.ISSUED,
        D("38000.00"),
        D("174000.00"),  # 212,000 − 38,000
    )
    assert [(i.number, a) for i, a in recorded.applied] == [
        (second.number, D("212000.00")),
        (third.number, D("38000.00")),
    ]
    # More than everything due (174,000) is refused and nothing is recorded.
    with pytest.raises(DomainError, match=r"more than the 174000\.00"):
        orders.transfer_record(
            organisation_id=order.organisation_id,
            currency="CNY",
            amount=D("174000.01"),
            reference="CMB-Y",
            value_date=date(2027, 2, 2),
            actor=demo["admin"],
        )
    assert not third.payments.filter(reference="CMB-Y").exists()


def test_a_credit_note_above_the_threshold_waits_for_a_second_finance_approval(demo, settings):
    settings.PORTAL_CREDIT_NOTE_APPROVAL_ABOVE = "50000"
    order = paid_monthly_order(demo, duration=2)
    first = order.invoices.get(period_seq=1)
    # 50,000 net + 3,000 VAT = 53,000.00 > 50,000: waits, no number, nothing credited.
    waiting = credits.credit_note_request(
        invoice=first, lines=[line("50000")], reason="Outage", actor=demo["admin"]
    )
    assert isinstance(waiting, CreditNoteRequest)
    assert waiting.gross_total == D("53000.00") and not CreditNote.objects.exists()
    with pytest.raises(DomainError, match="second person"):
        credits.credit_note_request_approve(request=waiting, actor=demo["admin"])
    second_person = User.objects.create_user("finance2", "f2@example.com", "x", is_staff=True)
    with pytest.raises(DomainError, match="Only finance staff"):
        credits.credit_note_request_approve(request=waiting, actor=second_person)
    second_person.user_permissions.add(Permission.objects.get(codename="approve_creditnoterequest"))
    second_person = User.objects.get(pk=second_person.pk)
    note = credits.credit_note_request_approve(request=waiting, actor=second_person)
    waiting.refresh_from_db()
    assert waiting.status == CreditNoteRequestStatus.APPROVED and waiting.credit_note == note
    assert note.gross_total == D("-53000.00")
    # The first invoice was paid: all of it is balance.
    assert ledger.credit_balance(organisation=order.organisation, currency="CNY") == D("53000.00")
    # 10,000 + 600 = 10,600.00 ≤ 50,000: issued at once.
    assert isinstance(
        credits.credit_note_request(
            invoice=first, lines=[line("10000")], reason="Small", actor=demo["admin"]
        ),
        CreditNote,
    )


def test_the_late_fee_is_0_05_percent_a_day_on_what_is_still_unpaid():
    # The module's example: 4,000 × 0.0005 × 4 + 6,000 × 0.0005 × 10 = 8.00 + 30.00.
    due = date(2026, 12, 1)
    assert late_fee(
        total=D("10000.00"),
        due_on=due,
        settlements=[(date(2026, 12, 5), D("4000.00")), (date(2026, 12, 11), D("6000.00"))],
        until=date(2027, 1, 1),
    ) == D("38.00")
    # Paid on the due date: no fee. Unpaid 3 days later: 212,000 × 0.0005 × 3 = 318.00.
    assert (
        late_fee(
            total=D("212000"),
            due_on=due,
            settlements=[(due, D("212000"))],
            until=due + timedelta(days=9),
        )
        == 0
    )
    assert late_fee(total=D("212000"), due_on=due, settlements=[], until=date(2026, 12, 4)) == D(
        "318.00"
    )
    # Half a cent rounds up once: 1.00 × 0.0005 × 10 = 0.005 → 0.01.
    assert late_fee(total=D("1.00"), due_on=due, settlements=[], until=date(2026, 12, 11)) == D(
        "0.01"
    )


def test_the_late_fee_of_an_invoice_follows_its_value_dates(demo):
    order = paid_monthly_order(demo)
    p = invoicing.order_schedule(order)
    second = invoicing.invoice_issue_period(order=order, seq=2, now=p[1].start - timedelta(days=14))
    # Due 2027-02-01 (the period's first day). 112,000 arrives on 02-01 (on time), the
    # other 100,000 on 02-05: 100,000 × 0.0005 × 4 = 200.00.
    for ref, amount, day in (
        ("T-1", "112000.00", date(2027, 2, 1)),
        ("T-2", "100000.00", date(2027, 2, 5)),
    ):
        orders.transfer_record(
            organisation_id=order.organisation_id,
            currency="CNY",
            amount=D(amount),
            reference=ref,
            value_date=day,
            actor=demo["admin"],
            invoice=second,
        )
    second.refresh_from_db()
    assert dunning.invoice_late_fee(
        second, until=datetime(2027, 3, 1, tzinfo=order.site.tzinfo)
    ) == D("200.00")
    # Paid in full: the fee is final and invoiced once, on a payment notice of its own
    # (contract §10), VAT taken out of it at the period's 6 %: 200.00 / 1.06 = 188.68 net
    # + 11.32 VAT; due 14 days after it is issued; no fee on the fee.
    assert second.status == InvoiceStatus.PAID
    # (The first period was paid late too: value date 12-20, after its payment deadline.)
    assert dunning.late_fees_invoice_due() == 2
    assert dunning.late_fees_invoice_due() == 0
    fee_doc = Invoice.objects.get(late_fee_for=second)
    (fee_line,) = fee_doc.lines.all()
    assert (fee_doc.gross_total, fee_line.net, fee_line.vat) == (
        D("200.00"),
        D("188.68"),
        D("11.32"),
    )
    assert fee_line.kind == InvoiceLineKind.LATE_FEE and fee_line.vat_rate == D("0.06")
    assert fee_line.quantity * fee_line.unit_price == fee_line.net  # 数量 × 单价 = 金额
    assert second.number in fee_line.description and "2027-02-05" in fee_line.description
    assert fee_doc.period_seq is None and fee_doc.status == InvoiceStatus.ISSUED
    assert fee_doc.due_at - fee_doc.issued_at == timedelta(days=14)
    assert dunning.invoice_late_fee(fee_doc, until=fee_doc.due_at + timedelta(days=30)) == 0
    first = order.invoices.get(period_seq=1)
    assert Invoice.objects.get(late_fee_for=first).gross_total == dunning.invoice_late_fee(first)
