"""No work lost when the broker or a worker dies: the outbox, the relay, the sweeps, with
a real worker over Redis against PostgreSQL."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from decimal import Decimal

import pytest
import redis
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from billing.invoicing import sweeps
from billing.models import InvoiceDocument, Order, Quote, QuoteDocument
from billing.quotes import services as qs
from core import outbox
from core.models import OutboxMessage, OutboxStatus
from tests.integration.workers import Worker, scratch_broker_url
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

DEAD_BROKER = "redis://127.0.0.1:1/0"  # nothing listens on port 1: connection refused


def configure_params(demo) -> dict[str, str]:
    start = (timezone.localdate() + timedelta(days=5)).isoformat()
    return {
        "site": "SZ",
        "node_type": demo["h100"].code,
        "node_count": "1",
        "term": "month",
        "duration": "1",
        "start_date": start,
        "payment_method": "bank_transfer",
    }


def test_a_dead_broker_delays_the_work_and_never_fails_the_customer(
    client, demo, settings, tmp_path
):
    settings.CELERY_BROKER_URL = DEAD_BROKER
    client.force_login(demo["customer"])
    with override("en"):
        accept = reverse("configure_accept")
    began = time.monotonic()
    response = client.post(accept, configure_params(demo))
    elapsed = time.monotonic() - began

    # A normal answer, fast, and the order exactly once.
    assert response.status_code == 302, response.content[:500]
    assert elapsed < 5, elapsed
    order = Order.objects.get()
    assert client.get(response["Location"]).status_code == 200
    # The quote's PDF and email, the invoice PDF and its email wait in the outbox, with the reason.
    waiting = list(OutboxMessage.objects.filter(status=OutboxStatus.PENDING))
    assert {tuple(m.task_names) for m in waiting} == {
        ("billing.tasks.document_render_quote", "billing.tasks.quote_email"),
        ("billing.tasks.invoice_issued_email",),
        ("billing.tasks.document_render_invoice",),
    }
    assert all(m.attempts == 1 and "refused" in m.last_error.lower() for m in waiting)
    assert not InvoiceDocument.objects.exists() and not QuoteDocument.objects.exists()

    # The broker is back: a worker's relay loop publishes it and the worker renders it.
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    worker = Worker(broker, env={"DJANGO_MEDIA_ROOT": str(tmp_path / "media")})
    try:
        document = wait_until(
            lambda: InvoiceDocument.objects.filter(invoice__order=order).first(),
            timeout=90,
            message="the invoice PDF rendered after the broker came back",
        )
        wait_until(
            lambda: QuoteDocument.objects.filter(quote=order.quote_id).exists(),
            timeout=90,
            message="the quote PDF rendered after the broker came back",
        )
    finally:
        log = worker.stop()
    assert document.sha256 and document.size > 1000, log[-3000:]
    assert QuoteDocument.objects.filter(quote=order.quote).count() == 1
    assert not OutboxMessage.objects.filter(status=OutboxStatus.PENDING).exists()
    assert Order.objects.count() == 1


def test_a_worker_killed_mid_render_leaves_one_document_and_one_email(demo, settings, tmp_path):
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    media, mails = tmp_path / "media", tmp_path / "mails"
    mails.mkdir()
    env = {"DJANGO_MEDIA_ROOT": str(media), "TEST_EMAIL_FILE_PATH": str(mails)}
    first = Worker(broker, env=env)
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.localdate() + timedelta(days=7),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(2), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
    )
    qs.quote_send(quote=quote, actor=demo["sales"])  # commits; the chain is published

    # Kill the worker while it holds the render (delivered, not acknowledged).
    client = redis.Redis.from_url(broker)
    try:
        wait_until(lambda: client.hlen("unacked"), timeout=90, message="the render to start")
    finally:
        first_log = first.kill()
    [held] = [json.loads(v)[0] for v in client.hvals("unacked")]
    assert held["headers"]["task"] == "billing.tasks.document_render_quote"
    killed_task_id = held["headers"]["id"]
    assert not QuoteDocument.objects.filter(quote=quote).exists(), first_log[-3000:]
    assert Quote.objects.get(pk=quote.pk).emailed_at is None

    # Restarted, with a short visibility timeout so that the killed worker's message comes
    # back too: the beat sweep re-enqueues the missing work, and both runs complete once.
    second = Worker(broker, env={**env, "PORTAL_BROKER_VISIBILITY_TIMEOUT": "2"})
    try:
        result = sweeps.documents_sweep(older_than=timedelta(0))
        assert result.quote_emails == 1
        wait_until(
            lambda: Quote.objects.get(pk=quote.pk).emailed_at,
            timeout=90,
            message="the quote email after the restart",
        )
        # ...and the killed worker's own message, redelivered, finds the work done.
        wait_until(
            lambda: (
                client.hlen("unacked") == 0
                and not any(client.llen(q) for q in ("documents", "billing"))
            ),
            timeout=60,
            message=f"every message acknowledged: {client.hgetall('unacked')} "
            f"{[(q, client.llen(q)) for q in ('documents', 'billing')]}",
        )
        time.sleep(1)
    finally:
        second_log = second.stop()
    assert QuoteDocument.objects.filter(quote=quote).count() == 1, second_log[-3000:]
    assert len(list(mails.iterdir())) == 1, second_log[-3000:]
    # The killed worker's message itself was delivered again and found the work done.
    assert f"[{killed_task_id}] succeeded" in second_log, second_log[-3000:]


def test_the_relay_publishes_each_message_once_and_reports_the_broker_down(db, settings):
    settings.CELERY_BROKER_URL = DEAD_BROKER
    message = OutboxMessage.objects.create(steps=[["portal.tasks.health_check", []]])
    assert outbox.relay() == 0
    message.refresh_from_db()
    assert message.status == OutboxStatus.PENDING and message.attempts == 1
    assert message.next_attempt_at > timezone.now()  # backoff: not due again at once
    assert outbox.relay() == 0  # not due: nothing tried
    message.refresh_from_db()
    assert message.attempts == 1

    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    OutboxMessage.objects.filter(pk=message.pk).update(next_attempt_at=timezone.now())
    assert outbox.relay() == 1
    assert outbox.relay() == 0  # published once
    assert redis.Redis.from_url(broker).llen("default") == 1
