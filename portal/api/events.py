"""Webhook events from what already happens: every lifecycle write (``core.lifecycle``'s
``written`` signal) and every dunning notice becomes ``accounts.webhooks.emit_event``
calls, so billing and provisioning need no call-site edits for these.

| event | when |
| --- | --- |
| ``quote.sent`` / ``quote.accepted`` | a quote moves to sent / accepted |
| ``quote.expiring`` | a sent quote expires within ``EXPIRING_WITHIN`` (beat sweep) |
| ``order.paid`` / ``provisioning.started`` / ``order.ready`` | an order moves to paid /
  provisioning / ready |
| ``invoice.issued`` | an invoice is created (issued) |
| ``invoice.overdue`` | the first dunning notice of an invoice |
| ``contract.signed`` | the customer signs a contract |

Day two's ``node.degraded`` / ``node.cordoned`` / ``node.replaced``
(``provisioning.health.services``) and ``maintenance.announced``
(``portal.operations.services``) are emitted where they happen with ``emit_event``; the
types themselves are listed once, in ``accounts.webhooks.EVENT_TYPES``. Each event is
emitted once per object and kind (``dedupe``), so a repeated move or note sends nothing.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models.signals import post_save
from django.utils import timezone

from accounts.models import WebhookEndpoint
from accounts.webhooks import emit_event
from billing.models import (
    Contract,
    ContractStatus,
    DunningNotice,
    Invoice,
    InvoiceStatus,
    Order,
    OrderStatus,
    Quote,
    QuoteStatus,
)
from core.lifecycle import written

EXPIRING_WITHIN = timedelta(hours=24)


def _money(amount: Any, currency: str) -> dict[str, str]:
    return {"amount": str(amount), "currency": currency}


def quote_data(quote: Quote) -> dict[str, Any]:
    return {
        "quote": quote.number,
        "version": quote.version,
        "status": quote.status,
        "total": _money(quote.gross_total, quote.currency),
        "expires_at": quote.expires_at.isoformat() if quote.expires_at else None,
        "url": f"/api/v1/quotes/{quote.number}/",
    }


def order_data(order: Order) -> dict[str, Any]:
    return {
        "order": order.number,
        "status": order.status,
        "start_at": order.start_at.isoformat(),
        "end_at": order.end_at.isoformat(),
        "url": f"/api/v1/orders/{order.number}/",
    }


def invoice_data(invoice: Invoice) -> dict[str, Any]:
    return {
        "invoice": invoice.number,
        "status": invoice.status,
        "total": _money(invoice.gross_total, invoice.currency),
        "due_at": invoice.due_at.isoformat(),
        "url": f"/api/v1/invoices/{invoice.number}/",
    }


QUOTE_EVENTS = {QuoteStatus.SENT: "quote.sent", QuoteStatus.ACCEPTED: "quote.accepted"}
ORDER_EVENTS = {
    OrderStatus.PAID: "order.paid",
    OrderStatus.PROVISIONING: "provisioning.started",
    OrderStatus.READY: "order.ready",
}


def on_written(sender: type, objs: list[Any], **kwargs: Any) -> None:
    """One lifecycle write: the events it means, for organisations with endpoints."""
    for obj in objs:
        if sender is Quote and obj.status in QUOTE_EVENTS and obj.organisation_id:
            kind = QUOTE_EVENTS[obj.status]
            emit_event(obj.organisation_id, kind, quote_data(obj), dedupe=f"{kind}:{obj.pk}")
        elif sender is Order and obj.status in ORDER_EVENTS:
            kind = ORDER_EVENTS[obj.status]
            emit_event(obj.organisation_id, kind, order_data(obj), dedupe=f"{kind}:{obj.pk}")
        elif sender is Invoice and obj.status == InvoiceStatus.ISSUED:
            emit_event(
                obj.organisation_id,
                "invoice.issued",
                invoice_data(obj),
                dedupe=f"invoice.issued:{obj.pk}",
            )
        elif sender is Contract and obj.status == ContractStatus.CUSTOMER_SIGNED:
            emit_event(
                obj.organisation_id,
                "contract.signed",
                {
                    "contract": obj.number,
                    "order": obj.order.number,
                    "signed_at": obj.signed_at.isoformat() if obj.signed_at else None,
                    "url": f"/api/v1/contracts/{obj.number}/",
                },
                dedupe=f"contract.signed:{obj.pk}",
            )


def on_dunning_notice(sender: type, instance: DunningNotice, created: bool, **kwargs: Any) -> None:
    if not created:
        return
    invoice = instance.invoice
    emit_event(
        invoice.organisation_id,
        "invoice.overdue",
        invoice_data(invoice),
        dedupe=f"invoice.overdue:{invoice.pk}",
    )


def quotes_expiring_emit(*, now: Any = None) -> int:
    """``quote.expiring`` for sent quotes that expire within ``EXPIRING_WITHIN``, for the
    organisations that subscribed (a beat job; once per quote)."""
    now = now or timezone.now()
    orgs = {
        e.organisation_id
        for e in WebhookEndpoint.objects.filter(active=True)
        if "quote.expiring" in e.event_types
    }
    sent = 0
    for quote in Quote.objects.filter(
        organisation_id__in=orgs,
        status=QuoteStatus.SENT,
        expires_at__gt=now,
        expires_at__lte=now + EXPIRING_WITHIN,
    ):
        if emit_event(
            quote.organisation_id,
            "quote.expiring",
            quote_data(quote),
            dedupe=f"quote.expiring:{quote.pk}",
        ):
            sent += 1
    return sent


def connect() -> None:
    written.connect(on_written, dispatch_uid="portal.api.events.on_written")
    post_save.connect(
        on_dunning_notice, sender=DunningNotice, dispatch_uid="portal.api.events.on_dunning"
    )
