"""Paying over the term: partial payments, card payments of a later period, refunds and
credit notes (红字) with gapless numbers, and who may see them."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import translation

from accounts.models import Membership, Organisation
from billing import stripe_api
from billing.credits import documents as credit_note_documents
from billing.credits import services as credits
from billing.invoicing import services as invoicing
from billing.models import CreditNote, InvoiceStatus, OrderStatus, PaymentStatus, Refund
from billing.orders import services as orders
from billing.payments import services as payments
from billing.payments import webhooks
from core.errors import DomainError
from core.models import OutboxMessage
from tests import factories
from tests.billing.test_contracts import make_order
from tests.billing.test_invoicing import assert_gapless

pytestmark = pytest.mark.django_db
User = get_user_model()


def succeed(payment) -> str:
    """Stripe says the PaymentIntent succeeded (the stored event, processed)."""
    minor = stripe_api.to_minor_units(payment.amount, payment.currency)
    event = {
        "id": f"evt_{payment.stripe_payment_intent}",
        "type": "payment_intent.succeeded",
        "created": 1_790_000_000,
        "data": {
            "object": {
                "id": payment.stripe_payment_intent,
                "amount": minor,
                "amount_received": minor,
                "currency": payment.currency.lower(),
                "status": "succeeded",
                "metadata": {"invoice_number": payment.invoice.number},
            }
        },
    }
    webhooks.stripe_event_record(event=event)
    return webhooks.stripe_event_process(event_id=event["id"])


def test_a_partial_transfer_leaves_the_invoice_open_and_the_card_pays_the_rest(demo, fake_stripe):
    order = factories.contract_signed_shortcut(make_order(demo, term="month", duration=2))
    invoice = order.invoices.get()
    # A card payment for the whole amount was started, then a part arrived by transfer:
    # the open PaymentIntent asks too much and is cancelled.
    opened, _secret = payments.payment_card_start(order=order, actor=demo["customer"])
    part = Decimal("1000.00")
    orders.invoice_mark_paid_by_transfer(
        invoice=invoice, reference="CMB-1", actor=demo["admin"], amount=part
    )
    opened.refresh_from_db()
    assert opened.status == PaymentStatus.FAILED
    replaced = opened.events.get(to_status=PaymentStatus.FAILED)
    assert (replaced.from_status, replaced.actor) == (PaymentStatus.PENDING, demo["admin"])
    transfer = invoice.payments.get(reference="CMB-1")
    assert list(transfer.events.values_list("from_status", "to_status", "actor")) == [
        ("", PaymentStatus.SUCCEEDED, demo["admin"].pk)
    ]
    assert any(
        name == "billing.tasks.payment_intents_cancel" and args[0] == [opened.stripe_payment_intent]
        for message in OutboxMessage.objects.all()
        for name, args in message.steps
    )
    invoice.refresh_from_db()
    order.refresh_from_db()
    assert (invoice.status, invoice.amount_paid) == (InvoiceStatus.ISSUED, part)
    assert invoice.amount_due == invoice.gross_total - part
    assert order.status == OrderStatus.AWAITING_PAYMENT  # not paid until paid in full
    # More than what is left is refused; nothing is recorded.
    with pytest.raises(DomainError, match="still due"):
        orders.invoice_mark_paid_by_transfer(
            invoice=invoice, reference="CMB-2", actor=demo["admin"], amount=invoice.gross_total
        )
    # The card pays exactly what is left.
    payment, _secret = payments.payment_card_start(order=order, actor=demo["customer"])
    assert payment.amount == invoice.gross_total - part
    assert fake_stripe.created[-1]["amount"] == invoice.gross_total - part
    assert succeed(payment) == "processed"
    invoice.refresh_from_db()
    order.refresh_from_db()
    assert (invoice.status, invoice.amount_paid) == (InvoiceStatus.PAID, invoice.gross_total)
    assert order.status == OrderStatus.PAID
    # The partial transfer is not taken for a duplicate of the card payment.
    assert not invoice.payments.filter(duplicate_of__isnull=False).exists()


def test_a_later_period_is_paid_on_its_own_in_two_transfers(demo):
    order = factories.contract_signed_shortcut(make_order(demo, term="month", duration=2))
    first = order.invoices.get()
    orders.invoice_mark_paid_by_transfer(invoice=first, reference="CMB-1", actor=demo["admin"])
    second = invoicing.invoice_issue_period(order=order, seq=2)
    half = (second.gross_total / 2).quantize(Decimal("0.01"))
    orders.invoice_mark_paid_by_transfer(
        invoice=second, reference="CMB-2", actor=demo["admin"], amount=half
    )
    second.refresh_from_db()
    assert second.status == InvoiceStatus.ISSUED and second.amount_paid == half
    orders.invoice_mark_paid_by_transfer(invoice=second, reference="CMB-3", actor=demo["admin"])
    second.refresh_from_db()
    order.refresh_from_db()
    assert second.status == InvoiceStatus.PAID and second.amount_paid == second.gross_total
    assert second.paid_at is not None and order.status == OrderStatus.PAID


def test_refunds_and_credit_notes_have_gapless_numbers_of_their_own(demo, fake_stripe):
    order = factories.contract_signed_shortcut(make_order(demo, term="month", duration=2))
    invoice = order.invoices.get()
    orders.invoice_mark_paid_by_transfer(
        invoice=invoice, reference="CMB-1", actor=demo["admin"], amount=Decimal("500.00")
    )
    payment, _secret = payments.payment_card_start(order=order, actor=demo["customer"])
    succeed(payment)
    transfer = invoice.payments.get(stripe_payment_intent__isnull=True)
    # A bank transfer refund is recorded with its reference; a card refund goes through
    # Stripe (the wrapper).
    r1 = credits.refund_record(
        payment=transfer, amount=Decimal("200.00"), actor=demo["admin"], reference="OUT-1"
    )
    with pytest.raises(DomainError, match=r"at most 300\.00"):
        credits.refund_record(
            payment=transfer, amount=Decimal("300.01"), actor=demo["admin"], reference="OUT-2"
        )
    r2 = credits.refund_record(payment=payment, amount=Decimal("100.00"), actor=demo["admin"])
    payment.refresh_from_db()
    transfer.refresh_from_db()
    assert transfer.amount_refunded == Decimal("200.00")
    assert payment.amount_refunded == Decimal("100.00") and r2.stripe_refund == "re_test_1"
    assert payment.status == PaymentStatus.SUCCEEDED  # partly refunded
    assert (r1.number, r2.number) == (
        r1.number[:-1] + "1",
        r1.number[:-1] + "2",
    ) and r1.number.startswith("R-SZ-")
    # Credit notes: negative, referencing the invoice; one that credits too much is
    # refused and does not use a number.
    line = credits.CreditLine(
        description="Goodwill credit",
        net=Decimal("100.00"),
        vat_rate=Decimal("0.06"),
        tax_category="it_service",
    )
    n1 = credits.credit_note_issue(invoice=invoice, lines=[line], reason="Late.", actor=None)
    too_much = credits.CreditLine(
        description="x",
        net=invoice.gross_total,
        vat_rate=Decimal("0.06"),
        tax_category="it_service",
    )
    with pytest.raises(DomainError, match="left to credit"):
        credits.credit_note_issue(invoice=invoice, lines=[too_much], reason="x", actor=None)
    n2 = credits.credit_note_issue(invoice=invoice, lines=[line], reason="Again.", actor=None)
    assert (n1.gross_total, n1.net_total, n1.vat_total) == (
        Decimal("-106.00"),
        Decimal("-100.00"),
        Decimal("-6.00"),
    )
    assert n1.invoice == invoice and n1.number.startswith("CN-SZ-")
    assert_gapless(CreditNote.objects.values_list("number", flat=True))
    assert_gapless(Refund.objects.values_list("number", flat=True))
    assert n2.number.endswith("000002")
    # The credit note's PDF is rendered and kept with its SHA-256.
    document = credit_note_documents.credit_note_document(note=n1, language="zh-hans")
    assert len(document.sha256) == 64 and document.file.read(4) == b"%PDF"


def test_invoice_credit_note_and_usage_urls_are_404_to_another_organisation(client, demo):
    order = factories.contract_signed_shortcut(make_order(demo, term="month", duration=2))
    invoice = order.invoices.get()
    line = credits.CreditLine(
        description="Goodwill",
        net=Decimal("1.00"),
        vat_rate=Decimal("0.06"),
        tax_category="it_service",
    )
    note = credits.credit_note_issue(invoice=invoice, lines=[line], reason="x", actor=None)
    with translation.override("en"):
        urls = [
            reverse("dashboard_invoice_pdf", args=[invoice.number]),
            reverse("dashboard_credit_note_pdf", args=[note.number]),
            reverse("dashboard_order_usage", args=[order.number]),
        ]
    stranger = User.objects.create_user("lin", "lin@other.example", "pw-lin-12345")
    Membership.objects.create(
        user=stranger, organisation=Organisation.objects.create(name="Other Lab"), role="owner"
    )
    client.force_login(stranger)
    for url in urls:
        assert client.get(url).status_code == 404, url
    client.force_login(demo["customer"])
    for url in urls:
        assert client.get(url).status_code == 200, url
    # The order page lists the invoices over the term and the credit note.
    page = client.get(reverse("dashboard_order", args=[order.number])).content.decode()
    assert note.number in page and invoice.number in page and "period 2 from" in page


def test_the_first_invoice_is_due_at_the_deadline_and_later_ones_at_their_start(demo):
    order = make_order(demo, term="quarter", duration=2)
    periods = invoicing.order_schedule(order)
    assert order.invoices.get().due_at == order.payment_due_at
    assert periods[1].start - periods[0].start > timedelta(days=80)


def test_staff_refund_and_issue_credit_notes_in_the_back_office(client, demo):
    order = factories.contract_signed_shortcut(make_order(demo, term="month", duration=2))
    invoice = order.invoices.get()
    orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-1", actor=demo["admin"])
    transfer = invoice.payments.get()
    with translation.override("en"):
        refund_url = reverse("admin:billing_refund_issue")
        note_url = reverse("admin:billing_creditnote_issue")
    refund = {"payment": transfer.pk, "amount": "50.00", "reference": "", "reason": "x"}
    note = {
        "invoice": invoice.number,
        "description": "Goodwill",
        "description_zh": "补偿",
        "net": "100.00",
        "tax_category": "it_service",
        "reason": "Late answer.",
    }
    client.force_login(demo["customer"])
    assert client.post(refund_url, refund).status_code == 302  # to the admin login
    assert not Refund.objects.exists()
    client.force_login(demo["admin"])
    page = client.post(refund_url, refund)  # a transfer refund needs its reference
    assert page.status_code == 200 and "reference of the bank transfer" in page.content.decode()
    assert client.post(refund_url, {**refund, "reference": "OUT-9"}).status_code == 302
    assert Refund.objects.get().amount == Decimal("50.00")
    assert client.post(note_url, note).status_code == 302
    created = CreditNote.objects.get()
    assert created.gross_total == Decimal("-106.00") and created.invoice == invoice
