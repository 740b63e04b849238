"""Project-level tasks."""

from __future__ import annotations

from celery import shared_task
from django.db import connection

from core.queues import CeleryQueue
from portal.api import events


@shared_task(queue=CeleryQueue.DEFAULT, soft_time_limit=20, time_limit=30, ignore_result=False)
def health_check() -> dict[str, str]:
    """Proves a worker is up and reaches the database: used by ops and the integration test,
    who read its result (so it keeps one, unlike the tasks nobody reads)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"worker": "ok", "database": connection.vendor}


@shared_task(queue=CeleryQueue.DEFAULT, soft_time_limit=50, time_limit=60)
def webhooks_quote_expiring_task() -> int:
    """``quote.expiring`` webhooks for sent quotes that expire within a day (once each)."""
    return events.quotes_expiring_emit()
