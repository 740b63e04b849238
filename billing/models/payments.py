"""Payments (card through Stripe, or bank transfer) and their lifecycle events, the Stripe
webhook events received, and refunds given back on a payment (gapless numbers
``R-SZ-2026-000001``).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from billing.models.invoices import Invoice, PaymentMethod
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent
from core.money import money_field
from inventory.models import Currency

__all__ = [
    "PAYMENT_TRANSITIONS",
    "Payment",
    "PaymentEvent",
    "PaymentStatus",
    "Refund",
    "StripeEvent",
    "StripeEventStatus",
]


class PaymentStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    REFUNDED = "refunded", _("refunded")


# A bank transfer is recorded succeeded; a card payment starts pending. A failed card
# payment is retried on the same PaymentIntent (back to pending) or succeeds late at
# Stripe; only a succeeded payment is refunded, and "refunded" means in full (a partial
# refund only raises ``amount_refunded``).
PAYMENT_TRANSITIONS: dict[str, frozenset[str]] = {
    PaymentStatus.PENDING: frozenset({PaymentStatus.SUCCEEDED, PaymentStatus.FAILED}),
    PaymentStatus.FAILED: frozenset({PaymentStatus.PENDING, PaymentStatus.SUCCEEDED}),
    PaymentStatus.SUCCEEDED: frozenset({PaymentStatus.REFUNDED}),
    PaymentStatus.REFUNDED: frozenset(),
}


def _describe(payment: Payment) -> str:
    return gettext("Payment %(pi)s") % {"pi": payment.stripe_payment_intent or payment.pk}


class Payment(models.Model):
    """One attempt to pay an invoice: a Stripe PaymentIntent or a bank transfer."""

    invoice = models.ForeignKey(
        Invoice, on_delete=models.PROTECT, related_name="payments", verbose_name=_("invoice")
    )
    method = models.CharField(_("method"), max_length=16, choices=PaymentMethod.choices)
    status = models.CharField(
        _("status"), max_length=12, choices=PaymentStatus.choices, default=PaymentStatus.PENDING
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    amount = money_field(_("amount"))
    amount_refunded = money_field(_("refunded"), default=Decimal("0"))
    stripe_payment_intent = models.CharField(
        max_length=255, null=True, blank=True, unique=True, verbose_name=_("Stripe payment intent")
    )
    reference = models.CharField(_("reference"), max_length=100, blank=True)
    # The day the money reached the account (bank transfers: the statement's value date).
    value_date = models.DateField(_("value date"), null=True, blank=True)
    # The receipt email went out, once.
    receipt_emailed_at = models.DateTimeField(_("receipt emailed"), null=True, blank=True)
    failure_message = models.TextField(_("failure"), blank=True)
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    succeeded_at = models.DateTimeField(null=True, blank=True, verbose_name=_("succeeded at"))
    provider_succeeded_at = models.DateTimeField(
        _("succeeded at the provider"),
        null=True,
        blank=True,
        help_text=_(
            "When Stripe says the payment succeeded (its charge or event time): of several "
            "payments of one invoice, the first to succeed pays it."
        ),
    )
    duplicate_of = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="duplicates",
        verbose_name=_("duplicate of"),
        help_text=_("Set when another payment paid the invoice first: refund this one."),
    )
    duplicate_refund = models.CharField(
        _("duplicate refunded"),
        max_length=255,
        blank=True,
        help_text=_("The Stripe refund of this duplicate, made once from the back office."),
    )

    lifecycle = Lifecycle(
        choices=PaymentStatus,
        transitions=PAYMENT_TRANSITIONS,
        event_model="billing.PaymentEvent",
        subject_field="payment",
        describe=_describe,
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("payment")
        verbose_name_plural = _("payments")

    def __str__(self) -> str:
        return f"{self.invoice_id} {self.method} {self.amount} {self.status}"


class PaymentEvent(LifecycleEvent):
    payment = models.ForeignKey(
        Payment, on_delete=models.CASCADE, related_name="events", verbose_name=_("payment")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("payment event")
        verbose_name_plural = _("payment events")

    def __str__(self) -> str:
        return f"{self.payment_id}: {self.from_label()} → {self.to_label()}"


class StripeEventStatus(models.TextChoices):
    RECEIVED = "received", _("received")
    PROCESSED = "processed", _("processed")
    IGNORED = "ignored", _("ignored")
    FLAGGED = "flagged", _("flagged")
    FAILED = "failed", _("failed")


class StripeEvent(models.Model):
    """Every verified webhook event, stored once by its Stripe id."""

    stripe_id = models.CharField(max_length=255, unique=True, verbose_name=_("Stripe event ID"))
    type = models.CharField(max_length=100, verbose_name=_("type"))
    payload = models.JSONField(verbose_name=_("payload"))
    status = models.CharField(
        max_length=12,
        choices=StripeEventStatus.choices,
        default=StripeEventStatus.RECEIVED,
        verbose_name=_("status"),
    )
    error = models.TextField(blank=True, verbose_name=_("error"))
    received_at = models.DateTimeField(auto_now_add=True, verbose_name=_("received at"))
    processed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("processed at"))

    class Meta:
        ordering = ["-received_at", "-pk"]
        verbose_name = _("Stripe event")
        verbose_name_plural = _("Stripe events")

    def __str__(self) -> str:
        return f"{self.stripe_id} {self.type} {self.status}"


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
