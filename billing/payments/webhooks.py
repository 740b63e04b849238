"""Stripe webhook events: recorded once (by their Stripe id), processed by type in a
Celery task after commit, retried by beat. Every handler is idempotent and safe under
replay and reordering:

- ``payment_intent.succeeded`` → the payment succeeds (amount and currency must match the
  invoice) → ``order_mark_paid``: the hold becomes a firm reservation and provisioning is
  enqueued after commit. When several PaymentIntents succeed for one invoice, the first to
  succeed by Stripe's own clock pays it and every other one is flagged a duplicate to
  refund, whatever order their events arrive in (``_payer_settle``);
- ``payment_intent.payment_failed`` → the payment failed with Stripe's message, unless it
  already succeeded (a late failure never un-pays an order: the event is "ignored");
- ``charge.refunded`` and refund events → the refunded total only ever grows; a full
  refund marks the payment refunded. Provisioning is not reversed: staff get a note.

An event that matches no payment or invoice, or whose amount does not match, is stored
as "flagged" with the reason, for staff; nothing raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import stripe_api
from billing.models import (
    Invoice,
    Order,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    StripeEvent,
    StripeEventStatus,
)
from billing.orders.services import NodesTaken, invoice_amount_paid, invoice_settle
from billing.payments.services import (
    DONE,
    REFUND_OBJECT_EVENTS,
    Outcome,
    flagged,
    ignored,
    order_lock,
    payment_locked,
    processed,
    refunded_total_apply,
)
from billing.pricing.terms import CARD_METHODS
from core import jobs, lifecycle
from core.texts import Text, label

logger = logging.getLogger(__name__)


def stripe_event_record(*, event: dict[str, Any]) -> tuple[StripeEvent, bool]:
    """Store a verified event once by its Stripe id; a duplicate returns the stored row
    and ``False``."""
    return StripeEvent.objects.get_or_create(
        stripe_id=str(event["id"]),
        defaults={"type": str(event.get("type", ""))[:100], "payload": event},
    )


def stripe_event_receive(*, event: dict[str, Any]) -> tuple[StripeEvent, bool]:
    """Record a verified event and enqueue its processing after commit (again for a
    redelivered event that was not processed yet)."""
    with transaction.atomic():
        row, created = stripe_event_record(event=event)
        if row.status in (StripeEventStatus.RECEIVED, StripeEventStatus.FAILED):
            jobs.enqueue("billing.tasks.stripe_event_process_task", row.stripe_id)
    return row, created


def stripe_events_retry(*, older_than: timedelta = timedelta(minutes=5), limit: int = 100) -> int:
    """Re-run webhook events left received or failed. Stripe got its 200 and will not
    redeliver, so this is what makes a handler error or a lost task recoverable. Returns
    how many were re-run; each run is idempotent."""
    cutoff = timezone.now() - older_than
    stuck = list(
        StripeEvent.objects.filter(
            status__in=[StripeEventStatus.RECEIVED, StripeEventStatus.FAILED],
            received_at__lte=cutoff,
        )
        .order_by("received_at")
        .values_list("stripe_id", flat=True)[:limit]
    )
    for event_id in stuck:
        stripe_event_process(event_id=event_id)
    return len(stuck)


def payment_intents_cancel(*, intents: list[str], order_number: str) -> int:
    """Cancel PaymentIntents still open on Stripe for an order whose nodes were freed, so
    they cannot take money. Returns how many were cancelled; one that fails is logged (the
    webhook flags any payment that still lands)."""
    cancelled = 0
    for intent in intents:
        try:
            stripe_api.payment_intent_cancel(intent)
            cancelled += 1
        except stripe_api.StripeError:
            logger.exception("Could not cancel PaymentIntent %s of %s", intent, order_number)
    return cancelled


def stripe_event_process(*, event_id: str) -> str:
    """Act on a stored event (by its Stripe id) and record the outcome; returns it.

    Runs once per event: an event already processed, ignored or flagged is left alone. A
    database outage propagates (the task retries); any other error marks the event
    "failed" with the error, to be retried by a redelivery.
    """
    with transaction.atomic():
        row = StripeEvent.objects.select_for_update().filter(stripe_id=event_id).first()
        if row is None:
            logger.warning("Stripe event %s is not stored", event_id)
            return "missing"
        if row.status in DONE:
            return row.status
        handler = HANDLERS.get(row.type)
        if handler is None:
            outcome = ignored()
        else:
            try:
                with transaction.atomic():
                    outcome = handler(row.payload)
            except (OperationalError, InterfaceError):
                raise
            except Exception as exc:
                logger.exception("Stripe event %s (%s) failed", row.stripe_id, row.type)
                outcome = Outcome(StripeEventStatus.FAILED, f"{type(exc).__name__}: {exc}")
        if outcome.status == StripeEventStatus.FLAGGED:
            logger.warning("Stripe event %s flagged: %s", row.stripe_id, outcome.error)
        row.status = outcome.status
        row.error = outcome.error
        row.processed_at = timezone.now()
        row.save(update_fields=["status", "error", "processed_at"])
        return row.status


def _object(payload: dict[str, Any]) -> dict[str, Any]:
    obj = (payload.get("data") or {}).get("object")
    return obj if isinstance(obj, dict) else {}


def _minor(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _provider_succeeded_at(payload: dict[str, Any], intent: dict[str, Any]) -> datetime | None:
    """When Stripe says the PaymentIntent succeeded: its charge's ``created`` when the
    payload carries the charge (``latest_charge`` expanded), else the event's ``created``
    (Stripe makes the ``payment_intent.succeeded`` event when the intent succeeds; a
    redelivery carries the same value). Unix seconds, UTC. ``None`` when neither is there.
    """
    charge = intent.get("latest_charge")
    stamp = _minor(charge.get("created")) if isinstance(charge, dict) else None
    if stamp is None:
        stamp = _minor(payload.get("created"))
    if stamp is None or stamp < 0:
        return None
    try:
        return datetime.fromtimestamp(stamp, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


# Sorts after every real timestamp: a payment whose success time Stripe did not give.
_NEVER = datetime.max.replace(tzinfo=UTC)


def _payer_key(payment: Payment) -> tuple[int, bool, datetime, str, int]:
    """The order in which a paid invoice's payments rank; the first pays the invoice.

    A payment made outside Stripe (a bank transfer staff recorded) comes first: staff only
    record one on an unpaid invoice, and it cannot be refunded here. Stripe payments rank
    by Stripe's success time, then by PaymentIntent id, so every arrival order of their
    events names the same payer.
    """
    if not payment.stripe_payment_intent:
        return (0, False, payment.succeeded_at or _NEVER, "", payment.pk)
    stamp = payment.provider_succeeded_at
    return (1, stamp is None, stamp or _NEVER, payment.stripe_payment_intent, payment.pk)


def _duplicate_message(payment: Payment, invoice: Invoice) -> str:
    return _(
        "Duplicate, refund: PaymentIntent %(pi)s succeeded for invoice %(n)s after another "
        "payment had paid it. Refund it from the payments admin."
    ) % {"pi": payment.stripe_payment_intent or payment.pk, "n": invoice.number}


def _payer_settle(*, invoice: Invoice, order: Order) -> Payment:
    """Name the payer of ``invoice`` among its succeeded (or since refunded) payments and
    flag as its duplicate every one that came after the invoice was covered (partial
    payments that together make up the total are all kept). Returns the payer. The
    caller holds the order's lock.

    A pure function of the set of succeeded payments and their Stripe timestamps, so the
    result does not depend on the order events arrive or are retried in. The set only
    grows, so a payment once flagged stays flagged (its refund is always safe); the payer
    can only move to an earlier payment that arrives late. The order and invoice were
    marked paid once, by whichever payment came first; only which payment is named the
    payer changes. A payment newly flagged gets one note on the order, and the events
    that had recorded it as paying are re-flagged, so staff see it among flagged events.
    """
    paid = sorted(
        Payment.objects.select_for_update().filter(
            invoice=invoice, status__in=[PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED]
        ),
        key=_payer_key,
    )
    payer = paid[0]
    # Partial payments: payments count, in rank order, until they cover the total; every
    # later one was not needed and is a duplicate of the first.
    covered = Decimal("0")
    for payment in paid:
        target = payer.pk if covered >= invoice.gross_total and payment.pk != payer.pk else None
        if target is None:
            covered += payment.amount
        if payment.duplicate_of_id == target:
            continue
        newly = payment.duplicate_of_id is None
        payment.duplicate_of_id = target
        payment.save(update_fields=["duplicate_of"])
        if not newly:
            continue
        message = _duplicate_message(payment, invoice)
        lifecycle.record_note([order], reason=message)
        if payment.stripe_payment_intent:
            StripeEvent.objects.filter(
                type="payment_intent.succeeded",
                payload__data__object__id=payment.stripe_payment_intent,
                status__in=[StripeEventStatus.PROCESSED, StripeEventStatus.FLAGGED],
            ).update(status=StripeEventStatus.FLAGGED, error=message)
    return payer


def _method_of(intent: dict[str, Any]) -> str | None:
    """The payment method type the customer used, when the payload says."""
    found: Any = None
    charge = intent.get("latest_charge")
    if isinstance(charge, dict):
        found = (charge.get("payment_method_details") or {}).get("type")
    method = intent.get("payment_method")
    if not found and isinstance(method, dict):
        found = method.get("type")
    types = intent.get("payment_method_types")
    if not found and isinstance(types, list) and len(types) == 1:
        found = types[0]
    return found if found in CARD_METHODS else None


#: The ``reference`` of a payment recorded for a PaymentIntent the portal did not create.
NOT_MADE_BY_PORTAL = "stripe: not made by the portal"


def _payment_for_intent(intent: dict[str, Any]) -> Payment | None:
    """The payment of a PaymentIntent (locked, after its order), or one recorded now for
    an intent made elsewhere whose metadata names one of our invoices; ``None`` when
    nothing matches.

    An intent made elsewhere (not created by the portal: the Stripe dashboard, another
    system) is recorded with the amount and currency it really received, never with
    what the invoice still asks (which is 0 once the invoice is paid): so one that
    arrives for a paid invoice becomes a duplicate the refund action can reach, and one
    whose amount does not match is flagged as not ours, to refund."""
    pi_id = intent.get("id")
    if not isinstance(pi_id, str) or not pi_id:
        return None
    payment = payment_locked(stripe_payment_intent=pi_id)
    if payment is not None:
        return payment
    number = (intent.get("metadata") or {}).get("invoice_number")
    invoice = Invoice.objects.filter(number=number).first() if isinstance(number, str) else None
    if invoice is None:
        return None
    order_lock(invoice.order_id)
    made, created = Payment.objects.get_or_create(
        stripe_payment_intent=pi_id,
        defaults={
            "invoice": invoice,
            "method": _method_of(intent) or PaymentMethod.CARD,
            "reference": NOT_MADE_BY_PORTAL,
            **_received(intent, invoice),
        },
    )
    if created:
        lifecycle.record_creation(
            [made], reason=Text("Created from a PaymentIntent not made by the portal.")
        )
    return Payment.objects.select_for_update().get(stripe_payment_intent=pi_id)


def _received(intent: dict[str, Any], invoice: Invoice) -> dict[str, Any]:
    """The amount and currency an intent made elsewhere really received (the invoice's
    currency and what it still asks when the payload names no amount)."""
    minor = _minor(intent.get("amount_received")) or _minor(intent.get("amount"))
    currency = str(intent.get("currency") or "").upper()
    if minor is None or not currency:
        return {
            "currency": invoice.currency,
            "amount": invoice.gross_total - invoice_amount_paid(invoice),
        }
    try:
        return {"currency": currency[:3], "amount": stripe_api.from_minor_units(minor, currency)}
    except (TypeError, ValueError, KeyError):
        return {"currency": invoice.currency, "amount": Decimal("0")}


def _not_ours_message(pi: Any, payment: Payment, invoice: Invoice) -> str:
    return _(
        "Not ours, refund: PaymentIntent %(pi)s was not created by the portal and its "
        "%(amount)s %(cur)s do not pay what invoice %(n)s asks."
    ) % {"pi": pi, "amount": payment.amount, "cur": payment.currency, "n": invoice.number}


def _unknown_intent(intent: dict[str, Any]) -> Outcome:
    metadata = intent.get("metadata") or {}
    return flagged(
        _(
            "No payment or invoice matches PaymentIntent %(pi)s (invoice %(invoice)s, "
            "order %(order)s)."
        )
        % {
            "pi": intent.get("id") or "—",
            "invoice": metadata.get("invoice_number") or "—",
            "order": metadata.get("order_number") or "—",
        }
    )


def _on_intent_succeeded(payload: dict[str, Any]) -> Outcome:
    intent = _object(payload)
    # Locks the order first (the same order as every other paid path: order, then
    # invoice and payments), so a bank transfer marked at the same moment is seen.
    payment = _payment_for_intent(intent)
    if payment is None:
        return _unknown_intent(intent)
    invoice = Invoice.objects.select_related("order").get(pk=payment.invoice_id)
    if payment.reference == NOT_MADE_BY_PORTAL and payment.status == PaymentStatus.PENDING:
        # Not ours: it pays the invoice only when it brings exactly what is due; once
        # the invoice is paid it goes on as a duplicate (the refund action reaches it).
        due = invoice.gross_total - invoice_amount_paid(invoice)
        if payment.currency != invoice.currency or (due > 0 and payment.amount != due):
            error = _not_ours_message(intent.get("id"), payment, invoice)
            if payment.failure_message != error:
                payment.failure_message = error
                payment.save(update_fields=["failure_message"])
            return flagged(error)
    received = _minor(intent.get("amount_received"))
    if not received:
        received = _minor(intent.get("amount"))
    currency = str(intent.get("currency") or "").upper()
    expected = stripe_api.to_minor_units(payment.amount, invoice.currency)
    if currency != invoice.currency or received != expected:
        error = _(
            "PaymentIntent %(pi)s received %(got)s %(cur)s (minor units) but invoice "
            "%(n)s asked it for %(want)s %(inv_cur)s: not recorded as paid."
        ) % {
            "pi": intent.get("id"),
            "got": received,
            "cur": currency or "—",
            "n": invoice.number,
            "want": expected,
            "inv_cur": invoice.currency,
        }
        if payment.status == PaymentStatus.PENDING and payment.failure_message != error:
            payment.failure_message = error
            payment.save(update_fields=["failure_message"])
        return flagged(error)
    fields: list[str] = []
    stamp = _provider_succeeded_at(payload, intent)
    if stamp is not None and (
        payment.provider_succeeded_at is None or stamp < payment.provider_succeeded_at
    ):
        payment.provider_succeeded_at = stamp  # the earliest Stripe reported, never later
        fields.append("provider_succeeded_at")
    if payment.status not in (PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED):
        _intent_succeeded_record(payment, intent, stamped=fields)
    elif fields:
        payment.save(update_fields=fields)
    _payer_settle(invoice=invoice, order=invoice.order)
    payment.refresh_from_db(fields=["duplicate_of"])
    if payment.duplicate_of_id is not None:
        return flagged(_duplicate_message(payment, invoice))
    if payment.status == PaymentStatus.REFUNDED:
        return flagged(
            _("Payment %(pi)s was refunded in full before it was processed; order not paid.")
            % {"pi": intent.get("id")}
        )
    try:
        invoice_settle(
            invoice=invoice,
            comment=_("Paid by %(method)s (Stripe %(pi)s).")
            % {"method": payment.get_method_display(), "pi": intent.get("id")},
        )
    except NodesTaken as exc:
        return flagged(exc.message)
    order = Order.objects.get(pk=invoice.order_id)
    if order.status in (OrderStatus.EXPIRED, OrderStatus.CANCELLED):
        return flagged(
            _("Order %(n)s was %(status)s when payment %(pi)s arrived: refund or re-quote.")
            % {"n": order.number, "status": order.get_status_display(), "pi": intent.get("id")}
        )
    return processed()


def _intent_succeeded_record(payment: Payment, intent: dict[str, Any], stamped: list[str]) -> None:
    """Move a pending or failed (locked) payment to succeeded, with the fields of
    ``stamped`` already set on it; on to refunded when refunds reported before this
    event already cover it."""
    method = _method_of(intent) or payment.method
    payment.method = method  # the reason names the method the customer used
    lifecycle.transition(
        payment,
        to=PaymentStatus.SUCCEEDED,
        reason=Text(
            "Paid by %(method)s (Stripe %(pi)s).",
            method=label(PaymentMethod, payment.method),
            pi=intent.get("id"),
        ),
        updates={
            **{name: getattr(payment, name) for name in stamped},
            "succeeded_at": timezone.now(),
            "failure_message": "",
            "method": method,
        },
        locked=True,
    )
    if payment.amount_refunded >= payment.amount:
        lifecycle.transition(
            payment,
            to=PaymentStatus.REFUNDED,
            reason=Text(
                "Payment %(pi)s was refunded in full before it was processed; order not paid.",
                pi=intent.get("id"),
            ),
            locked=True,
        )


def _on_intent_failed(payload: dict[str, Any]) -> Outcome:
    intent = _object(payload)
    payment = _payment_for_intent(intent)
    if payment is None:
        return _unknown_intent(intent)
    if payment.status in (PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED):
        return ignored(_("The payment had already succeeded; a late failure changes nothing."))
    order = Order.objects.get(pk=payment.invoice.order_id)
    if order.status != OrderStatus.AWAITING_PAYMENT:
        return ignored(
            _("Order %(n)s is %(status)s; a failure changes nothing.")
            % {"n": order.number, "status": order.get_status_display()}
        )
    error = intent.get("last_payment_error") or {}
    message = str(error.get("message") or "") or _("The payment failed.")
    if payment.status != PaymentStatus.FAILED:
        lifecycle.transition(
            payment,
            to=PaymentStatus.FAILED,
            reason=message,
            updates={"failure_message": message},
            locked=True,
        )
    elif payment.failure_message != message:
        payment.failure_message = message
        payment.save(update_fields=["failure_message"])
    return processed()


def _on_charge_refunded(payload: dict[str, Any]) -> Outcome:
    charge = _object(payload)
    pi_id = charge.get("payment_intent")
    payment = (
        payment_locked(stripe_payment_intent=pi_id) if isinstance(pi_id, str) and pi_id else None
    )
    if payment is None:
        return flagged(
            _("No payment matches the refunded charge %(ch)s (PaymentIntent %(pi)s).")
            % {"ch": charge.get("id") or "—", "pi": pi_id or "—"}
        )
    total = _minor(charge.get("amount_refunded"))
    if total is None:
        return flagged(_("Charge %(ch)s has no refunded amount.") % {"ch": charge.get("id")})
    return refunded_total_apply(
        payment, total, str(charge.get("currency") or ""), source=str(charge.get("id"))
    )


def _on_refund(payload: dict[str, Any]) -> Outcome:
    """A Refund object: the refunded total is the sum over the distinct succeeded refunds
    of the PaymentIntent that were ever reported (this event is stored already)."""
    refund = _object(payload)
    pi_id = refund.get("payment_intent")
    payment = (
        payment_locked(stripe_payment_intent=pi_id) if isinstance(pi_id, str) and pi_id else None
    )
    if payment is None:
        return flagged(
            _("No payment matches refund %(re)s (PaymentIntent %(pi)s).")
            % {"re": refund.get("id") or "—", "pi": pi_id or "—"}
        )
    succeeded: dict[str, int] = {}
    stored = StripeEvent.objects.filter(
        type__in=REFUND_OBJECT_EVENTS, payload__data__object__payment_intent=pi_id
    ).values_list("payload", flat=True)
    for event in stored:
        obj = _object(event)
        amount = _minor(obj.get("amount"))
        if obj.get("status") == "succeeded" and obj.get("id") and amount is not None:
            succeeded[str(obj["id"])] = amount
    if refund.get("status") != "succeeded":
        return ignored(
            _("Refund %(re)s is %(status)s.")
            % {"re": refund.get("id"), "status": refund.get("status") or "—"}
        )
    return refunded_total_apply(
        payment,
        sum(succeeded.values()),
        str(refund.get("currency") or ""),
        source=str(refund.get("id")),
    )


HANDLERS: dict[str, Callable[[dict[str, Any]], Outcome]] = {
    "payment_intent.succeeded": _on_intent_succeeded,
    "payment_intent.payment_failed": _on_intent_failed,
    "charge.refunded": _on_charge_refunded,
    **dict.fromkeys(REFUND_OBJECT_EVENTS, _on_refund),
}
