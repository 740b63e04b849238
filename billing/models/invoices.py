"""Invoices over the term: the invoice, its lines (each with its tax category and rate),
its events and stored documents, credit notes (红字) with their documents, and metered
usage billed in arrears.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation
from billing.models.orders import Order
from billing.models.pricebooks import TaxCategory, fraction_field
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent, StoredDocument
from core.money import money_field
from inventory.models import Currency

__all__ = [
    "INVOICE_TRANSITIONS",
    "CreditApplication",
    "CreditNote",
    "CreditNoteDocument",
    "CreditNoteRequest",
    "CreditNoteRequestStatus",
    "Invoice",
    "InvoiceDocument",
    "InvoiceEvent",
    "InvoiceLine",
    "InvoiceLineKind",
    "InvoiceStatus",
    "PaymentMethod",
    "UsageMetric",
    "UsageRecord",
]


# --- Invoices and payments --------------------------------------------------------------


class InvoiceStatus(models.TextChoices):
    ISSUED = "issued", _("issued")
    PAID = "paid", _("paid")
    VOID = "void", _("void")


# An issued invoice is paid or voided (its order lapsed or was cancelled); both are final.
INVOICE_TRANSITIONS: dict[str, frozenset[str]] = {
    InvoiceStatus.ISSUED: frozenset({InvoiceStatus.PAID, InvoiceStatus.VOID}),
    InvoiceStatus.PAID: frozenset(),
    InvoiceStatus.VOID: frozenset(),
}


class PaymentMethod(models.TextChoices):
    CARD = "card", _("card")
    ALIPAY = "alipay", _("Alipay")
    WECHAT_PAY = "wechat_pay", _("WeChat Pay")
    BANK_TRANSFER = "bank_transfer", _("bank transfer")


class Invoice(models.Model):
    """What the customer pays: the order's first invoice carries the quote's totals."""

    number = models.CharField(_("number"), max_length=32, unique=True)
    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="invoices", verbose_name=_("order")
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="invoices", verbose_name=_("customer")
    )
    status = models.CharField(
        _("status"), max_length=8, choices=InvoiceStatus.choices, default=InvoiceStatus.ISSUED
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    net_total = money_field(_("net"))
    vat_total = money_field(_("VAT"))
    gross_total = money_field(_("total"))
    issued_at = models.DateTimeField(_("issued"), default=timezone.now)
    due_at = models.DateTimeField(_("due"))
    bank_reference = models.CharField(
        _("transfer reference"),
        max_length=32,
        unique=True,
        help_text=_("The customer writes this on the bank transfer."),
    )
    paid_at = models.DateTimeField(_("paid"), null=True, blank=True)
    paid_reference = models.CharField(_("payment reference"), max_length=100, blank=True)
    marked_paid_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("marked paid by"),
    )
    # The billing period this document charges (``billing.pricing.schedule``); ``None`` for a
    # document outside the schedule (metered usage after the term, legacy invoices).
    period_seq = models.PositiveSmallIntegerField(_("billing period"), null=True, blank=True)
    period_start = models.DateTimeField(_("period starts"), null=True, blank=True)
    period_end = models.DateTimeField(_("period ends"), null=True, blank=True)
    # Partial payments: the invoice stays issued until paid and credited reach the total.
    amount_paid = money_field(_("paid so far"), default=Decimal("0"))
    # Credit notes applied to this invoice: its own, and the customer's credit balance
    # (``CreditApplication``); they lower what is due.
    amount_credited = money_field(_("credited"), default=Decimal("0"))
    # The customer's fapiao request as it was when the document was issued (for finance).
    fapiao = models.JSONField(_("fapiao request"), default=dict, blank=True)
    # The "invoice issued" email (with the PDF and bank details) went out, once.
    issued_emailed_at = models.DateTimeField(_("issue emailed"), null=True, blank=True)
    # A late-fee document (contract §10): the overdue document whose late fee it charges,
    # once it was paid (at most one late-fee document per overdue document).
    late_fee_for = models.OneToOneField(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="late_fee_invoice",
        verbose_name=_("late fee for"),
    )

    lifecycle = Lifecycle(
        choices=InvoiceStatus,
        transitions=INVOICE_TRANSITIONS,
        event_model="billing.InvoiceEvent",
        subject_field="invoice",
        describe=lambda i: gettext("Invoice %(number)s") % {"number": i.number},
    )

    class Meta:
        ordering = ["-issued_at", "-pk"]
        verbose_name = _("invoice")
        verbose_name_plural = _("invoices")
        constraints = [
            models.UniqueConstraint(
                fields=["order", "period_seq"],
                condition=Q(period_seq__isnull=False),
                name="invoice_unique_order_period",
            )
        ]

    def __str__(self) -> str:
        return self.number

    @property
    def amount_due(self) -> Decimal:
        """What is still to pay (0 once paid in full, or void): the total less payments
        and applied credits."""
        if self.status != InvoiceStatus.ISSUED:
            return Decimal("0")
        return max(self.gross_total - self.amount_paid - self.amount_credited, Decimal("0"))


class InvoiceEvent(LifecycleEvent):
    invoice = models.ForeignKey(
        Invoice, on_delete=models.CASCADE, related_name="events", verbose_name=_("invoice")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("invoice event")
        verbose_name_plural = _("invoice events")

    def __str__(self) -> str:
        return f"{self.invoice_id}: {self.from_label()} → {self.to_label()}"


class InvoiceDocument(StoredDocument):
    """A rendered invoice PDF, stored once per invoice and language, with its SHA-256."""

    invoice = models.ForeignKey(
        Invoice, on_delete=models.CASCADE, related_name="documents", verbose_name=_("invoice")
    )
    file = models.FileField(upload_to="invoices/%Y/", verbose_name=_("file"))

    class Meta:
        verbose_name = _("invoice document")
        verbose_name_plural = _("invoice documents")
        constraints = [
            models.UniqueConstraint(fields=["invoice", "language"], name="invoicedoc_unique")
        ]

    def __str__(self) -> str:
        return f"{self.invoice} [{self.language}] {self.sha256[:12]}"


class InvoiceLineKind(models.TextChoices):
    CHARGE = "charge", _("period charge")
    USAGE = "usage", _("metered usage")
    CREDIT = "credit", _("SLA credit")
    LATE_FEE = "late_fee", _("late fee")


class InvoiceLine(models.Model):
    invoice = models.ForeignKey(
        Invoice, on_delete=models.CASCADE, related_name="lines", verbose_name=_("invoice")
    )
    position = models.PositiveSmallIntegerField(verbose_name=_("position"))
    kind = models.CharField(max_length=8, choices=InvoiceLineKind.choices, verbose_name=_("kind"))
    code = models.CharField(max_length=64, verbose_name=_("code"))
    description = models.CharField(max_length=300, verbose_name=_("description"))
    description_zh = models.CharField(
        max_length=300, blank=True, verbose_name=_("description (Chinese)")
    )
    quantity = models.DecimalField(
        max_digits=14, decimal_places=3, default=Decimal("1"), verbose_name=_("quantity")
    )
    unit = models.CharField(max_length=16, blank=True, verbose_name=_("unit"))
    unit_price = money_field(_("unit price"), null=True, blank=True)
    # How many periods (months, days) of the unit this invoice charges: quantity × periods
    # × unit price = list amount; list amount − discount = net (数量 × 单价 = 金额).
    periods = models.DecimalField(
        max_digits=10, decimal_places=4, default=Decimal("1"), verbose_name=_("periods")
    )
    period_unit = models.CharField(max_length=8, blank=True, verbose_name=_("period unit"))
    list_amount = money_field(_("list"), null=True, blank=True)
    discount = money_field(_("discount"), default=Decimal("0"))
    net = money_field(_("net"))
    vat = money_field(_("VAT"))
    vat_rate = fraction_field(_("VAT rate"), default=Decimal("0"))
    tax_category = models.CharField(
        _("tax category"), max_length=16, choices=TaxCategory.choices, default="it_service"
    )
    # Explanation and evidence (SLA credits: the downtime intervals and their sources).
    detail = models.JSONField(default=dict, blank=True, verbose_name=_("detail"))

    class Meta:
        verbose_name = _("invoice line")
        verbose_name_plural = _("invoice lines")
        ordering = ["invoice", "position"]
        constraints = [
            models.UniqueConstraint(fields=["invoice", "position"], name="invoiceline_unique_pos")
        ]

    def __str__(self) -> str:
        return f"{self.description}: {self.net}"

    def localized_description(self, language: str | None = None) -> str:
        language = language or translation.get_language() or "en"
        if language.startswith("zh") and self.description_zh:
            return self.description_zh
        return self.description


class CreditNote(models.Model):
    """A negative payment document (红字) correcting ``invoice``; its amounts are ≤ 0."""

    number = models.CharField(_("number"), max_length=32, unique=True)
    invoice = models.ForeignKey(
        Invoice, on_delete=models.PROTECT, related_name="credit_notes", verbose_name=_("invoice")
    )
    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="credit_notes", verbose_name=_("order")
    )
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.PROTECT,
        related_name="credit_notes",
        verbose_name=_("customer"),
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    net_total = money_field(_("net"))
    vat_total = money_field(_("VAT"))
    gross_total = money_field(_("total"))
    reason = models.TextField(_("reason"))
    # [{description, description_zh, net, vat, vat_rate, tax_category, detail}] as strings.
    lines = models.JSONField(default=list, verbose_name=_("lines"))
    fapiao = models.JSONField(_("fapiao request"), default=dict, blank=True)
    issued_at = models.DateTimeField(_("issued"), default=timezone.now)
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("issued by"),
    )

    class Meta:
        ordering = ["-issued_at", "-pk"]
        verbose_name = _("credit note")
        verbose_name_plural = _("credit notes")
        constraints = [
            models.CheckConstraint(condition=Q(gross_total__lt=0), name="creditnote_negative")
        ]

    def __str__(self) -> str:
        return self.number


class CreditApplication(models.Model):
    """Part of a credit note applied to an invoice: its own (while open) or a later one
    from the customer's credit balance. What a credit note has not applied yet is the
    customer's balance in its currency (``billing.credits.selectors.credit_balance``)."""

    credit_note = models.ForeignKey(
        CreditNote,
        on_delete=models.PROTECT,
        related_name="applications",
        verbose_name=_("credit note"),
    )
    invoice = models.ForeignKey(
        Invoice,
        on_delete=models.PROTECT,
        related_name="credit_applications",
        verbose_name=_("invoice"),
    )
    amount = money_field(_("amount"))
    applied_at = models.DateTimeField(_("applied"), default=timezone.now)

    class Meta:
        ordering = ["applied_at", "pk"]
        verbose_name = _("credit applied")
        verbose_name_plural = _("credits applied")
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="creditapplication_positive")
        ]

    def __str__(self) -> str:
        return f"{self.credit_note_id} → {self.invoice_id}: {self.amount}"


class CreditNoteRequestStatus(models.TextChoices):
    PENDING = "pending", _("waiting for approval")
    APPROVED = "approved", _("approved and issued")
    REJECTED = "rejected", _("rejected")


class CreditNoteRequest(models.Model):
    """A credit note above ``PORTAL_CREDIT_NOTE_APPROVAL_ABOVE``: it waits for a second
    finance approval (someone other than who asked) before it is issued with a number."""

    invoice = models.ForeignKey(
        Invoice,
        on_delete=models.PROTECT,
        related_name="credit_note_requests",
        verbose_name=_("invoice"),
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    gross_total = money_field(_("total credited"))
    reason = models.TextField(_("reason"))
    # The lines as ``billing.credits.services.CreditLine`` fields (amounts as strings).
    lines = models.JSONField(default=list, verbose_name=_("lines"))
    status = models.CharField(
        _("status"),
        max_length=8,
        choices=CreditNoteRequestStatus.choices,
        default=CreditNoteRequestStatus.PENDING,
    )
    requested_at = models.DateTimeField(_("requested"), default=timezone.now)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("requested by"),
    )
    decided_at = models.DateTimeField(_("decided"), null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("decided by"),
    )
    credit_note = models.OneToOneField(
        CreditNote,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="request",
        verbose_name=_("credit note"),
    )

    class Meta:
        ordering = ["-requested_at", "-pk"]
        verbose_name = _("credit note awaiting approval")
        verbose_name_plural = _("credit notes awaiting approval")
        permissions = [("approve_creditnoterequest", _("Can approve large credit notes"))]

    def __str__(self) -> str:
        return f"{self.invoice_id}: {self.gross_total} {self.currency} ({self.status})"


class CreditNoteDocument(StoredDocument):
    credit_note = models.ForeignKey(
        CreditNote,
        on_delete=models.CASCADE,
        related_name="documents",
        verbose_name=_("credit note"),
    )
    file = models.FileField(upload_to="credit_notes/%Y/", verbose_name=_("file"))

    class Meta:
        verbose_name = _("credit note PDF")
        verbose_name_plural = _("credit note PDFs")
        constraints = [
            models.UniqueConstraint(fields=["credit_note", "language"], name="creditnotedoc_unique")
        ]

    def __str__(self) -> str:
        return f"{self.credit_note} [{self.language}] {self.sha256[:12]}"


class UsageMetric(models.TextChoices):
    EGRESS_TB = "egress_tb", _("internet egress traffic (TB)")


class UsageRecord(models.Model):
    """Metered usage of an order on one day (site time), in the metric's unit.

    Records never change. A wrong one is voided by a voiding record (``voids``, with a
    ``void_reason``): the same order, metric and day with the opposite quantity, so the
    next invoice bills the difference (``billing.invoicing.usage.usage_record_void``)."""

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="usage_records", verbose_name=_("order")
    )
    metric = models.CharField(_("metric"), max_length=16, choices=UsageMetric.choices)
    day = models.DateField(_("day"))
    # Negative only on a voiding record (the constraint below).
    quantity = models.DecimalField(_("quantity"), max_digits=14, decimal_places=3)
    external_id = models.CharField(_("external id"), max_length=100)
    source = models.CharField(_("source"), max_length=16)  # "csv" | "api"
    node_hostname = models.CharField(_("node"), max_length=100, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True, verbose_name=_("recorded"))
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("recorded by"),
    )
    voids = models.OneToOneField(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="voided_by",
        verbose_name=_("voids"),
    )
    void_reason = models.TextField(_("reason for voiding"), blank=True)
    invoice = models.ForeignKey(
        Invoice,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="usage_records",
        verbose_name=_("invoice"),
    )

    class Meta:
        ordering = ["order", "day", "pk"]
        verbose_name = _("usage record")
        verbose_name_plural = _("usage records")
        # The one permission for every way usage is recorded or voided: the admin's
        # import, the API's staff session and the void action.
        permissions = [("record_usage", _("Can post, import and void usage records"))]
        constraints = [
            models.UniqueConstraint(fields=["order", "external_id"], name="usage_unique_external"),
            models.CheckConstraint(
                condition=Q(voids__isnull=True, quantity__gte=0)
                | Q(voids__isnull=False, quantity__lte=0),
                name="usage_quantity_positive",
            ),
            models.CheckConstraint(
                condition=Q(voids__isnull=True) | ~Q(void_reason=""),
                name="usage_void_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.order_id} {self.day} {self.metric} {self.quantity}"
