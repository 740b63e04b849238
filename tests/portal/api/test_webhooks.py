"""Webhook endpoints: signature and rotation with overlap, events from lifecycle moves
(once per fact), the API's endpoints and delivery log, the dashboard page and replay."""

import time

from accounts import webhooks
from accounts.models import WebhookDelivery, WebhookEvent
from billing.orders.services import order_mark_paid
from core import jobs
from tests.billing.test_payments import make_order


def test_rotation_signs_with_both_secrets_during_the_overlap(demo):
    endpoint = webhooks.endpoint_create(
        organisation=demo["org"], url="http://127.0.0.1:9/", event_types=["order.paid"], actor=None
    )
    old = endpoint.secret
    endpoint = webhooks.endpoint_rotate_secret(endpoint=endpoint, actor=None, overlap_hours=1)
    body = b'{"id":"evt_1"}'
    header = webhooks.signature_header(endpoint, body, timestamp=int(time.time()))
    assert webhooks.verify(endpoint.secret, header, body)
    assert webhooks.verify(old, header, body)
    assert not webhooks.verify("whsec_other", header, body)
    assert not webhooks.verify(endpoint.secret, header, body + b" ")
    endpoint = webhooks.endpoint_rotate_secret(endpoint=endpoint, actor=None, overlap_hours=0)
    header = webhooks.signature_header(endpoint, body, timestamp=int(time.time()))
    assert not webhooks.verify(old, header, body)


def test_lifecycle_moves_emit_subscribed_events_once(demo, monkeypatch):
    queued = []
    monkeypatch.setattr(jobs, "enqueue_chain", lambda steps: queued.append(steps))
    webhooks.endpoint_create(
        organisation=demo["org"], url="http://127.0.0.1:9/", actor=None,
        event_types=["order.paid", "invoice.issued", "contract.signed"],
    )  # fmt: skip
    order = make_order(demo, nodes=1)
    order_mark_paid(order=order)
    order_mark_paid(order=order)
    types = sorted(
        WebhookEvent.objects.filter(organisation=demo["org"]).values_list("type", flat=True)
    )
    assert types == ["contract.signed", "invoice.issued", "order.paid"]
    assert [s for s in queued if s[0][0] == webhooks.DELIVER_TASK]
    paid = WebhookEvent.objects.get(type="order.paid")
    assert paid.data["order"] == order.number and paid.data["url"].endswith(f"{order.number}/")


def test_no_endpoint_no_event(demo):
    order_mark_paid(order=make_order(demo, nodes=1))
    assert not WebhookEvent.objects.exists()


def test_endpoints_and_deliveries_over_the_api(demo, api):
    created = api.post(
        "/api/v1/webhook-endpoints/",
        {"url": "https://hooks.example.com/gpu", "event_types": ["order.ready"]},
    )
    assert created.status_code == 201
    body = created.json()
    assert body["secret"].startswith("whsec_")
    endpoint_id = body["id"]
    assert "secret" not in api.get(f"/api/v1/webhook-endpoints/{endpoint_id}/").json()
    rotated = api.post(f"/api/v1/webhook-endpoints/{endpoint_id}/rotate/", {"overlap_hours": 2})
    assert rotated.json()["secret"] != body["secret"] and rotated.json()["previous_secret_until"]
    bad = api.post("/api/v1/webhook-endpoints/", {"url": "x", "event_types": ["nope"]})
    assert bad.status_code == 400 and "url" in {e["field"] for e in bad.json()["errors"]}
    event = webhooks.emit_event(demo["org"], "order.ready", {"order": "O-1"})
    delivery = event.deliveries.get()
    log = api.get("/api/v1/webhook-deliveries/").json()["results"]
    assert log[0]["event_id"] == event.event_id and log[0]["status"] == "pending"
    replay = api.post(f"/api/v1/webhook-deliveries/{delivery.pk}/replay/")
    assert replay.status_code == 201 and replay.json()["replay_of"] == delivery.pk


def test_the_dashboard_shows_the_secret_once_and_replays(demo, client):
    client.force_login(demo["customer"])
    page = client.post(
        "/zh-hans/account/webhooks/new",
        {"url": "https://hooks.example.com/a", "event_types": ["order.paid"]},
    )
    secret = page.context["secret"]
    assert secret.startswith("whsec_") and secret in page.content.decode()
    listing = client.get("/zh-hans/account/webhooks/").content.decode()
    assert secret not in listing and "hooks.example.com/a" in listing
    event = webhooks.emit_event(demo["org"], "order.paid", {"order": "O-1"})
    delivery = event.deliveries.get()
    client.post(f"/zh-hans/account/webhooks/deliveries/{delivery.pk}/replay")
    assert WebhookDelivery.objects.filter(replay_of=delivery).count() == 1
