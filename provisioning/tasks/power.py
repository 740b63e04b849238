"""Powering a suspended order's nodes off and a resumed order's on (enqueued by
billing's dunning by name)."""

from __future__ import annotations

from celery import shared_task

from core.queues import CeleryQueue
from provisioning import suspension
from provisioning.drivers.base import TransientDriverError
from provisioning.tasks.options import DB_ERRORS, IDEMPOTENT


@shared_task(
    name="provisioning.tasks.order_power_sync",
    queue=CeleryQueue.PROVISIONING,
    **{**IDEMPOTENT, "autoretry_for": (*DB_ERRORS, TransientDriverError)},
    soft_time_limit=1200,
    time_limit=1260,
)
def order_power_sync(order_id: int) -> dict[str, object]:
    """Power an order's nodes off while it is suspended, on once it resumes (enqueued by
    billing's dunning). Reads the state, not the message: safe to run twice."""
    result = suspension.order_power_sync(order_id=order_id)
    if result.transient:
        raise TransientDriverError(f"power {result.target}: {result.failed}")
    return {"target": result.target, "changed": result.changed, "failed": result.failed}
