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

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.documents.numbers import next_number
from billing.invoicing import ledger
from billing.invoicing.services import fapiao_snapshot
from billing.models import (
    CreditNote,
    CreditNoteRequest,
    CreditNoteRequestStatus,
    Invoice,
    InvoiceStatus,
    Order,
    Payment,
    PaymentStatus,
    Refund,
    SlaCredit,
)
from billing.orders import services as order_services
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
        # A credit note lowers what is due on its invoice while that is open; the rest is
        # the customer's credit balance, applied to their next invoice by itself.
        applied = ledger.credit_note_apply(note=note)
        lifecycle.record_note(
            [invoice],
            actor=actor,
            reason=Text(
                "Credit note %(cn)s: %(applied)s %(cur)s lowers what is due here; "
                "%(left)s %(cur)s goes to the customer's credit balance.",
                cn=note.number,
                applied=applied,
                left=-gross - applied,
                cur=note.currency,
            ),
        )
        if applied:
            order_services.invoice_settle(invoice=invoice, actor=actor)
        jobs.enqueue("billing.tasks.document_render_credit_note", note.pk, order.quote.language)
        if applied:  # the invoice's PDF shows the credit
            jobs.enqueue("billing.tasks.document_render_invoice", invoice.pk, order.quote.language)
        return note


# --- Credit notes above the threshold wait for a second finance approval -------------


def approval_threshold() -> Decimal:
    return Decimal(str(settings.PORTAL_CREDIT_NOTE_APPROVAL_ABOVE))


def _gross_of(lines: list[CreditLine]) -> Decimal:
    total = Decimal("0")
    for line in lines:
        net = line.net.quantize(CENT, rounding=ROUND_HALF_UP)
        total += net + (net * line.vat_rate).quantize(CENT, rounding=ROUND_HALF_UP)
    return total


def credit_note_request(
    *, invoice: Invoice, lines: list[CreditLine], reason: str, actor: Actor
) -> CreditNote | CreditNoteRequest:
    """Issue a credit note at once, or, when its total is above
    ``PORTAL_CREDIT_NOTE_APPROVAL_ABOVE``, keep it waiting for a second finance approval
    (``credit_note_request_approve`` by someone else). Automatic credits (``actor`` None)
    above the threshold wait too."""
    reason = reason.strip()
    if not reason:
        raise DomainError(_("Say why the credit note is issued."))
    if not lines or any(line.net <= 0 for line in lines):
        raise DomainError(_("A credit note needs at least one line of more than 0."))
    gross = _gross_of(lines)
    if gross <= approval_threshold():
        return credit_note_issue(invoice=invoice, lines=lines, reason=reason, actor=actor)
    left = invoice.gross_total - credited_so_far(invoice)
    if gross > left:
        raise DomainError(
            _("Invoice %(n)s has only %(left)s left to credit; this note is for %(amount)s.")
            % {"n": invoice.number, "left": left, "amount": gross}
        )
    request = CreditNoteRequest.objects.create(
        invoice=invoice,
        currency=invoice.currency,
        gross_total=gross,
        reason=reason,
        lines=[
            {
                "description": line.description,
                "description_zh": line.description_zh,
                "net": str(line.net),
                "vat_rate": str(line.vat_rate),
                "tax_category": line.tax_category,
                "detail": line.detail,
            }
            for line in lines
        ],
        requested_by=actor,
    )
    lifecycle.record_note(
        [invoice],
        actor=actor,
        reason=Text(
            "A credit note of %(amount)s %(cur)s is above %(limit)s and waits for a second "
            "finance approval.",
            amount=gross,
            cur=invoice.currency,
            limit=approval_threshold(),
        ),
    )
    return request


def credit_note_request_approve(*, request: CreditNoteRequest, actor: Actor) -> CreditNote:
    """A second person in finance approves a waiting credit note: it is issued now."""
    if actor is None or not actor.has_perm("billing.approve_creditnoterequest"):
        raise DomainError(_("Only finance staff allowed to approve large credit notes can."))
    with transaction.atomic():
        request = CreditNoteRequest.objects.select_for_update().get(pk=request.pk)
        if request.status != CreditNoteRequestStatus.PENDING:
            raise DomainError(_("This credit note was already decided."))
        if request.requested_by_id is not None and request.requested_by_id == actor.pk:
            raise DomainError(
                _("A second person approves: you asked for this credit note yourself.")
            )
        note = credit_note_issue(
            invoice=request.invoice,
            lines=[
                CreditLine(
                    description=line["description"],
                    description_zh=line.get("description_zh", ""),
                    net=Decimal(line["net"]),
                    vat_rate=Decimal(line["vat_rate"]),
                    tax_category=line["tax_category"],
                    detail=line.get("detail", {}),
                )
                for line in request.lines
            ],
            reason=request.reason,
            actor=actor,
        )
        request.status = CreditNoteRequestStatus.APPROVED
        request.decided_by = actor
        request.decided_at = timezone.now()
        request.credit_note = note
        request.save(update_fields=["status", "decided_by", "decided_at", "credit_note"])
        SlaCredit.objects.filter(pk__in=_sla_credit_ids(request)).update(credit_note=note)
        return note


def credit_note_request_reject(*, request: CreditNoteRequest, actor: Actor, why: str) -> None:
    if actor is None or not actor.has_perm("billing.approve_creditnoterequest"):
        raise DomainError(_("Only finance staff allowed to approve large credit notes can."))
    if not why.strip():
        raise DomainError(_("Say why the credit note is rejected."))
    with transaction.atomic():
        request = CreditNoteRequest.objects.select_for_update().get(pk=request.pk)
        if request.status != CreditNoteRequestStatus.PENDING:
            raise DomainError(_("This credit note was already decided."))
        request.status = CreditNoteRequestStatus.REJECTED
        request.decided_by = actor
        request.decided_at = timezone.now()
        request.save(update_fields=["status", "decided_by", "decided_at"])
        lifecycle.record_note(
            [request.invoice],
            actor=actor,
            reason=Text(
                "Credit note of %(amount)s %(cur)s rejected: %(why)s",
                amount=request.gross_total,
                cur=request.currency,
                why=why.strip(),
            ),
        )


def _sla_credit_ids(request: CreditNoteRequest) -> list[int]:
    return [
        int(line["detail"]["sla_credit"])
        for line in request.lines
        if isinstance(line.get("detail"), dict) and line["detail"].get("sla_credit")
    ]
