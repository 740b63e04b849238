"""Refunds and credit notes (红字).

- ``refund_record``: money given back on a payment. A card, Alipay or WeChat Pay payment
  is refunded through Stripe (``payments.payment_refund``, the wrapper); a bank transfer
  is refunded by finance outside the portal and recorded here. Each refund gets a gapless
  number of its own per site and year (``R-SZ-2026-000001``).
- ``credit_note_issue``: a negative document that corrects an issued invoice (an SLA
  credit after the last invoice, a goodwill credit, a price correction). Gapless numbers
  (``CN-SZ-2026-000001``); together the credit notes of an invoice never exceed it; the PDF
  is rendered on the documents queue like an invoice's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.documents.numbers import next_number
from billing.invoicing.services import fapiao_snapshot
from billing.models import (
    CreditNote,
    Invoice,
    InvoiceStatus,
    Order,
    Payment,
    PaymentStatus,
    Refund,
)
from billing.payments import services as payment_services
from core import jobs, lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor

CENT = Decimal("0.01")


def _year(order: Order) -> int:
    return timezone.now().astimezone(order.site.tzinfo).year


# --- Refunds ----------------------------------------------------------------------------


def refund_record(
    *,
    payment: Payment,
    amount: Decimal,
    actor: Actor,
    reason: str = "",
    reference: str = "",
) -> Refund:
    """Refund ``amount`` of a succeeded payment and record it with its number."""
    if amount is None or amount <= 0:
        raise DomainError(_("A refund must be more than 0."))
    if payment.stripe_payment_intent:
        return _refund_card(payment=payment, amount=amount, actor=actor, reason=reason)
    with transaction.atomic():
        order = (
            Order.objects.select_for_update()
            .select_related("site")
            .get(pk=payment.invoice.order_id)
        )
        payment = Payment.objects.select_for_update().get(pk=payment.pk)
        if payment.status not in (PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED):
            raise DomainError(_("Only a succeeded payment can be refunded."))
        left = payment.amount - payment.amount_refunded
        if amount > left:
            raise DomainError(
                _("A refund must be more than 0 and at most %(remaining)s.") % {"remaining": left}
            )
        if not reference.strip():
            raise DomainError(_("Give the reference of the bank transfer that refunded it."))
        refund = Refund.objects.create(
            number=next_number(kind="R", site=order.site, year=_year(order)),
            payment=payment,
            invoice_id=payment.invoice_id,
            currency=payment.currency,
            amount=amount,
            reason=reason,
            reference=reference.strip(),
            created_by=actor,
        )
        note = Text(
            "Refund %(n)s: %(amount)s %(cur)s returned by bank transfer %(ref)s.",
            n=refund.number,
            amount=amount,
            cur=refund.currency,
            ref=reference,
        )
        refunded = payment.amount_refunded + amount
        if refunded >= payment.amount:
            lifecycle.transition(
                payment,
                to=PaymentStatus.REFUNDED,
                actor=actor,
                reason=note,
                updates={"amount_refunded": refunded},
                locked=True,
            )
        else:
            payment.amount_refunded = refunded
            payment.save(update_fields=["amount_refunded"])
        lifecycle.record_note([order], actor=actor, reason=note)
        return refund


def _refund_card(*, payment: Payment, amount: Decimal, actor: Actor, reason: str) -> Refund:
    """Through Stripe (the wrapper); the refund row is written with the Stripe refund id
    in the same transaction as the refunded total."""
    with transaction.atomic():
        order = (
            Order.objects.select_for_update()
            .select_related("site")
            .get(pk=payment.invoice.order_id)
        )
        before = Payment.objects.get(pk=payment.pk).amount_refunded
        payment, stripe_refund = payment_services.payment_refund_with_id(
            payment=payment, actor=actor, amount=amount
        )
        refunded = payment.amount_refunded - before
        return Refund.objects.create(
            number=next_number(kind="R", site=order.site, year=_year(order)),
            payment=payment,
            invoice_id=payment.invoice_id,
            currency=payment.currency,
            amount=refunded if refunded > 0 else amount,
            reason=reason,
            stripe_refund=stripe_refund or None,
            created_by=actor,
        )


# --- Credit notes -----------------------------------------------------------------------


@dataclass(frozen=True)
class CreditLine:
    """What one line of a credit note gives back (``net`` > 0; the note stores it < 0)."""

    description: str
    net: Decimal
    vat_rate: Decimal
    tax_category: str
    description_zh: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


def credited_so_far(invoice: Invoice) -> Decimal:
    """The gross credited on an invoice by its credit notes (a positive number)."""
    return -sum(
        CreditNote.objects.filter(invoice=invoice).values_list("gross_total", flat=True),
        Decimal("0"),
    )


def credit_note_issue(
    *, invoice: Invoice, lines: list[CreditLine], reason: str, actor: Actor
) -> CreditNote:
    """Issue a credit note correcting ``invoice`` (inside its own transaction)."""
    reason = reason.strip()
    if not reason:
        raise DomainError(_("Say why the credit note is issued."))
    if not lines or any(line.net <= 0 for line in lines):
        raise DomainError(_("A credit note needs at least one line of more than 0."))
    with transaction.atomic():
        order = (
            Order.objects.select_for_update()
            .select_related("site", "organisation")
            .get(pk=invoice.order_id)
        )
        invoice = Invoice.objects.select_for_update().get(pk=invoice.pk)
        if invoice.status == InvoiceStatus.VOID:
            raise DomainError(
                _("Invoice %(n)s is void: nothing to credit.") % {"n": invoice.number}
            )
        stored = []
        for line in lines:
            net = line.net.quantize(CENT, rounding=ROUND_HALF_UP)
            vat = (net * line.vat_rate).quantize(CENT, rounding=ROUND_HALF_UP)
            stored.append(
                {
                    "description": line.description,
                    "description_zh": line.description_zh or line.description,
                    "net": str(-net),
                    "vat": str(-vat),
                    "vat_rate": str(line.vat_rate),
                    "tax_category": line.tax_category,
                    "detail": line.detail,
                }
            )
        net_total = sum((Decimal(s["net"]) for s in stored), Decimal("0"))
        vat_total = sum((Decimal(s["vat"]) for s in stored), Decimal("0"))
        gross = net_total + vat_total
        left = invoice.gross_total - credited_so_far(invoice)
        if -gross > left:
            raise DomainError(
                _("Invoice %(n)s has only %(left)s left to credit; this note is for %(amount)s.")
                % {"n": invoice.number, "left": left, "amount": -gross}
            )
        note = CreditNote.objects.create(
            number=next_number(kind="CN", site=order.site, year=_year(order)),
            invoice=invoice,
            order=order,
            organisation=order.organisation,
            currency=invoice.currency,
            net_total=net_total,
            vat_total=vat_total,
            gross_total=gross,
            reason=reason,
            lines=stored,
            fapiao=invoice.fapiao or fapiao_snapshot(order.organisation),
            issued_by=actor,
        )
        lifecycle.record_note(
            [invoice],
            actor=actor,
            reason=Text(
                "Credit note %(cn)s issued: %(amount)s %(cur)s. %(why)s",
                cn=note.number,
                amount=gross,
                cur=note.currency,
                why=reason,
            ),
        )
        jobs.enqueue("billing.tasks.document_render_credit_note", note.pk, order.quote.language)
        return note
