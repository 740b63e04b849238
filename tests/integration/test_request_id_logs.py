"""Issue 23, point 3: structured JSON logs whose request id follows the work. A request
that enqueues a task (a password reset: its email is sent by a task) logs its lines
with the request id it was given (X-Request-ID) and answers it back; the real worker's
lines for that task carry the same id, whether the task was published at once or, the
broker being down then, later by the outbox relay; and a task's lines carry the ids among
its arguments (order_id)."""

from __future__ import annotations

import json
import logging

import pytest
import redis
import structlog
from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse
from django.utils.translation import override

from core import jobs, queues
from core.models import OutboxMessage, OutboxStatus
from tests.integration.workers import Worker, scratch_broker_url
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

DEAD = "redis://127.0.0.1:1/0"
RESET_TASK = "accounts.tasks.password_reset_email"


def _lines(log: str) -> list[dict]:
    lines = []
    for raw in log.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def _task_lines(lines: list[dict], request_id: str) -> list[dict]:
    """The lines of the tasks that ran for ``request_id``, from task_started on."""
    task_ids = {
        line["task_id"]
        for line in lines
        if line.get("event") == "task_started" and line.get("request_id") == request_id
    }
    return [line for line in lines if line.get("task_id") in task_ids]


def test_the_request_id_follows_the_work_into_its_tasks(client, settings, tmp_path, caplog):
    for name in ("one", "two"):
        get_user_model().objects.create_user(name, f"{name}@example.com", "pw-long-enough-1")
    broker = scratch_broker_url()
    mails = tmp_path / "mails"
    mails.mkdir()
    worker = Worker(broker, env={"TEST_EMAIL_FILE_PATH": str(mails)})
    with override("en"):
        reset = reverse("accounts:password_reset")
    caplog.set_level(logging.INFO)
    try:
        # The broker is down while this request runs: its task waits in the outbox.
        settings.CELERY_BROKER_URL = DEAD
        response = client.post(
            reset, {"email": "one@example.com"}, HTTP_X_REQUEST_ID="req-relayed-1"
        )
        assert response.status_code == 302
        assert response["X-Request-ID"] == "req-relayed-1"
        waiting = OutboxMessage.objects.get(status=OutboxStatus.PENDING)
        assert waiting.log_context["request_id"] == "req-relayed-1"
        # The broker answers again: this one is published at once, the first by the relay.
        settings.CELERY_BROKER_URL = broker
        response = client.post(
            reset, {"email": "two@example.com"}, HTTP_X_REQUEST_ID="req-direct-2"
        )
        assert response["X-Request-ID"] == "req-direct-2"
        # Work written under a request, for an order (the task's argument is bound too).
        with structlog.contextvars.bound_contextvars(request_id="req-order-3"):
            with transaction.atomic():
                jobs.enqueue("provisioning.tasks.provisioning_start", 424242)
        wait_until(
            lambda: not OutboxMessage.objects.filter(status=OutboxStatus.PENDING).exists(),
            timeout=60,
            message="the relay to publish the waiting message",
        )
        wait_until(
            lambda: len(list(mails.iterdir())) == 2,
            timeout=90,
            give_up_if=lambda: worker.proc.poll() is not None,
            message="both reset emails",
        )
        # Every queue taken (a warm stop lets the task in hand finish).
        queues_left = redis.Redis.from_url(broker)
        wait_until(
            lambda: not any(queues_left.llen(queue) for queue in queues.ALL),
            timeout=60,
            message="the worker to take every message",
        )
    finally:
        log = worker.stop()
    lines = _lines(log)
    assert lines, log[-2000:]

    for request_id in ("req-relayed-1", "req-direct-2"):
        ran = _task_lines(lines, request_id)
        assert ran, (request_id, log[-3000:])
        assert {line.get("task") for line in ran if line["event"] == "task_started"} == {RESET_TASK}
        assert any(line["event"] == "task_succeeded" for line in ran), ran
        # Every line of the task, Celery's own included, names the request.
        assert all(line.get("request_id") == request_id for line in ran), ran

    order_lines = _task_lines(lines, "req-order-3")
    said = [line for line in order_lines if "autostart is off" in line["event"]]
    assert said and said[0]["order_id"] == 424242, order_lines
    assert said[0]["logger"] == "provisioning.tasks.runs" and said[0]["level"] == "info"

    # The request's own lines (in this process) carry its id.
    finished = [
        record.msg
        for record in caplog.records
        if isinstance(record.msg, dict) and record.msg.get("event") == "request_finished"
    ]
    assert {line["request_id"] for line in finished} >= {"req-relayed-1", "req-direct-2"}
