"""The transactional outbox's relay: publish pending messages to the broker.

``core.jobs`` writes an ``OutboxMessage`` in the caller's transaction and, once it
commits, tries to publish it at once (``publish_now``). Whatever is still pending (the
broker was down, the process died between commit and publish) is published by
``relay``, which runs from a beat job, from a loop in every worker process and from
``manage.py outbox_relay``. Publishing never reaches the customer's request: a failure
is recorded on the row and retried with backoff.

Delivery is at least once: a relay that dies after publishing but before marking the
row published publishes it again. Every consumer is idempotent for that reason.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from celery import chain, current_app, signature
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import logcontext
from core.models import OutboxMessage, OutboxStatus

logger = logging.getLogger(__name__)

MAX_BACKOFF = timedelta(minutes=10)


def _connection() -> Any:
    """A broker connection that fails in seconds instead of retrying for a minute."""
    app = current_app
    options = {
        **(app.conf.broker_transport_options or {}),
        "max_retries": 0,  # kombu: give up after the first failed connect
        "socket_connect_timeout": settings.PORTAL_BROKER_PUBLISH_TIMEOUT,
        "socket_timeout": settings.PORTAL_BROKER_PUBLISH_TIMEOUT,
    }
    return app.connection_for_write(settings.CELERY_BROKER_URL, transport_options=options)


def _publish(steps: Sequence[Sequence[Any]]) -> None:
    sigs = [
        signature(name, args=tuple(args), immutable=True, app=current_app) for name, args in steps
    ]
    work = sigs[0] if len(sigs) == 1 else chain(*sigs)
    with _connection() as connection:
        work.apply_async(connection=connection, retry=False)


def backoff(attempts: int) -> timedelta:
    """2, 4, 8 … seconds after each failed attempt, at most ten minutes."""
    return min(timedelta(seconds=2 ** min(attempts, 20)), MAX_BACKOFF)


def _publish_locked(message: OutboxMessage) -> bool:
    """Publish a row the caller has locked; record the outcome on it."""
    now = timezone.now()
    try:
        # The request id (and ids) of the work that wrote it go into the tasks' headers.
        with logcontext.restored(message.log_context or {}):
            _publish(message.steps)
    except Exception as exc:  # any broker or transport failure: keep the work, retry later
        message.attempts += 1
        message.last_error = f"{type(exc).__name__}: {exc}"[:1000]
        message.next_attempt_at = now + backoff(message.attempts)
        message.save(update_fields=["attempts", "last_error", "next_attempt_at"])
        logger.warning(
            "Outbox %s not published (attempt %s): %s", message.pk, message.attempts, exc
        )
        return False
    message.status = OutboxStatus.PUBLISHED
    message.published_at = now
    message.attempts += 1
    message.save(update_fields=["status", "published_at", "attempts"])
    return True


def publish_now(message_id: int) -> bool:
    """Try to publish one message right after its transaction committed. Never raises:
    the request that wrote it has succeeded whatever the broker does."""
    try:
        with transaction.atomic():
            message = (
                OutboxMessage.objects.select_for_update(skip_locked=True)
                .filter(pk=message_id, status=OutboxStatus.PENDING)
                .first()
            )
            return message is not None and _publish_locked(message)
    except Exception:  # e.g. the database went away: the relay picks the row up later
        logger.exception("Outbox %s: immediate publish failed", message_id)
        return False


def relay(*, limit: int = 200) -> int:
    """Publish pending messages that are due, oldest first; returns how many were
    published. Safe to run in several processes at once (rows are claimed with
    ``SKIP LOCKED``). Stops at the first broker failure: the rest wait for the next run."""
    published = 0
    with transaction.atomic():
        due = list(
            OutboxMessage.objects.select_for_update(skip_locked=True)
            .filter(status=OutboxStatus.PENDING, next_attempt_at__lte=timezone.now())
            .order_by("next_attempt_at", "pk")[:limit]
        )
        for message in due:
            if not _publish_locked(message):
                # The broker is down: push the others back too instead of hammering it.
                retry_at = message.next_attempt_at
                OutboxMessage.objects.filter(
                    pk__in=[m.pk for m in due if m.pk != message.pk]
                ).filter(status=OutboxStatus.PENDING, next_attempt_at__lt=retry_at).update(
                    next_attempt_at=retry_at
                )
                break
            published += 1
    return published


def pending_like(steps: Sequence[Sequence[Any]]) -> bool:
    """Whether the same work is already waiting in the outbox (sweeps use it)."""
    return OutboxMessage.objects.filter(
        status=OutboxStatus.PENDING, steps=[[name, list(args)] for name, args in steps]
    ).exists()
