"""Provisioning tasks.

``provisioning_start`` is a placeholder until the provisioning issue lands: it records
that the paid order is waiting for provisioning and does nothing to the hardware yet.
"""

from __future__ import annotations

import logging

from celery import shared_task

from billing.models import Order, OrderStatus

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=60, time_limit=90)
def provisioning_start(order_id: int) -> str:
    """Entry point of an order's provisioning run (stub: logs only, idempotent)."""
    order = Order.objects.filter(pk=order_id).only("pk", "number", "status").first()
    if order is None:
        logger.warning("provisioning_start: order %s does not exist", order_id)
        return "missing"
    if order.status != OrderStatus.PAID:
        return "skipped"
    logger.info("Order %s is paid and queued for provisioning (stub).", order.number)
    return "queued"
