"""Every outgoing webhook in the OpenAPI document (3.1 ``webhooks``): each event type of
the one registry (``accounts.webhooks.EVENT_TYPES``) has its body's schema and an example
that matches it, the event-types endpoint names that schema, and the payloads the portal
really emits — an order's life from the quote to a node replaced mid-rental and a
maintenance announced — match their type's schema, with no undocumented field."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from django.utils import timezone

from accounts import webhooks
from accounts.models import WebhookEvent
from accounts.webhooks import EVENT_TYPES
from billing.dunning import services as dunning
from billing.models import Order, Quote
from billing.orders.selectors import order_nodes
from billing.orders.services import order_mark_paid
from billing.quotes import services as qs
from inventory import services as inventory_services
from inventory.models import Reservation
from portal.api import events
from portal.api.webhook_payloads import PAYLOADS
from portal.operations import services as operations
from provisioning import runs as provisioning_runs
from provisioning.health import services as health
from tests import factories
from tests.billing.test_dunning import period_invoice
from tests.billing.test_payments import make_order
from tests.portal.api.test_schema_examples import document  # noqa: F401 - fixture
from tests.provisioning.test_replacement_runs import HANDOVER, drive
from tests.provisioning.test_runs import fast  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def strict(node: Any) -> Any:
    """Every object schema closed (``additionalProperties: false``): a field the portal
    sends that the document does not describe fails the check."""
    if isinstance(node, list):
        return [strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict(v) for k, v in node.items()}
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def body_schema(document: dict, event_type: str) -> dict:  # noqa: F811
    media = document["webhooks"][event_type]["post"]["requestBody"]["content"]
    return media["application/json"]


def check(document: dict, event_type: str, body: Any) -> None:  # noqa: F811
    schema = body_schema(document, event_type)["schema"]
    root = {"components": strict(copy.deepcopy(document["components"])), **schema}
    try:
        jsonschema.Draft202012Validator(root).validate(body)
    except jsonschema.ValidationError as exc:
        pytest.fail(f"{event_type}: {exc.message} at {list(exc.absolute_path)}")


def test_every_event_type_is_a_webhook_with_its_schema_and_a_matching_example(
    document,  # noqa: F811
    api,
):
    assert document["openapi"].startswith("3.1")
    assert set(PAYLOADS) == set(EVENT_TYPES)
    assert list(document["webhooks"]) == list(EVENT_TYPES)
    listed = {row["type"]: row for row in api.get("/api/v1/webhook-event-types/").json()}
    assert set(listed) == set(EVENT_TYPES)
    for event_type in EVENT_TYPES:
        media = body_schema(document, event_type)
        ref = media["schema"]["$ref"]
        assert listed[event_type]["payload_schema"] == ref
        component = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
        assert component["properties"]["type"] == {"type": "string", "const": event_type}
        examples = list(media["examples"].values())
        assert examples, event_type
        for example in examples:
            assert example["value"]["type"] == event_type
            check(document, event_type, example["value"])
    # The schema is strict enough to refuse a body of another type or without its data.
    cordoned = next(iter(body_schema(document, "node.cordoned")["examples"].values()))["value"]
    with pytest.raises(pytest.fail.Exception):
        check(document, "node.replaced", cordoned)
    with pytest.raises(pytest.fail.Exception):
        check(document, "node.cordoned", {**cordoned, "data": {"order": "ORD-1"}})


def _rental_now(order: Order) -> None:
    start = timezone.now() - timedelta(hours=1)
    Order.objects.filter(pk=order.pk).update(start_at=start)
    Reservation.objects.filter(group=order.reservation_group).update(
        start_at=start, held_from=start
    )


def test_every_payload_the_portal_emits_matches_its_type_s_schema(demo, document):  # noqa: F811
    org = demo["org"]
    webhooks.endpoint_create(
        organisation=org,
        url="https://hooks.example.com/all",
        event_types=list(EVENT_TYPES),
        actor=None,
    )
    # quote.sent, quote.accepted, contract.signed; then order.paid, invoice.issued.
    order = make_order(demo, nodes=2)
    order, _ = order_mark_paid(order=order)
    # provisioning.started, order.ready: the run driven through the services.
    _rental_now(order)
    assert drive(provisioning_runs.provisioning_begin(order_id=order.pk)).status == "delivered"
    order.refresh_from_db()
    nodes = list(order_nodes(order))
    # node.degraded (a notify rule), node.cordoned and node.replaced (XID 79, replaced).
    seen = timezone.now()
    notify = health.incident_open(
        node=nodes[1], rule="thermal_throttle", action="notify",
        metric="DCGM_FI_DEV_CLOCK_EVENT_REASONS", value=64.0, observed_at=seen, gpu="2",
    )  # fmt: skip
    health.incident_act(incident=notify)
    fault = health.incident_open(
        node=nodes[0], rule="xid_79", action="replace", metric="DCGM_FI_DEV_XID_ERRORS",
        value=79.0, observed_at=seen, gpu="3",
    )  # fmt: skip
    replacing = health.incident_act(incident=fault)
    assert drive(replacing.replacement_run).status == "delivered"
    assert factories.run_outbox(HANDOVER) == 1
    # invoice.overdue: a period invoice past its reminder time, reminded by the dunning run.
    due = timezone.now() + timedelta(days=1)
    period_invoice(order, month=1, due_at=due)
    assert dunning.dunning_run(now=due + timedelta(hours=1)).reminders == 1
    # quote.expiring: a sent quote a few hours from its expiry, found by the beat job.
    quote = qs.quote_send(quote=_quote(demo), actor=demo["sales"])
    Quote.objects.filter(pk=quote.pk).update(expires_at=timezone.now() + timedelta(hours=3))
    assert events.quotes_expiring_emit() == 1
    # maintenance.announced: a plan over the order's node in service, told at once.
    works = timezone.now() + timedelta(days=2)
    plan = inventory_services.maintenance_plan_create(
        title="PDU swap", scope="nodes", node_ids=[nodes[1].pk],
        start_at=works, end_at=works + timedelta(hours=4),
        notice_days=0, override_reason="PDU smoking", actor=demo["admin"],
    )  # fmt: skip
    assert operations.maintenance_notify(plan_id=plan.pk) == 1

    emitted = list(WebhookEvent.objects.filter(organisation=org).order_by("pk"))
    assert {e.type for e in emitted} == set(EVENT_TYPES), sorted({e.type for e in emitted})
    for event in emitted:
        check(document, event.type, json.loads(webhooks.body_for(event)))


def _quote(demo):
    return qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=14),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
