"""Options shared by billing's tasks: time limits per kind of work and the mail retries
(the document renders' options are ``core.documents.DOCUMENT_TASK_OPTIONS``)."""

from __future__ import annotations

from smtplib import SMTPException
from typing import Any

from core.queues import CeleryQueue

# Seconds: (soft, hard). The soft limit raises inside the task so it can stop cleanly.
SWEEP_LIMITS: dict[str, Any] = {"soft_time_limit": 120, "time_limit": 150}
MAIL_LIMITS: dict[str, Any] = {"soft_time_limit": 60, "time_limit": 90}
STRIPE_LIMITS: dict[str, Any] = {"soft_time_limit": 60, "time_limit": 90}

# Emails: retried on the mail server's transient errors; each service sends once.
MAIL_TASK_OPTIONS: dict[str, Any] = {
    "queue": CeleryQueue.BILLING,
    "autoretry_for": (SMTPException, ConnectionError, TimeoutError),
    "retry_backoff": True,
    "max_retries": 5,
    **MAIL_LIMITS,
}
