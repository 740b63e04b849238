"""The support desk (tickets with their two clocks, messages, saved replies) and the status
pages (incidents per site and component, with their updates).

A ticket is about an order, a node of it or one GPU of that node (by serial); what the
portal already knew when it was opened (health incidents, utilisation alerts, the last
validation, the node's events) is attached by reference in ``diagnostics``. Its status
moves through core's lifecycle (``TicketEvent`` keeps every move and note: who, when,
why); its clocks are due times moved by each pause (``portal.support.clocks``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation
from billing.models import Order
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent
from inventory.models import Node, Rack, Site, Switch
from portal.support import clocks
from provisioning.models import HealthIncident, UtilisationAlert


class TicketCategory(models.TextChoices):
    HARDWARE = "hardware", _("hardware fault")
    UTILISATION = clocks.UTILISATION, _("low utilisation or performance")
    NETWORK = "network", _("network or fabric")
    ACCESS = "access", _("access and login")
    BILLING = "billing", _("billing")
    OTHER = "other", _("other question")


class TicketPriority(models.TextChoices):
    URGENT = clocks.URGENT, _("urgent: training stopped")
    HIGH = clocks.HIGH, _("high: degraded")
    NORMAL = clocks.NORMAL, _("normal")
    LOW = clocks.LOW, _("low: a question")


# Queue order of priorities (most urgent first) where clocks tie.
PRIORITY_RANK = {p: i for i, p in enumerate(TicketPriority.values)}


class TicketTier(models.TextChoices):
    CONTRACT = clocks.CONTRACT, _("contract support")
    STANDARD = clocks.STANDARD, _("standard support")


class TicketSource(models.TextChoices):
    CUSTOMER = "customer", _("opened by the customer")
    STAFF = "staff", _("opened by staff")
    LOW_UTILISATION = "low_utilisation", _("low-utilisation alert")
    REPLACEMENT = "replacement", _("node replacement")


class TicketStatus(models.TextChoices):
    OPEN = "open", _("waiting on support")
    WAITING = "waiting", _("waiting on the customer")
    RESOLVED = "resolved", _("resolved")


TICKET_TRANSITIONS: dict[str, frozenset[str]] = {
    TicketStatus.OPEN: frozenset({TicketStatus.WAITING, TicketStatus.RESOLVED}),
    TicketStatus.WAITING: frozenset({TicketStatus.OPEN, TicketStatus.RESOLVED}),
    TicketStatus.RESOLVED: frozenset({TicketStatus.OPEN}),  # the customer reopens it
}
ACTIVE_TICKET_STATUSES = (TicketStatus.OPEN, TicketStatus.WAITING)


class Ticket(models.Model):
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="tickets", verbose_name=_("customer")
    )
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("opened by"),
    )
    source = models.CharField(
        _("source"), max_length=16, choices=TicketSource.choices, default=TicketSource.CUSTOMER
    )
    subject = models.CharField(_("subject"), max_length=200)
    category = models.CharField(_("category"), max_length=16, choices=TicketCategory.choices)
    priority = models.CharField(_("priority"), max_length=8, choices=TicketPriority.choices)
    tier = models.CharField(_("support tier"), max_length=8, choices=TicketTier.choices)
    language = models.CharField(_("language"), max_length=8, choices=settings.LANGUAGES)
    # What it is about: an order, one of its nodes, one GPU of that node.
    order = models.ForeignKey(
        Order,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="tickets",
        verbose_name=_("order"),
    )
    node = models.ForeignKey(
        Node,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="tickets",
        verbose_name=_("node"),
    )
    gpu_serial = models.CharField(_("GPU serial number"), max_length=64, blank=True)
    gpu_index = models.CharField(_("GPU index"), max_length=8, blank=True)
    utilisation_alert = models.OneToOneField(
        UtilisationAlert,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="ticket",
        verbose_name=_("low-utilisation alert"),
    )
    health_incident = models.OneToOneField(
        HealthIncident,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="ticket",
        verbose_name=_("health incident"),
    )
    diagnostics = models.JSONField(_("diagnostics attached"), default=dict, blank=True)
    status = models.CharField(
        _("status"), max_length=12, choices=TicketStatus.choices, default=TicketStatus.OPEN
    )
    status_changed_at = models.DateTimeField(_("status changed"), auto_now_add=True)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("assigned to"),
    )
    # The clocks: due times (moved by each pause), when each stopped, whether it was missed.
    response_due_at = models.DateTimeField(_("first response due"))
    resolution_due_at = models.DateTimeField(_("resolution due"))
    first_response_at = models.DateTimeField(_("first response"), null=True, blank=True)
    resolved_at = models.DateTimeField(_("resolved"), null=True, blank=True)
    paused_at = models.DateTimeField(_("clocks paused since"), null=True, blank=True)
    paused_seconds = models.PositiveIntegerField(_("seconds paused before"), default=0)
    response_missed = models.BooleanField(_("first response missed"), default=False)
    resolution_missed = models.BooleanField(_("resolution missed"), default=False)
    created_at = models.DateTimeField(_("opened"), auto_now_add=True)

    lifecycle = Lifecycle(
        choices=TicketStatus,
        transitions=TICKET_TRANSITIONS,
        event_model="support.TicketEvent",
        subject_field="ticket",
        describe=lambda t: gettext("Ticket %(ref)s") % {"ref": t.reference},
        changed_at_field="status_changed_at",
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("support ticket")
        verbose_name_plural = _("support tickets")
        indexes = [
            models.Index(fields=["organisation", "status"], name="ticket_org_status_idx"),
            models.Index(fields=["status", "response_due_at"], name="ticket_queue_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(node__isnull=True) | Q(order__isnull=False),
                name="ticket_node_needs_order",
                violation_error_message=_("A ticket about a node names its order."),
            ),
            models.CheckConstraint(
                condition=Q(gpu_serial="") | Q(node__isnull=False),
                name="ticket_gpu_needs_node",
                violation_error_message=_("A ticket about a GPU names its node."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference}: {self.subject}"

    @property
    def reference(self) -> str:
        return f"T-{self.pk:06d}" if self.pk else "T-?"


class TicketEvent(LifecycleEvent):
    """Every move and note of a ticket: opened, replied, assigned, paused, resolved."""

    ticket = models.ForeignKey(
        Ticket, on_delete=models.CASCADE, related_name="events", verbose_name=_("ticket")
    )
    internal = models.BooleanField(_("staff only"), default=False)

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("ticket event")
        verbose_name_plural = _("ticket events")


class MessageVia(models.TextChoices):
    WEB = "web", _("on the page")
    EMAIL = "email", _("by email")
    SYSTEM = "system", _("by the portal")


class TicketMessage(models.Model):
    ticket = models.ForeignKey(
        Ticket, on_delete=models.CASCADE, related_name="messages", verbose_name=_("ticket")
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("author"),
    )
    from_staff = models.BooleanField(_("from support"), default=False)
    internal = models.BooleanField(
        _("internal note"), default=False, help_text=_("Never shown to the customer.")
    )
    via = models.CharField(_("via"), max_length=8, choices=MessageVia.choices, default="web")
    body = models.TextField(_("message"))
    created_at = models.DateTimeField(_("written"), auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("ticket message")
        verbose_name_plural = _("ticket messages")
        constraints = [
            models.CheckConstraint(
                condition=Q(internal=False) | Q(from_staff=True),
                name="ticket_internal_note_is_staff",
                violation_error_message=_("Only support writes internal notes."),
            )
        ]

    def __str__(self) -> str:
        return f"{self.ticket_id}: {self.body[:40]}"


class SavedReply(models.Model):
    """A reply support staff insert instead of typing it again (one per language)."""

    title = models.CharField(_("title"), max_length=100)
    language = models.CharField(_("language"), max_length=8, choices=settings.LANGUAGES)
    body = models.TextField(_("reply"))
    active = models.BooleanField(_("offered"), default=True)

    class Meta:
        ordering = ["title", "language"]
        verbose_name = _("saved reply")
        verbose_name_plural = _("saved replies")
        constraints = [
            models.UniqueConstraint(fields=["title", "language"], name="saved_reply_unique")
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.language})"


# --- status pages ----------------------------------------------------------------------


class Component(models.TextChoices):
    POWER = "power", _("power")
    COOLING = "cooling", _("cooling")
    NETWORK = "network", _("internet uplinks")
    FABRIC = "fabric", _("GPU fabric")
    COMPUTE = "compute", _("GPU servers")


class Impact(models.TextChoices):
    DEGRADED = "degraded", _("degraded performance")
    PARTIAL = "partial", _("partial outage")
    MAJOR = "major", _("major outage")


# Worst first: a component shows its worst open incident.
IMPACT_RANK: dict[str, int] = {Impact.MAJOR: 0, Impact.PARTIAL: 1, Impact.DEGRADED: 2}


class IncidentPhase(models.TextChoices):
    INVESTIGATING = "investigating", pgettext_lazy("incident", "investigating")
    IDENTIFIED = "identified", pgettext_lazy("incident", "identified")
    MONITORING = "monitoring", pgettext_lazy("incident", "monitoring")
    RESOLVED = "resolved", pgettext_lazy("incident", "resolved")


INCIDENT_PHASE_TRANSITIONS: dict[str, frozenset[str]] = {
    IncidentPhase.INVESTIGATING: frozenset(
        {IncidentPhase.IDENTIFIED, IncidentPhase.MONITORING, IncidentPhase.RESOLVED}
    ),
    IncidentPhase.IDENTIFIED: frozenset({IncidentPhase.MONITORING, IncidentPhase.RESOLVED}),
    IncidentPhase.MONITORING: frozenset({IncidentPhase.IDENTIFIED, IncidentPhase.RESOLVED}),
    IncidentPhase.RESOLVED: frozenset(),
}


class StatusIncident(models.Model):
    """An incident on a site's component, shown on the public status page; the racks,
    switches and nodes it touches scope it to the customers who rent there."""

    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="status_incidents", verbose_name=_("site")
    )
    component = models.CharField(_("component"), max_length=12, choices=Component.choices)
    impact = models.CharField(_("impact"), max_length=12, choices=Impact.choices)
    title = models.CharField(_("title (English)"), max_length=200)
    title_zh = models.CharField(_("title (Chinese)"), max_length=200)
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=IncidentPhase.choices,
        default=IncidentPhase.INVESTIGATING,
    )
    status_changed_at = models.DateTimeField(_("status changed"), auto_now_add=True)
    racks = models.ManyToManyField(Rack, blank=True, related_name="+", verbose_name=_("racks"))
    switches = models.ManyToManyField(
        Switch, blank=True, related_name="+", verbose_name=_("switches")
    )
    nodes = models.ManyToManyField(Node, blank=True, related_name="+", verbose_name=_("nodes"))
    started_at = models.DateTimeField(_("started"))
    resolved_at = models.DateTimeField(_("resolved"), null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )

    lifecycle = Lifecycle(
        choices=IncidentPhase,
        transitions=INCIDENT_PHASE_TRANSITIONS,
        event_model="support.StatusIncidentEvent",
        subject_field="incident",
        describe=lambda i: gettext("Incident %(id)s") % {"id": i.pk},
        changed_at_field="status_changed_at",
    )

    class Meta:
        ordering = ["-started_at", "-pk"]
        verbose_name = _("status incident")
        verbose_name_plural = _("status incidents")
        indexes = [models.Index(fields=["site", "status"], name="status_incident_site_idx")]

    def __str__(self) -> str:
        return self.title


class StatusIncidentEvent(LifecycleEvent):
    incident = models.ForeignKey(
        StatusIncident, on_delete=models.CASCADE, related_name="events", verbose_name=_("incident")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("status incident event")
        verbose_name_plural = _("status incident events")


class StatusUpdate(models.Model):
    """One public update of an incident, in both languages."""

    incident = models.ForeignKey(
        StatusIncident, on_delete=models.CASCADE, related_name="updates", verbose_name=_("incident")
    )
    status = models.CharField(_("status"), max_length=16, choices=IncidentPhase.choices)
    body = models.TextField(_("update (English)"))
    body_zh = models.TextField(_("update (Chinese)"))
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("by"),
    )
    created_at = models.DateTimeField(_("posted"), auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("status update")
        verbose_name_plural = _("status updates")

    def __str__(self) -> str:
        return f"{self.incident_id}: {self.status}"
