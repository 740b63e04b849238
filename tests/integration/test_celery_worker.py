"""A real Celery worker, started by the test, runs tasks over Redis against PostgreSQL."""

import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from inventory import services
from inventory.models import Reservation, ReservationStatus
from inventory.tasks import reservation_expire_holds_task
from portal.celery import app
from portal.tasks import health_check
from tests import factories
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worker():
    """A worker process on its own queue names, pointed at the test database."""
    assert settings.CELERY_BROKER_URL.startswith("redis://"), settings.CELERY_BROKER_URL
    suffix = uuid.uuid4().hex[:8]
    queue = f"test-{suffix}"
    env = dict(os.environ)
    env["DATABASE_URL"] = (
        f"postgres://{connection.settings_dict['USER']}@{connection.settings_dict['HOST']}:"
        f"{connection.settings_dict['PORT']}/{connection.settings_dict['NAME']}"
    )
    env["DJANGO_SETTINGS_MODULE"] = "portal.settings.test"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "-Q", queue, "-P", "solo",
         "-n", f"test-{suffix}@%h", "--loglevel=INFO", "--without-mingle", "--without-gossip"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        yield queue
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        print(out[-4000:])  # shown on failure


def test_worker_runs_a_task_over_redis(worker):
    result = health_check.apply_async(queue=worker)
    assert result.get(timeout=60) == {"worker": "ok", "database": "postgresql"}


def test_worker_expires_a_hold_in_the_database(worker, sz, h100):
    node = factories.node(sz, h100)
    start = timezone.now() + timedelta(days=1)
    services.reservation_hold(
        nodes=[node],
        start_at=start,
        end_at=start + timedelta(days=3),
        owner_ref="quote:t",
        expires_at=timezone.now() - timedelta(seconds=1),
    )
    # Its result is not kept (nothing in the portal reads it): watch the database.
    reservation_expire_holds_task.apply_async(queue=worker)
    wait_until(
        lambda: Reservation.objects.get(node=node).status == ReservationStatus.EXPIRED,
        timeout=60,
        message="the worker to expire the hold",
    )
    # Idempotent: a second run changes nothing (the hold stays expired, no other row).
    reservation_expire_holds_task.apply_async(queue=worker)
    assert health_check.apply_async(queue=worker).get(timeout=60)["worker"] == "ok"
    assert list(Reservation.objects.filter(node=node).values_list("status", flat=True)) == [
        ReservationStatus.EXPIRED
    ]


def test_routes_send_each_app_to_its_queue():
    # Each task's own queue= (portal.celery.route_task), by name as the outbox publishes.
    route = app.amqp.router.route
    assert route({}, "provisioning.tasks.provisioning_launch")["queue"].name == "provisioning"
    assert route({}, "billing.tasks.document_render_quote")["queue"].name == "documents"
    assert route({}, "billing.tasks.quote_email")["queue"].name == "billing"
    assert route({}, "inventory.tasks.reservation_expire_holds_task")["queue"].name == "default"
    assert route({}, "no.such.task")["queue"].name == "default"


def test_no_global_time_limit_and_json_only():
    # Each task declares its own limits (tests/portal/test_settings.py), none global.
    assert app.conf.task_soft_time_limit is None and app.conf.task_time_limit is None
    assert app.conf.accept_content == ["json"]
    assert app.conf.task_serializer == "json"
