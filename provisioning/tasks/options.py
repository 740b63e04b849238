"""The acknowledgement and retry options the provisioning tasks share."""

from __future__ import annotations

from typing import Any

from django.db import InterfaceError, OperationalError

DB_ERRORS = (OperationalError, InterfaceError)
# Tasks that are safe to run twice: acknowledged late (a dead worker's message is run
# again) and retried on database errors with backoff.
IDEMPOTENT: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": DB_ERRORS,
    "retry_backoff": True,
    "max_retries": 5,
}
# Beat sweeps: safe to run twice (each finds what is still to do), acknowledged late, two
# minutes to finish.
SWEEP: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "soft_time_limit": 120,
    "time_limit": 150,
}
# Emails: retried on the mail server's transient errors (sending twice is the lesser
# harm than not at all), a minute to finish.
EMAIL: dict[str, Any] = {
    "autoretry_for": (ConnectionError, TimeoutError, OSError),
    "retry_backoff": True,
    "max_retries": 5,
    "soft_time_limit": 60,
    "time_limit": 90,
}
