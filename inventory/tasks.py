"""Thin Celery tasks for the inventory: re-fetch, return early if done, call a service."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task

from core.queues import CeleryQueue
from inventory import csv_jobs, services


@shared_task(
    queue=CeleryQueue.DEFAULT,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=120,
    time_limit=150,
)
def reservation_expire_holds_task() -> int:
    """Expire holds whose time is up (Celery beat, every minute). Idempotent."""
    return services.reservation_expire_holds()


# An import of tens of thousands of rows takes minutes; the budget leaves the task time to
# record that it was stopped before Celery's soft limit interrupts it.
IMPORT_SOFT_TIME_LIMIT_S = 3300
IMPORT_TIME_LIMIT_S = IMPORT_SOFT_TIME_LIMIT_S + 300


@shared_task(
    queue=CeleryQueue.DEFAULT,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=IMPORT_SOFT_TIME_LIMIT_S,
    time_limit=IMPORT_TIME_LIMIT_S,
)
def import_job_run_task(job_id: int) -> str | None:
    """Import a stored CSV file whole or not at all (see ``inventory.csv_jobs``).

    Safe to run twice: a finished job returns at once, and two runs never overlap.
    """
    job = csv_jobs.import_job_run(job_id=job_id, time_budget_s=IMPORT_SOFT_TIME_LIMIT_S - 60)
    return None if job is None else job.status


@shared_task(
    queue=CeleryQueue.DEFAULT,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=60,
    time_limit=90,
)
def import_job_sweep_task() -> int:
    """Re-enqueue background imports that a lost message or a dead worker left (beat)."""
    return csv_jobs.import_job_sweep(
        running_lost_after=timedelta(seconds=IMPORT_TIME_LIMIT_S + 300)
    )
