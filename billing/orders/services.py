"""Orders and invoices: created on acceptance, paid (card or bank transfer), or expired.

An accepted quote's holds become the order's holds, kept until the payment deadline
(``hold_terms``: 30 minutes for card payments; for bank transfer the quote's expiry, at
most two days for self-service, never past the start minus the site's lead time). Payment makes
them firm and starts provisioning (after commit); an unpaid order expires in Celery beat
and frees its nodes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import SshPublicKey
from billing.contracts.gate import order_release_for_provisioning
from billing.contracts.services import contract_draft_if_needed
from billing.documents.common import payment_document_name
from billing.documents.numbers import next_number
from billing.dunning.services import dunning_invoice_paid
from billing.invoicing import ledger
from billing.invoicing.services import invoice_issue_first
from billing.models import (
    ORDER_PAID_STATUSES,
    Invoice,
    InvoiceStatus,
    Order,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    Quote,
)
from billing.pricing.periods import rental_period, site_today
from billing.pricing.terms import (
    PAYMENT_GRACE,
    hold_terms,
    payment_methods_offered,
    transfer_refusal,
)
from core import jobs, lifecycle
from core.errors import DomainError
from core.money import money_text
from core.texts import Plural, Text
from core.types import Actor
from inventory import services as inventory_services
from inventory.models import ImageProfile, Reservation, ReservationStatus

logger = logging.getLogger(__name__)


class NodesTaken(DomainError):
    """A payment arrived after the order's nodes were booked by someone else."""


def order_transition(
    *, order: Order, to_status: str, actor: Actor = None, reason: str = "", **updates: object
) -> Order:
    """Move an order along its lifecycle (the caller holds the row lock)."""
    return lifecycle.transition(
        order, to=to_status, actor=actor, reason=reason, updates=updates, locked=True
    )


def invoices_move(
    *, order: Order, source: str, to_status: str, reason: str, **updates: object
) -> list[Invoice]:
    """Move the order's invoices that are in ``source`` (paid, or void when it lapsed)."""
    invoices = list(
        Invoice.objects.select_for_update().filter(order=order, status=source).order_by("pk")
    )
    return lifecycle.transition_many(
        invoices, to=to_status, reason=reason, updates=updates, locked=True
    )


def order_create_from_quote(
    *, quote: Quote, actor: Actor, payment_method: str = PaymentMethod.BANK_TRANSFER
) -> Order:
    """The order for an accepted quote, its first invoice, and its holds until payment.

    Runs inside the accepting transaction; the quote's holds must still be held.
    """
    if payment_method not in payment_methods_offered():
        raise DomainError(_("Choose a payment method."))
    start_at, end_at = rental_period(
        site=quote.site, start_date=quote.start_date, term=quote.term, duration=quote.duration
    )
    terms = hold_terms(
        site=quote.site,
        start_date=quote.start_date,
        method=payment_method,
        quote_expires_at=quote.expires_at,
        self_service=not quote.created_by.is_staff,
    )
    if not terms.possible:
        raise DomainError(transfer_refusal(terms))
    due = terms.pay_by
    year = site_today(quote.site).year
    order = Order.objects.create(
        number=next_number(kind="O", site=quote.site, year=year),
        organisation=quote.organisation,
        quote=quote,
        site=quote.site,
        currency=quote.currency,
        gross_total=quote.gross_total,
        start_at=start_at,
        end_at=end_at,
        reservation_group=quote.reservation_group,
        payment_due_at=due,
        image_profile=ImageProfile.objects.filter(is_default=True, active=True).first(),
    )
    # The organisation's SSH keys by default; the customer may narrow them before payment.
    order.ssh_keys.set(SshPublicKey.objects.filter(organisation=quote.organisation))
    lifecycle.record_creation(
        [order],
        actor=actor,
        reason=Text("Created from quote %(n)s v%(v)s.", n=quote.number, v=quote.version),
    )
    if quote.reservation_group:
        inventory_services.reservation_group_extend(
            group=quote.reservation_group,
            expires_at=due + PAYMENT_GRACE,
            owner_ref=f"order:{order.number}",
            actor=actor,
            reason=Text("Held for order %(n)s until payment.", n=order.number),
        )
    # The first billing period's document; later periods are issued by the beat job
    # (``billing.invoicing.services``).
    first = invoice_issue_first(order=order, due_at=due, actor=actor)
    contract_draft_if_needed(order=order, actor=actor)
    if first.amount_credited and first.amount_due <= 0:  # refreshed when credit applied
        invoice_settle(  # the customer's credit balance paid it all
            invoice=first, actor=actor, comment=Text("Paid from the credit balance.")
        )
        order.refresh_from_db()
    return order


def _render_invoice_after_commit(invoice: Invoice, language: str) -> None:
    """The invoice PDF is rendered on the documents queue once the invoice is saved."""
    jobs.enqueue("billing.tasks.document_render_invoice", invoice.pk, language)


def _confirm_nodes(order: Order, actor: Actor) -> str:
    """Make the order's booking firm; re-book the same nodes if the hold lapsed meanwhile.

    Returns a note for the order's history ("" when all went as planned).
    Runs under the order's row lock.
    """
    if not order.reservation_group:
        return ""
    reservations = list(
        Reservation.objects.select_for_update()
        .filter(group=order.reservation_group)
        .select_related("node")
    )
    if reservations and all(r.status == ReservationStatus.HOLD for r in reservations):
        inventory_services.reservation_group_confirm(
            group=order.reservation_group, actor=actor, reason=Text("Paid.")
        )
        return ""
    if reservations and all(r.status == ReservationStatus.FIRM for r in reservations):
        return ""
    if not reservations:
        return ""
    # The hold lapsed before the money arrived: book the same nodes again if still free.
    # Parts still held are released first so that they do not collide with the re-booking.
    for r in reservations:
        if r.status == ReservationStatus.HOLD:
            inventory_services.reservation_transition(
                reservation=r,
                to_status=ReservationStatus.RELEASED,
                actor=actor,
                reason=Text("Re-booked after payment."),
            )
    first = reservations[0]
    try:
        rebooked = inventory_services.reservation_hold(
            nodes=[r.node for r in reservations],
            start_at=first.start_at,
            end_at=first.end_at,
            owner_ref=f"order:{order.number}",
            firm=True,
            actor=actor,
        )
    except DomainError as exc:
        logger.warning("Order %s paid after its nodes were taken: %s", order.number, exc.message)
        raise NodesTaken(
            _(
                "Paid after the hold lapsed and some nodes were taken meanwhile: place the "
                "order on other nodes or refund. (%(reason)s)"
            )
            % {"reason": exc.message}
        ) from exc
    order.reservation_group = rebooked[0].group
    order.save(update_fields=["reservation_group"])
    return Text("Paid after the hold lapsed; the same nodes were booked again.")


def order_mark_paid(*, order: Order, actor: Actor = None, comment: str = "") -> tuple[Order, bool]:
    """Paid: the booking becomes firm and provisioning is enqueued after commit.

    Idempotent: an order already paid (or further along) is returned unchanged with
    ``False``; so is an expired one, with a note for staff.
    """
    with transaction.atomic():
        order = Order.objects.select_for_update().get(pk=order.pk)
        if order.status not in (OrderStatus.AWAITING_PAYMENT, OrderStatus.EXPIRED):
            return order, False
        if order.status == OrderStatus.EXPIRED:
            # Money arrived for an expired order: record it; staff refund or re-quote.
            # Nothing is booked silently.
            lifecycle.record_note(
                [order],
                actor=actor,
                reason=Text("Payment received after the order expired: refund or re-quote."),
            )
            return order, False
        try:
            note = _confirm_nodes(order, actor)
        except NodesTaken:
            # Money but no nodes: never "paid" (nothing would be provisioned); staff decide.
            raise
        order_transition(
            order=order,
            to_status=OrderStatus.PAID,
            actor=actor,
            reason=(
                Text("%(comment)s %(note)s", comment=comment, note=note)
                if comment and note
                else comment or note
            ),
            paid_at=timezone.now(),
        )
        paid = invoices_move(
            order=order,
            source=InvoiceStatus.ISSUED,
            to_status=InvoiceStatus.PAID,
            reason=comment or Text("Paid."),
            paid_at=order.paid_at,
        )
        for invoice in paid:  # the PDF gets its PAID stamp
            _render_invoice_after_commit(invoice, order.quote.language)
        # Provisioning starts once the order is also agreed (contract signed or terms
        # accepted): the gate enqueues it by task name, once.
        order_release_for_provisioning(order=order, actor=actor)
        return order, True


def invoice_amount_paid(invoice: Invoice) -> Decimal:
    """What the invoice's payments brought in: every succeeded payment (later refunds do
    not un-pay it) that is not a duplicate of another."""
    amounts = Payment.objects.filter(
        invoice=invoice,
        status__in=(PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED),
        duplicate_of__isnull=True,
    ).values_list("amount", flat=True)
    return sum(amounts, Decimal("0"))


def invoice_settle(*, invoice: Invoice, actor: Actor = None, comment: str = "") -> Invoice:
    """Bring the invoice's paid amount up to date from its payments; once it reaches the
    total the invoice is paid. A partly paid invoice stays issued. The first period's
    document pays the order (``order_mark_paid``: the booking becomes firm, provisioning
    may start); a later one is paid on its own. The caller holds the order's lock.

    Raises ``NodesTaken`` like ``order_mark_paid``. Safe to call any number of times.
    """
    invoice = Invoice.objects.select_for_update().select_related("order").get(pk=invoice.pk)
    paid = invoice_amount_paid(invoice)
    if paid != invoice.amount_paid:
        invoice.amount_paid = paid
        invoice.save(update_fields=["amount_paid"])
    # Paid in full by payments although a credit was applied: the credit goes back to the
    # customer's balance (for the next invoice) instead of being lost.
    if invoice.amount_credited and ledger.credit_overlap_release(invoice=invoice):
        invoice.refresh_from_db()
    if (
        invoice.status != InvoiceStatus.ISSUED
        or paid + invoice.amount_credited < invoice.gross_total
    ):
        return invoice
    order = invoice.order
    if order.status in (OrderStatus.AWAITING_PAYMENT, OrderStatus.EXPIRED):
        order_mark_paid(order=order, actor=actor, comment=comment)
    else:
        lifecycle.transition(
            invoice,
            to=InvoiceStatus.PAID,
            actor=actor,
            reason=comment or Text("Paid."),
            updates={"paid_at": timezone.now()},
            locked=True,
        )
        _render_invoice_after_commit(invoice, order.quote.language)
        # A suspension for this invoice ends now (nodes powered on, customer told).
        dunning_invoice_paid(invoice=invoice, actor=actor)
    invoice.refresh_from_db()
    return invoice


def invoice_left_to_pay(invoice: Invoice) -> Decimal:
    """The total less what payments brought in and what credits took off."""
    return ledger.invoice_due(invoice)


@dataclass(frozen=True)
class TransferRecorded:
    """What recording a bank transfer did, for an honest message: each invoice it paid
    (or paid part of) with the amount, and whether that invoice is now paid in full."""

    reference: str
    amount: Decimal
    currency: str
    applied: tuple[tuple[Invoice, Decimal], ...]

    def message(self) -> str:
        parts = []
        for invoice, amount in self.applied:
            if invoice.status == InvoiceStatus.PAID:
                text = _("%(amount)s on %(document)s, which is now paid in full") % {
                    "amount": money_text(amount, self.currency),
                    "document": payment_document_name(invoice),
                }
                if invoice.order.status in ORDER_PAID_STATUSES and invoice.period_seq == 1:
                    text += _(" (order %(o)s is confirmed)") % {"o": invoice.order.number}
            else:
                text = _("%(amount)s on %(document)s; %(left)s still due") % {
                    "amount": money_text(amount, self.currency),
                    "document": payment_document_name(invoice),
                    "left": money_text(invoice.amount_due, self.currency),
                }
            parts.append(text)
        return _("Bank transfer %(ref)s recorded: %(parts)s.") % {
            "ref": self.reference,
            "parts": "; ".join(parts),
        }


def open_invoices_oldest_first(*, organisation_id: int, currency: str) -> list[Invoice]:
    """The customer's issued invoices in ``currency``, the oldest due first (where a
    payment that names no invoice goes)."""
    return list(
        Invoice.objects.filter(
            organisation_id=organisation_id, currency=currency, status=InvoiceStatus.ISSUED
        )
        .exclude(order__status__in=(OrderStatus.EXPIRED, OrderStatus.CANCELLED))
        .select_related("order")
        .order_by("due_at", "issued_at", "pk")
    )


def transfer_record(
    *,
    organisation_id: int,
    currency: str,
    amount: Decimal,
    reference: str,
    value_date: date,
    actor: Actor,
    invoice: Invoice | None = None,
) -> TransferRecorded:
    """A bank transfer of ``amount`` received on ``value_date``: applied to the named
    invoice, or else to the customer's open invoices oldest first (each gets at most what
    is due on it). More than everything due is refused (finance returns or keeps it by
    agreement); nothing is recorded then."""
    reference = reference.strip()
    if not reference:
        raise DomainError(_("Give the bank transfer's reference."))
    if amount is None or amount <= 0:
        raise DomainError(_("A transfer must be more than 0."))
    if value_date is None:
        raise DomainError(_("Give the transfer's value date (the day it reached the account)."))
    if invoice is not None:
        return TransferRecorded(
            reference,
            amount,
            invoice.currency,
            (
                (
                    invoice_mark_paid_by_transfer(
                        invoice=invoice,
                        reference=reference,
                        actor=actor,
                        amount=amount,
                        value_date=value_date,
                    ),
                    amount,
                ),
            ),
        )
    with transaction.atomic():
        candidates = open_invoices_oldest_first(organisation_id=organisation_id, currency=currency)
        for order_id in sorted({i.order_id for i in candidates}):  # one lock order: by order
            Order.objects.select_for_update().get(pk=order_id)
        dues = [(i, invoice_left_to_pay(i)) for i in candidates]
        total_due = sum((d for _i, d in dues if d > 0), Decimal("0"))
        if amount > total_due:
            raise DomainError(
                _(
                    "The transfer of %(amount)s %(cur)s is more than the %(due)s %(cur)s due "
                    "on all open invoices of this customer; name the invoice or record less."
                )
                % {"amount": amount, "cur": currency, "due": total_due}
            )
        left = amount
        applied = []
        for inv, due in dues:
            if left <= 0:
                break
            if due <= 0:
                continue
            part = min(due, left)
            applied.append(
                (
                    invoice_mark_paid_by_transfer(
                        invoice=inv,
                        reference=reference,
                        actor=actor,
                        amount=part,
                        value_date=value_date,
                    ),
                    part,
                )
            )
            left -= part
        return TransferRecorded(reference, amount, currency, tuple(applied))


@transaction.atomic
def invoice_mark_paid_by_transfer(
    *,
    invoice: Invoice,
    reference: str,
    actor: Actor,
    amount: Decimal | None = None,
    value_date: date | None = None,
) -> Invoice:
    """Staff saw a bank transfer: record it (all of what is due, or a part: the invoice
    stays open until paid in full) and run the same paid path as a card. Every transfer
    keeps its own reference and value date (a payment row each)."""
    reference = reference.strip()
    if not reference:
        raise DomainError(_("Give the bank transfer's reference."))
    # Lock order, then invoice: the same order as the card path, so the two never deadlock
    # and never both record a payment unseen by the other.
    Order.objects.select_for_update().get(pk=invoice.order_id)
    invoice = (
        Invoice.objects.select_for_update(of=("self",))
        .select_related("order__site")
        .get(pk=invoice.pk)
    )
    if invoice.status == InvoiceStatus.PAID:
        raise DomainError(
            _("Invoice %(n)s is already paid (%(ref)s).")
            % {"n": invoice.number, "ref": invoice.paid_reference or "—"}
        )
    if invoice.status == InvoiceStatus.VOID:
        raise DomainError(_("Invoice %(n)s is void.") % {"n": invoice.number})
    due = invoice_left_to_pay(invoice)
    amount = due if amount is None else amount
    if amount <= 0:
        raise DomainError(_("A transfer must be more than 0."))
    if amount > due:
        raise DomainError(
            _("The transfer of %(amount)s is more than the %(due)s still due on invoice %(n)s.")
            % {"amount": amount, "due": due, "n": invoice.number}
        )
    payment = Payment.objects.create(
        invoice=invoice,
        method=PaymentMethod.BANK_TRANSFER,
        status=PaymentStatus.SUCCEEDED,
        currency=invoice.currency,
        amount=amount,
        reference=reference,
        value_date=value_date or site_today(invoice.order.site),
        succeeded_at=timezone.now(),
    )
    jobs.enqueue("billing.tasks.payment_receipt_email", payment.pk)
    comment = Text("Bank transfer %(ref)s.", ref=reference)
    lifecycle.record_creation([payment], actor=actor, reason=comment)
    # The latest reference (every one stays on its payment row and on the PDF).
    invoice.paid_reference = reference
    invoice.marked_paid_by = actor
    invoice.save(update_fields=["paid_reference", "marked_paid_by"])
    # After a partial transfer an open card payment asks for too much: cancel it so that
    # it cannot take more than is now due (a new one is made for the rest). A full
    # transfer leaves it: one that still succeeds is flagged a duplicate to refund.
    stale = (
        list(
            Payment.objects.filter(
                invoice=invoice, status=PaymentStatus.PENDING, stripe_payment_intent__isnull=False
            )
        )
        if amount < due
        else []
    )
    if stale:
        replaced = Text("Replaced: a bank transfer paid part of the invoice.")
        lifecycle.transition_many(
            stale,
            to=PaymentStatus.FAILED,
            actor=actor,
            reason=replaced,
            updates={"failure_message": replaced},
        )
        intents = [p.stripe_payment_intent for p in stale]
        jobs.enqueue("billing.tasks.payment_intents_cancel", intents, invoice.order.number)
    if amount < due:
        lifecycle.record_note(
            [invoice],
            actor=actor,
            reason=Text(
                "Partial payment of %(amount)s (%(ref)s); %(left)s still due.",
                amount=amount,
                ref=reference,
                left=due - amount,
            ),
        )
    return invoice_settle(invoice=invoice, actor=actor, comment=comment)


def order_expire_unpaid(*, now: datetime | None = None) -> int:
    """Expire orders not paid by their deadline and free their nodes. Safe to run twice."""
    now = now or timezone.now()
    expired = 0
    due = list(
        Order.objects.filter(
            status=OrderStatus.AWAITING_PAYMENT, payment_due_at__lte=now - PAYMENT_GRACE
        ).values_list("pk", flat=True)
    )
    for pk in due:
        with transaction.atomic():
            order = Order.objects.select_for_update().get(pk=pk)
            if order.status != OrderStatus.AWAITING_PAYMENT:
                continue
            if order.reservation_group:
                inventory_services.reservation_group_release(
                    group=order.reservation_group, reason=Text("Not paid in time.")
                )
            order_transition(
                order=order, to_status=OrderStatus.EXPIRED, reason=Text("Not paid in time.")
            )
            invoices_move(
                order=order,
                source=InvoiceStatus.ISSUED,
                to_status=InvoiceStatus.VOID,
                reason=Text("The order was not paid in time."),
            )
            _cancel_open_intents_after_commit(order)
            expired += 1
    return expired


def _cancel_open_intents_after_commit(order: Order) -> None:
    """A card, Alipay or WeChat payment still open on Stripe must not take money for an
    order whose nodes were freed: cancel its PaymentIntents once the expiry is saved."""
    intents = list(
        Payment.objects.filter(
            invoice__order=order,
            status=PaymentStatus.PENDING,
            stripe_payment_intent__isnull=False,
        ).values_list("stripe_payment_intent", flat=True)
    )
    if intents:
        jobs.enqueue("billing.tasks.payment_intents_cancel", intents, order.number)


ACCESS_EDITABLE = (OrderStatus.AWAITING_PAYMENT, OrderStatus.PAID)


@transaction.atomic
def order_set_access(
    *,
    order: Order,
    ssh_key_ids: list[int],
    image_profile_id: int | None = None,
    actor: Actor = None,
) -> Order:
    """Choose the OS image and which of the organisation's SSH keys go on the nodes.
    Allowed until provisioning starts; keys of another organisation are refused."""
    order = Order.objects.select_for_update().get(pk=order.pk)
    if order.status not in ACCESS_EDITABLE:
        raise DomainError(_("The nodes are already being set up: access can no longer change."))
    keys = list(SshPublicKey.objects.filter(organisation=order.organisation, pk__in=ssh_key_ids))
    if len(keys) != len(set(ssh_key_ids)):
        raise DomainError(_("Choose among your organisation's SSH keys."))
    if image_profile_id is not None:
        profile = ImageProfile.objects.filter(pk=image_profile_id, active=True).first()
        if profile is None:
            raise DomainError(_("Choose an offered OS image."))
        order.image_profile = profile
        order.save(update_fields=["image_profile"])
    order.ssh_keys.set(keys)
    lifecycle.record_note(
        [order],
        actor=actor,
        reason=Plural(
            "Access set: %(count)s SSH key, image %(image)s.",
            "Access set: %(count)s SSH keys, image %(image)s.",
            len(keys),
            count=len(keys),
            image=str(order.image_profile or "—"),
        ),
    )
    return order
