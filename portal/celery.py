"""The Celery application. Configuration comes from Django settings (``CELERY_*``,
``portal/settings/celery.py``); ``route_task`` is its router."""

import logging
import logging.config
import os
import socket
import threading
import warnings
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import (
    setup_logging,
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_ready,
    worker_shutdown,
)
from django_structlog.celery import signals as structlog_signals
from django_structlog.celery.steps import DjangoStructLogInitStep

from core import heap
from portal import (
    structured_logs,
    task_metrics,  # connects the task outcome and duration metrics
)

logger = logging.getLogger(__name__)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

# Each task declares its queue on its decorator (core.queues.CeleryQueue) and route_task
# below reads it, so Celery's warning that the attribute alone stops routing in 6.0 is
# answered here.
warnings.filterwarnings("ignore", message=r"\s*The 'queue' task attribute is deprecated")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Structured logs in workers and beat: Django's LOGGING (not Celery's own format), and
# django-structlog's step that binds each task's request id from its headers.
app.steps["worker"].add(DjangoStructLogInitStep)
structlog_signals.bind_extra_task_metadata.connect(structured_logs.bind_task_ids, weak=False)


@setup_logging.connect(weak=False)
def _logging_from_django(**_kwargs: object) -> None:
    from django.conf import settings  # the settings are loaded once a worker sets up

    logging.config.dictConfig(settings.LOGGING)


app.autodiscover_tasks(
    [
        "core",
        "accounts",
        "inventory",
        "billing",
        "provisioning",
        "provisioning.validation",
        "portal",
        "portal.operations",
    ]
)


def route_task(
    name: str, args: Any, kwargs: Any, options: dict[str, Any], task: Any = None, **_kw: Any
) -> dict[str, str] | None:
    """The queue of the task ``name``: the ``queue=`` its decorator declares.

    A task published by name (the outbox's ``signature(name)``, ``core.jobs``) comes
    without its task object: it is looked up in the registry, which holds every app's
    tasks in every process (``PortalConfig.ready`` imports them). A queue already in
    ``options`` (the caller's explicit ``queue=``, or Celery's copy of the task's own) is
    kept; a name no app registers goes to the default queue.
    """
    if options.get("queue"):
        return None
    if task is None:
        task = app.tasks.get(name)
    queue = getattr(task, "queue", None)
    return {"queue": str(queue)} if queue else None


def make_local_folders() -> None:
    """The folders Celery writes to on this machine, whatever the broker: kombu's
    filesystem transport (the embedded default), a ``file://`` result backend and beat's
    schedule file (under ``var/celery`` also with Redis as the broker, so a fresh data
    folder would stop beat at once without it)."""
    if str(app.conf.broker_url or "").startswith("filesystem://"):
        options = app.conf.broker_transport_options or {}
        for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
            if options.get(key):
                Path(options[key]).mkdir(parents=True, exist_ok=True)
    backend = str(app.conf.result_backend or "")
    if backend.startswith("file://"):
        Path(backend.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
    schedule = app.conf.beat_schedule_filename
    if schedule:
        Path(schedule).parent.mkdir(parents=True, exist_ok=True)


make_local_folders()


# --- The outbox relay inside every worker -------------------------------------------------
# Work written to the outbox while the broker was down is published by this loop once the
# broker answers again (beat runs the same relay every minute as a second line).
_relay_stop = threading.Event()


def _relay_loop() -> None:
    # Imported here: this module is loaded with the settings, before Django's apps are ready.
    from django.conf import settings
    from django.db import close_old_connections

    from core import outbox

    while not _relay_stop.wait(settings.PORTAL_OUTBOX_RELAY_EVERY):
        try:
            outbox.relay()
        except Exception:  # the database may be away for a moment: try again next round
            logger.exception("outbox relay loop")
        finally:
            close_old_connections()


def _heartbeat_loop(hostname: str, queue_names: list[str]) -> None:
    """Record that this worker consumes ``queue_names``, now and every
    ``PORTAL_WORKER_HEARTBEAT_S`` (``/readyz`` counts the workers seen per queue)."""
    from django.conf import settings
    from django.db import close_old_connections

    from core import heartbeats

    while True:
        try:
            heartbeats.beat(hostname=hostname, queues=queue_names, metrics_url=_metrics_url)
        except Exception:  # the database may be away for a moment: try again next round
            logger.exception("worker heartbeat")
        finally:
            close_old_connections()
        if _relay_stop.wait(settings.PORTAL_WORKER_HEARTBEAT_S):
            return


_metrics_url = ""


def _serve_metrics(hostname: str) -> None:
    """This worker's task metrics on PORTAL_WORKER_METRICS_PORT (if set), advertised to
    Prometheus through the heartbeat."""
    global _metrics_url
    from django.conf import settings

    port = settings.PORTAL_WORKER_METRICS_PORT
    if not port:
        return
    host = settings.PORTAL_WORKER_METRICS_HOST
    task_metrics.serve(host=host, port=port, token=task_metrics.metrics_token())
    advertise = settings.PORTAL_WORKER_METRICS_ADVERTISE or (
        socket.getfqdn() if host in ("0.0.0.0", "::", "") else host  # noqa: S104
    )
    _metrics_url = f"{advertise}:{port}"
    logger.info("worker %s: task metrics on http://%s/metrics", hostname, _metrics_url)


@worker_process_init.connect(weak=False)
def _freeze_startup_objects(**_kwargs: object) -> None:
    """Each prefork child, once started: its start-up objects out of the collector's walk
    (core.heap; the quote PDF's render about 20% less CPU, bench/quote_pdf.py)."""
    heap.freeze_startup_objects()


@worker_ready.connect
def _start_outbox_relay(sender: Any = None, **_kwargs: object) -> None:
    threading.Thread(target=_relay_loop, name="outbox-relay", daemon=True).start()
    if sender is not None:
        try:
            _serve_metrics(str(sender.hostname))
        except OSError:
            logger.exception("worker metrics server")
        queue_names = sorted(sender.app.amqp.queues.consume_from)
        threading.Thread(
            target=_heartbeat_loop,
            args=(str(sender.hostname), queue_names),
            name="worker-heartbeat",
            daemon=True,
        ).start()


@worker_shutdown.connect
def _stop_outbox_relay(**_kwargs: object) -> None:
    _relay_stop.set()


# --- Database connections kept between tasks, as between requests -----------------------
# Celery's Django fix-up closes every connection before and after each task unless
# CELERY_DB_REUSE_MAX is set (then once in that many tasks): a new PostgreSQL connection
# (a server process forked, authenticated, configured) for every task. With the setting,
# these handlers apply Django's own rule instead, as Django does around each request:
# a connection older than CONN_MAX_AGE, or left unusable by an error, is closed, and the
# next query checks a reused one first (CONN_HEALTH_CHECKS). Eager tasks (tests) run
# inside the caller's transaction and are left alone.


def _close_old_connections(sender: object = None, **_kwargs: object) -> None:
    request = getattr(sender, "request", None)
    if getattr(request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


task_prerun.connect(_close_old_connections, weak=False)
task_postrun.connect(_close_old_connections, weak=False)
