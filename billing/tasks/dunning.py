"""Dunning: the daily run and its emails (the ``billing`` queue)."""

from __future__ import annotations

from celery import shared_task

from billing.dunning import emails as dunning_emails
from billing.dunning import services as dunning
from billing.tasks.options import MAIL_TASK_OPTIONS, SWEEP_LIMITS
from core.queues import CeleryQueue


@shared_task(name="billing.tasks.dunning_run_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS)
def dunning_run_task() -> dict[str, int]:
    """Reminders, suspensions and resumptions of unpaid invoices (beat). Idempotent."""
    result = dunning.dunning_run()
    return {
        "reminders": result.reminders,
        "skipped": result.skipped,
        "suspended": result.suspended,
        "resumed": result.resumed,
    }


@shared_task(name="billing.tasks.late_fees_invoice_task", queue=CeleryQueue.BILLING, **SWEEP_LIMITS)
def late_fees_invoice_task() -> int:
    """Invoice the late fee of each document paid after its due date (beat). Idempotent."""
    return dunning.late_fees_invoice_due()


@shared_task(name="billing.tasks.dunning_notice_email", **MAIL_TASK_OPTIONS)
def dunning_notice_email(notice_id: int) -> str:
    """Email one dunning reminder; sends once (see the service)."""
    return dunning_emails.dunning_notice_email_send(notice_id=notice_id)


@shared_task(name="billing.tasks.suspension_email", **MAIL_TASK_OPTIONS)
def suspension_email(suspension_id: int, kind: str) -> str:
    """Tell the customer their order was suspended or resumed; sends once each."""
    return dunning_emails.suspension_email_send(suspension_id=suspension_id, kind=kind)


@shared_task(name="billing.tasks.invoice_issued_email", **MAIL_TASK_OPTIONS)
def invoice_issued_email(invoice_id: int) -> str:
    """Email an issued invoice with its PDF and bank details; sends once."""
    return dunning_emails.invoice_issued_email_send(invoice_id=invoice_id)


@shared_task(name="billing.tasks.payment_receipt_email", **MAIL_TASK_OPTIONS)
def payment_receipt_email(payment_id: int) -> str:
    """Email a receipt for a payment received; sends once."""
    return dunning_emails.payment_receipt_email_send(payment_id=payment_id)
