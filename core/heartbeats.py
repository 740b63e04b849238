"""Workers' heartbeats per queue (``WorkerHeartbeat``): written by each worker
(``portal.celery``), read by ``/readyz`` and the metrics."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from core.models import WorkerHeartbeat


def beat(*, hostname: str, queues: Iterable[str], metrics_url: str = "") -> None:
    """This worker is alive and consumes ``queues`` (one row per worker and queue)."""
    now = timezone.now()
    for queue in queues:
        WorkerHeartbeat.objects.update_or_create(
            hostname=hostname, queue=queue, defaults={"seen_at": now, "metrics_url": metrics_url}
        )


def max_age() -> timedelta:
    """A worker not heard from for this long is gone (three missed heartbeats)."""
    return timedelta(seconds=3 * settings.PORTAL_WORKER_HEARTBEAT_S)


def live_workers_by_queue() -> dict[str, int]:
    """How many workers were seen within ``max_age`` on each queue that has any."""
    rows = (
        WorkerHeartbeat.objects.filter(seen_at__gte=timezone.now() - max_age())
        .values("queue")
        .annotate(n=Count("hostname"))
    )
    return {row["queue"]: row["n"] for row in rows}


def live_metrics_urls() -> list[str]:
    """The metrics addresses of the workers seen within ``max_age`` (Prometheus's targets)."""
    return sorted(
        set(
            WorkerHeartbeat.objects.filter(seen_at__gte=timezone.now() - max_age())
            .exclude(metrics_url="")
            .values_list("metrics_url", flat=True)
        )
    )
