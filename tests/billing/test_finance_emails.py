"""The finance emails a customer expects (issue 24, point 8), each through the outbox, in
the customer's language: invoice issued with the PDF and bank details, payment received
with a receipt, dunning with the amount, reference and late fee."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.core import mail

from billing.dunning import services as dunning
from billing.invoicing import services as invoicing
from billing.orders import acceptance
from billing.orders import services as orders
from billing.quotes import services as qs
from tests import factories
from tests.factories import run_outbox

pytestmark = pytest.mark.django_db
ISSUED = "billing.tasks.invoice_issued_email"
RECEIPT = "billing.tasks.payment_receipt_email"
REMINDER = "billing.tasks.dunning_notice_email"


def order_in(demo, language: str):
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=3,
        start_date=date(2027, 1, 1),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(2), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
        language=language,
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    return factories.contract_signed_shortcut(order)


def test_invoice_issued_and_receipts_in_english_with_the_pdf_and_bank_details(demo):
    order = order_in(demo, "en")
    first = order.invoices.get()
    mail.outbox.clear()
    assert run_outbox(ISSUED) == 1
    assert run_outbox(ISSUED) == 0
    (message,) = mail.outbox
    assert message.subject.startswith(f"Invoice {first.number}, due on ")
    assert "212,000.00" in message.body and first.bank_reference in message.body
    assert "Account number" in message.body
    (name, content, mimetype) = message.attachments[0]
    assert mimetype == "application/pdf" and content.startswith(b"%PDF") and first.number in name
    # A partial transfer: a receipt saying what is left (212,000 − 100,000 = 112,000).
    orders.transfer_record(
        organisation_id=order.organisation_id,
        currency="CNY",
        amount=Decimal("100000.00"),
        reference="CMB-77",
        value_date=date(2026, 12, 20),
        actor=demo["admin"],
    )
    assert run_outbox(RECEIPT) == 1
    receipt = mail.outbox[-1]
    assert receipt.subject == f"Payment received for invoice {first.number}"
    body = " ".join(receipt.body.split())
    assert "We received ¥100,000.00 by bank transfer on 2026-12-20" in body
    assert "CMB-77" in body and "¥112,000.00 is still due" in body
    assert receipt.attachments[0][2] == "application/pdf"
    # Sent once, even when the task runs again.
    payment = first.payments.get()
    from billing.dunning import emails

    assert emails.payment_receipt_email_send(payment_id=payment.pk) == "skipped"


def test_a_chinese_customer_gets_chinese_finance_emails_and_dunning_with_the_late_fee(demo):
    order = order_in(demo, "zh-hans")
    first = order.invoices.get()
    orders.invoice_mark_paid_by_transfer(invoice=first, reference="CMB-1", actor=demo["admin"])
    order.refresh_from_db()
    p = invoicing.order_schedule(order)
    second = invoicing.invoice_issue_period(order=order, seq=2, now=p[1].start - timedelta(days=14))
    mail.outbox.clear()
    run_outbox(ISSUED)
    issued = [m for m in mail.outbox if second.number in m.subject]
    assert issued and "到期" in issued[0].subject and "账号" in issued[0].body
    assert "Invoice" not in issued[0].body and "Amount due" not in issued[0].body
    # Delivered and overdue: 3 days after the due date (02-01), the reminder gives the
    # amount, the reference and the late fee so far: 212,000 × 0.05 % × 3 = 318.00.
    for status in ("provisioning", "validating", "ready"):
        from core import lifecycle

        lifecycle.transition(order, to=status, reason="test")
    for days in (-7, -3, 0, 3):
        dunning.dunning_run(now=second.due_at + timedelta(days=days, hours=1))
    mail.outbox.clear()
    run_outbox(REMINDER)
    last = mail.outbox[-1]
    assert second.bank_reference in last.body and "212,000.00" in last.body
    assert "318.00" in last.body and "违约金" in last.body
    assert last.attachments and last.attachments[0][2] == "application/pdf"
