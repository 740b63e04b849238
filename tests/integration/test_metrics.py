"""Issue 23, point 3: the portal's own Prometheus metrics, scraped by the same real
Prometheus as the node telemetry (``prom``, tests/integration/test_day2.py): requests by
view and status with latency histograms (django-prometheus), nodes by status, the
outbox's age, queue lengths, and a real worker's task outcomes and durations from its
own metrics port (discovered through its heartbeat). /metrics refuses a scraper without
the token."""

from __future__ import annotations

import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from core.models import OutboxMessage
from inventory.models import NodeStatus
from provisioning.telemetry import prometheus
from tests import factories
from tests.integration.test_day2 import METRICS_TOKEN, free_port, prom  # noqa: F401 (fixture)
from tests.integration.workers import Worker, scratch_broker_url
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

TASK = "core.tasks.outbox_relay_task"


def _get(url: str, token: str = "") -> tuple[int, str]:
    request = urllib.request.Request(url)  # noqa: S310
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _value(promql: str) -> float | None:
    try:
        samples = prometheus.query(promql)
    except prometheus.PrometheusUnavailable:
        return None
    return samples[0].value if samples else None


@pytest.mark.usefixtures("prom")
def test_prometheus_scrapes_requests_inventory_outbox_and_task_metrics(live_server, settings):
    site, node_type = factories.site(), factories.node_type()
    factories.node(site, node_type, hostname="m-1")
    factories.node(site, node_type, hostname="m-2", status=NodeStatus.FAULTY)
    # Work written a minute ago and not published (its next try is later).
    message = OutboxMessage.objects.create(
        steps=[[TASK, []]], next_attempt_at=timezone.now() + timedelta(hours=1)
    )
    OutboxMessage.objects.filter(pk=message.pk).update(
        created_at=timezone.now() - timedelta(seconds=60)
    )
    broker = scratch_broker_url()
    settings.CELERY_BROKER_URL = broker

    assert _get(live_server.url + "/metrics")[0] == 403
    assert _get(live_server.url + "/metrics", "wrong")[0] == 403
    assert _get(live_server.url + "/en/")[0] == 200
    status, text = _get(live_server.url + "/metrics", METRICS_TOKEN)
    assert status == 200
    assert 'portal_nodes{status="faulty"} 1.0' in text
    assert 'portal_nodes{status="available"} 1.0' in text
    age = next(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("portal_outbox_oldest_pending_age_seconds ")
    )
    assert 59 <= age < 120
    assert 'portal_celery_queue_length{queue="default"} 0.0' in text
    assert 'portal_metrics_source_up{source="database"} 1.0' in text

    port = free_port()
    worker = Worker(
        broker,
        env={"PORTAL_WORKER_METRICS_PORT": str(port), "PORTAL_METRICS_TOKEN": METRICS_TOKEN},
    )
    try:
        with current_app.connection_for_write(broker) as connection:
            current_app.send_task(TASK, queue="default", connection=connection)
        succeeded = f'portal_celery_tasks_total{{task="{TASK}",outcome="succeeded"}}'
        wait_until(
            lambda: (_value(succeeded) or 0) >= 1,
            timeout=90,
            interval=0.5,
            message="Prometheus to scrape the worker's task outcome",
            give_up_if=lambda: worker.proc.poll() is not None,
        )
        assert (_value(f'portal_celery_task_duration_seconds_count{{task="{TASK}"}}') or 0) >= 1
        # The same Prometheus has the web's request metrics and the inventory's.
        requests = (
            'sum(django_http_responses_total_by_status_view_method_total{job="portal",'
            'view="catalog",status="200"})'
        )
        # Each job is scraped on its own schedule: the portal's may come after the worker's.
        wait_until(
            lambda: (_value(requests) or 0) >= 1,
            timeout=60,
            interval=0.5,
            message="Prometheus to scrape the web's request counters",
        )
        assert _value('portal_nodes{job="portal",status="faulty"}') == 1
        assert _value('up{job="portal"}') == 1
        assert _value('up{job="portal-workers"}') == 1
        assert _get(f"http://127.0.0.1:{port}/metrics")[0] == 403  # the worker's port too
    finally:
        worker.stop()
