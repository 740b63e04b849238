"""The probes that load balancers, systemd and ops ask.

- ``/healthz``: the process answers (no dependency, no template).
- ``/readyz``: each dependency and its state, as JSON: the database, the broker, the
  cache and the workers (a live heartbeat on every queue, ``core.heartbeats``). It answers
  503 when a *required* dependency is down. Which are required is
  ``PORTAL_READYZ_REQUIRED`` (default: the database only, because a web process serves
  customers without the others: the outbox keeps work while the broker is down, pages are
  computed while the cache is down, and work waits for a worker); ``?require=all`` or
  ``?require=cache,workers`` asks for more (monitoring, a deploy script). The error texts
  are shown to this host itself and to whoever may read /metrics (its token or address
  list); others see the states only.

Both are answered by ``ProbeMiddleware``, first in ``MIDDLEWARE``: before the host check
(a load balancer asks by IP address, which ``ALLOWED_HOSTS`` does not list), the HTTPS
redirect, sessions and the metrics middleware.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from core import heartbeats, queues
from portal import metrics

OK = "ok"
DOWN = "down"
CHECKS = ("database", "broker", "cache", "workers")
PROBE_TIMEOUT_S = 2.0

_redis_clients: dict[str, redis.Redis] = {}


def _redis(url: str) -> redis.Redis:
    """One client per URL and process (its pool keeps the connection between probes)."""
    client = _redis_clients.get(url)
    if client is None:
        client = redis.Redis.from_url(
            url, socket_connect_timeout=PROBE_TIMEOUT_S, socket_timeout=PROBE_TIMEOUT_S
        )
        _redis_clients[url] = client
    return client


def check_database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        connection.close_if_unusable_or_obsolete()
        return {"state": DOWN, "error": _error(exc)}
    return {"state": OK, "vendor": connection.vendor}


def check_broker() -> dict[str, Any]:
    url = str(settings.CELERY_BROKER_URL)
    kind = url.split("://", 1)[0]
    try:
        if kind in ("redis", "rediss"):
            _redis(url).ping()
        else:  # kombu's filesystem transport (the embedded default): its folder
            from celery import current_app

            with current_app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1)
    except Exception as exc:
        return {"state": DOWN, "kind": kind, "error": _error(exc)}
    return {"state": OK, "kind": kind}


def check_cache() -> dict[str, Any]:
    """The cache itself, not through its error-ignoring wrapper (which would say yes)."""
    try:
        client = getattr(cache, "client", None)
        if client is not None and hasattr(client, "get_client"):  # django-redis
            client.get_client(write=True).ping()
        else:
            token = str(time.monotonic_ns())
            cache.set("readyz-probe", token, 30)
            if cache.get("readyz-probe") != token:
                return {"state": DOWN, "error": "the cache did not keep a value"}
    except Exception as exc:
        return {"state": DOWN, "error": _error(exc)}
    return {"state": OK}


def check_workers() -> dict[str, Any]:
    """At least one worker heard from within the heartbeat's maximum age on every queue."""
    try:
        live = heartbeats.live_workers_by_queue()
    except Exception as exc:
        connection.close_if_unusable_or_obsolete()
        return {"state": DOWN, "error": _error(exc)}
    by_queue = {queue: live.get(queue, 0) for queue in queues.ALL}
    missing = [queue for queue, n in by_queue.items() if n == 0]
    result: dict[str, Any] = {"state": DOWN if missing else OK, "queues": by_queue}
    if missing:
        result["error"] = "no live worker on: " + ", ".join(missing)
    return result


RUNNERS: dict[str, Callable[[], dict[str, Any]]] = {
    "database": check_database,
    "broker": check_broker,
    "cache": check_cache,
    "workers": check_workers,
}


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def required_checks(asked: str | None) -> list[str]:
    """The checks whose failure makes ``/readyz`` answer 503."""
    names = settings.PORTAL_READYZ_REQUIRED if asked is None else asked.split(",")
    names = [name.strip() for name in names if name.strip()]
    if "all" in names:
        return list(CHECKS)
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        raise ValueError(", ".join(unknown))
    return names


def _may_see_details(request: HttpRequest) -> bool:
    """The error texts go to this host itself and to whoever may read the metrics."""
    return request.META.get("REMOTE_ADDR") in ("127.0.0.1", "::1") or metrics.allowed(request)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    try:
        required = required_checks(request.GET.get("require"))
    except ValueError as exc:
        return JsonResponse(
            {"error": f"unknown check: {exc} (known: {', '.join(CHECKS)}, all)"}, status=400
        )
    checks: dict[str, dict[str, Any]] = {}
    for name, run in RUNNERS.items():
        started = time.monotonic()
        result = run()
        result["required"] = name in required
        result["ms"] = round((time.monotonic() - started) * 1000, 1)
        checks[name] = result
    if not _may_see_details(request):  # what is down, not where it is (addresses, users)
        for result in checks.values():
            result.pop("error", None)
    failed = [name for name in required if checks[name]["state"] != OK]
    degraded = [name for name, c in checks.items() if c["state"] != OK and name not in failed]
    status = "not ready" if failed else ("degraded" if degraded else "ready")
    body = {"status": status, "failed": failed, "degraded": degraded, "checks": checks}
    response = JsonResponse(body, status=503 if failed else 200)
    response["Cache-Control"] = "no-store"
    return response


PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": healthz,
    "/readyz": readyz,
    # Not a probe, but asked the same way: by Prometheus, by the host's address (it checks
    # its own bearer token or address list).
    "/metrics": metrics.metrics,
}


class ProbeMiddleware:
    """Answers the probes before any other middleware (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is not None:
            return probe(request)
        return self.get_response(request)
