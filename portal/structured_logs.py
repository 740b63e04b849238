"""Structured logs (structlog, django-structlog): one JSON object per line in production,
readable lines in development (``PORTAL_LOG_FORMAT``: ``json`` or ``console``).

Every line of a request carries its ``request_id`` (the ``X-Request-ID`` header the load
balancer sets, else a new one; sent back in the response's ``X-Request-ID``), its
``user_id`` and client ``ip``; every line of a Celery task carries the ``request_id`` of
the request that enqueued it (task headers; through the outbox too, ``core.logcontext``),
its ``task_id``, its ``parent_task_id`` and the ids among its arguments (``order_id``,
``run_id``, ``node_id`` …). Logs of the standard library's loggers (Django, Celery, the
portal's own ``logging.getLogger``) go through the same formatter and carry the same
context.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import structlog
from django.http import HttpRequest, HttpResponse

#: Processors every line goes through (structlog's own and the standard library's).
SHARED: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_logger_name,
    structlog.stdlib.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def configure() -> None:
    """structlog's own loggers hand their lines to the standard library's handlers."""
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *SHARED,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.UnicodeDecoder(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def formatter(kind: str) -> dict[str, Any]:
    """The ``logging`` formatter (dictConfig) of ``kind``: ``json`` or ``console``."""
    renderer: Any = (
        structlog.processors.JSONRenderer(ensure_ascii=False, default=str)
        if kind == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    return {
        "()": structlog.stdlib.ProcessorFormatter,
        "processors": [
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info if kind == "json" else _identity,
            renderer,
        ],
        "foreign_pre_chain": [*SHARED, structlog.stdlib.ExtraAdder()],
    }


def _identity(_logger: Any, _name: str, event: Any) -> Any:
    return event


class RequestIdHeaderMiddleware:
    """Sends the request id back (``X-Request-ID``), so a customer's report names it.
    Inside django-structlog's ``RequestMiddleware``, which binds it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        request_id = structlog.contextvars.get_contextvars().get("request_id")
        if request_id and not response.has_header("X-Request-ID"):
            response["X-Request-ID"] = str(request_id)
        return response


def task_ids(task: Any) -> dict[str, Any]:
    """The ids among a task's arguments, by parameter name (``order_id=…``)."""
    request = getattr(task, "request", None)
    args = list(getattr(request, "args", None) or ())
    kwargs = dict(getattr(request, "kwargs", None) or {})
    try:
        bound = inspect.signature(task.run).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return {}
    return {
        name: value
        for name, value in bound.arguments.items()
        if name.endswith("_id") and isinstance(value, str | int)
    }


def bind_task_ids(task: Any = None, **_kwargs: Any) -> None:
    """django-structlog's ``bind_extra_task_metadata``: after it bound the request's
    context in the task, add the task's own ids."""
    if task is not None:
        structlog.contextvars.bind_contextvars(**task_ids(task))
