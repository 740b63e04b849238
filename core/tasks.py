"""Thin Celery tasks of the bottom layer."""

from __future__ import annotations

from celery import shared_task

from core import outbox
from core.queues import CeleryQueue


@shared_task(queue=CeleryQueue.DEFAULT, soft_time_limit=60, time_limit=90)
def outbox_relay_task() -> int:
    """Publish outbox messages still pending (Celery beat). Safe to run anywhere, twice."""
    return outbox.relay()
