"""Card, Alipay and WeChat Pay payments through Stripe PaymentIntents: starting and
resuming a card payment, the order's payment state, refunds (of a payment, of a flagged
duplicate), and the pieces the webhook handlers share with them (``Outcome``, the one
lock order, the refunded total).

One PaymentIntent per invoice (reused while it can still be paid). The Stripe webhook
events that move payments are in ``billing.payments.webhooks``.

Locks are taken in one order everywhere: the order row, then its payments.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import stripe_api
from billing.models import (
    ORDER_PAID_STATUSES,
    Invoice,
    InvoiceStatus,
    Order,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    StripeEventStatus,
)
from billing.orders.selectors import order_later_open_invoice, order_open_invoice
from billing.orders.services import invoice_amount_paid
from core import lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor

logger = logging.getLogger(__name__)


# PaymentIntent statuses in which an existing intent is reused rather than replaced.
REUSABLE_INTENT = frozenset(
    {
        "requires_payment_method",
        "requires_confirmation",
        "requires_action",
        "processing",
        "requires_capture",
        "succeeded",
    }
)
# An event in one of these statuses is done: processing it again changes nothing.
DONE = frozenset(
    {StripeEventStatus.PROCESSED, StripeEventStatus.IGNORED, StripeEventStatus.FLAGGED}
)
# Events whose object is a Refund (the refunded total is summed over distinct refunds).
REFUND_OBJECT_EVENTS = ("refund.created", "refund.updated", "charge.refund.updated")


def not_configured_message() -> str:
    return _("Card payment is not configured on this portal; please pay by bank transfer.")


def _check_payable(order: Order, now: datetime) -> None:
    if order_later_open_invoice(order) is not None:
        return  # a later period (or usage) of a paid order
    if order.status != OrderStatus.AWAITING_PAYMENT:
        raise DomainError(
            _("Order %(n)s is not awaiting payment (%(status)s).")
            % {"n": order.number, "status": order.get_status_display()}
        )
    if order.payment_due_at and now >= order.payment_due_at:
        when = timezone.localtime(order.payment_due_at, order.site.tzinfo)
        raise DomainError(
            _(
                "The payment deadline of order %(n)s passed at %(when)s; the order will "
                "expire. Ask us for a fresh quote."
            )
            % {"n": order.number, "when": when.strftime("%Y-%m-%d %H:%M")}
        )


def order_payment_state(
    *, order: Order, payment_intent_id: str = "", redirect_status: str = ""
) -> tuple[str, Payment | None]:
    """What the page Stripe returns the customer to says: ``paid``, ``processing``,
    ``failed`` or ``closed`` (expired or cancelled), with the card payment concerned.

    Only our own records make an order paid; Stripe's ``redirect_status`` is a hint for
    the failed case while the webhook is on its way.
    """
    if order.status in ORDER_PAID_STATUSES:
        return "paid", None
    if order.status != OrderStatus.AWAITING_PAYMENT:
        return "closed", None
    card = Payment.objects.filter(invoice__order=order, stripe_payment_intent__isnull=False)
    payment = (
        card.filter(stripe_payment_intent=payment_intent_id).first() if payment_intent_id else None
    )
    payment = payment or card.order_by("-created_at", "-pk").first()
    if redirect_status == "failed" or (payment and payment.status == PaymentStatus.FAILED):
        return "failed", payment
    return "processing", payment


# --- Starting a card payment ------------------------------------------------------------


def payment_card_resume(*, order: Order) -> tuple[Payment, str] | None:
    """The open PaymentIntent of the order's invoice and its client secret, to show the
    Payment Element again; ``None`` when none is open. Reads only (a GET may call it)."""
    if not stripe_api.is_configured():
        raise DomainError(not_configured_message())
    _check_payable(order, timezone.now())
    invoice = order_later_open_invoice(order) or order_open_invoice(order)
    if invoice is None or invoice.status != InvoiceStatus.ISSUED:
        return None
    payment = (
        Payment.objects.filter(
            invoice=invoice, status=PaymentStatus.PENDING, stripe_payment_intent__isnull=False
        )
        .order_by("-created_at", "-pk")
        .first()
    )
    if payment is None:
        return None
    try:
        intent = stripe_api.payment_intent_retrieve(payment.stripe_payment_intent or "")
    except stripe_api.StripeError:
        return None
    if intent["status"] not in REUSABLE_INTENT:
        return None
    return payment, intent["client_secret"]


def payment_card_start(*, order: Order, actor: Actor) -> tuple[Payment, str]:
    """The PaymentIntent for the order's first invoice and its client secret (for the
    Payment Element). Reuses the invoice's open PaymentIntent; a new one is made only
    when there is none (or it was cancelled). Amounts come from the invoice.

    Holds the invoice's row lock across the Stripe call so that two tabs cannot make two
    intents; the idempotency key (from the invoice number) covers retries.
    """
    if not stripe_api.is_configured():
        raise DomainError(not_configured_message())
    with transaction.atomic():
        order = Order.objects.select_for_update().select_related("site").get(pk=order.pk)
        _check_payable(order, timezone.now())
        open_invoices = Invoice.objects.select_for_update().filter(
            order=order, status=InvoiceStatus.ISSUED
        )
        if order.status != OrderStatus.AWAITING_PAYMENT:
            open_invoices = open_invoices.exclude(period_seq=1)
        invoice = open_invoices.order_by("issued_at", "pk").first()
        if invoice is None:
            raise DomainError(
                _("Order %(n)s has no invoice open for payment.") % {"n": order.number}
            )
        # Partial payments: the intent is for what is still due.
        due = invoice.gross_total - invoice_amount_paid(invoice)
        intents = Payment.objects.filter(invoice=invoice, stripe_payment_intent__isnull=False)
        try:
            existing = intents.order_by("-created_at", "-pk").first()
            if existing is not None and existing.status in (
                PaymentStatus.PENDING,
                PaymentStatus.FAILED,
            ):
                intent = stripe_api.payment_intent_retrieve(existing.stripe_payment_intent or "")
                if intent["status"] in REUSABLE_INTENT and intent[
                    "amount"
                ] == stripe_api.to_minor_units(due, invoice.currency):
                    if existing.status == PaymentStatus.FAILED:
                        lifecycle.transition(
                            existing,
                            to=PaymentStatus.PENDING,
                            actor=actor,
                            reason=Text("The card payment is tried again on the same intent."),
                        )
                    return existing, intent["client_secret"]
            intent = stripe_api.payment_intent_create(
                amount=due,
                currency=invoice.currency,
                invoice_number=invoice.number,
                order_number=order.number,
                idempotency_key=f"pi-{invoice.number}-{intents.count() + 1}",
            )
        except stripe_api.StripeError as exc:
            logger.warning("Stripe refused a PaymentIntent for %s: %s", invoice.number, exc)
            raise DomainError(
                _(
                    "The card payment could not be started. Try again in a minute, or pay "
                    "by bank transfer."
                )
            ) from exc
        payment, created = Payment.objects.get_or_create(
            stripe_payment_intent=intent["id"],
            defaults={
                "invoice": invoice,
                "method": PaymentMethod.CARD,
                "currency": invoice.currency,
                "amount": due,
            },
        )
        if created:
            lifecycle.record_creation([payment], actor=actor, reason=Text("Created."))
        return payment, intent["client_secret"]


def payment_refund(*, payment: Payment, actor: Actor, amount: Decimal | None = None) -> Payment:
    """Refund (part of) a card payment through Stripe (see ``payment_refund_with_id``)."""
    return payment_refund_with_id(payment=payment, actor=actor, amount=amount)[0]


def payment_refund_with_id(
    *, payment: Payment, actor: Actor, amount: Decimal | None = None
) -> tuple[Payment, str]:
    """Refund (part of) a card payment through Stripe and record the refunded total.

    Provisioning is not reversed: the order gets a note and staff decide. A webhook for
    the same refund later changes nothing (the refunded total only grows).
    """
    if not stripe_api.is_configured():
        raise DomainError(not_configured_message())
    with transaction.atomic():
        payment = payment_locked(pk=payment.pk) or payment
        if not payment.stripe_payment_intent or payment.status != PaymentStatus.SUCCEEDED:
            raise DomainError(_("Only a succeeded card payment can be refunded here."))
        remaining = payment.amount - payment.amount_refunded
        amount = remaining if amount is None else amount
        if amount <= 0 or amount > remaining:
            raise DomainError(
                _("A refund must be more than 0 and at most %(remaining)s.")
                % {"remaining": remaining}
            )
        already = stripe_api.to_minor_units(payment.amount_refunded, payment.currency)
        minor = stripe_api.to_minor_units(amount, payment.currency)
        try:
            refund = stripe_api.refund_create(
                payment_intent_id=payment.stripe_payment_intent,
                amount=amount,
                currency=payment.currency,
                idempotency_key=f"refund-{payment.pk}-{already}-{minor}",
            )
            total, _currency = stripe_api.payment_intent_amount_refunded(
                payment.stripe_payment_intent
            )
        except stripe_api.StripeError as exc:
            logger.warning("Stripe refused a refund of payment %s: %s", payment.pk, exc)
            raise DomainError(_("Stripe refused the refund: %(e)s") % {"e": exc}) from exc
        total = max(total, already + refund["amount"])
        outcome = refunded_total_apply(
            payment, total, payment.currency, source=str(refund["id"]), actor=actor
        )
        if outcome.status == StripeEventStatus.FLAGGED:
            logger.warning("Refund of payment %s: %s", payment.pk, outcome.error)
        return payment, str(refund["id"] or "")


def payment_duplicate_refund(*, payment: Payment, actor: Actor) -> tuple[Payment, bool]:
    """Refund in full, through Stripe, a card payment flagged as a duplicate (another
    payment paid its invoice first). Returns the payment and whether it was refunded now.

    Recorded once: a duplicate already refunded from here, or refunded in full elsewhere,
    is returned with ``False`` and Stripe is not called; a retry after a crash reuses the
    same idempotency key, so Stripe makes the refund once. Refunding a duplicate never
    un-pays the order: the payer stays.
    """
    if not stripe_api.is_configured():
        raise DomainError(not_configured_message())
    with transaction.atomic():
        locked = payment_locked(pk=payment.pk)
        if locked is None:
            raise DomainError(_("The payment no longer exists."))
        payment = locked
        if payment.duplicate_of_id is None or not payment.stripe_payment_intent:
            raise DomainError(
                _(
                    "Payment %(pi)s is not flagged as a duplicate; only duplicates are "
                    "refunded here."
                )
                % {"pi": payment.stripe_payment_intent or payment.pk}
            )
        if payment.duplicate_refund or payment.status == PaymentStatus.REFUNDED:
            return payment, False
        if payment.status != PaymentStatus.SUCCEEDED:
            raise DomainError(
                _("Payment %(pi)s is %(status)s; there is nothing to refund.")
                % {"pi": payment.stripe_payment_intent, "status": payment.get_status_display()}
            )
        remaining = payment.amount - payment.amount_refunded
        already = stripe_api.to_minor_units(payment.amount_refunded, payment.currency)
        minor = stripe_api.to_minor_units(remaining, payment.currency)
        try:
            refund = stripe_api.refund_create(
                payment_intent_id=payment.stripe_payment_intent,
                amount=remaining,
                currency=payment.currency,
                idempotency_key=f"duplicate-refund-{payment.stripe_payment_intent}-{minor}",
            )
            total, _currency = stripe_api.payment_intent_amount_refunded(
                payment.stripe_payment_intent
            )
        except stripe_api.StripeError as exc:
            logger.warning("Stripe refused the refund of duplicate %s: %s", payment.pk, exc)
            raise DomainError(_("Stripe refused the refund: %(e)s") % {"e": exc}) from exc
        payment.duplicate_refund = str(refund["id"] or "")[:255]
        payment.save(update_fields=["duplicate_refund"])
        total = max(total, already + refund["amount"])
        outcome = refunded_total_apply(
            payment, total, payment.currency, source=str(refund["id"]), actor=actor
        )
        if outcome.status == StripeEventStatus.FLAGGED:
            logger.warning("Refund of duplicate %s: %s", payment.pk, outcome.error)
        return payment, True


# --- Shared with the webhook handlers ---------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    status: str
    error: str = ""


def processed(note: str = "") -> Outcome:
    return Outcome(StripeEventStatus.PROCESSED, note)


def ignored(note: str = "") -> Outcome:
    return Outcome(StripeEventStatus.IGNORED, note)


def flagged(error: str) -> Outcome:
    return Outcome(StripeEventStatus.FLAGGED, error)


def order_lock(order_id: int) -> None:
    list(Order.objects.select_for_update().filter(pk=order_id).values_list("pk", flat=True))


def payment_locked(**lookup: Any) -> Payment | None:
    """The payment matching ``lookup``, locked after its order (the one lock order of every
    payment path, so two of them never deadlock); ``None`` when there is none."""
    found = Payment.objects.filter(**lookup).values_list("pk", "invoice__order_id").first()
    if found is None:
        return None
    order_lock(found[1])
    return Payment.objects.select_for_update().filter(pk=found[0]).first()


def refunded_total_apply(
    payment: Payment, total_minor: int, currency: str, *, source: str, actor: Actor = None
) -> Outcome:
    """Record that ``total_minor`` of a (locked) payment is refunded. The total only
    grows, so replays and reordered events change nothing."""
    if currency.upper() != payment.currency:
        return flagged(
            _("Refund %(src)s is in %(cur)s; payment %(pk)s is in %(pay_cur)s.")
            % {
                "src": source,
                "cur": currency.upper(),
                "pk": payment.pk,
                "pay_cur": payment.currency,
            }
        )
    total = stripe_api.from_minor_units(total_minor, payment.currency)
    if total > payment.amount:
        return flagged(
            _("Refunds of %(total)s exceed payment %(pk)s of %(amount)s.")
            % {"total": total, "pk": payment.pk, "amount": payment.amount}
        )
    if total <= payment.amount_refunded:
        return processed()
    note = Text(
        "Refund recorded (%(src)s): %(total)s %(cur)s of %(amount)s refunded so far. "
        "Provisioning is not reversed automatically; staff decide whether to end the "
        "service.",
        src=source,
        total=total,
        cur=payment.currency,
        amount=payment.amount,
    )
    if total >= payment.amount and payment.status == PaymentStatus.SUCCEEDED:
        lifecycle.transition(
            payment,
            to=PaymentStatus.REFUNDED,
            actor=actor,
            reason=note,
            updates={"amount_refunded": total},
            locked=True,
        )
    else:
        payment.amount_refunded = total
        payment.save(update_fields=["amount_refunded"])
    order = Order.objects.get(pk=payment.invoice.order_id)
    lifecycle.record_note([order], actor=actor, reason=note)
    return processed()
