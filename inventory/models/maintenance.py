"""Maintenance: plans (work over some nodes, a rack or a switch, with customer notice),
their lifecycle and events, the notices sent per organisation, and the per-node windows
that take nodes out of every availability search."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.lifecycle import Lifecycle
from core.models import LifecycleEvent
from inventory.models.nodes import Node
from inventory.models.sites import Rack, Site, Switch

__all__ = [
    "MAINTENANCE_OPEN_STATUSES",
    "MAINTENANCE_TRANSITIONS",
    "MaintenanceNotice",
    "MaintenancePlan",
    "MaintenancePlanEvent",
    "MaintenanceScope",
    "MaintenanceStatus",
    "MaintenanceWindow",
]


class MaintenanceStatus(models.TextChoices):
    SCHEDULED = "scheduled", _("scheduled")
    ANNOUNCED = "announced", _("announced")
    COMPLETED = "completed", _("completed")
    CANCELLED = "cancelled", _("cancelled")


# The maintenance lifecycle: confirmed (scheduled), customers told (announced), done.
MAINTENANCE_TRANSITIONS: dict[str, frozenset[str]] = {
    MaintenanceStatus.SCHEDULED: frozenset(
        {MaintenanceStatus.ANNOUNCED, MaintenanceStatus.CANCELLED}
    ),
    MaintenanceStatus.ANNOUNCED: frozenset(
        {MaintenanceStatus.COMPLETED, MaintenanceStatus.CANCELLED}
    ),
    MaintenanceStatus.COMPLETED: frozenset(),
    MaintenanceStatus.CANCELLED: frozenset(),
}
MAINTENANCE_OPEN_STATUSES = (MaintenanceStatus.SCHEDULED, MaintenanceStatus.ANNOUNCED)


class MaintenanceScope(models.TextChoices):
    NODES = "nodes", _("chosen nodes")
    RACK = "rack", _("a rack")
    SWITCH = "switch", _("a leaf switch")


class MaintenancePlan(models.Model):
    """One planned piece of work over ``[start_at, end_at)`` on some nodes, a rack or a
    switch: one ``MaintenanceWindow`` per node it takes down.

    Customers whose bookings it touches are told ``notice_days`` before it starts
    (``notify_at``; at once when that is past), by email and webhook; ``announced_at`` is
    when they were. A plan over an active booking needs ``override_reason``: the contract
    (§7.2) excludes only planned maintenance announced at least 72 hours ahead, and an
    overridden window is unplanned downtime for the SLA credits whatever its notice.
    """

    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="maintenance_plans", verbose_name=_("site")
    )
    title = models.CharField(_("work"), max_length=200)
    scope = models.CharField(
        _("scope"), max_length=8, choices=MaintenanceScope.choices, default=MaintenanceScope.NODES
    )
    rack = models.ForeignKey(
        Rack,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="maintenance_plans",
        verbose_name=_("rack"),
    )
    switch = models.ForeignKey(
        Switch,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="maintenance_plans",
        verbose_name=_("switch"),
    )
    start_at = models.DateTimeField(_("starts"))
    end_at = models.DateTimeField(_("ends"))
    notice_days = models.PositiveSmallIntegerField(
        _("notice (days)"),
        validators=[MaxValueValidator(90)],
        help_text=_("Customers are told this many days before the work starts."),
    )
    notify_at = models.DateTimeField(_("customers told from"))
    announced_at = models.DateTimeField(_("customers told"), null=True, blank=True)
    override_reason = models.TextField(
        _("reason for working over bookings"),
        blank=True,
        help_text=_(
            "Needed when the window covers an active booking; it then counts as "
            "unplanned downtime for SLA credits."
        ),
    )
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=MaintenanceStatus.choices,
        default=MaintenanceStatus.SCHEDULED,
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("planned by"),
    )
    created_at = models.DateTimeField(_("planned"), auto_now_add=True)

    lifecycle = Lifecycle(
        choices=MaintenanceStatus,
        transitions=MAINTENANCE_TRANSITIONS,
        event_model="inventory.MaintenancePlanEvent",
        subject_field="plan",
        describe=lambda p: gettext("Maintenance “%(title)s”") % {"title": p.title},
    )

    class Meta:
        ordering = ["-start_at", "-pk"]
        verbose_name = _("maintenance plan")
        verbose_name_plural = _("maintenance plans")
        indexes = [models.Index(fields=["status", "notify_at"], name="maint_plan_notify_idx")]
        permissions = [
            ("override_booking", _("Plan maintenance over an active booking")),
            ("see_operations_reports", _("See utilisation and revenue")),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(end_at__gt=models.F("start_at")),
                name="maintenance_plan_end_after_start",
                violation_error_message=_("The window must end after it starts."),
            )
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.start_at:%Y-%m-%d %H:%M})"

    @property
    def unplanned(self) -> bool:
        """Over an active booking by override: unplanned downtime for SLA credits."""
        return bool(self.override_reason)


class MaintenancePlanEvent(LifecycleEvent):
    plan = models.ForeignKey(
        MaintenancePlan,
        on_delete=models.CASCADE,
        related_name="events",
        verbose_name=_("maintenance plan"),
    )

    class Meta(LifecycleEvent.Meta):
        ordering = ["-created_at", "-id"]
        verbose_name = _("maintenance event")
        verbose_name_plural = _("maintenance events")

    def __str__(self) -> str:
        return f"{self.plan_id}: {self.from_label()} → {self.to_label()}"


class MaintenanceNotice(models.Model):
    """One organisation told about one plan: its affected orders, the email's claim."""

    plan = models.ForeignKey(
        MaintenancePlan,
        on_delete=models.CASCADE,
        related_name="notices",
        verbose_name=_("maintenance plan"),
    )
    organisation = models.ForeignKey(
        "accounts.Organisation",
        on_delete=models.CASCADE,
        related_name="maintenance_notices",
        verbose_name=_("customer"),
    )
    orders = models.JSONField(_("orders"), default=list)
    language = models.CharField(_("language"), max_length=16, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    emailed_at = models.DateTimeField(_("emailed"), null=True, blank=True)

    class Meta:
        ordering = ["plan_id", "organisation_id"]
        verbose_name = _("maintenance notice")
        verbose_name_plural = _("maintenance notices")
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "organisation"], name="maintenance_notice_once_per_org"
            )
        ]

    def __str__(self) -> str:
        return f"{self.plan_id} → {self.organisation_id}"


class MaintenanceWindow(models.Model):
    """Planned downtime of one node over ``[start_at, end_at)``; no booking may overlap it
    (unless its plan overrode them, with a reason)."""

    node = models.ForeignKey(
        Node, on_delete=models.CASCADE, related_name="maintenance_windows", verbose_name=_("node")
    )
    plan = models.ForeignKey(
        MaintenancePlan,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="windows",
        verbose_name=_("maintenance plan"),
    )
    start_at = models.DateTimeField(_("starts"))
    end_at = models.DateTimeField(_("ends"))
    reason = models.CharField(_("reason"), max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )

    class Meta:
        ordering = ["start_at"]
        verbose_name = _("maintenance window")
        verbose_name_plural = _("maintenance windows")
        indexes = [models.Index(fields=["node", "end_at", "start_at"], name="maint_node_range_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(end_at__gt=models.F("start_at")),
                name="maintenance_end_after_start",
                violation_error_message=_("The window must end after it starts."),
            )
        ]

    def __str__(self) -> str:
        return f"{self.node_id} {self.start_at:%Y-%m-%d %H:%M} – {self.end_at:%Y-%m-%d %H:%M}"
