"""Contract sweeps (the ``billing`` queue); the contract's documents are in ``documents``."""

from __future__ import annotations

from celery import shared_task

from billing.contracts import services as contract_services
from billing.tasks.options import SWEEP_LIMITS
from core.queues import CeleryQueue


@shared_task(
    name="billing.tasks.contracts_activate_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS
)
def contracts_activate_task() -> int:
    """Countersigned contracts become active at the start and end at the end (beat)."""
    return contract_services.contracts_activate_and_end()
