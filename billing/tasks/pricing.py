"""The shop's availability calendar (the ``billing`` queue)."""

from __future__ import annotations

from celery import shared_task

from billing.pricing import catalog
from core.queues import CeleryQueue


@shared_task(
    name="billing.tasks.catalog_calendar_refresh_task",
    queue=CeleryQueue.BILLING,
    soft_time_limit=50,
    time_limit=60,
)
def catalog_calendar_refresh_task() -> int:
    """Compute the landing page's availability calendar (beat, every minute; also asked
    for by the page when none is stored). Idempotent: each run replaces the stored one.
    The limits keep a run inside its minute; if one is cut short, the calendar stored
    before stays shown."""
    return catalog.calendar_refresh()
