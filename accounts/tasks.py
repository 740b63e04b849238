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

from celery import Task, shared_task
from django.conf import settings

from accounts import services, webhooks
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


@shared_task(
    bind=True,
    name="accounts.tasks.webhook_deliver",
    queue=CeleryQueue.DEFAULT,
    max_retries=None,
    acks_late=True,
    soft_time_limit=60,
    time_limit=90,
)
def webhook_deliver(self: Task, delivery_id: int) -> str:
    """POST one webhook delivery; retried with exponential backoff until it succeeds or
    ``PORTAL_WEBHOOK_MAX_RETRIES`` retries have failed. Idempotent: a delivery that
    succeeded is not sent again (a replay is a new delivery)."""
    retries = self.request.retries
    final = retries >= settings.PORTAL_WEBHOOK_MAX_RETRIES
    try:
        return webhooks.delivery_attempt(delivery_id=delivery_id, final=final)
    except webhooks.DeliveryFailed as exc:
        countdown = min(settings.PORTAL_WEBHOOK_RETRY_BASE * 2**retries, 3600.0)
        raise self.retry(exc=exc, countdown=countdown) from exc
