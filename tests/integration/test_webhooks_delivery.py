"""Outgoing webhooks with a real worker over Redis and a receiver on 127.0.0.1 that checks
every signature: an event emitted by a lifecycle move is delivered through the outbox,
retried after the receiver fails, logged with status and response time; a replay sends
the same event id again, which the receiver (deduplicating by id) processes once."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from accounts import webhooks
from accounts.models import WebhookDelivery, WebhookDeliveryStatus
from billing.orders.services import order_mark_paid
from tests.billing.test_payments import make_order
from tests.integration.workers import Worker, scratch_broker_url
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


class Receiver:
    """A webhook endpoint: answers 500 to the first ``fail_first`` requests, then 200;
    records each request and whether its signature verified."""

    def __init__(self, fail_first: int = 1) -> None:
        self.secret = ""
        self.requests: list[dict] = []
        self.processed: set[str] = set()
        self.fail_first = fail_first
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                signed = webhooks.verify(
                    receiver.secret, self.headers.get(webhooks.SIGNATURE_HEADER, ""), body
                )
                event = json.loads(body)
                receiver.requests.append(
                    {"signed": signed, "id": event["id"], "type": event["type"]}
                )
                failing = len(receiver.requests) <= receiver.fail_first
                if signed and not failing:
                    receiver.processed.add(event["id"])  # idempotent by event id
                self.send_response(500 if failing or not signed else 200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_signed_delivery_with_retry_log_and_replay(demo, settings):
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    receiver = Receiver(fail_first=1)
    endpoint = webhooks.endpoint_create(
        organisation=demo["org"], url=receiver.url, event_types=["order.paid"], actor=None
    )
    receiver.secret = endpoint.secret
    worker = Worker(broker, env={"PORTAL_WEBHOOK_RETRY_BASE": "0.2"})
    try:
        order, _ = order_mark_paid(order=make_order(demo, nodes=1))  # emits order.paid
        delivery = wait_until(
            lambda: WebhookDelivery.objects.filter(
                endpoint=endpoint, status=WebhookDeliveryStatus.SUCCEEDED
            ).first(),
            timeout=60,
            message=lambda: f"a delivered order.paid (receiver saw {receiver.requests})",
        )
        assert delivery.attempts == 2 and delivery.last_status_code == 200
        log = list(delivery.attempt_log.values_list("status_code", flat=True))
        assert log == [500, 200]
        assert all(a.response_ms >= 0 for a in delivery.attempt_log.all())
        event_id = delivery.event.event_id
        assert delivery.event.data["order"] == order.number
        assert [r["id"] for r in receiver.requests] == [event_id, event_id]
        assert all(r["signed"] for r in receiver.requests)

        # The same fact again emits nothing new; a replay sends the same event once more.
        assert (
            webhooks.emit_event(
                demo["org"], "order.paid", {"order": order.number}, dedupe=f"order.paid:{order.pk}"
            )
            is None
        )
        again = webhooks.delivery_replay(delivery=delivery, actor=None)
        wait_until(
            lambda: (
                WebhookDelivery.objects.get(pk=again.pk).status == WebhookDeliveryStatus.SUCCEEDED
            ),
            timeout=60,
            message="the replay delivered",
        )
    finally:
        out = worker.stop()
        receiver.server.shutdown()
    assert len(receiver.requests) == 3, out[-3000:]
    assert receiver.requests[-1]["id"] == event_id and receiver.requests[-1]["signed"]
    assert receiver.processed == {event_id}
