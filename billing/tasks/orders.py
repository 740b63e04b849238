"""Order sweeps (the ``billing`` queue)."""

from __future__ import annotations

from celery import shared_task

from billing.orders import services as orders
from billing.tasks.options import SWEEP_LIMITS
from core.queues import CeleryQueue


@shared_task(
    name="billing.tasks.order_expire_unpaid_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS
)
def order_expire_unpaid_task() -> int:
    """Expire orders not paid by their deadline and free their nodes (beat). Idempotent."""
    return orders.order_expire_unpaid()
