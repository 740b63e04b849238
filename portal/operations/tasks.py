"""Thin tasks of the operations console: take ids, re-fetch, call a service."""

from __future__ import annotations

from celery import shared_task

from core.queues import CeleryQueue
from inventory import services as inventory_services
from portal.operations import services


@shared_task(
    name="portal.operations.tasks.maintenance_notify_task",
    queue=CeleryQueue.DEFAULT,
    soft_time_limit=50,
    time_limit=60,
    acks_late=True,
    reject_on_worker_lost=True,
)
def maintenance_notify_task(plan_id: int) -> int:
    """Tell the customers under a plan (idempotent: a told plan is not told again)."""
    return services.maintenance_notify(plan_id=plan_id)


@shared_task(
    name="portal.operations.tasks.maintenance_email_task",
    queue=CeleryQueue.DEFAULT,
    soft_time_limit=50,
    time_limit=60,
    autoretry_for=(OSError,),
    retry_backoff=True,
    max_retries=5,
)
def maintenance_email_task(notice_id: int) -> str:
    return services.maintenance_email_send(notice_id=notice_id)


@shared_task(
    name="portal.operations.tasks.maintenance_due_task",
    queue=CeleryQueue.DEFAULT,
    soft_time_limit=50,
    time_limit=60,
)
def maintenance_due_task() -> int:
    """Beat: plans whose notice time has come are told; ended ones completed."""
    due, _ended = inventory_services.maintenance_plans_due()
    return sum(services.maintenance_notify(plan_id=pk) for pk in due)
