"""Dunning (after Kill Bill's overdue states) and renewals.

Re-exported by ``billing.models`` (Django sees these models as ``billing.*``).

- ``DunningPolicy`` and its ``DunningStep`` rows are the policy as data (admin-editable):
  reminders at day offsets from an invoice's due date (−7, −3, 0, +3), then one
  suspension step after the grace period. Reminders on or after the due date announce
  the suspension date.
- ``DunningNotice``: one row per (invoice, step) once the step is done (sent, or skipped
  because a later step was already due); the unique constraint makes the beat job safe to
  run twice.
- ``Suspension``: the order whose invoice is unpaid is suspended (its nodes powered off,
  nothing deleted) and resumed on payment; a lifecycle with events. One per invoice, and
  at most one open per order.
- ``Renewal``: one per order, made N days before it ends: the renewal quote, the nodes
  kept (held for the customer) and those that change.
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from billing.models.invoices import Invoice
from billing.models.orders import Order
from billing.models.quotes import Quote
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent

__all__ = [
    "SUSPENSION_TRANSITIONS",
    "DunningAction",
    "DunningNotice",
    "DunningNoticeStatus",
    "DunningPolicy",
    "DunningStep",
    "Renewal",
    "Suspension",
    "SuspensionEvent",
    "SuspensionStatus",
]


class DunningPolicy(models.Model):
    """The steps taken for an unpaid invoice; the active policy applies to every one."""

    name = models.CharField(_("name"), max_length=100, unique=True)
    active = models.BooleanField(
        _("active"), default=True, help_text=_("Only one policy is active at a time.")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    class Meta:
        verbose_name = _("dunning policy")
        verbose_name_plural = _("dunning policies")
        constraints = [
            models.UniqueConstraint(
                fields=["active"], condition=Q(active=True), name="dunningpolicy_one_active"
            )
        ]

    def __str__(self) -> str:
        return self.name

    def ordered_steps(self) -> list[DunningStep]:
        return sorted(self.steps.all(), key=lambda s: (s.offset_days, s.action != "remind"))

    def suspension_step(self) -> DunningStep | None:
        return next((s for s in self.ordered_steps() if s.action == DunningAction.SUSPEND), None)

    @property
    @admin.display(description=_("grace days"))
    def grace_days(self) -> int | None:
        """Days after the due date before suspension (the suspension step's offset)."""
        step = self.suspension_step()
        return step.offset_days if step else None


class DunningAction(models.TextChoices):
    REMIND = "remind", _("email a reminder")
    SUSPEND = "suspend", _("suspend the order")


class DunningStep(models.Model):
    """One step: ``offset_days`` from the due date (negative: before it)."""

    policy = models.ForeignKey(
        DunningPolicy, on_delete=models.CASCADE, related_name="steps", verbose_name=_("policy")
    )
    offset_days = models.SmallIntegerField(
        _("days from the due date"), help_text=_("-7 is a week before, 3 is three days after.")
    )
    action = models.CharField(_("action"), max_length=8, choices=DunningAction.choices)

    class Meta:
        ordering = ["policy", "offset_days"]
        verbose_name = _("dunning step")
        verbose_name_plural = _("dunning steps")
        constraints = [
            models.UniqueConstraint(
                fields=["policy", "offset_days", "action"], name="dunningstep_unique"
            ),
            models.UniqueConstraint(
                fields=["policy"], condition=Q(action="suspend"), name="dunningstep_one_suspend"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.offset_days:+d} {self.action}"

    def clean(self) -> None:
        super().clean()
        if self.action == DunningAction.SUSPEND and self.offset_days < 1:
            raise ValidationError(
                {
                    "offset_days": gettext(
                        "Suspension comes after a grace period: at least one day after the "
                        "due date."
                    )
                }
            )
        if self.policy_id is None:
            return
        others = self.policy.steps.exclude(pk=self.pk)
        suspend = others.filter(action=DunningAction.SUSPEND).first()
        if (
            self.action == DunningAction.REMIND
            and suspend
            and self.offset_days >= suspend.offset_days
        ):
            raise ValidationError(
                {"offset_days": gettext("A reminder must come before the suspension.")}
            )
        if (
            self.action == DunningAction.SUSPEND
            and others.filter(
                action=DunningAction.REMIND, offset_days__gte=self.offset_days
            ).exists()
        ):
            raise ValidationError(
                {"offset_days": gettext("The suspension must come after every reminder.")}
            )

    @property
    def announces_suspension(self) -> bool:
        """Reminders on and after the due date say when the order will be suspended."""
        return self.action == DunningAction.REMIND and self.offset_days >= 0


class DunningNoticeStatus(models.TextChoices):
    SENT = "sent", _("sent")
    SKIPPED = "skipped", _("skipped (a later step was due)")
    DONE = "done", _("done")


class DunningNotice(models.Model):
    """A dunning step done for an invoice (once: unique per invoice and step)."""

    invoice = models.ForeignKey(
        Invoice, on_delete=models.CASCADE, related_name="dunning_notices", verbose_name=_("invoice")
    )
    step = models.ForeignKey(
        DunningStep, on_delete=models.PROTECT, related_name="notices", verbose_name=_("step")
    )
    status = models.CharField(_("status"), max_length=8, choices=DunningNoticeStatus.choices)
    suspend_on = models.DateTimeField(
        _("suspension announced for"),
        null=True,
        blank=True,
        help_text=_("The date this reminder announced, when it announced one."),
    )
    created_at = models.DateTimeField(_("done"), auto_now_add=True)
    emailed_at = models.DateTimeField(_("emailed"), null=True, blank=True)

    class Meta:
        ordering = ["invoice", "created_at", "pk"]
        verbose_name = _("dunning notice")
        verbose_name_plural = _("dunning notices")
        constraints = [
            models.UniqueConstraint(fields=["invoice", "step"], name="dunningnotice_once")
        ]

    def __str__(self) -> str:
        return f"{self.invoice_id} {self.step} {self.status}"


class SuspensionStatus(models.TextChoices):
    SUSPENDED = "suspended", _("suspended")
    RESUMED = "resumed", _("resumed")


SUSPENSION_TRANSITIONS: dict[str, frozenset[str]] = {
    SuspensionStatus.SUSPENDED: frozenset({SuspensionStatus.RESUMED}),
    SuspensionStatus.RESUMED: frozenset(),
}


class Suspension(models.Model):
    """An order suspended for its unpaid invoice: its nodes powered off (never wiped,
    no data deleted) until the invoice is paid."""

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="suspensions", verbose_name=_("order")
    )
    invoice = models.OneToOneField(
        Invoice, on_delete=models.PROTECT, related_name="suspension", verbose_name=_("invoice")
    )
    status = models.CharField(
        _("status"),
        max_length=12,
        choices=SuspensionStatus.choices,
        default=SuspensionStatus.SUSPENDED,
    )
    suspended_at = models.DateTimeField(_("suspended"))
    resumed_at = models.DateTimeField(_("resumed"), null=True, blank=True)
    suspended_emailed_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("suspension emailed")
    )
    resumed_emailed_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("resumption emailed")
    )

    lifecycle = Lifecycle(
        choices=SuspensionStatus,
        transitions=SUSPENSION_TRANSITIONS,
        event_model="billing.SuspensionEvent",
        subject_field="suspension",
        describe=lambda s: gettext("Suspension of order %(n)s") % {"n": s.order.number},
    )

    class Meta:
        ordering = ["-suspended_at", "-pk"]
        verbose_name = _("suspension")
        verbose_name_plural = _("suspensions")
        constraints = [
            models.UniqueConstraint(
                fields=["order"], condition=Q(status="suspended"), name="suspension_one_open"
            )
        ]

    def __str__(self) -> str:
        return f"{self.order_id} {self.status}"


class SuspensionEvent(LifecycleEvent):
    suspension = models.ForeignKey(
        Suspension, on_delete=models.CASCADE, related_name="events", verbose_name=_("suspension")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("suspension event")
        verbose_name_plural = _("suspension events")


class Renewal(models.Model):
    """The renewal offered before an order ends: its quote for the same nodes where they
    are free after the end (held for the customer until the quote expires), else the
    nearest placement, with what changes."""

    order = models.OneToOneField(
        Order, on_delete=models.PROTECT, related_name="renewal", verbose_name=_("order")
    )
    quote = models.OneToOneField(
        Quote,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="renewal_of",
        verbose_name=_("renewal quote"),
    )
    kept = models.JSONField(_("same nodes"), default=list, blank=True)
    replaced = models.JSONField(_("nodes no longer free"), default=list, blank=True)
    offered = models.JSONField(_("nodes offered instead"), default=list, blank=True)
    unavailable = models.TextField(_("why no renewal could be offered"), blank=True)
    auto_accepted = models.BooleanField(_("accepted automatically"), default=False)
    created_at = models.DateTimeField(_("made"), auto_now_add=True)
    emailed_at = models.DateTimeField(_("emailed"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("renewal")
        verbose_name_plural = _("renewals")

    def __str__(self) -> str:
        return f"{self.order_id} → {self.quote_id or '—'}"

    @property
    @admin.display(description=_("same nodes"), boolean=True)
    def same_nodes(self) -> bool:
        return bool(self.quote_id) and not self.replaced
