"""Celery task outcomes and durations as Prometheus metrics (the official client), from
Celery's signals in the process that runs the task; and the small HTTP server through
which a worker shows them to Prometheus (``PORTAL_WORKER_METRICS_PORT``).

A prefork worker runs tasks in child processes: with ``PROMETHEUS_MULTIPROC_DIR`` set
(``manage.py celery_worker`` and the systemd unit set it) each child writes its own
files there and the server adds them up. No Django model is imported here: this module
is loaded with the Celery app, before Django's apps are ready.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from celery.signals import task_postrun, task_prerun
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

TASKS = Counter(
    "portal_celery_tasks",
    "Celery tasks finished, by task, queue and outcome (succeeded, failed, retried).",
    ["task", "queue", "outcome"],
)
DURATION = Histogram(
    "portal_celery_task_duration_seconds",
    "How long a Celery task ran, by task and queue (every outcome).",
    ["task", "queue"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600, 7200),
)

_started: dict[str, float] = {}


def _queue(task: Any) -> str:
    info = getattr(getattr(task, "request", None), "delivery_info", None) or {}
    return str(info.get("routing_key") or getattr(task, "queue", None) or "default")


def _eager(task: Any) -> bool:
    return bool(getattr(getattr(task, "request", None), "is_eager", False))


@task_prerun.connect(weak=False)
def _task_started(task_id: str = "", task: Any = None, **_kw: Any) -> None:
    if task is not None and not _eager(task):
        _started[task_id] = time.monotonic()


@task_postrun.connect(weak=False)
def _task_finished(task_id: str = "", task: Any = None, state: str = "", **_kw: Any) -> None:
    began = _started.pop(task_id, None)
    if task is None or began is None:
        return
    queue = _queue(task)
    DURATION.labels(task.name, queue).observe(time.monotonic() - began)
    outcome = {"SUCCESS": "succeeded", "FAILURE": "failed", "RETRY": "retried"}.get(
        state, state.lower() or "unknown"
    )
    TASKS.labels(task.name, queue, outcome).inc()


def exposition() -> bytes:
    """This process's metrics, or all the processes' of ``PROMETHEUS_MULTIPROC_DIR``."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def metrics_token() -> str:
    """The bearer token of /metrics and of the workers' metrics ports
    (``PORTAL_METRICS_TOKEN``; by default derived from ``SECRET_KEY``)."""
    from django.conf import settings  # read when asked: settings are loaded by then

    if settings.PORTAL_METRICS_TOKEN:
        return str(settings.PORTAL_METRICS_TOKEN)
    return hmac.new(settings.SECRET_KEY.encode(), b"portal-metrics", hashlib.sha256).hexdigest()


def bearer_ok(header: str, token: str) -> bool:
    given = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
    return bool(token) and hmac.compare_digest(given.encode(), token.encode())


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Prometheus scrapes every 15 s: no line per scrape."""


def serve(*, host: str, port: int, token: str) -> WSGIServer:
    """Serve ``GET /metrics`` (bearer ``token``) on ``host:port`` in a daemon thread."""

    def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]
        if not bearer_ok(environ.get("HTTP_AUTHORIZATION", ""), token):
            start("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"a bearer token is required\n"]
        start("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
        return [exposition()]

    server = make_server(host, port, app, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
