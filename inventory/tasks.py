"""Thin Celery tasks for the inventory: re-fetch, return early if done, call a service."""

from __future__ import annotations

from celery import shared_task

from inventory import services


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=120, time_limit=150)
def reservation_expire_holds_task() -> int:
    """Expire holds whose time is up (Celery beat, every minute). Idempotent."""
    return services.reservation_expire_holds()
