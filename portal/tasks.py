"""Project-level tasks."""

from __future__ import annotations

from celery import shared_task
from django.db import connection

from core.queues import CeleryQueue


@shared_task(queue=CeleryQueue.DEFAULT, soft_time_limit=20, time_limit=30)
def health_check() -> dict[str, str]:
    """Proves a worker is up and reaches the database: used by ops and the integration test."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"worker": "ok", "database": connection.vendor}
