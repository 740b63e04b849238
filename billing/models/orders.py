"""Orders (an accepted quote) and their lifecycle events."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation, SshPublicKey
from billing.models.quotes import Quote
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent
from core.money import money_field
from inventory.models import Currency, ImageProfile, Site

__all__ = [
    "ORDER_IN_SERVICE_STATUSES",
    "ORDER_PAID_STATUSES",
    "ORDER_TRANSITIONS",
    "Order",
    "OrderEvent",
    "OrderStatus",
]


# --- Orders -----------------------------------------------------------------------------


class OrderStatus(models.TextChoices):
    AWAITING_PAYMENT = "awaiting_payment", _("awaiting payment")
    PAID = "paid", _("paid")
    PROVISIONING = "provisioning", _("provisioning")
    VALIDATING = "validating", _("validating")
    READY = "ready", _("ready")
    EXPIRED = "expired", _("expired")
    CANCELLED = "cancelled", _("cancelled")
    ENDED = "ended", _("ended")


ORDER_TRANSITIONS: dict[str, frozenset[str]] = {
    OrderStatus.AWAITING_PAYMENT: frozenset(
        {OrderStatus.PAID, OrderStatus.EXPIRED, OrderStatus.CANCELLED}
    ),
    OrderStatus.PAID: frozenset({OrderStatus.PROVISIONING, OrderStatus.CANCELLED}),
    OrderStatus.PROVISIONING: frozenset({OrderStatus.VALIDATING, OrderStatus.CANCELLED}),
    OrderStatus.VALIDATING: frozenset(
        {OrderStatus.READY, OrderStatus.PROVISIONING, OrderStatus.CANCELLED}
    ),
    OrderStatus.READY: frozenset({OrderStatus.ENDED}),
    OrderStatus.EXPIRED: frozenset(),
    OrderStatus.CANCELLED: frozenset(),
    OrderStatus.ENDED: frozenset(),
}
# An order that was paid: it stays paid once its rental has ended.
ORDER_PAID_STATUSES = (
    OrderStatus.PAID,
    OrderStatus.PROVISIONING,
    OrderStatus.VALIDATING,
    OrderStatus.READY,
    OrderStatus.ENDED,
)
# Paid and not ended: the rental is (or is about to be) in service.
ORDER_IN_SERVICE_STATUSES = tuple(s for s in ORDER_PAID_STATUSES if s != OrderStatus.ENDED)


class Order(models.Model):
    number = models.CharField(_("number"), max_length=32, unique=True)
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="orders", verbose_name=_("customer")
    )
    quote = models.OneToOneField(
        Quote, on_delete=models.PROTECT, related_name="order", verbose_name=_("quote")
    )
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="orders", verbose_name=_("site")
    )
    status = models.CharField(
        _("status"),
        max_length=20,
        choices=OrderStatus.choices,
        default=OrderStatus.AWAITING_PAYMENT,
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    gross_total = money_field(_("total"))
    start_at = models.DateTimeField(_("starts"))
    end_at = models.DateTimeField(_("ends"))
    reservation_group = models.UUIDField(_("booking"), null=True, blank=True)
    payment_due_at = models.DateTimeField(
        _("pay by"), null=True, blank=True, help_text=_("Unpaid by then, the order expires.")
    )
    idempotency_key = models.CharField(
        _("idempotency key"),
        max_length=64,
        blank=True,
        default="",
        help_text=_("The configure form's key: accepting the same form twice finds this order."),
    )
    paid_at = models.DateTimeField(_("paid"), null=True, blank=True)
    image_profile = models.ForeignKey(
        ImageProfile,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="orders",
        verbose_name=_("OS image"),
    )
    ssh_keys = models.ManyToManyField(
        SshPublicKey, blank=True, related_name="orders", verbose_name=_("SSH keys")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    lifecycle = Lifecycle(
        choices=OrderStatus,
        transitions=ORDER_TRANSITIONS,
        event_model="billing.OrderEvent",
        subject_field="order",
        describe=lambda o: gettext("Order %(number)s") % {"number": o.number},
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "payment_due_at"], name="order_due_idx")]
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="order_unique_idempotency_key",
            )
        ]

    def __str__(self) -> str:
        return self.number


class OrderEvent(LifecycleEvent):
    order = models.ForeignKey(
        Order, on_delete=models.CASCADE, related_name="events", verbose_name=_("order")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("order event")
        verbose_name_plural = _("order events")

    def __str__(self) -> str:
        return f"{self.order_id}: {self.from_label()} → {self.to_label()}"
