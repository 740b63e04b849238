"""SLA credits: computed once per order, node and calendar month, applied as a negative
line on the order's next invoice (or a credit note when none follows).
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from billing.models.invoices import CreditNote, InvoiceLine
from billing.models.orders import Order
from core.money import money_field

__all__ = [
    "SlaCredit",
]


class SlaCredit(models.Model):
    """An SLA credit for one node of an order in one billing period (computed once)."""

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="sla_credits", verbose_name=_("order")
    )
    node_ref = models.CharField(_("node"), max_length=100)
    # The billing period whose invoice the month's charge belongs to (where it starts).
    period_seq = models.PositiveSmallIntegerField(_("billing period"))
    # The calendar month measured (its first day, site time); ``None`` on credits computed
    # per billing period before the SLA was measured monthly.
    month = models.DateField(_("month"), null=True, blank=True)
    # What was measured: the month in the site's zone, clipped to the order's term.
    period_start = models.DateTimeField(verbose_name=_("measured from"))
    period_end = models.DateTimeField(verbose_name=_("measured until"))
    # Shown truncated (never rounded up into a better tier); the tier uses the exact value.
    availability = models.DecimalField(_("availability %"), max_digits=7, decimal_places=3)
    credit_percent = models.DecimalField(_("credit %"), max_digits=5, decimal_places=2)
    node_charge = money_field(_("node's charge for the month (net)"))
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
        ordering = ["order", "month", "period_seq", "node_ref"]
        verbose_name = _("SLA credit")
        verbose_name_plural = _("SLA credits")
        constraints = [
            models.UniqueConstraint(
                fields=["order", "node_ref", "period_seq"],
                condition=models.Q(month__isnull=True),
                name="slacredit_unique_node_period",
            ),
            models.UniqueConstraint(
                fields=["order", "node_ref", "month"],
                condition=models.Q(month__isnull=False),
                name="slacredit_unique_node_month",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.order_id} {self.node_ref} #{self.period_seq}: {self.amount}"
