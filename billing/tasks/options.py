"""Options shared by billing's tasks: time limits per kind of work, and the one set of
retry options every document render uses."""

from __future__ import annotations

from smtplib import SMTPException
from typing import Any

from django.db import InterfaceError, OperationalError

from core.queues import CeleryQueue

# Seconds: (soft, hard). The soft limit raises inside the task so it can stop cleanly.
SWEEP_LIMITS: dict[str, Any] = {"soft_time_limit": 120, "time_limit": 150}
MAIL_LIMITS: dict[str, Any] = {"soft_time_limit": 60, "time_limit": 90}
STRIPE_LIMITS: dict[str, Any] = {"soft_time_limit": 60, "time_limit": 90}

# Every document render (quote, estimate, invoice, credit note, contract draft and seal)
# is safe to run twice (stored once per owner and language): acknowledged late, re-run
# when its worker dies, retried on database errors, on the documents queue.
DOCUMENT_TASK_OPTIONS: dict[str, Any] = {
    "queue": CeleryQueue.DOCUMENTS,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "max_retries": 3,
    "soft_time_limit": 120,
    "time_limit": 150,
}

# Emails: retried on the mail server's transient errors; each service sends once.
MAIL_TASK_OPTIONS: dict[str, Any] = {
    "queue": CeleryQueue.BILLING,
    "autoretry_for": (SMTPException, ConnectionError, TimeoutError),
    "retry_backoff": True,
    "max_retries": 5,
    **MAIL_LIMITS,
}
