"""Day two of a rented cluster: what watches it and what heals it.

- ``SimulatedFault``: a fault injected on a simulated node's exporter (tests, demos, ops);
- ``ReplacementPolicy``: per order, automatic replacement or "ask me first" with a deadline;
- ``SparePool``: how many spares ops keep per site and node type (the free count is read
  from the inventory, never stored);
- ``HealthIncident``: a health rule that fired on a node, with its evidence (metric, value,
  time) and what followed (notified, re-validated, replaced), its own lifecycle;
- ``UtilisationAlert``: an order's GPUs under-used for too long, on the staff list until
  answered.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from billing.models import Order
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent
from inventory.models import Node, NodeType, Site
from provisioning.models.runs import NodeSwap, ProvisioningRun

__all__ = [
    "INCIDENT_TRANSITIONS",
    "OPEN_INCIDENT_STATUSES",
    "HealthAction",
    "HealthIncident",
    "HealthIncidentEvent",
    "IncidentStatus",
    "ReplacementMode",
    "ReplacementPolicy",
    "SimulatedFault",
    "SparePool",
    "UtilisationAlert",
]


class SimulatedFault(models.Model):
    KINDS = [
        ("xid", _("XID error")),
        ("ecc_sbe", _("correctable ECC errors")),
        ("ecc_dbe", _("uncorrectable ECC errors")),
        ("row_remap_failure", _("row-remap failure")),
        ("nvlink_down", _("NVLink down")),
        ("ib_down", _("InfiniBand port down")),
        ("ib_flap", _("InfiniBand link flapping")),
        ("throttle", _("clock throttle")),
        ("gpu_missing", _("GPU missing")),
        ("node_silent", _("node silent")),
        ("util_dip", _("utilisation dip")),
    ]
    node = models.ForeignKey(
        Node, on_delete=models.CASCADE, related_name="simulated_faults", verbose_name=_("node")
    )
    kind = models.CharField(_("fault"), max_length=24, choices=KINDS)
    gpu = models.PositiveSmallIntegerField(_("GPU (or port)"), null=True, blank=True)
    value = models.FloatField(_("value"), default=0.0)
    start_at = models.DateTimeField(_("from"))
    end_at = models.DateTimeField(_("until"), null=True, blank=True)

    class Meta:
        ordering = ["start_at", "pk"]
        verbose_name = _("simulated fault")
        verbose_name_plural = _("simulated faults")

    def __str__(self) -> str:
        return f"{self.node_id}: {self.kind} {self.value:g}"


class ReplacementMode(models.TextChoices):
    AUTOMATIC = "automatic", _("automatic")
    ASK = "ask", _("ask me first")


class ReplacementPolicy(models.Model):
    order = models.OneToOneField(
        Order,
        on_delete=models.CASCADE,
        related_name="replacement_policy",
        verbose_name=_("order"),
    )
    mode = models.CharField(
        _("replacement"),
        max_length=12,
        choices=ReplacementMode.choices,
        default=ReplacementMode.AUTOMATIC,
    )
    ask_minutes = models.PositiveIntegerField(
        _("proceed after (minutes)"),
        default=30,
        help_text=_("With “ask me first”: replace anyway when nobody answered by then."),
    )
    updated_at = models.DateTimeField(_("changed"), auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("changed by"),
    )

    class Meta:
        verbose_name = _("replacement policy")
        verbose_name_plural = _("replacement policies")

    def __str__(self) -> str:
        return f"{self.order_id}: {self.mode}"


class SparePool(models.Model):
    site = models.ForeignKey(Site, on_delete=models.CASCADE, verbose_name=_("site"))
    node_type = models.ForeignKey(NodeType, on_delete=models.CASCADE, verbose_name=_("node type"))
    target = models.PositiveIntegerField(
        _("spares to keep"), help_text=_("Free nodes kept back for replacements.")
    )

    class Meta:
        verbose_name = _("spare pool")
        verbose_name_plural = _("spare pools")
        constraints = [
            models.UniqueConstraint(fields=["site", "node_type"], name="sparepool_unique")
        ]

    def __str__(self) -> str:
        return f"{self.site_id}/{self.node_type_id}: {self.target}"


class HealthAction(models.TextChoices):
    NOTIFY = "notify", _("notify")
    REVALIDATE = "revalidate", _("re-validate (quick profile)")
    REPLACE = "replace", _("replace")


class IncidentStatus(models.TextChoices):
    OPEN = "open", _("detected")
    AWAITING = "awaiting", _("waiting for your approval")
    REVALIDATING = "revalidating", _("re-validating")
    REPLACING = "replacing", _("replacing")
    REPLACED = "replaced", _("replaced")
    NO_SPARE = "no_spare", _("no spare free: staff informed")
    NOTIFIED = "notified", _("notified")
    RESOLVED = "resolved", _("resolved")


INCIDENT_TRANSITIONS: dict[str, frozenset[str]] = {
    IncidentStatus.OPEN: frozenset(
        {
            IncidentStatus.AWAITING,
            IncidentStatus.REVALIDATING,
            IncidentStatus.REPLACING,
            IncidentStatus.NO_SPARE,
            IncidentStatus.NOTIFIED,
            IncidentStatus.RESOLVED,
        }
    ),
    IncidentStatus.AWAITING: frozenset(
        {IncidentStatus.REPLACING, IncidentStatus.NO_SPARE, IncidentStatus.RESOLVED}
    ),
    IncidentStatus.REVALIDATING: frozenset(
        {
            IncidentStatus.RESOLVED,
            IncidentStatus.AWAITING,
            IncidentStatus.REPLACING,
            IncidentStatus.NO_SPARE,
        }
    ),
    IncidentStatus.REPLACING: frozenset(
        {IncidentStatus.REPLACED, IncidentStatus.NO_SPARE, IncidentStatus.RESOLVED}
    ),
    IncidentStatus.NO_SPARE: frozenset({IncidentStatus.REPLACING, IncidentStatus.RESOLVED}),
    IncidentStatus.NOTIFIED: frozenset({IncidentStatus.RESOLVED}),
    IncidentStatus.REPLACED: frozenset(),
    IncidentStatus.RESOLVED: frozenset(),
}
OPEN_INCIDENT_STATUSES = (
    IncidentStatus.OPEN,
    IncidentStatus.AWAITING,
    IncidentStatus.REVALIDATING,
    IncidentStatus.REPLACING,
    IncidentStatus.NO_SPARE,
)


class HealthIncident(models.Model):
    order = models.ForeignKey(
        Order,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="health_incidents",
        verbose_name=_("order"),
    )
    node = models.ForeignKey(
        Node, on_delete=models.PROTECT, related_name="health_incidents", verbose_name=_("node")
    )
    rule = models.CharField(_("health rule"), max_length=48)
    action = models.CharField(_("action"), max_length=12, choices=HealthAction.choices)
    status = models.CharField(
        _("status"), max_length=16, choices=IncidentStatus.choices, default=IncidentStatus.OPEN
    )
    status_changed_at = models.DateTimeField(_("status changed"), auto_now_add=True)
    # The evidence: which series, what it said, when.
    metric = models.CharField(_("metric"), max_length=100)
    value = models.FloatField(_("value"))
    gpu = models.CharField(_("GPU"), max_length=16, blank=True)
    observed_at = models.DateTimeField(_("observed"))
    detected_at = models.DateTimeField(_("detected"), auto_now_add=True)
    decide_by = models.DateTimeField(_("decide by"), null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("approved by"),
    )
    replacement_run = models.ForeignKey(
        ProvisioningRun,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("replacement run"),
    )
    swap = models.ForeignKey(
        NodeSwap,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("swap"),
    )
    validation_run_id = models.PositiveIntegerField(_("validation run"), null=True, blank=True)
    handed_over_at = models.DateTimeField(_("handed over"), null=True, blank=True)

    lifecycle = Lifecycle(
        choices=IncidentStatus,
        transitions=INCIDENT_TRANSITIONS,
        event_model="provisioning.HealthIncidentEvent",
        subject_field="incident",
        describe=lambda i: gettext("Health incident %(id)s") % {"id": i.pk},
        changed_at_field="status_changed_at",
    )

    class Meta:
        ordering = ["-detected_at", "-pk"]
        verbose_name = _("health incident")
        verbose_name_plural = _("health incidents")
        constraints = [
            # One open incident per node and rule: a rule that keeps firing adds nothing.
            models.UniqueConstraint(
                fields=["node", "rule"],
                condition=Q(
                    status__in=["open", "awaiting", "revalidating", "replacing", "no_spare"]
                ),
                name="healthincident_one_open_per_rule",
            ),
            # Each incident its own replacement run: two faults of one order never share
            # (nor wait for) one run.
            models.UniqueConstraint(
                fields=["replacement_run"],
                condition=Q(replacement_run__isnull=False),
                name="healthincident_own_replacement_run",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node_id}: {self.rule} ({self.status})"


class HealthIncidentEvent(LifecycleEvent):
    incident = models.ForeignKey(
        HealthIncident,
        on_delete=models.CASCADE,
        related_name="events",
        verbose_name=_("incident"),
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("health incident event")
        verbose_name_plural = _("health incident events")


class UtilisationAlert(models.Model):
    order = models.ForeignKey(
        Order, on_delete=models.CASCADE, related_name="utilisation_alerts", verbose_name=_("order")
    )
    raised_at = models.DateTimeField(_("raised"), auto_now_add=True)
    utilisation = models.FloatField(_("utilisation"))
    pointer = models.CharField(_("what the metrics point at"), max_length=24)
    answered_at = models.DateTimeField(_("answered"), null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("answered by"),
    )

    class Meta:
        ordering = ["-raised_at"]
        verbose_name = _("low-utilisation alert")
        verbose_name_plural = _("low-utilisation alerts")
        constraints = [
            models.UniqueConstraint(
                fields=["order"],
                condition=Q(answered_at__isnull=True),
                name="utilisationalert_one_open",
            )
        ]

    def __str__(self) -> str:
        return f"{self.order_id}: {self.utilisation:.0%}"
