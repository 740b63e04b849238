"""The portal's Prometheus metrics at ``/metrics`` (README: Running in production).

- requests by view, method and status, latency histograms: django-prometheus's middleware;
- Celery task outcomes and durations: ``portal.task_metrics`` (in the workers, scraped
  from each worker's own port; the web's requests enqueue, they run no task);
- read at each scrape by ``PortalCollector``: Celery queue lengths (the broker's Redis),
  the outbox (pending messages, age of the oldest), provisioning runs in flight by status,
  nodes by status, live workers by queue. A source that cannot be read is reported as
  ``portal_metrics_source_up{source=…} 0`` and its metrics are left out (never a guess).

Access: ``Authorization: Bearer <PORTAL_METRICS_TOKEN>`` or a client address in
``PORTAL_METRICS_ALLOWED_IPS`` (addresses or networks); anything else is refused (403).
Prometheus scrapes each web host directly (its own address), not through the balancer.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Iterator

import redis
from django.conf import settings
from django.db import connection
from django.db.models import Count, Min
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from core import heartbeats, queues
from core.models import OutboxMessage, OutboxStatus
from inventory.models import Node, NodeStatus
from portal import task_metrics
from provisioning.models.runs import ACTIVE_RUN_STATUSES, ProvisioningRun

logger = logging.getLogger(__name__)


def allowed(request: HttpRequest) -> bool:
    token = task_metrics.metrics_token()
    if task_metrics.bearer_ok(request.headers.get("Authorization", ""), token):
        return True
    try:
        client = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(
        client in ipaddress.ip_network(net, strict=False)
        for net in settings.PORTAL_METRICS_ALLOWED_IPS
    )


class PortalCollector(Collector):
    """The metrics read from the database and the broker at each scrape."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "portal_metrics_source_up",
            "Whether the source of the metrics below could be read at this scrape.",
            labels=["source"],
        )
        try:
            yield from self._database()
            up.add_metric(["database"], 1)
        except Exception:
            logger.warning("metrics: the database could not be read", exc_info=True)
            connection.close_if_unusable_or_obsolete()
            up.add_metric(["database"], 0)
        broker = self._broker()
        if broker is not None:
            yield broker
        up.add_metric(["broker"], 1 if broker is not None else 0)
        yield up

    def _database(self) -> Iterator[GaugeMetricFamily]:
        pending = OutboxMessage.objects.filter(status=OutboxStatus.PENDING).aggregate(
            n=Count("pk"), oldest=Min("created_at")
        )
        outbox_n = GaugeMetricFamily(
            "portal_outbox_pending_messages", "Outbox messages not yet published."
        )
        outbox_n.add_metric([], pending["n"])
        age = GaugeMetricFamily(
            "portal_outbox_oldest_pending_age_seconds",
            "Age of the oldest outbox message not yet published (0: none waits).",
        )
        oldest = pending["oldest"]
        age.add_metric([], (timezone.now() - oldest).total_seconds() if oldest else 0.0)

        runs = GaugeMetricFamily(
            "portal_provisioning_runs_in_flight",
            "Provisioning runs not finished, by status.",
            labels=["status"],
        )
        by_status = dict(
            ProvisioningRun.objects.filter(status__in=ACTIVE_RUN_STATUSES)
            .values_list("status")
            .annotate(n=Count("pk"))
        )
        for run_status in ACTIVE_RUN_STATUSES:
            runs.add_metric([str(run_status)], by_status.get(run_status, 0))

        nodes = GaugeMetricFamily("portal_nodes", "Nodes by status.", labels=["status"])
        node_counts = dict(Node.objects.values_list("status").annotate(n=Count("pk")))
        for status in NodeStatus.values:
            nodes.add_metric([status], node_counts.get(status, 0))

        workers = GaugeMetricFamily(
            "portal_workers_live",
            "Celery workers whose heartbeat is recent, by queue they consume.",
            labels=["queue"],
        )
        live = heartbeats.live_workers_by_queue()
        for queue in queues.ALL:
            workers.add_metric([queue], live.get(queue, 0))
        yield from (outbox_n, age, runs, nodes, workers)

    def _broker(self) -> GaugeMetricFamily | None:
        url = str(settings.CELERY_BROKER_URL)
        if not url.startswith(("redis://", "rediss://")):
            return None  # the embedded default's filesystem broker: no queue lengths
        family = GaugeMetricFamily(
            "portal_celery_queue_length",
            "Messages waiting in each Celery queue (the broker's list).",
            labels=["queue"],
        )
        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
            with client.pipeline(transaction=False) as pipe:
                for queue in queues.ALL:
                    pipe.llen(queue)
                lengths = pipe.execute()
            client.close()
        except redis.RedisError:
            logger.warning("metrics: the broker could not be read", exc_info=True)
            return None
        for queue, length in zip(queues.ALL, lengths, strict=True):
            family.add_metric([queue], int(length))
        return family


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        return HttpResponse(
            "Forbidden: a bearer token or an allowed address is required.\n",
            status=403,
            content_type="text/plain",
        )
    started = time.monotonic()
    portal = CollectorRegistry()
    portal.register(PortalCollector())
    body = task_metrics.exposition() + generate_latest(portal)
    body += (
        b"# HELP portal_metrics_scrape_seconds Time to collect these metrics.\n"
        b"# TYPE portal_metrics_scrape_seconds gauge\n"
        + f"portal_metrics_scrape_seconds {time.monotonic() - started:.4f}\n".encode()
    )
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


@require_GET
def worker_targets(request: HttpRequest) -> HttpResponse:
    """Prometheus's HTTP service discovery of the workers' metrics ports (from their
    heartbeats), behind the same access rule as /metrics."""
    if not allowed(request):
        return HttpResponse("Forbidden\n", status=403, content_type="text/plain")
    groups = [
        {"targets": [url], "labels": {"worker": url}} for url in heartbeats.live_metrics_urls()
    ]
    return JsonResponse(groups, safe=False)
