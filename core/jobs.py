"""The one place where services hand work to Celery: after their transaction commits.

Services name tasks by their registered name (``"billing.tasks.quote_email"``), never by
importing the task module, so services never import tasks (tasks import services). The
work is published only when the surrounding transaction commits; a rollback sends
nothing. Every step of a chain is immutable (``.si``): it takes ids, not the result of
the step before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from celery import chain, current_app, signature
from django.db import transaction

Step = tuple[str, Sequence[Any]]


def _signature(name: str, args: Sequence[Any]) -> Any:
    return signature(name, args=tuple(args), immutable=True, app=current_app)


def enqueue(name: str, *args: Any) -> None:
    """Run task ``name`` with ``args`` once the current transaction commits."""
    enqueue_chain([(name, args)])


def enqueue_chain(steps: Sequence[Step]) -> None:
    """Run the tasks one after the other (each only if the one before succeeded), once the
    current transaction commits."""
    if not steps:
        return
    frozen = [(name, tuple(args)) for name, args in steps]

    def publish() -> None:
        sigs = [_signature(name, args) for name, args in frozen]
        (sigs[0] if len(sigs) == 1 else chain(*sigs)).apply_async()

    transaction.on_commit(publish)
