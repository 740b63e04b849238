"""Quote sweeps and emails (the ``billing`` queue)."""

from __future__ import annotations

from celery import shared_task

from billing.quotes import services as quote_services
from billing.quotes.services.emails import quote_email_send
from billing.tasks.options import MAIL_TASK_OPTIONS, SWEEP_LIMITS
from core.queues import CeleryQueue


@shared_task(name="billing.tasks.quote_expire_due_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS)
def quote_expire_due_task() -> int:
    """Expire sent quotes past their validity (Celery beat). Idempotent."""
    return quote_services.quote_expire_due()


@shared_task(name="billing.tasks.quote_email", **MAIL_TASK_OPTIONS)
def quote_email(quote_id: int) -> str:
    """Email a sent quote with its PDF and accept link; sends once (see the service)."""
    return quote_email_send(quote_id=quote_id)
