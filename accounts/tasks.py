"""Thin Celery tasks for accounts: the emails, sent after the response.

Services enqueue them by name through ``core.jobs`` (after the commit) with ids and plain
strings (an address, a language code), never a model instance, a password or a token;
each task re-fetches and calls a ``*_deliver`` service, which signs any link itself. A
mail server that is down is retried with backoff; emails are not idempotent, so these
tasks acknowledge early (a lost worker loses at most one email, which the user can ask
for again).
"""

from __future__ import annotations

from smtplib import SMTPException

from celery import shared_task

from accounts import services
from core.queues import CeleryQueue

# Seconds: (soft, hard). The soft limit raises inside the task so it can stop cleanly.
MAIL_LIMITS = {"soft_time_limit": 60, "time_limit": 90}
MAIL_RETRIES = {
    "autoretry_for": (SMTPException, ConnectionError, TimeoutError),
    "retry_backoff": True,
    "max_retries": 5,
}


@shared_task(queue=CeleryQueue.DEFAULT, **MAIL_RETRIES, **MAIL_LIMITS)
def email_verification_email(user_id: int, language: str) -> str:
    """The link that verifies a new account's address."""
    return services.email_verification_deliver(user_id=user_id, language=language)


@shared_task(queue=CeleryQueue.DEFAULT, **MAIL_RETRIES, **MAIL_LIMITS)
def signup_taken_email(email: str, language: str) -> str:
    """Tell an address's owner that someone tried to sign up with it."""
    return services.signup_taken_deliver(email=email, language=language)


@shared_task(queue=CeleryQueue.DEFAULT, **MAIL_RETRIES, **MAIL_LIMITS)
def invitation_email(invitation_id: int, language: str) -> str:
    """The invitation link, unless the invitation closed in the meantime."""
    return services.invitation_email_deliver(invitation_id=invitation_id, language=language)


@shared_task(queue=CeleryQueue.DEFAULT, **MAIL_RETRIES, **MAIL_LIMITS)
def password_reset_email(email: str, language: str) -> int:
    """Password reset links for the accounts of an address (none: nothing is sent)."""
    return services.password_reset_deliver(email=email, language=language)
