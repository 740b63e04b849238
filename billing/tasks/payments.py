"""Stripe: webhook events and PaymentIntents (the ``billing`` queue)."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.db import InterfaceError, OperationalError

from billing.payments import webhooks
from billing.tasks.options import STRIPE_LIMITS, SWEEP_LIMITS
from core.queues import CeleryQueue


@shared_task(
    name="billing.tasks.stripe_event_process_task",
    queue=CeleryQueue.BILLING,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    max_retries=5,
    **STRIPE_LIMITS,
)
def stripe_event_process_task(event_id: str) -> str:
    """Act on a stored Stripe webhook event (by its Stripe id); returns its status.
    Idempotent: an event already processed, ignored or flagged is left as it is."""
    return webhooks.stripe_event_process(event_id=event_id)


@shared_task(
    name="billing.tasks.stripe_events_retry_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS
)
def stripe_events_retry_task(older_than_minutes: int = 5) -> int:
    """Re-run webhook events left received or failed (Celery beat)."""
    return webhooks.stripe_events_retry(older_than=timedelta(minutes=older_than_minutes))


@shared_task(
    name="billing.tasks.payment_intents_cancel",
    queue=CeleryQueue.BILLING,
    autoretry_for=(ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=5,
    **STRIPE_LIMITS,
)
def payment_intents_cancel(intents: list[str], order_number: str) -> int:
    """Cancel the open PaymentIntents of an order that expired (its nodes were freed)."""
    return webhooks.payment_intents_cancel(intents=intents, order_number=order_number)
