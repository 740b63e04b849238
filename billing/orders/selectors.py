"""Reads of an order: its nodes, its first and open invoices, the statuses of a paid order."""

from __future__ import annotations

from billing.models import (
    ORDER_PAID_STATUSES,
    Invoice,
    InvoiceStatus,
    Order,
)
from billing.models.quotes import ItemKind
from billing.pricing.engine import BURN_IN_CODE, burn_in_included
from inventory.models import ACTIVE_RESERVATION_STATUSES, Node


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
    if order.status not in ORDER_PAID_STATUSES:
        return None
    return (
        Invoice.objects.filter(order=order, status=InvoiceStatus.ISSUED)
        .exclude(period_seq=1)
        .order_by("issued_at", "pk")
        .first()
    )


def order_nodes(order: Order) -> list[Node]:
    """The nodes booked (held or firm) for this order, and only those, by hostname."""
    if not order.reservation_group:
        return []
    return list(
        Node.objects.filter(
            reservations__group=order.reservation_group,
            reservations__status__in=ACTIVE_RESERVATION_STATUSES,
        )
        .distinct()
        .order_by("hostname")
    )


def order_burn_in(order: Order) -> bool:
    """Whether the order's nodes get the 24-hour burn-in before hand-over: its quote
    bought the add-on, or the cluster is large enough to get it free
    (``pricing.engine.burn_in_included``)."""
    items = order.quote.items.all()
    nodes = sum(int(i.quantity) for i in items if i.kind == ItemKind.NODE)
    bought = any(i.kind == ItemKind.ADDON and i.addon_code == BURN_IN_CODE for i in items)
    return bought or burn_in_included(nodes)
