"""What the API reads and writes. Money is a decimal string beside its currency; times
are ISO 8601 with their offset; statuses are the lifecycles' codes with a label in the
request's language."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.utils.translation import gettext as _
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from accounts.models import (
    ApiKey,
    SshPublicKey,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)
from accounts.webhooks import EVENT_TYPES
from billing.models import (
    Contract,
    CreditNote,
    Invoice,
    Order,
    PriceBook,
    Quote,
    QuoteLine,
    Term,
)
from billing.pricing.engine import TERM_DURATION
from inventory.models import NodeType, Site
from portal.support.models import TicketCategory, TicketPriority
from provisioning.telemetry import panel


def money(*, allow_null: bool = False) -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=settings.MONEY_MAX_DIGITS,
        decimal_places=settings.MONEY_DECIMAL_PLACES,
        read_only=True,
        allow_null=allow_null,
    )


class SiteSerializer(serializers.ModelSerializer):
    vat_rate = serializers.DecimalField(max_digits=6, decimal_places=4, read_only=True)

    class Meta:
        model = Site
        fields = [
            "code",
            "name",
            "name_zh",
            "city",
            "city_zh",
            "timezone",
            "currency",
            "vat_rate",
            "lead_time_hours",
        ]


class NodeTypeSerializer(serializers.ModelSerializer):
    gpu_model = serializers.CharField(source="gpu_model.name", default=None, allow_null=True)
    gpu_memory_gb = serializers.IntegerField(
        source="gpu_model.memory_gb", default=None, allow_null=True
    )

    class Meta:
        model = NodeType
        fields = [
            "code",
            "name",
            "name_zh",
            "cpu",
            "ram_gb",
            "ram_kind",
            "gpu_model",
            "gpu_count",
            "gpu_memory_gb",
            "interconnect",
            "nic_count",
            "nic_speed_gbps",
            "fabric",
            "storage",
            "description",
        ]


class PriceBookSerializer(serializers.ModelSerializer):
    site = serializers.CharField(source="site.code")

    class Meta:
        model = PriceBook
        fields = ["id", "site", "name", "currency", "effective_from"]


class AvailabilityQuery(serializers.Serializer):
    site = serializers.SlugField(help_text="Site code, e.g. SZ.")
    node_type = serializers.SlugField(help_text="Node type code.")
    count = serializers.IntegerField(min_value=1, max_value=1000)
    start = serializers.DateTimeField(help_text="ISO 8601 with offset.")
    end = serializers.DateTimeField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError({"end": _("The end must be after the start.")})
        return attrs


class AvailabilitySerializer(serializers.Serializer):
    site = serializers.CharField()
    node_type = serializers.CharField()
    requested = serializers.IntegerField()
    free = serializers.IntegerField()
    can_place = serializers.BooleanField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    earliest_start = serializers.DateTimeField(allow_null=True)
    leaves = serializers.DictField(child=serializers.IntegerField())


class ConfigurationSerializer(serializers.Serializer):
    """What an estimate or a firm quote is for (the configure page's fields)."""

    site = serializers.SlugField(max_length=8)
    node_type = serializers.SlugField(max_length=32)
    node_count = serializers.IntegerField(min_value=1, max_value=10_000)
    term = serializers.ChoiceField(choices=Term.choices)
    duration = serializers.IntegerField(
        min_value=1, max_value=max(h for _l, h in TERM_DURATION.values())
    )
    start_date = serializers.DateField()
    card_gpu_model_id = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    cards_per_node = serializers.IntegerField(required=False, default=0, min_value=0, max_value=16)
    addons = serializers.DictField(
        child=serializers.DecimalField(max_digits=10, decimal_places=2, min_value=0),
        required=False,
        default=dict,
        help_text="Add-on code → quantity.",
    )


class PricedLineSerializer(serializers.Serializer):
    kind = serializers.CharField()
    code = serializers.CharField()
    description = serializers.CharField()
    quantity = serializers.DecimalField(max_digits=12, decimal_places=2)
    unit = serializers.CharField()
    unit_price = money()
    periods = serializers.DecimalField(max_digits=10, decimal_places=4)
    period_unit = serializers.CharField()
    list_amount = money()
    net = money()
    vat = money()
    gross = money()
    tax_category = serializers.CharField()
    note = serializers.CharField()


class EstimateSerializer(serializers.Serializer):
    currency = serializers.CharField()
    term = serializers.CharField()
    duration = serializers.IntegerField()
    lines = PricedLineSerializer(many=True)
    list_total = money()
    discount_total = money()
    net_total = money()
    vat_total = money()
    gross_total = money()
    available = serializers.BooleanField()
    free_nodes = serializers.IntegerField()
    earliest_start = serializers.DateTimeField(allow_null=True)


class QuoteLineSerializer(serializers.ModelSerializer):
    unit_price = money()
    list_amount = money()
    net = money()
    vat = money()
    gross = money()

    class Meta:
        model = QuoteLine
        fields = [
            "kind",
            "code",
            "description",
            "quantity",
            "unit",
            "unit_price",
            "periods",
            "period_unit",
            "list_amount",
            "net",
            "vat",
            "gross",
            "tax_category",
        ]


class QuoteSerializer(serializers.ModelSerializer):
    site = serializers.CharField(source="site.code")
    status_label = serializers.CharField(source="get_status_display")
    list_total = money()
    net_total = money()
    vat_total = money()
    gross_total = money()
    lines = QuoteLineSerializer(many=True, read_only=True)
    order = serializers.SerializerMethodField()
    previous = serializers.SerializerMethodField()

    class Meta:
        model = Quote
        fields = [
            "id",
            "number",
            "version",
            "status",
            "status_label",
            "site",
            "currency",
            "term",
            "duration",
            "start_date",
            "valid_until",
            "expires_at",
            "list_total",
            "net_total",
            "vat_total",
            "gross_total",
            "lines",
            "placement",
            "sent_at",
            "decided_at",
            "order",
            "previous",
        ]

    def get_order(self, quote: Quote) -> str | None:
        order = getattr(quote, "order", None)
        return order.number if order is not None else None

    def get_previous(self, quote: Quote) -> int | None:
        return quote.previous_id


class QuoteDecisionSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="Who decides, as on the web page.")
    payment_method = serializers.ChoiceField(
        choices=["bank_transfer", "card"], required=False, default="bank_transfer"
    )
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class TimelineSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    from_status = serializers.CharField(source="from_label")
    to_status = serializers.CharField()
    to_label = serializers.CharField()
    who = serializers.CharField()
    comment = serializers.CharField()


class OrderSerializer(serializers.ModelSerializer):
    site = serializers.CharField(source="site.code")
    quote = serializers.CharField(source="quote.number")
    status_label = serializers.CharField(source="get_status_display")
    gross_total = money()

    class Meta:
        model = Order
        fields = [
            "number",
            "status",
            "status_label",
            "site",
            "quote",
            "currency",
            "gross_total",
            "start_at",
            "end_at",
            "payment_due_at",
            "paid_at",
            "created_at",
        ]


class StepSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    status = serializers.CharField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    message = serializers.CharField()


class NodeProgressSerializer(serializers.Serializer):
    hostname = serializers.CharField()
    state = serializers.CharField()
    percent = serializers.IntegerField()
    message = serializers.CharField()
    eta = serializers.DateTimeField(allow_null=True)
    steps = StepSerializer(many=True)


class OperationSerializer(serializers.Serializer):
    """Long work to poll: a provisioning run."""

    id = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    done = serializers.BooleanField()
    percent = serializers.IntegerField()
    eta = serializers.DateTimeField(allow_null=True)
    message = serializers.CharField()
    order = serializers.CharField()
    created_at = serializers.DateTimeField()
    nodes = NodeProgressSerializer(many=True)


class OrderDetailSerializer(OrderSerializer):
    timeline = TimelineSerializer(many=True, source="api_timeline")
    nodes = serializers.ListField(child=serializers.CharField(), source="api_nodes")
    provisioning = OperationSerializer(allow_null=True, source="api_operation")
    gate = serializers.DictField(source="api_gate")
    invoices = serializers.ListField(child=serializers.CharField(), source="api_invoices")

    class Meta(OrderSerializer.Meta):
        fields = [
            *OrderSerializer.Meta.fields,
            "timeline",
            "nodes",
            "provisioning",
            "gate",
            "invoices",
        ]


class AccessNodeSerializer(serializers.Serializer):
    hostname = serializers.CharField()
    user = serializers.CharField()
    addresses = serializers.ListField(child=serializers.CharField())
    ssh = serializers.CharField()


class AccessSerializer(serializers.Serializer):
    delivered = serializers.BooleanField()
    jump_host = serializers.CharField()
    nodes = AccessNodeSerializer(many=True)
    ssh_config = serializers.CharField()
    hostfile = serializers.CharField()


class OrderKeysSerializer(serializers.Serializer):
    ssh_key_ids = serializers.ListField(child=serializers.IntegerField(min_value=1), max_length=100)


class TermsAcceptSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)


# A document of an order (invoice, credit note, contract): the order's number and the
# address of the document's PDF in this API, ``/api/v1/<pdf_path>/<number>/pdf/``. (A
# comment, not a docstring: the schema would give it to each document as its description.)
class OrderDocumentSerializer(serializers.ModelSerializer):
    pdf_path: ClassVar[str]

    order = serializers.CharField(source="order.number")
    pdf_url = serializers.SerializerMethodField()

    def get_pdf_url(self, document: Invoice | CreditNote | Contract) -> str:
        return f"/api/v1/{self.pdf_path}/{document.number}/pdf/"


class InvoiceSerializer(OrderDocumentSerializer):
    pdf_path = "invoices"
    status_label = serializers.CharField(source="get_status_display")
    net_total = money()
    vat_total = money()
    gross_total = money()
    amount_paid = money()
    amount_due = money()

    class Meta:
        model = Invoice
        fields = [
            "number",
            "order",
            "status",
            "status_label",
            "currency",
            "net_total",
            "vat_total",
            "gross_total",
            "amount_paid",
            "amount_due",
            "issued_at",
            "due_at",
            "paid_at",
            "bank_reference",
            "period_seq",
            "period_start",
            "period_end",
            "pdf_url",
        ]


class CreditNoteSerializer(OrderDocumentSerializer):
    pdf_path = "credit-notes"
    invoice = serializers.CharField(source="invoice.number")
    gross_total = money()

    class Meta:
        model = CreditNote
        fields = [
            "number",
            "invoice",
            "order",
            "currency",
            "gross_total",
            "reason",
            "issued_at",
            "pdf_url",
        ]


class ContractSerializer(OrderDocumentSerializer):
    pdf_path = "contracts"
    status_label = serializers.CharField(source="get_status_display")
    signing_url = serializers.SerializerMethodField()

    class Meta:
        model = Contract
        fields = [
            "number",
            "order",
            "status",
            "status_label",
            "terms_version",
            "created_at",
            "signer_name",
            "signed_at",
            "countersigned_at",
            "signing_url",
            "pdf_url",
        ]

    def get_signing_url(self, contract: Contract) -> str:
        """The dashboard page where a member signs (with a one-time code by email)."""
        language = self.context.get("language", "en")
        return f"/{language}/account/orders/{contract.order.number}/contract/"


class BankTransferSerializer(serializers.Serializer):
    invoice = serializers.CharField()
    amount = money()
    currency = serializers.CharField()
    due_at = serializers.DateTimeField()
    reference = serializers.CharField()
    account_name = serializers.CharField()
    account_number = serializers.CharField()
    bank_name = serializers.CharField()
    swift_code = serializers.CharField()


class CardPaymentSerializer(serializers.Serializer):
    payment = serializers.IntegerField()
    client_secret = serializers.CharField()
    publishable_key = serializers.CharField()
    amount = money()
    currency = serializers.CharField()


class SshKeySerializer(serializers.ModelSerializer):
    class Meta:
        model = SshPublicKey
        fields = ["id", "name", "algorithm", "bits", "fingerprint", "public_key", "created_at"]
        read_only_fields = ["id", "algorithm", "bits", "fingerprint", "created_at"]
        extra_kwargs = {"name": {"required": False, "allow_blank": True}}


class WebhookEndpointSerializer(serializers.ModelSerializer):
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=list(EVENT_TYPES)), min_length=1
    )
    url = serializers.URLField(max_length=500)

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "description", "event_types", "active", "created_at"]
        read_only_fields = ["id", "active", "created_at"]


class WebhookEndpointSecretSerializer(WebhookEndpointSerializer):
    """The answer to creating (or rotating): the secret, shown this once."""

    secret = serializers.CharField(read_only=True)
    previous_secret_until = serializers.DateTimeField(read_only=True, allow_null=True)

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret", "previous_secret_until"]


class RotateSerializer(serializers.Serializer):
    overlap_hours = serializers.IntegerField(min_value=0, max_value=168, default=24)


class WebhookAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = ["status_code", "response_ms", "error", "created_at"]


class WebhookDeliverySerializer(serializers.ModelSerializer):
    event_id = serializers.CharField(source="event.event_id")
    event_type = serializers.CharField(source="event.type")
    endpoint = serializers.IntegerField(source="endpoint_id")
    attempt_log = WebhookAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "endpoint",
            "event_id",
            "event_type",
            "status",
            "attempts",
            "last_status_code",
            "last_response_ms",
            "last_error",
            "created_at",
            "delivered_at",
            "replay_of",
            "attempt_log",
        ]


class ApiKeySerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "scopes", "expires_at", "last_used_at", "created_at"]


class SizingQuery(serializers.Serializer):
    params_billion = serializers.DecimalField(
        max_digits=12, decimal_places=3, required=False, allow_null=True, min_value=0
    )
    arch = serializers.CharField(required=False, allow_blank=True, default="", max_length=64)
    mode = serializers.ChoiceField(choices=["train", "infer"], default="train")
    precision = serializers.CharField(default="bf16", max_length=8)
    optimizer = serializers.ChoiceField(
        choices=["adamw", "sgd", "adafactor", "adam8bit"], default="adamw"
    )
    zero_stage = serializers.IntegerField(default=0, min_value=0, max_value=3)
    seq_len = serializers.IntegerField(default=4096, min_value=1, max_value=1_048_576)
    micro_batch = serializers.IntegerField(default=1, min_value=1, max_value=4096)
    context = serializers.IntegerField(default=8192, min_value=1, max_value=1_048_576)
    concurrency = serializers.IntegerField(default=1, min_value=1, max_value=100_000)
    site = serializers.SlugField(required=False, max_length=8)


class DocumentPendingSerializer(serializers.Serializer):
    """A document render in progress: an operation to poll at ``poll`` (the same URL,
    which answers the PDF once it is stored)."""

    kind = serializers.CharField()
    status = serializers.CharField()
    done = serializers.BooleanField()
    retry_after = serializers.IntegerField()
    poll = serializers.CharField()


def paged(serializer: type[serializers.Serializer]) -> serializers.Serializer:
    """The schema of a cursor page of ``serializer`` (``{next, previous, results}``)."""
    name = serializer.__name__.removesuffix("Serializer")
    return inline_serializer(
        name=f"{name}Page",
        fields={
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer(many=True),
        },
    )


class RenewalSerializer(serializers.Serializer):
    """An order's renewal: the renewal quote holding the same nodes for this customer alone
    until it expires (first refusal), or the nearest placement, or why none was offered."""

    order = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["not_offered", "offered", "accepted", "declined", "expired", "unavailable"]
    )
    offered_from = serializers.DateTimeField(
        help_text="When the renewal is offered (before the order ends)."
    )
    quote = serializers.CharField(allow_null=True)
    quote_status = serializers.CharField(allow_null=True)
    first_refusal_until = serializers.DateTimeField(
        allow_null=True, help_text="Until when the offered nodes are held for you alone."
    )
    same_nodes = serializers.BooleanField()
    kept = serializers.ListField(child=serializers.CharField())
    replaced = serializers.ListField(child=serializers.CharField())
    offered = serializers.ListField(child=serializers.CharField())
    unavailable = serializers.CharField(help_text="Why no renewal could be offered.")
    auto_accepted = serializers.BooleanField()
    new_order = serializers.CharField(allow_null=True)
    gross_total = money(allow_null=True)
    currency = serializers.CharField(allow_null=True)
    start_at = serializers.DateTimeField(allow_null=True)
    end_at = serializers.DateTimeField(allow_null=True)


class ReplacementPolicySerializer(serializers.Serializer):
    mode = serializers.ChoiceField(
        choices=["automatic", "ask"],
        help_text="automatic: a failed node is replaced at once; ask: you approve first.",
    )
    ask_minutes = serializers.IntegerField(
        min_value=5,
        max_value=24 * 60,
        default=30,
        help_text="With ask: replace anyway when nobody answered within these minutes.",
    )
    updated_at = serializers.DateTimeField(read_only=True, allow_null=True)


class HealthEventStepSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    from_status = serializers.CharField()
    to_status = serializers.CharField()
    to_label = serializers.CharField()
    comment = serializers.CharField()


class HealthEventSerializer(serializers.Serializer):
    """A health rule that fired on one of the order's nodes and what followed."""

    id = serializers.IntegerField()
    order = serializers.CharField(allow_null=True)
    node = serializers.CharField()
    rule = serializers.CharField()
    title = serializers.CharField()
    source = serializers.CharField()
    action = serializers.CharField()
    status = serializers.CharField()
    status_label = serializers.CharField()
    evidence = serializers.CharField()
    metric = serializers.CharField()
    value = serializers.FloatField()
    gpu = serializers.CharField()
    observed_at = serializers.DateTimeField()
    detected_at = serializers.DateTimeField()
    decide_by = serializers.DateTimeField(allow_null=True)
    spare = serializers.CharField(allow_null=True)
    operation = serializers.CharField(allow_null=True, help_text="The replacement run to poll.")
    handed_over_at = serializers.DateTimeField(allow_null=True)
    events = HealthEventStepSerializer(many=True)


class MonitoringQuery(serializers.Serializer):
    metric = serializers.ChoiceField(choices=list(panel.METRICS), default="sm")
    range = serializers.ChoiceField(choices=list(panel.RANGES), default="hour")


class PointSerializer(serializers.Serializer):
    time = serializers.DateTimeField()
    value = serializers.FloatField()


class SeriesSerializer(serializers.Serializer):
    node = serializers.CharField()
    gpu = serializers.CharField()
    points = PointSerializer(many=True)


class MonitoringSerializer(serializers.Serializer):
    order = serializers.CharField()
    metric = serializers.CharField()
    title = serializers.CharField()
    unit = serializers.CharField()
    range = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    series = SeriesSerializer(many=True)


class GpuSerializer(serializers.Serializer):
    node = serializers.CharField()
    gpu = serializers.CharField()
    uuid = serializers.CharField()
    serial = serializers.CharField()
    model = serializers.CharField()


class DeliveryKitSerializer(serializers.Serializer):
    hostfile = serializers.CharField()
    nccl_env = serializers.CharField()
    guidance = serializers.ListField(child=serializers.CharField())
    topology_conf = serializers.CharField()
    k8s_labels = serializers.CharField()


class SignatureReportSerializer(serializers.Serializer):
    field = serializers.CharField()
    kind = serializers.CharField()
    signer = serializers.CharField()
    issuer = serializers.CharField()
    ours = serializers.BooleanField()
    intact = serializers.BooleanField()
    valid = serializers.BooleanField()
    trusted = serializers.BooleanField()
    docmdp_ok = serializers.BooleanField(allow_null=True)
    coverage = serializers.CharField()
    modification_level = serializers.CharField()
    signed_at = serializers.DateTimeField(allow_null=True)
    timestamp_at = serializers.DateTimeField(allow_null=True)
    timestamp_trusted = serializers.BooleanField()


class ContractVerificationSerializer(serializers.Serializer):
    contract = serializers.CharField()
    document = serializers.CharField(help_text="sealed, customer_signed or none.")
    sha256 = serializers.CharField()
    status = serializers.ChoiceField(choices=["valid", "modified", "unknown"])
    signer = serializers.CharField()
    signed_at = serializers.DateTimeField(allow_null=True)
    detail = serializers.CharField()
    audit_chain_intact = serializers.BooleanField()
    signatures = SignatureReportSerializer(many=True)


class EventTypeSerializer(serializers.Serializer):
    type = serializers.CharField()
    description = serializers.CharField()
    payload_schema = serializers.CharField(
        help_text="The delivery body's schema in this API's OpenAPI document (its `webhooks` "
        "hold the same, with an example)."
    )


class TicketOpenSerializer(serializers.Serializer):
    """A new ticket, about the organisation, an order, one of its nodes, or a GPU by the
    serial its node reports (the order and node are then found from it)."""

    subject = serializers.CharField(max_length=200)
    body = serializers.CharField(max_length=20_000, help_text="What happened.")
    category = serializers.ChoiceField(choices=TicketCategory.choices, default="other")
    priority = serializers.ChoiceField(choices=TicketPriority.choices, default="normal")
    order = serializers.CharField(required=False, allow_blank=True, max_length=32)
    node = serializers.CharField(required=False, allow_blank=True, max_length=64)
    gpu_serial = serializers.CharField(required=False, allow_blank=True, max_length=64)


class TicketReplySerializer(serializers.Serializer):
    body = serializers.CharField(max_length=20_000)


class ClockSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["response", "resolution"])
    state = serializers.ChoiceField(choices=["running", "paused", "met", "missed"])
    due = serializers.DateTimeField()
    stopped_at = serializers.DateTimeField(allow_null=True)
    minutes_left = serializers.IntegerField()


class TicketMessageSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    from_support = serializers.BooleanField()
    author = serializers.CharField()
    via = serializers.CharField()
    body = serializers.CharField()
    created_at = serializers.DateTimeField()


class TicketSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reference = serializers.CharField()
    subject = serializers.CharField()
    category = serializers.CharField()
    category_label = serializers.CharField()
    priority = serializers.CharField()
    priority_label = serializers.CharField()
    status = serializers.CharField()
    status_label = serializers.CharField()
    tier = serializers.CharField()
    source = serializers.CharField()
    order = serializers.CharField(allow_null=True)
    node = serializers.CharField(allow_null=True)
    gpu_serial = serializers.CharField()
    gpu_index = serializers.CharField()
    created_at = serializers.DateTimeField()
    first_response_at = serializers.DateTimeField(allow_null=True)
    resolved_at = serializers.DateTimeField(allow_null=True)
    clocks = ClockSerializer(many=True)


class TicketDetailSerializer(TicketSerializer):
    messages = TicketMessageSerializer(many=True)
    history = TimelineSerializer(many=True)
