"""gunicorn's configuration for the portal's web process (``portal.wsgi``).

    gunicorn -c deploy/gunicorn.conf.py

Why gthread workers: a request here spends its time waiting (PostgreSQL, Redis, Stripe's
API, reading a stored PDF), not computing: PDFs are rendered by the documents workers,
never in a request. Threads wait cheaply, so a few processes with several threads each
serve many requests at once in little memory, and a slow request holds one thread, not a
whole process. Several processes (not one) keep a crash or a stuck request from taking
the host out, and use every core for template rendering. Not ASGI/uvicorn: the portal has
no websockets or long polls (htmx polls with short requests) and every view is sync.

Every setting reads an environment variable, with the default noted (README: Running in
production).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

_cores = os.cpu_count() or 1

wsgi_app = "portal.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000").split(",")
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS", str(max(2, _cores))))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# A request taking longer than this is stuck: its worker is replaced.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
# On SIGTERM (systemd stop, a deploy), requests in flight have this long to finish.
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
# Behind a load balancer that keeps connections open (HAProxy: http-reuse).
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
# Recycle workers now and then (a slow leak in a library does not grow for ever).
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "2000"))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", "200"))
# The load balancer's addresses, whose X-Forwarded-Proto is believed (HTTPS behind it).
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
# Each worker imports the app itself: a database or Redis connection is never shared
# across a fork, and a code reload (SIGHUP) takes effect.
preload_app = False
# Django logs each request (structlog: JSON with its request id); gunicorn's access log
# would say it twice.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
proc_name = "gpu-portal-web"
if Path("/dev/shm").is_dir():  # noqa: S108 - the heartbeat file, off a slow disk
    worker_tmp_dir = "/dev/shm"  # noqa: S108

# Prometheus metrics of several processes (django-prometheus, portal.metrics): each worker
# writes its own files in this folder and /metrics adds them up. Emptied at start; a dead
# worker's live gauges are dropped.
_var = Path(os.environ.get("PORTAL_VAR_DIR", "var"))
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(_var / "metrics-web"))


def on_starting(server: Any) -> None:
    folder = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)


def child_exit(server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
