"""Renewals: offered in beat, emailed once (the ``billing`` queue)."""

from __future__ import annotations

from celery import shared_task

from billing.dunning import emails as dunning_emails
from billing.shop import renewals
from billing.tasks.options import MAIL_TASK_OPTIONS, SWEEP_LIMITS
from core.queues import CeleryQueue


@shared_task(name="billing.tasks.renewals_offer_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS)
def renewals_offer_task() -> dict[str, int]:
    """Renewal quotes for orders ending within ``PORTAL_RENEWAL_DAYS`` (beat). Idempotent."""
    result = renewals.renewals_offer()
    return {"offered": result.offered, "unavailable": result.unavailable}


@shared_task(name="billing.tasks.renewal_email", **MAIL_TASK_OPTIONS)
def renewal_email(renewal_id: int) -> str:
    """Email the renewal offer; sends once."""
    return dunning_emails.renewal_email_send(renewal_id=renewal_id)
