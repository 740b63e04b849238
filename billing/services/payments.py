"""Card, Alipay and WeChat Pay payments through Stripe PaymentIntents, and the Stripe
webhook events that move them.

One PaymentIntent per invoice (reused while it can still be paid). The webhook view only
verifies and records an event (once, by its Stripe id); ``stripe_event_process`` then
dispatches it by type in a Celery task after commit. Every handler is idempotent and
safe under replay and reordering:

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

Locks are taken in one order everywhere: the order row, then its payments.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import stripe_api
from billing.models import (
    Invoice,
    InvoiceStatus,
    Order,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    StripeEvent,
    StripeEventStatus,
)
from billing.services.orders import (
    CARD_METHODS,
    NodesTaken,
    invoice_amount_paid,
    invoice_settle,
)
from core import jobs, lifecycle
from core.errors import DomainError
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


def order_first_invoice(order: Order) -> Invoice | None:
    return Invoice.objects.filter(order=order).order_by("issued_at", "pk").first()


def order_open_invoice(order: Order) -> Invoice | None:
    """The invoice the order's pay page collects: the oldest still open, else the first."""
    return (
        Invoice.objects.filter(order=order, status=InvoiceStatus.ISSUED)
        .order_by("issued_at", "pk")
        .first()
    ) or order_first_invoice(order)


def order_later_open_invoice(order: Order) -> Invoice | None:
    """An open invoice of a later period (or of usage) of a paid order: the first period
    is paid with the order, the later ones are paid on their own."""
    if order.status not in PAID_STATUSES:
        return None
    return (
        Invoice.objects.filter(order=order, status=InvoiceStatus.ISSUED)
        .exclude(period_seq=1)
        .order_by("issued_at", "pk")
        .first()
    )


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


PAID_STATUSES = (
    OrderStatus.PAID,
    OrderStatus.PROVISIONING,
    OrderStatus.VALIDATING,
    OrderStatus.READY,
    OrderStatus.ENDED,
)


def order_payment_state(
    *, order: Order, payment_intent_id: str = "", redirect_status: str = ""
) -> tuple[str, Payment | None]:
    """What the page Stripe returns the customer to says: ``paid``, ``processing``,
    ``failed`` or ``closed`` (expired or cancelled), with the card payment concerned.

    Only our own records make an order paid; Stripe's ``redirect_status`` is a hint for
    the failed case while the webhook is on its way.
    """
    if order.status in PAID_STATUSES:
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
                        existing.status = PaymentStatus.PENDING
                        existing.save(update_fields=["status"])
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
        payment, _created = Payment.objects.get_or_create(
            stripe_payment_intent=intent["id"],
            defaults={
                "invoice": invoice,
                "method": PaymentMethod.CARD,
                "currency": invoice.currency,
                "amount": due,
            },
        )
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
        payment = _payment_locked(pk=payment.pk) or payment
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
        outcome = _refunded_total_apply(
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
        locked = _payment_locked(pk=payment.pk)
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
        outcome = _refunded_total_apply(
            payment, total, payment.currency, source=str(refund["id"]), actor=actor
        )
        if outcome.status == StripeEventStatus.FLAGGED:
            logger.warning("Refund of duplicate %s: %s", payment.pk, outcome.error)
        return payment, True


# --- Webhook events ---------------------------------------------------------------------


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


@dataclass(frozen=True)
class Outcome:
    status: str
    error: str = ""


def _processed(note: str = "") -> Outcome:
    return Outcome(StripeEventStatus.PROCESSED, note)


def _ignored(note: str = "") -> Outcome:
    return Outcome(StripeEventStatus.IGNORED, note)


def _flagged(error: str) -> Outcome:
    return Outcome(StripeEventStatus.FLAGGED, error)


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
            outcome = _ignored()
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


def _order_lock(order_id: int) -> None:
    list(Order.objects.select_for_update().filter(pk=order_id).values_list("pk", flat=True))


def _payment_locked(**lookup: Any) -> Payment | None:
    """The payment matching ``lookup``, locked after its order (the one lock order of every
    payment path, so two of them never deadlock); ``None`` when there is none."""
    found = Payment.objects.filter(**lookup).values_list("pk", "invoice__order_id").first()
    if found is None:
        return None
    _order_lock(found[1])
    return Payment.objects.select_for_update().filter(pk=found[0]).first()


def _payment_for_intent(intent: dict[str, Any]) -> Payment | None:
    """The payment of a PaymentIntent (locked, after its order), or one recorded now for
    an intent made elsewhere whose metadata names one of our invoices; ``None`` when
    nothing matches."""
    pi_id = intent.get("id")
    if not isinstance(pi_id, str) or not pi_id:
        return None
    payment = _payment_locked(stripe_payment_intent=pi_id)
    if payment is not None:
        return payment
    number = (intent.get("metadata") or {}).get("invoice_number")
    invoice = Invoice.objects.filter(number=number).first() if isinstance(number, str) else None
    if invoice is None:
        return None
    _order_lock(invoice.order_id)
    Payment.objects.get_or_create(
        stripe_payment_intent=pi_id,
        defaults={
            "invoice": invoice,
            "method": _method_of(intent) or PaymentMethod.CARD,
            "currency": invoice.currency,
            "amount": invoice.gross_total - invoice_amount_paid(invoice),
        },
    )
    return Payment.objects.select_for_update().get(stripe_payment_intent=pi_id)


def _unknown_intent(intent: dict[str, Any]) -> Outcome:
    metadata = intent.get("metadata") or {}
    return _flagged(
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
        return _flagged(error)
    fields: list[str] = []
    stamp = _provider_succeeded_at(payload, intent)
    if stamp is not None and (
        payment.provider_succeeded_at is None or stamp < payment.provider_succeeded_at
    ):
        payment.provider_succeeded_at = stamp  # the earliest Stripe reported, never later
        fields.append("provider_succeeded_at")
    if payment.status not in (PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED):
        payment.status = PaymentStatus.SUCCEEDED
        payment.succeeded_at = timezone.now()
        payment.failure_message = ""
        payment.method = _method_of(intent) or payment.method
        fields += ["status", "succeeded_at", "failure_message", "method"]
        if payment.amount_refunded >= payment.amount:
            payment.status = PaymentStatus.REFUNDED
    if fields:
        payment.save(update_fields=fields)
    _payer_settle(invoice=invoice, order=invoice.order)
    payment.refresh_from_db(fields=["duplicate_of"])
    if payment.duplicate_of_id is not None:
        return _flagged(_duplicate_message(payment, invoice))
    if payment.status == PaymentStatus.REFUNDED:
        return _flagged(
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
        return _flagged(exc.message)
    order = Order.objects.get(pk=invoice.order_id)
    if order.status in (OrderStatus.EXPIRED, OrderStatus.CANCELLED):
        return _flagged(
            _("Order %(n)s was %(status)s when payment %(pi)s arrived: refund or re-quote.")
            % {"n": order.number, "status": order.get_status_display(), "pi": intent.get("id")}
        )
    return _processed()


def _on_intent_failed(payload: dict[str, Any]) -> Outcome:
    intent = _object(payload)
    payment = _payment_for_intent(intent)
    if payment is None:
        return _unknown_intent(intent)
    if payment.status in (PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED):
        return _ignored(_("The payment had already succeeded; a late failure changes nothing."))
    order = Order.objects.get(pk=payment.invoice.order_id)
    if order.status != OrderStatus.AWAITING_PAYMENT:
        return _ignored(
            _("Order %(n)s is %(status)s; a failure changes nothing.")
            % {"n": order.number, "status": order.get_status_display()}
        )
    error = intent.get("last_payment_error") or {}
    message = str(error.get("message") or "") or _("The payment failed.")
    if (payment.status, payment.failure_message) != (PaymentStatus.FAILED, message):
        payment.status = PaymentStatus.FAILED
        payment.failure_message = message
        payment.save(update_fields=["status", "failure_message"])
    return _processed()


def _refunded_total_apply(
    payment: Payment, total_minor: int, currency: str, *, source: str, actor: Actor = None
) -> Outcome:
    """Record that ``total_minor`` of a (locked) payment is refunded. The total only
    grows, so replays and reordered events change nothing."""
    if currency.upper() != payment.currency:
        return _flagged(
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
        return _flagged(
            _("Refunds of %(total)s exceed payment %(pk)s of %(amount)s.")
            % {"total": total, "pk": payment.pk, "amount": payment.amount}
        )
    if total <= payment.amount_refunded:
        return _processed()
    payment.amount_refunded = total
    fields = ["amount_refunded"]
    if total >= payment.amount and payment.status == PaymentStatus.SUCCEEDED:
        payment.status = PaymentStatus.REFUNDED
        fields.append("status")
    payment.save(update_fields=fields)
    order = Order.objects.get(pk=payment.invoice.order_id)
    lifecycle.record_note(
        [order],
        actor=actor,
        reason=_(
            "Refund recorded (%(src)s): %(total)s %(cur)s of %(amount)s refunded so far. "
            "Provisioning is not reversed automatically; staff decide whether to end the "
            "service."
        )
        % {"src": source, "total": total, "cur": payment.currency, "amount": payment.amount},
    )
    return _processed()


def _on_charge_refunded(payload: dict[str, Any]) -> Outcome:
    charge = _object(payload)
    pi_id = charge.get("payment_intent")
    payment = (
        _payment_locked(stripe_payment_intent=pi_id) if isinstance(pi_id, str) and pi_id else None
    )
    if payment is None:
        return _flagged(
            _("No payment matches the refunded charge %(ch)s (PaymentIntent %(pi)s).")
            % {"ch": charge.get("id") or "—", "pi": pi_id or "—"}
        )
    total = _minor(charge.get("amount_refunded"))
    if total is None:
        return _flagged(_("Charge %(ch)s has no refunded amount.") % {"ch": charge.get("id")})
    return _refunded_total_apply(
        payment, total, str(charge.get("currency") or ""), source=str(charge.get("id"))
    )


def _on_refund(payload: dict[str, Any]) -> Outcome:
    """A Refund object: the refunded total is the sum over the distinct succeeded refunds
    of the PaymentIntent that were ever reported (this event is stored already)."""
    refund = _object(payload)
    pi_id = refund.get("payment_intent")
    payment = (
        _payment_locked(stripe_payment_intent=pi_id) if isinstance(pi_id, str) and pi_id else None
    )
    if payment is None:
        return _flagged(
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
        return _ignored(
            _("Refund %(re)s is %(status)s.")
            % {"re": refund.get("id"), "status": refund.get("status") or "—"}
        )
    return _refunded_total_apply(
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
