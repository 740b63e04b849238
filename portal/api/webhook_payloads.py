"""What every outgoing webhook posts, for the OpenAPI document's ``webhooks`` (OpenAPI
3.1; drf-spectacular's ``OpenApiWebhook``): per event type of
``accounts.webhooks.EVENT_TYPES`` (the one registry) the body ``{"id", "type", "created",
"organisation", "data"}`` (``accounts.webhooks.body_for``) with its ``data`` schema and an
example. ``PAYLOADS`` maps each type to its body's serializer (the component
``<Name>Webhook``); ``GET /api/v1/webhook-event-types/`` names that component for each
type. tests/portal/api/test_webhook_payloads.py checks that every registered type is here
and that real emitted payloads of every type match their schema.

Where the ``data`` comes from: ``portal.api.events`` (quotes, orders, invoices,
contracts), ``provisioning.health.services.incident_webhook_data`` (``node.*``) and
``portal.operations.services`` (``maintenance.announced``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import translation
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    OpenApiWebhook,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers

from accounts.webhooks import EVENT_TYPES

# --- the ``data`` of each event ----------------------------------------------------------


class WebhookMoneySerializer(serializers.Serializer):
    amount = serializers.DecimalField(
        max_digits=settings.MONEY_MAX_DIGITS, decimal_places=settings.MONEY_DECIMAL_PLACES
    )
    currency = serializers.CharField()


class QuoteWebhookDataSerializer(serializers.Serializer):
    quote = serializers.CharField(help_text="The quote's number.")
    version = serializers.IntegerField()
    status = serializers.CharField(help_text="The quote's status code (sent, accepted, …).")
    total = WebhookMoneySerializer(help_text="The gross total.")
    expires_at = serializers.DateTimeField(allow_null=True)
    url = serializers.CharField(help_text="The quote in this API.")


class OrderWebhookDataSerializer(serializers.Serializer):
    order = serializers.CharField(help_text="The order's number.")
    status = serializers.CharField(help_text="The order's status code (paid, ready, …).")
    start_at = serializers.DateTimeField()
    end_at = serializers.DateTimeField()
    url = serializers.CharField(help_text="The order in this API.")


class InvoiceWebhookDataSerializer(serializers.Serializer):
    invoice = serializers.CharField(help_text="The invoice's number.")
    status = serializers.CharField(help_text="The invoice's status code.")
    total = WebhookMoneySerializer(help_text="The gross total.")
    due_at = serializers.DateTimeField()
    url = serializers.CharField(help_text="The invoice in this API.")


class ContractWebhookDataSerializer(serializers.Serializer):
    contract = serializers.CharField(help_text="The contract's number.")
    order = serializers.CharField(help_text="The order's number.")
    signed_at = serializers.DateTimeField(allow_null=True)
    url = serializers.CharField(help_text="The contract in this API.")


class NodeWebhookDataSerializer(serializers.Serializer):
    """A health incident of a node serving the order, with its evidence."""

    order = serializers.CharField(help_text="The order's number.")
    node = serializers.CharField(help_text="The node's hostname.")
    incident = serializers.IntegerField(help_text="The health incident's id.")
    rule = serializers.CharField(help_text="The health rule that fired (xid_79, …).")
    action = serializers.ChoiceField(choices=["notify", "revalidate", "replace"])
    status = serializers.CharField(help_text="The incident's status code.")
    metric = serializers.CharField(help_text="The metric the rule read.")
    value = serializers.FloatField(help_text="What the metric said.")
    gpu = serializers.CharField(help_text="The GPU's index on the node; empty: the node.")
    observed_at = serializers.DateTimeField(help_text="When the metric said it.")
    evidence = serializers.CharField(help_text="The sentence the email shows.")
    url = serializers.CharField(help_text="The order in this API.")


class NodeDegradedWebhookDataSerializer(NodeWebhookDataSerializer):
    validation_run = serializers.IntegerField(
        required=False, help_text="The quick validation run started (a re-validate rule)."
    )


class NodeCordonedWebhookDataSerializer(NodeWebhookDataSerializer):
    replacement = serializers.ChoiceField(
        choices=["automatic", "ask"], help_text="The order's replacement policy."
    )
    decide_by = serializers.DateTimeField(
        allow_null=True, help_text="With “ask me first”: when it proceeds without an answer."
    )


class NodeReplacedWebhookDataSerializer(NodeWebhookDataSerializer):
    spare = serializers.CharField(allow_null=True, help_text="The spare's hostname.")
    handed_over_at = serializers.DateTimeField(allow_null=True)


class MaintenanceBookingSerializer(serializers.Serializer):
    number = serializers.CharField(help_text="The order's or quote's number.")
    nodes = serializers.ListField(child=serializers.CharField(), help_text="Hostnames.")


class MaintenanceWebhookDataSerializer(serializers.Serializer):
    maintenance = serializers.IntegerField(help_text="The maintenance plan's id.")
    title = serializers.CharField()
    site = serializers.CharField(help_text="The site's code.")
    start_at = serializers.DateTimeField()
    end_at = serializers.DateTimeField()
    unplanned = serializers.BooleanField(
        help_text="Over a firm booking (counts as downtime for the SLA credits)."
    )
    orders = MaintenanceBookingSerializer(many=True)
    quotes = MaintenanceBookingSerializer(many=True)


DATA: dict[str, type[serializers.Serializer]] = {
    "quote.sent": QuoteWebhookDataSerializer,
    "quote.accepted": QuoteWebhookDataSerializer,
    "quote.expiring": QuoteWebhookDataSerializer,
    "order.paid": OrderWebhookDataSerializer,
    "provisioning.started": OrderWebhookDataSerializer,
    "order.ready": OrderWebhookDataSerializer,
    "node.degraded": NodeDegradedWebhookDataSerializer,
    "node.cordoned": NodeCordonedWebhookDataSerializer,
    "node.replaced": NodeReplacedWebhookDataSerializer,
    "invoice.issued": InvoiceWebhookDataSerializer,
    "invoice.overdue": InvoiceWebhookDataSerializer,
    "contract.signed": ContractWebhookDataSerializer,
    "maintenance.announced": MaintenanceWebhookDataSerializer,
}


# --- the body of each event --------------------------------------------------------------


def component_name(event_type: str) -> str:
    """``node.cordoned`` → ``NodeCordonedWebhook`` (the body's component)."""
    return "".join(p.capitalize() for p in event_type.replace("_", ".").split(".")) + "Webhook"


def _body(event_type: str) -> type[serializers.Serializer]:
    type_field = extend_schema_field({"type": "string", "const": event_type})(
        type("EventTypeField", (serializers.CharField,), {})
    )
    return type(
        component_name(event_type),
        (serializers.Serializer,),
        {
            "__module__": __name__,
            "__doc__": f"The body of a `{event_type}` delivery.",
            "id": serializers.CharField(
                help_text="The event's id (evt_…): deduplicate by it; a replay keeps it."
            ),
            "type": type_field(),
            "created": serializers.DateTimeField(),
            "organisation": serializers.IntegerField(help_text="Your organisation's id."),
            "data": DATA[event_type](),
        },
    )


PAYLOADS: dict[str, type[serializers.Serializer]] = {code: _body(code) for code in DATA}


def schema_ref(event_type: str) -> str:
    """Where the body of ``event_type`` is described in the OpenAPI document."""
    return f"#/components/schemas/{component_name(event_type)}"


# --- examples (each checked against its schema by the tests) -----------------------------

_NODE = {
    "order": "ORD-2026-0042",
    "node": "sz-h100-007",
    "incident": 311,
    "rule": "xid_79",
    "action": "replace",
    "status": "replacing",
    "metric": "DCGM_FI_DEV_XID_ERRORS",
    "value": 79.0,
    "gpu": "3",
    "observed_at": "2026-03-02T08:14:05+00:00",
    "evidence": "DCGM_FI_DEV_XID_ERRORS = 79 on sz-h100-007 GPU 3 at 2026-03-02 08:14:05 UTC",
    "url": "/api/v1/orders/ORD-2026-0042/",
}
_QUOTE = {
    "quote": "Q-2026-0108",
    "version": 1,
    "status": "sent",
    "total": {"amount": "184320.00", "currency": "CNY"},
    "expires_at": "2026-03-16T00:00:00+08:00",
    "url": "/api/v1/quotes/Q-2026-0108/",
}
_ORDER = {
    "order": "ORD-2026-0042",
    "status": "paid",
    "start_at": "2026-03-01T00:00:00+08:00",
    "end_at": "2026-04-01T00:00:00+08:00",
    "url": "/api/v1/orders/ORD-2026-0042/",
}
_INVOICE = {
    "invoice": "INV-2026-0077",
    "status": "issued",
    "total": {"amount": "184320.00", "currency": "CNY"},
    "due_at": "2026-03-15T00:00:00+08:00",
    "url": "/api/v1/invoices/INV-2026-0077/",
}
DATA_EXAMPLES: dict[str, dict[str, Any]] = {
    "quote.sent": _QUOTE,
    "quote.accepted": {**_QUOTE, "status": "accepted"},
    "quote.expiring": _QUOTE,
    "order.paid": _ORDER,
    "provisioning.started": {**_ORDER, "status": "provisioning"},
    "order.ready": {**_ORDER, "status": "ready"},
    "node.degraded": {
        **_NODE,
        "rule": "thermal_throttle",
        "action": "notify",
        "status": "notified",
        "metric": "DCGM_FI_DEV_CLOCK_EVENT_REASONS",
        "value": 64.0,
        "evidence": (
            "DCGM_FI_DEV_CLOCK_EVENT_REASONS = 64 on sz-h100-007 GPU 3 at 2026-03-02 08:14:05 UTC"
        ),
    },
    "node.cordoned": {**_NODE, "status": "open", "replacement": "automatic", "decide_by": None},
    "node.replaced": {
        **_NODE,
        "status": "replaced",
        "spare": "sz-h100-031",
        "handed_over_at": "2026-03-02T08:21:40+00:00",
    },
    "invoice.issued": _INVOICE,
    "invoice.overdue": {**_INVOICE, "status": "overdue"},
    "contract.signed": {
        "contract": "C-2026-0042",
        "order": "ORD-2026-0042",
        "signed_at": "2026-02-20T10:02:11+08:00",
        "url": "/api/v1/contracts/C-2026-0042/",
    },
    "maintenance.announced": {
        "maintenance": 12,
        "title": "PDU replacement, rack A3",
        "site": "sz",
        "start_at": "2026-03-10T02:00:00+08:00",
        "end_at": "2026-03-10T06:00:00+08:00",
        "unplanned": False,
        "orders": [{"number": "ORD-2026-0042", "nodes": ["sz-h100-007", "sz-h100-008"]}],
        "quotes": [],
    },
}


def example(event_type: str) -> dict[str, Any]:
    """A whole body of ``event_type``, as ``accounts.webhooks.body_for`` writes it."""
    return {
        "id": "evt_3f9c2d1e8b7a4c6d9e0f1a2b3c4d5e6f",
        "type": event_type,
        "created": "2026-03-02T08:14:09+00:00",
        "organisation": 7,
        "data": DATA_EXAMPLES[event_type],
    }


def _in(language: str, text: object) -> str:
    with translation.override(language):
        return str(text)


ACKNOWLEDGED = OpenApiResponse(
    description=(
        "Any 2xx acknowledges the delivery; another status or no answer within "
        "PORTAL_WEBHOOK_TIMEOUT is retried with exponential backoff. / "
        "任何 2xx 表示已收到；否则按指数退避重试。"
    )
)


def _webhook(event_type: str) -> OpenApiWebhook:
    label = EVENT_TYPES[event_type]
    return OpenApiWebhook(
        name=event_type,
        decorator=extend_schema(
            summary=f"{event_type}: {_in('en', label)} / {_in('zh-hans', label)}",
            description=(
                "POSTed to each active endpoint subscribed to this type, signed with "
                "`Portal-Signature` (see the description above), with `Portal-Event-Id` "
                "and `Portal-Event-Type`. / 推送给订阅此类型的端点，附签名。"
            ),
            request=PAYLOADS[event_type],
            responses={200: ACKNOWLEDGED},
            examples=[
                OpenApiExample(event_type, value=example(event_type)),
            ],
        ),
    )


#: drf-spectacular's ``WEBHOOKS`` setting (``portal.settings.api``): one per event type.
WEBHOOKS: list[OpenApiWebhook] = [_webhook(code) for code in EVENT_TYPES if code in PAYLOADS]
