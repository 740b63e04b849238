"""The log context (structlog's context variables) that follows work from a request into
the Celery tasks it enqueues, also when the outbox publishes them later.

django-structlog binds ``request_id`` (from ``X-Request-ID`` or a new one) for each
request and carries the context in each task's headers as it is published; a task binds
it again, with its own ids (``portal.structured_logs``). A message written to the outbox
keeps the context of the work that wrote it (``OutboxMessage.log_context``), and the
relay publishes it under that context, not its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import structlog

#: What is kept with an outbox message (the request's ids and the domain ids bound).
KEPT = ("request_id", "correlation_id", "user_id", "parent_task_id")


def current() -> dict[str, Any]:
    """The part of the current log context worth keeping with deferred work."""
    context = structlog.contextvars.get_contextvars()
    kept = {key: context[key] for key in KEPT if context.get(key) is not None}
    kept.update({key: value for key, value in context.items() if key.endswith("_id") and value})
    kept.pop("task_id", None)  # the writer's own task id: the relay's publish is not it
    return {key: value for key, value in kept.items() if isinstance(value, str | int)}


@contextmanager
def restored(context: Mapping[str, Any]) -> Iterator[None]:
    """Run the block under ``context`` alone, then put back what was bound before."""
    saved = structlog.contextvars.get_contextvars()
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(**context)
    try:
        yield
    finally:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(**saved)
