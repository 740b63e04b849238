"""The SLA credits sweep (imported by ``provisioning.tasks``, named
``provisioning.tasks.*`` so that it is routed with the other provisioning tasks)."""

from __future__ import annotations

from celery import shared_task

from provisioning import sla_facts

__all__ = ["sla_credits_sweep_task"]


@shared_task(name="provisioning.tasks.sla_credits_sweep_task", soft_time_limit=240, time_limit=300)
def sla_credits_sweep_task() -> int:
    """Compute the SLA credits of ended billing periods (beat). Idempotent: a credit for a
    node and period is created once; a second run creates nothing."""
    return sla_facts.sla_credits_sweep()
