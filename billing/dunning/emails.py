"""Finance emails, in the customer's language (their quote's): invoice issued (with the
PDF and bank details), payment received (a receipt, with the updated PDF), dunning
reminders (amount due, transfer reference, late fee so far, the PDF), suspension and
renewal. Each is enqueued through the outbox in the transaction that caused it.

Each send claims its row's ``*_emailed_at`` first, so a second run (a retry, a second
worker) finds it claimed and sends nothing; a failed send gives the claim back.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import Model
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation

from billing.documents.common import bank_details
from billing.dunning import services as dunning
from billing.invoicing import documents as invoice_documents
from billing.models import (
    DunningNotice,
    Invoice,
    InvoiceStatus,
    Order,
    Payment,
    PaymentStatus,
    Renewal,
    Suspension,
    SuspensionStatus,
)
from billing.pricing import late_fees
from billing.pricing.terms import online_methods_text
from core.timezones import period_text


def recipients(order: Order) -> list[str]:
    """The organisation's billing address and the contact of the order's quote."""
    found = [order.organisation.billing_email, order.quote.contact_email]
    return list(dict.fromkeys(a for a in found if a))


def _local(order: Order, value: Any) -> str:
    return timezone.localtime(value, order.site.tzinfo).strftime("%Y-%m-%d")


def _send_once(
    *,
    model: type[Model],
    pk: int,
    field: str,
    order: Order,
    template: str,
    context: Callable[[], dict[str, Any]],
    attach: Invoice | None = None,
) -> str:
    language = order.quote.language
    with translation.override(language):
        values = {
            "order": order,
            "order_link": settings.PORTAL_BASE_URL
            + reverse("dashboard_order", args=[order.number]),
            **context(),
        }
        subject = render_to_string(f"email/{template}_subject.txt", values).strip()
        body = render_to_string(f"email/{template}.txt", values)
    to = recipients(order)
    if not to:
        return "skipped"
    claimed = model._default_manager.filter(pk=pk, **{f"{field}__isnull": True}).update(
        **{field: timezone.now()}
    )
    if not claimed:
        return "skipped"
    try:
        message = EmailMessage(subject=subject, body=body, to=to)
        if attach is not None:
            document = invoice_documents.invoice_document(invoice=attach, language=language)
            with document.file.open("rb") as handle:
                name = Path(document.file.name or "invoice.pdf").name
                message.attach(name, handle.read(), "application/pdf")
        message.send()
    except Exception:
        model._default_manager.filter(pk=pk).update(**{field: None})
        raise
    return "sent"


def dunning_notice_email_send(*, notice_id: int) -> str:
    """The reminder of one dunning step, once."""
    notice = DunningNotice.objects.select_related(
        "invoice__order__organisation", "invoice__order__quote", "invoice__order__site", "step"
    ).get(pk=notice_id)
    if notice.emailed_at is not None:
        return "skipped"
    invoice = notice.invoice
    order = invoice.order
    # Worded by the step (7 days before, on, 3 days after the due date), whenever the
    # email goes out.
    offset = notice.step.offset_days

    def context() -> dict[str, Any]:
        return {
            **_payment_context(invoice, order),
            "due": _local(order, invoice.due_at),
            "days": -offset,
            "overdue_days": offset,
            "suspend_on": _local(order, notice.suspend_on) if notice.suspend_on else "",
            # As of the step's day (the email may go out later than the run).
            "late_fee": dunning.invoice_late_fee(
                invoice, until=invoice.due_at + timedelta(days=offset)
            )
            if offset > 0
            else Decimal("0"),
            "late_fee_rate": late_fees.LATE_FEE_PER_DAY,
        }

    return _send_once(
        model=DunningNotice,
        pk=notice.pk,
        field="emailed_at",
        order=order,
        template="dunning_reminder",
        context=context,
        attach=invoice,
    )


def _payment_context(invoice: Invoice, order: Order) -> dict[str, Any]:
    """What a customer needs to pay an invoice: what is due, the bank and reference."""
    invoice.refresh_from_db()
    return {
        "invoice": invoice,
        "amount_due": invoice.amount_due,
        "bank": bank_details(order.site, order.quote.language),
        "reference": invoice.bank_reference,
        "pay_link": settings.PORTAL_BASE_URL + reverse("order_pay", args=[order.number]),
        # Card, Alipay and WeChat Pay are offered only where Stripe's keys are set.
        "online_methods": (online := online_methods_text()),
        "card_configured": bool(online),
    }


def invoice_issued_email_send(*, invoice_id: int) -> str:
    """The invoice, with its PDF and how to pay it, once, when it is issued."""
    invoice = Invoice.objects.select_related(
        "order__organisation", "order__quote", "order__site"
    ).get(pk=invoice_id)
    if invoice.issued_emailed_at is not None or invoice.status == InvoiceStatus.VOID:
        return "skipped"
    order = invoice.order

    def context() -> dict[str, Any]:
        tz = order.site.tzinfo
        return {
            **_payment_context(invoice, order),
            "due": _local(order, invoice.due_at),
            # The billing period by its first and last day (how every document shows it).
            "period": period_text(invoice.period_start, invoice.period_end, tz)
            if invoice.period_start and invoice.period_end
            else "",
            "credited": invoice.amount_credited,
            "issued": timezone.localtime(invoice.issued_at, tz).strftime("%Y-%m-%d"),
        }

    return _send_once(
        model=Invoice,
        pk=invoice.pk,
        field="issued_emailed_at",
        order=order,
        template="invoice_issued",
        context=context,
        attach=invoice,
    )


def payment_receipt_email_send(*, payment_id: int) -> str:
    """A receipt for one payment received (amount, reference, value date, what is left),
    with the invoice's PDF as it is now, once."""
    payment = Payment.objects.select_related(
        "invoice__order__organisation", "invoice__order__quote", "invoice__order__site"
    ).get(pk=payment_id)
    if payment.receipt_emailed_at is not None or payment.status not in (
        PaymentStatus.SUCCEEDED,
        PaymentStatus.REFUNDED,
    ):
        return "skipped"
    invoice = payment.invoice
    order = invoice.order

    def context() -> dict[str, Any]:
        tz = order.site.tzinfo
        received = (
            payment.value_date
            or timezone.localtime(payment.succeeded_at or payment.created_at, tz).date()
        )
        return {
            **_payment_context(invoice, order),
            "payment": payment,
            "received": received.strftime("%Y-%m-%d"),
            "paid_in_full": invoice.status == InvoiceStatus.PAID,
        }

    return _send_once(
        model=Payment,
        pk=payment.pk,
        field="receipt_emailed_at",
        order=order,
        template="payment_receipt",
        context=context,
        attach=invoice,
    )


def suspension_email_send(*, suspension_id: int, kind: str) -> str:
    """The customer is told their order was suspended, or resumed, once each."""
    suspension = Suspension.objects.select_related(
        "order__organisation", "order__quote", "order__site", "invoice"
    ).get(pk=suspension_id)
    order = suspension.order
    suspended = kind == SuspensionStatus.SUSPENDED
    field = "suspended_emailed_at" if suspended else "resumed_emailed_at"
    if getattr(suspension, field) is not None:
        return "skipped"
    if not suspended and suspension.status != SuspensionStatus.RESUMED:
        return "skipped"

    def context() -> dict[str, Any]:
        return {
            "suspension": suspension,
            "invoice": suspension.invoice,
            "since": _local(order, suspension.suspended_at),
            "page_link": settings.PORTAL_BASE_URL
            + reverse("dashboard_order_suspension", args=[order.number]),
        }

    return _send_once(
        model=Suspension,
        pk=suspension.pk,
        field=field,
        order=order,
        template="order_suspended" if suspended else "order_resumed",
        context=context,
    )


def renewal_email_send(*, renewal_id: int) -> str:
    """The renewal offer (or why none could be made), once."""
    renewal = Renewal.objects.select_related(
        "order__organisation", "order__quote", "order__site", "quote"
    ).get(pk=renewal_id)
    if renewal.emailed_at is not None:
        return "skipped"
    order = renewal.order

    def context() -> dict[str, Any]:
        quote = renewal.quote
        return {
            "renewal": renewal,
            "quote": quote,
            "ends": _local(order, order.end_at),
            "expiry": _local(order, quote.expiry) if quote else "",
            "page_link": settings.PORTAL_BASE_URL
            + reverse("dashboard_order_renewal", args=[order.number]),
            "quote_link": (
                settings.PORTAL_BASE_URL + reverse("quote_public", args=[quote.token])
                if quote
                else ""
            ),
        }

    return _send_once(
        model=Renewal,
        pk=renewal.pk,
        field="emailed_at",
        order=order,
        template="renewal_offer",
        context=context,
    )
