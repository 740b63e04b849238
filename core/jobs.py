"""The one place where services hand work to Celery: the transactional outbox.

Services name tasks by their registered name (``"billing.tasks.quote_email"``), never by
importing the task module, so services never import tasks (tasks import services).
``enqueue`` writes an outbox row in the caller's transaction: a rollback drops the work
with everything else, a commit keeps it even if the broker is down at that moment. After
the commit it is published at once when the broker answers, else by the relay
(``core.outbox``). Every step of a chain is immutable (``.si``): it takes ids, not the
result of the step before; steps run one after the other, each only if the one before
succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from core import logcontext, outbox
from core.models import OutboxMessage

Step = tuple[str, Sequence[Any]]


def enqueue(name: str, *args: Any) -> OutboxMessage:
    """Run task ``name`` with ``args`` once the current transaction commits."""
    return enqueue_chain([(name, args)])


def enqueue_chain(steps: Sequence[Step]) -> OutboxMessage:
    """Run the tasks in order once the current transaction commits (never lost)."""
    if not steps:
        raise ValueError("enqueue_chain needs at least one step")
    message = OutboxMessage.objects.create(
        steps=[[name, list(args)] for name, args in steps], log_context=logcontext.current()
    )
    message_id = message.pk
    transaction.on_commit(lambda: outbox.publish_now(message_id))
    return message
