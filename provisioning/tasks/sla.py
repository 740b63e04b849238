"""The SLA credits sweep (beat): facts gathered here, credits computed by billing."""

from __future__ import annotations

from celery import shared_task

from core.queues import CeleryQueue
from provisioning import sla


@shared_task(
    name="provisioning.tasks.sla_credits_sweep_task",
    queue=CeleryQueue.PROVISIONING,
    soft_time_limit=240,
    time_limit=300,
)
def sla_credits_sweep_task() -> int:
    """Compute the SLA credits of ended billing periods (beat). Idempotent: a credit for a
    node and period is created once; a second run creates nothing."""
    return sla.sla_credits_sweep()
