"""Issue 25, point 12: no request waits on the result backend, and every Redis timeout is
bounded. With the broker and the result backend both on a dead port, checkout answers
within seconds (the order is saved; its work waits in the outbox)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from celery import current_app
from django.conf import settings as django_settings
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from billing.models import Order
from core.models import OutboxMessage, OutboxStatus

DEAD = "redis://127.0.0.1:1/0"  # nothing listens on port 1: connection refused


def _forget_backend() -> None:
    # Celery keeps the result backend per thread once made.
    current_app._local.__dict__.pop("backend", None)


@pytest.fixture
def dead_redis(settings):
    settings.CELERY_BROKER_URL = DEAD
    before = current_app.conf.result_backend
    current_app.conf.result_backend = DEAD
    _forget_backend()
    yield
    current_app.conf.result_backend = before
    _forget_backend()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("dead_redis")
def test_checkout_answers_quickly_with_broker_and_result_backend_down(client, demo):
    client.force_login(demo["customer"])
    start = (timezone.localdate() + timedelta(days=5)).isoformat()
    with override("en"):
        accept = reverse("configure_accept")
    began = time.monotonic()
    response = client.post(
        accept,
        {
            "site": "SZ",
            "node_type": demo["h100"].code,
            "node_count": "1",
            "term": "month",
            "duration": "1",
            "start_date": start,
            "payment_method": "bank_transfer",
        },
    )
    elapsed = time.monotonic() - began
    assert response.status_code == 302, response.content[:500]
    assert elapsed < 5, f"checkout took {elapsed:.1f} s"
    assert Order.objects.count() == 1
    waiting = OutboxMessage.objects.filter(status=OutboxStatus.PENDING)
    assert waiting.exists() and all("refused" in m.last_error.lower() for m in waiting)


def test_results_are_ignored_unless_read():
    # Nothing reads a task's result except a chord, whose header tasks store theirs, and
    # the worker check that ops (and the worker test) call to see a worker answer; no
    # request of the portal calls it.
    assert current_app.conf.task_ignore_result is True
    stored = {name for name, task in current_app.tasks.items() if not task.ignore_result}
    assert {n for n in stored if not n.startswith("celery.")} == {
        "provisioning.tasks.provisioning_slot_advance",
        "portal.tasks.health_check",
    }


def test_every_redis_timeout_is_bounded():
    conf = current_app.conf
    assert 0 < conf.redis_socket_connect_timeout <= 5
    assert 0 < conf.redis_socket_timeout <= 10
    policy = conf.result_backend_transport_options["retry_policy"]
    assert policy["max_retries"] <= 2 and policy["interval_max"] <= 1
    broker = django_settings.CELERY_BROKER_TRANSPORT_OPTIONS
    if not django_settings.CELERY_BROKER_URL.startswith("filesystem://"):
        assert 0 < broker["socket_connect_timeout"] <= 5
        assert 0 < broker["socket_timeout"] <= 30
    cache = django_settings.CACHES["default"]
    if "redis" in cache["BACKEND"]:
        assert 0 < cache["OPTIONS"]["SOCKET_CONNECT_TIMEOUT"] <= 5
        assert 0 < cache["OPTIONS"]["SOCKET_TIMEOUT"] <= 5
        assert cache["OPTIONS"]["IGNORE_EXCEPTIONS"] is True  # a dead cache is a miss
