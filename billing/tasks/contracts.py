"""Contract sweeps (the ``billing`` queue); the contract's documents are in ``documents``."""

from __future__ import annotations

from celery import shared_task

from billing.contracts import emails as contract_emails
from billing.contracts import services as contract_services
from billing.tasks.options import MAIL_TASK_OPTIONS, SWEEP_LIMITS
from core.queues import CeleryQueue


@shared_task(
    name="billing.tasks.contracts_activate_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS
)
def contracts_activate_task() -> int:
    """Countersigned contracts become active at the start and end at the end (beat)."""
    return contract_services.contracts_activate_and_end()


@shared_task(name="billing.tasks.contract_ready_email", **MAIL_TASK_OPTIONS)
def contract_ready_email(contract_id: int) -> str:
    """Tell the customer's signers that the contract is ready to sign (once)."""
    return contract_emails.contract_ready_email_send(contract_id=contract_id)


@shared_task(name="billing.tasks.contract_sealed_email", **MAIL_TASK_OPTIONS)
def contract_sealed_email(contract_id: int) -> str:
    """Send the sealed contract and its audit record to the customer (once)."""
    return contract_emails.contract_sealed_email_send(contract_id=contract_id)


@shared_task(
    name="billing.tasks.contracts_seal_sweep_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS
)
def contracts_seal_sweep_task() -> int:
    """Seals that failed for good (and the audit records and emails they left out) are
    asked again (beat; idempotent)."""
    swept = contract_services.contracts_seal_sweep()
    return swept.seals + swept.audits + swept.emails
