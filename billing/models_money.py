"""Money over the term: invoice lines, credit notes (红字), refunds, metered usage and
automatic SLA credits.

Imported at the end of ``billing/models.py`` (Django sees these models as ``billing.*``).

- ``InvoiceLine``: what an issued document charges, line by line, each with its tax
  category and rate: the period's share of the quote's lines (``billing.schedule``),
  metered usage billed in arrears, and SLA credits (negative).
- ``CreditNote``: a negative document (红字) that corrects an issued invoice; gapless
  numbers of its own per site and year (``CN-SZ-2026-000001``).
- ``Refund``: money given back on a payment (through Stripe for a card payment, recorded
  by staff for a bank transfer); gapless numbers (``R-SZ-2026-000001``).
- ``UsageRecord``: metered usage (egress traffic) of an order, imported by CSV or the
  API, idempotent by the sender's external id.
- ``SlaCredit``: an SLA credit computed once per order, node and billing period, applied
  as a negative line on the order's next invoice (or a credit note when none follows).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation
from billing.models import Invoice, Order, Payment, TaxCategory, fraction_field
from core.models import StoredDocument
from core.money import money_field
from inventory.models import Currency

__all__ = [
    "CreditNote",
    "CreditNoteDocument",
    "InvoiceLine",
    "InvoiceLineKind",
    "Refund",
    "SlaCredit",
    "UsageMetric",
    "UsageRecord",
]


class InvoiceLineKind(models.TextChoices):
    CHARGE = "charge", _("period charge")
    USAGE = "usage", _("metered usage")
    CREDIT = "credit", _("SLA credit")


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


class Refund(models.Model):
    """Money given back on a payment; ``amount`` > 0."""

    number = models.CharField(_("number"), max_length=32, unique=True)
    payment = models.ForeignKey(
        Payment, on_delete=models.PROTECT, related_name="refunds", verbose_name=_("payment")
    )
    invoice = models.ForeignKey(
        Invoice, on_delete=models.PROTECT, related_name="refunds", verbose_name=_("invoice")
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    amount = money_field(_("amount"), validators=[MinValueValidator(Decimal("0.01"))])
    reason = models.TextField(_("reason"), blank=True)
    reference = models.CharField(_("reference"), max_length=255, blank=True)
    stripe_refund = models.CharField(
        max_length=255, null=True, blank=True, unique=True, verbose_name=_("Stripe refund")
    )
    created_at = models.DateTimeField(_("refunded"), default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("refund")
        verbose_name_plural = _("refunds")
        constraints = [models.CheckConstraint(condition=Q(amount__gt=0), name="refund_positive")]

    def __str__(self) -> str:
        return self.number


class UsageMetric(models.TextChoices):
    EGRESS_TB = "egress_tb", _("internet egress traffic (TB)")


class UsageRecord(models.Model):
    """Metered usage of an order on one day (site time), in the metric's unit."""

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="usage_records", verbose_name=_("order")
    )
    metric = models.CharField(_("metric"), max_length=16, choices=UsageMetric.choices)
    day = models.DateField(_("day"))
    quantity = models.DecimalField(
        _("quantity"), max_digits=14, decimal_places=3, validators=[MinValueValidator(0)]
    )
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
        constraints = [
            models.UniqueConstraint(fields=["order", "external_id"], name="usage_unique_external"),
            models.CheckConstraint(condition=Q(quantity__gte=0), name="usage_quantity_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.order_id} {self.day} {self.metric} {self.quantity}"


class SlaCredit(models.Model):
    """An SLA credit for one node of an order in one billing period (computed once)."""

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="sla_credits", verbose_name=_("order")
    )
    node_ref = models.CharField(_("node"), max_length=100)
    period_seq = models.PositiveSmallIntegerField(_("billing period"))
    period_start = models.DateTimeField(verbose_name=_("period starts"))
    period_end = models.DateTimeField(verbose_name=_("period ends"))
    availability = models.DecimalField(_("availability %"), max_digits=7, decimal_places=3)
    credit_percent = models.DecimalField(_("credit %"), max_digits=5, decimal_places=2)
    node_charge = money_field(_("node's period charge (net)"))
    amount = money_field(_("credit (net)"))
    explanation = models.TextField(_("explanation"))
    evidence = models.JSONField(_("evidence"), default=dict)
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    invoice_line = models.OneToOneField(
        InvoiceLine,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sla_credit",
        verbose_name=_("invoice line"),
    )
    credit_note = models.ForeignKey(
        CreditNote,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sla_credits",
        verbose_name=_("credit note"),
    )

    class Meta:
        ordering = ["order", "period_seq", "node_ref"]
        verbose_name = _("SLA credit")
        verbose_name_plural = _("SLA credits")
        constraints = [
            models.UniqueConstraint(
                fields=["order", "node_ref", "period_seq"], name="slacredit_unique_node_period"
            )
        ]

    def __str__(self) -> str:
        return f"{self.order_id} {self.node_ref} #{self.period_seq}: {self.amount}"
