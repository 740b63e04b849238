"""Free cancellation before delivery: the quote promises it and the contract says so.

An owner or billing member cancels an order from its page until it is delivered
(``ready``): the booking is released, open payment documents are voided, the contract is
cancelled (or ended, once countersigned), every payment is refunded in full (card,
Alipay and WeChat Pay through Stripe; a bank transfer is noted on the order for finance
to return, with its amount) and, when provisioning had begun, the nodes are wiped by a
cleaning run (``provisioning.tasks.order_cancelled_clean``) before anyone else gets them.
Nothing is charged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.utils.translation import gettext as _

from billing.credits.services import refund_record
from billing.models import (
    ContractStatus,
    InvoiceStatus,
    Order,
    OrderStatus,
    Payment,
    PaymentStatus,
    Refund,
)
from billing.orders.services import invoices_move, order_transition
from core import jobs, lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor
from inventory import services as inventory_services

logger = logging.getLogger(__name__)

CANCELLABLE = (
    OrderStatus.AWAITING_PAYMENT,
    OrderStatus.PAID,
    OrderStatus.PROVISIONING,
    OrderStatus.VALIDATING,
)
TOUCHED = (OrderStatus.PROVISIONING, OrderStatus.VALIDATING)  # nodes to wipe
CLEAN_TASK = "provisioning.tasks.order_cancelled_clean"
CANCEL_INTENTS_TASK = "billing.tasks.payment_intents_cancel"


@dataclass
class Cancellation:
    order: Order
    refunds: list[Refund] = field(default_factory=list)
    transfers_due: list[tuple[Payment, Decimal]] = field(default_factory=list)


def order_cancellable(order: Order) -> bool:
    return order.status in CANCELLABLE


def order_cancel(*, order: Order, actor: Actor, name: str = "") -> Cancellation:
    """Cancel ``order`` free of charge before delivery (see the module docstring)."""
    with transaction.atomic():
        order = Order.objects.select_for_update().get(pk=order.pk)
        if order.status not in CANCELLABLE:
            raise DomainError(
                _(
                    "Order %(n)s was delivered or is over: it can no longer be cancelled free "
                    "of charge. Ask us about ending it early."
                )
                % {"n": order.number}
            )
        touched = order.status in TOUCHED
        why = Text("Cancelled free of charge before delivery by %(name)s.", name=name or "—")
        if order.reservation_group:
            inventory_services.reservation_group_release(
                group=order.reservation_group, actor=actor, reason=why
            )
        invoices_move(
            order=order, source=InvoiceStatus.ISSUED, to_status=InvoiceStatus.VOID, reason=why
        )
        for contract in order.contracts.select_for_update():
            if contract.status in (ContractStatus.DRAFTED, ContractStatus.CUSTOMER_SIGNED):
                lifecycle.transition(contract, to=ContractStatus.CANCELLED, actor=actor, reason=why)
            elif contract.status in (ContractStatus.COUNTERSIGNED, ContractStatus.ACTIVE):
                lifecycle.transition(contract, to=ContractStatus.ENDED, actor=actor, reason=why)
        order_transition(order=order, to_status=OrderStatus.CANCELLED, actor=actor, reason=why)
        intents = list(
            Payment.objects.filter(
                invoice__order=order,
                status=PaymentStatus.PENDING,
                stripe_payment_intent__isnull=False,
            ).values_list("stripe_payment_intent", flat=True)
        )
        if intents:
            jobs.enqueue(CANCEL_INTENTS_TASK, intents, order.number)
        if touched:
            jobs.enqueue(CLEAN_TASK, order.pk)
    result = Cancellation(order=order)
    for payment in Payment.objects.filter(
        invoice__order=order, status=PaymentStatus.SUCCEEDED
    ).order_by("pk"):
        left = payment.amount - payment.amount_refunded
        if left <= 0:
            continue
        if payment.stripe_payment_intent:
            result.refunds.append(
                refund_record(payment=payment, amount=left, actor=actor, reason=str(why))
            )
            continue
        result.transfers_due.append((payment, left))
        lifecycle.record_note(
            [order],
            actor=actor,
            reason=Text(
                "A refund of %(amount)s %(cur)s is due by bank transfer for payment "
                "%(ref)s: finance returns it and records the reference.",
                amount=left,
                cur=payment.currency,
                ref=payment.reference or payment.pk,
            ),
        )
    return result
