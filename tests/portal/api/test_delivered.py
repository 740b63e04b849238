"""A delivered cluster through the API: the delivery kit, the replacement policy, health
events with their evidence and the approval of a replacement that waits for the
customer (then pollable as an operation), the renewal with its first refusal (accept,
decline), monitoring when Prometheus is down, and the webhook event types — each as the
pages show it, and none of it for another organisation's key."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from billing.models import Order, QuoteStatus
from billing.shop import renewals
from inventory.models import Reservation, ReservationStatus
from provisioning.health import services as health
from provisioning.models import HealthIncident, IncidentStatus, ProvisioningRun, RunKind

pytestmark = pytest.mark.django_db


def test_the_delivery_kit_names_the_delivered_nodes(rented, api, other_api):
    order, _run, nodes = rented
    kit = api.get(f"/api/v1/orders/{order.number}/delivery-kit/").json()
    assert all(n.hostname in kit["topology_conf"] or n.hostname in kit["hostfile"] for n in nodes)
    assert kit["hostfile"].count("slots=8") == 2 and "NCCL_" in kit["nccl_env"]
    assert other_api.get(f"/api/v1/orders/{order.number}/delivery-kit/").status_code == 404


def test_a_kit_before_delivery_is_a_clear_409(demo, api, config):
    quote = api.post("/api/v1/quotes/", config).json()
    order = api.post(f"/api/v1/quotes/{quote['number']}/accept/", {"name": "Li Wei"}).json()
    refused = api.get(f"/api/v1/orders/{order['number']}/delivery-kit/")
    assert refused.status_code == 409 and refused.json()["code"] == "not_delivered"
    assert order["number"] in refused.json()["detail"]


def test_the_replacement_policy_is_read_and_set_with_the_pages_rule(rented, api, other_api):
    order, _run, _nodes = rented
    url = f"/api/v1/orders/{order.number}/replacement-policy/"
    assert api.get(url).json()["mode"] == "automatic"
    too_short = api.put(url, {"mode": "ask", "ask_minutes": 2}, content_type="application/json")
    assert too_short.status_code == 400
    assert too_short.json()["errors"][0]["field"] == "ask_minutes"
    unknown = api.put(url, {"mode": "never"}, content_type="application/json")
    assert unknown.status_code == 400 and unknown.json()["errors"][0]["field"] == "mode"
    saved = api.put(url, {"mode": "ask", "ask_minutes": 45}, content_type="application/json")
    assert saved.status_code == 200 and saved.json()["ask_minutes"] == 45
    order.refresh_from_db()
    assert (order.replacement_policy.mode, order.replacement_policy.ask_minutes) == ("ask", 45)
    theirs = other_api.put(url, {"mode": "automatic"}, content_type="application/json")
    assert theirs.status_code == 404
    order.refresh_from_db()
    assert order.replacement_policy.mode == "ask"


def test_a_health_event_waits_for_approval_and_the_replacement_is_an_operation(
    rented,
    api,
    other_api,
    demo,
):
    order, _run, nodes = rented
    health.policy_set(order=order, mode="ask", ask_minutes=30, actor=demo["customer"])
    incident = health.incident_open(
        node=nodes[0],
        rule="ecc_uncorrectable",
        action="replace",
        metric="DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        value=3.0,
        gpu="5",
        observed_at=timezone.now() - timedelta(minutes=2),
    )
    incident = health.incident_act(incident=incident)
    assert incident.status == IncidentStatus.AWAITING
    listed = api.get("/api/v1/health-events/", {"order": order.number}).json()["results"]
    assert [e["id"] for e in listed] == [incident.pk]
    event = listed[0]
    assert event["node"] == nodes[0].hostname and event["gpu"] == "5"
    assert event["status"] == "awaiting" and event["decide_by"] and event["operation"] is None
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL = 3" in event["evidence"]
    assert [s["to_status"] for s in event["events"]] == ["open", "awaiting"]
    zh = api.get(f"/api/v1/health-events/{incident.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert zh["status_label"] == "等待您批准"
    # Another organisation's key: nothing listed, nothing to approve.
    assert other_api.get("/api/v1/health-events/").json()["results"] == []
    assert other_api.post(f"/api/v1/health-events/{incident.pk}/approve/").status_code == 404
    approved = api.post(f"/api/v1/health-events/{incident.pk}/approve/")
    assert approved.status_code == 200, approved.content
    body = approved.json()
    assert body["status"] == "replacing" and body["spare"] and body["spare"] != nodes[0].hostname
    run = ProvisioningRun.objects.get(order=order, kind=RunKind.REPLACE)
    assert body["operation"] == f"prov-{run.pk}"
    operation = api.get(f"/api/v1/operations/{body['operation']}/").json()
    assert operation["kind"] == RunKind.REPLACE and operation["done"] is False
    again = api.post(f"/api/v1/health-events/{incident.pk}/approve/")
    assert again.status_code == 422 and again.json()["code"] == "rule_refused"
    assert HealthIncident.objects.get(pk=incident.pk).approved_by == demo["customer"]


@pytest.fixture
def renewal_window(settings):
    settings.PORTAL_RENEWAL_DAYS = 60


def test_the_renewal_holds_the_same_nodes_and_is_accepted(rented, api, other_api, renewal_window):
    order, _run, nodes = rented
    url = f"/api/v1/orders/{order.number}/renewal/"
    before = api.get(url).json()
    assert before["status"] == "not_offered" and before["quote"] is None
    renewal = renewals.renewal_offer(order_id=order.pk)
    offer = api.get(url).json()
    assert offer["status"] == "offered" and offer["quote"] == renewal.quote.number
    assert offer["same_nodes"] and sorted(offer["kept"]) == sorted(n.hostname for n in nodes)
    assert offer["first_refusal_until"] == renewal.quote.expires_at.isoformat()
    assert offer["currency"] == "CNY" and offer["gross_total"] == str(renewal.quote.gross_total)
    assert other_api.get(url).status_code == 404
    assert other_api.post(url + "accept/", {"name": "Rival"}).status_code == 404
    accepted = api.post(url + "accept/", {"name": "Li Wei"})
    assert accepted.status_code == 201, accepted.content
    new = Order.objects.get(number=accepted.json()["number"])
    assert new.start_at == order.end_at and new.quote == renewal.quote
    after = api.get(url).json()
    assert after["status"] == "accepted" and after["new_order"] == new.number
    assert after["first_refusal_until"] is None


def test_declining_the_renewal_releases_the_held_nodes(rented, api, renewal_window):
    order, _run, _nodes = rented
    renewal = renewals.renewal_offer(order_id=order.pk)
    held = Reservation.objects.filter(group=renewal.quote.reservation_group)
    assert {r.status for r in held} == {ReservationStatus.HOLD}
    declined = api.post(
        f"/api/v1/orders/{order.number}/renewal/decline/", {"name": "Li Wei", "reason": "done"}
    )
    assert declined.status_code == 200 and declined.json()["status"] == "declined"
    renewal.quote.refresh_from_db()
    assert renewal.quote.status == QuoteStatus.REJECTED
    assert ReservationStatus.HOLD not in {r.status for r in held.all()}


def test_monitoring_without_prometheus_is_a_503_problem(rented, api, settings):
    order, _run, _nodes = rented
    settings.PORTAL_PROMETHEUS_URL = "http://127.0.0.1:9"
    for path in ("monitoring/", "gpus/"):
        down = api.get(f"/api/v1/orders/{order.number}/{path}", HTTP_ACCEPT_LANGUAGE="zh-hans")
        assert down.status_code == 503 and down["Retry-After"] == "30"
        assert (
            down.json()["code"] == "monitoring_unavailable"
            and down.json()["detail"] == "监控不可用。"
        )
    bad = api.get(f"/api/v1/orders/{order.number}/monitoring/", {"metric": "up{}"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "metric"


def test_the_event_types_are_listed_in_the_request_language(api):
    from accounts.webhooks import EVENT_TYPES

    types = api.get("/api/v1/webhook-event-types/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert [t["type"] for t in types] == list(EVENT_TYPES)
    assert all(any("\u4e00" <= c <= "\u9fff" for c in t["description"]) for t in types)
