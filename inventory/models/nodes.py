"""Inventory: data centres, racks, switches, GPU models, node types, nodes, reservations.

Invariants live here (field validation, ``clean()``, database constraints). Writes go
through ``inventory.services``; multi-line reads through ``inventory.selectors``.

No double booking: PostgreSQL enforces it with the exclusion constraint
``reservation_no_overlap`` (btree_gist, migrations 0002 and 0010, PostgreSQL only):
two *active* reservations (status ``hold`` or ``firm``) of one node may not have
overlapping *held* ranges ``[held_from, held_until)``. A reservation rents
``[start_at, end_at)`` and holds the node from the site's lead time before the start
(provisioning) to its cleaning time after the end, so the named nodes stay the
customer's from provisioning to the end of cleaning. ``reservation_hold`` checks the
same rule first so that SQLite and forms get a clear message, not an IntegrityError.
"""

from __future__ import annotations

import uuid
import zoneinfo
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.lifecycle import Lifecycle
from core.models import LifecycleEvent


def validate_timezone(value: str) -> None:
    if value not in zoneinfo.available_timezones():
        raise ValidationError(_("“%(value)s” is not a known time zone."), params={"value": value})


def _chinese() -> bool:
    return (translation.get_language() or "").startswith("zh")


class Currency(models.TextChoices):
    CNY = "CNY", _("Chinese yuan (CNY)")
    HKD = "HKD", _("Hong Kong dollar (HKD)")
    USD = "USD", _("US dollar (USD)")


class Site(models.Model):
    """A data centre (Shenzhen, Hong Kong) with its own currency, VAT rate and time zone."""

    code = models.SlugField(_("code"), max_length=8, unique=True, help_text=_("e.g. SZ, HK"))
    name = models.CharField(_("name"), max_length=100)
    name_zh = models.CharField(_("name (Chinese)"), max_length=100, blank=True)
    city = models.CharField(_("city"), max_length=100)
    city_zh = models.CharField(_("city (Chinese)"), max_length=100, blank=True)
    timezone = models.CharField(
        _("time zone"), max_length=64, default="Asia/Shanghai", validators=[validate_timezone]
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    vat_rate = models.DecimalField(
        _("VAT rate"),
        max_digits=5,
        decimal_places=4,
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
        help_text=_("As a fraction: 0.0600 is 6%."),
    )
    lead_time_hours = models.PositiveIntegerField(
        _("lead time (hours)"),
        default=24,
        validators=[MaxValueValidator(24 * 90)],
        help_text=_(
            "How long the site needs to prepare nodes: the earliest start of an order is "
            "this long after it is paid."
        ),
    )
    ssh_jump_host = models.CharField(
        _("SSH jump host"),
        max_length=200,
        blank=True,
        help_text=_(
            "The bastion customers connect through (user@host or host:port), shown in the "
            "delivery details; empty: the portal's PORTAL_SSH_JUMP_HOST."
        ),
    )
    cleaning_hours = models.PositiveIntegerField(
        _("cleaning time (hours)"),
        default=8,
        validators=[MaxValueValidator(24 * 30)],
        help_text=_(
            "How long cleaning takes after a rental ends (disk wipe, BIOS reset, checks): "
            "the node stays booked for this long after the end."
        ),
    )

    class Meta:
        ordering = ["code"]
        verbose_name = _("site")
        verbose_name_plural = _("sites")
        constraints = [
            models.CheckConstraint(
                condition=Q(vat_rate__gte=0) & Q(vat_rate__lte=1), name="site_vat_rate_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.display_name} ({self.code})"

    def held_range(self, start_at: datetime, end_at: datetime) -> tuple[datetime, datetime]:
        """What renting ``[start_at, end_at)`` here keeps a node for: from the lead time
        before the start (provisioning) to the cleaning time after the end."""
        return (
            start_at - timedelta(hours=self.lead_time_hours),
            end_at + timedelta(hours=self.cleaning_hours),
        )

    @property
    def display_name(self) -> str:
        """The name in the active language."""
        return self.name_zh if _chinese() and self.name_zh else self.name

    @property
    def display_city(self) -> str:
        return self.city_zh if _chinese() and self.city_zh else self.city

    @property
    def tzinfo(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.timezone)


class Rack(models.Model):
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="racks", verbose_name=_("site")
    )
    room = models.CharField(_("room"), max_length=50, blank=True)
    name = models.CharField(_("name"), max_length=50)
    power_kw = models.DecimalField(
        _("power budget (kW)"), max_digits=6, decimal_places=1, null=True, blank=True
    )

    class Meta:
        ordering = ["site__code", "name"]
        verbose_name = _("rack")
        verbose_name_plural = _("racks")
        constraints = [
            models.UniqueConstraint(fields=["site", "name"], name="rack_unique_name_per_site")
        ]

    def __str__(self) -> str:
        return f"{self.site.code}/{self.name}"


class Fabric(models.TextChoices):
    IB_NDR = "ib_ndr", _("InfiniBand NDR 400G")
    IB_HDR = "ib_hdr", _("InfiniBand HDR 200G")
    ROCE_V2 = "roce_v2", _("RoCE v2")
    ETHERNET = "ethernet", _("Ethernet")


class SwitchRole(models.TextChoices):
    LEAF = "leaf", _("leaf")
    SPINE = "spine", _("spine")


class Switch(models.Model):
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="switches", verbose_name=_("site")
    )
    rack = models.ForeignKey(
        Rack,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="switches",
        verbose_name=_("rack"),
    )
    name = models.CharField(_("name"), max_length=64)
    role = models.CharField(_("role"), max_length=8, choices=SwitchRole.choices)
    fabric = models.CharField(_("fabric"), max_length=16, choices=Fabric.choices)
    port_speed_gbps = models.PositiveIntegerField(_("port speed (Gb/s)"))
    port_count = models.PositiveIntegerField(_("ports"), default=64)
    node_ports = models.PositiveIntegerField(
        _("ports for nodes"),
        null=True,
        blank=True,
        help_text=_("Ports nodes may use (the rest go up to the spine); empty: half the ports."),
    )
    scalable_unit = models.CharField(
        _("scalable unit"),
        max_length=32,
        blank=True,
        help_text=_(
            "The rail switches of one scalable unit share this name and form one leaf group: "
            "an 8-NIC node connects one NIC to each of them."
        ),
    )
    uplinks = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="downlinks",
        verbose_name=_("uplinks"),
        help_text=_("The spine switches this leaf connects to."),
    )

    class Meta:
        ordering = ["site__code", "name"]
        verbose_name = _("switch")
        verbose_name_plural = _("switches")
        constraints = [
            models.UniqueConstraint(fields=["site", "name"], name="switch_unique_name_per_site")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.rack_id and self.site_id and self.rack.site_id != self.site_id:
            raise ValidationError({"rack": _("The rack is in another site.")})
        if self.node_ports is not None and self.node_ports > self.port_count:
            raise ValidationError({"node_ports": _("More ports for nodes than the switch has.")})

    @property
    def ports_for_nodes(self) -> int:
        return self.node_ports if self.node_ports is not None else self.port_count // 2


class GPUModel(models.Model):
    """A GPU with its reference figures; each figure carries its source."""

    name = models.CharField(_("name"), max_length=64, unique=True)
    memory_gb = models.PositiveIntegerField(_("memory (GB)"))
    memory_bandwidth_tbs = models.DecimalField(
        _("memory bandwidth (TB/s)"), max_digits=6, decimal_places=3
    )
    reference_tflops = models.DecimalField(
        _("reference TFLOPS (measured)"), max_digits=8, decimal_places=1
    )
    reference_precision = models.CharField(
        _("reference precision"),
        max_length=8,
        choices=[("bf16", "bf16"), ("fp16", "fp16")],
        default="bf16",
    )
    reference_source = models.TextField(_("source of the reference figures"))
    nvlink_generation = models.PositiveSmallIntegerField(
        _("NVLink generation"), null=True, blank=True, help_text=_("Empty: PCIe only.")
    )

    class Meta:
        ordering = ["name"]
        verbose_name = _("GPU model")
        verbose_name_plural = _("GPU models")

    def __str__(self) -> str:
        return self.name


class Interconnect(models.TextChoices):
    NVSWITCH = "nvswitch", _("NVLink with NVSwitch (all-to-all)")
    NVLINK = "nvlink", _("NVLink bridges")
    PCIE = "pcie", _("PCIe only")


class NodeType(models.Model):
    """A server configuration that is rented as one unit."""

    code = models.SlugField(_("code"), max_length=32, unique=True)
    name = models.CharField(_("name"), max_length=100)
    name_zh = models.CharField(
        _("name (Chinese)"),
        max_length=100,
        blank=True,
        help_text=_("Shown on Chinese pages and documents; empty: the name above."),
    )
    cpu = models.CharField(_("CPU"), max_length=100, help_text=_("e.g. 2× Xeon Platinum 8480+"))
    ram_gb = models.PositiveIntegerField(_("RAM (GB)"))
    ram_kind = models.CharField(_("RAM kind"), max_length=32, blank=True)
    gpu_model = models.ForeignKey(
        GPUModel,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="node_types",
        verbose_name=_("GPU model"),
        help_text=_("Empty for a CPU server whose GPUs are optional cards."),
    )
    gpu_count = models.PositiveSmallIntegerField(_("GPUs"), default=0)
    interconnect = models.CharField(
        _("intra-node interconnect"), max_length=16, choices=Interconnect.choices
    )
    nic_count = models.PositiveSmallIntegerField(_("NICs"))
    nic_speed_gbps = models.PositiveIntegerField(_("NIC speed (Gb/s)"))
    fabric = models.CharField(_("inter-node fabric"), max_length=16, choices=Fabric.choices)
    storage = models.CharField(_("storage"), max_length=100)
    optional_gpu_models = models.ManyToManyField(
        GPUModel,
        blank=True,
        related_name="optional_in_node_types",
        verbose_name=_("optional GPU cards"),
    )
    max_optional_gpus = models.PositiveSmallIntegerField(
        _("optional GPU cards, at most"), default=0
    )
    description = models.TextField(_("description"), blank=True)

    class Meta:
        ordering = ["code"]
        verbose_name = _("node type")
        verbose_name_plural = _("node types")
        constraints = [
            models.CheckConstraint(
                condition=(Q(gpu_model__isnull=True) & Q(gpu_count=0))
                | (Q(gpu_model__isnull=False) & Q(gpu_count__gt=0)),
                name="nodetype_gpu_model_and_count_agree",
                violation_error_message=_("A GPU model needs a GPU count above 0, and no model 0."),
            ),
        ]

    def __str__(self) -> str:
        return self.display_name

    @property
    def display_name(self) -> str:
        """The name in the active language."""
        return self.name_zh if _chinese() and self.name_zh else self.name


class ImageProfile(models.Model):
    """An OS image an order is installed with (data, chosen at order time)."""

    code = models.SlugField(_("code"), max_length=48, unique=True)
    name = models.CharField(_("name"), max_length=200)
    image_url = models.URLField(_("installer image URL"), max_length=500)
    sha256 = models.CharField(_("SHA-256"), max_length=64, blank=True)
    ssh_user = models.CharField(_("SSH user"), max_length=32, default="ubuntu")
    is_default = models.BooleanField(_("default"), default=False)
    active = models.BooleanField(_("offered"), default=True)

    class Meta:
        ordering = ["-is_default", "name"]
        verbose_name = _("image profile")
        verbose_name_plural = _("image profiles")
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"],
                condition=Q(is_default=True),
                name="imageprofile_one_default",
            )
        ]

    def __str__(self) -> str:
        return self.name


class HardwareDriverKind(models.TextChoices):
    SIMULATED = "simulated", _("simulated")
    REDFISH = "redfish", _("Redfish")


def validate_secret_reference(value: str) -> None:
    """A credential is stored as a reference (``env:NAME`` or ``file:/path``), never as is."""
    if value and not (
        (value.startswith("env:") and len(value) > 4) or (value.startswith("file:/"))
    ):
        raise ValidationError(
            _("Store a reference to the secret (env:NAME or file:/path), never the password.")
        )


class NodeStatus(models.TextChoices):
    AVAILABLE = "available", _("available")
    RESERVED = "reserved", _("reserved")
    PROVISIONING = "provisioning", _("provisioning")
    VALIDATING = "validating", _("validating")
    IN_SERVICE = "in_service", _("in service")
    MAINTENANCE = "maintenance", _("maintenance")
    FAULTY = "faulty", _("faulty")
    RETIRED = "retired", _("retired")


# The node lifecycle: the one table of allowed moves (from -> allowed targets).
NODE_TRANSITIONS: dict[str, frozenset[str]] = {
    NodeStatus.AVAILABLE: frozenset(
        {NodeStatus.RESERVED, NodeStatus.MAINTENANCE, NodeStatus.FAULTY, NodeStatus.RETIRED}
    ),
    NodeStatus.RESERVED: frozenset(
        {NodeStatus.AVAILABLE, NodeStatus.PROVISIONING, NodeStatus.MAINTENANCE, NodeStatus.FAULTY}
    ),
    NodeStatus.PROVISIONING: frozenset(
        {NodeStatus.VALIDATING, NodeStatus.AVAILABLE, NodeStatus.FAULTY}
    ),
    NodeStatus.VALIDATING: frozenset(
        {NodeStatus.IN_SERVICE, NodeStatus.PROVISIONING, NodeStatus.AVAILABLE, NodeStatus.FAULTY}
    ),
    NodeStatus.IN_SERVICE: frozenset(
        {NodeStatus.AVAILABLE, NodeStatus.MAINTENANCE, NodeStatus.FAULTY}
    ),
    NodeStatus.MAINTENANCE: frozenset(
        {NodeStatus.AVAILABLE, NodeStatus.FAULTY, NodeStatus.RETIRED}
    ),
    NodeStatus.FAULTY: frozenset(
        {NodeStatus.MAINTENANCE, NodeStatus.AVAILABLE, NodeStatus.RETIRED}
    ),
    NodeStatus.RETIRED: frozenset(),
}

# Statuses that take a node out of every availability search, whatever the dates.
NODE_UNBOOKABLE_STATUSES = (NodeStatus.MAINTENANCE, NodeStatus.FAULTY, NodeStatus.RETIRED)


class Node(models.Model):
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="nodes", verbose_name=_("site")
    )
    node_type = models.ForeignKey(
        NodeType, on_delete=models.PROTECT, related_name="nodes", verbose_name=_("node type")
    )
    hostname = models.CharField(_("hostname"), max_length=100, unique=True)
    serial = models.CharField(_("serial number"), max_length=64, unique=True)
    bmc_address = models.CharField(
        _("BMC address"), max_length=255, blank=True, help_text=_("Redfish endpoint URL or IP.")
    )
    rack = models.ForeignKey(
        Rack, on_delete=models.PROTECT, related_name="nodes", verbose_name=_("rack")
    )
    leaf_switch = models.ForeignKey(
        Switch,
        on_delete=models.PROTECT,
        related_name="nodes",
        limit_choices_to={"role": SwitchRole.LEAF},
        verbose_name=_("leaf switch"),
    )
    bmc_system_id = models.CharField(
        _("BMC system id"), max_length=255, blank=True, help_text=_("Redfish ComputerSystem id.")
    )
    bmc_username = models.CharField(_("BMC user"), max_length=64, blank=True)
    bmc_password_ref = models.CharField(
        _("BMC password reference"),
        max_length=255,
        blank=True,
        validators=[validate_secret_reference],
        help_text=_("env:NAME or file:/path: the password itself is never stored."),
    )
    driver = models.CharField(
        _("hardware driver"),
        max_length=16,
        blank=True,
        choices=HardwareDriverKind.choices,
        help_text=_("Empty: the portal's default (PORTAL_HARDWARE_DRIVER)."),
    )
    ip_address = models.GenericIPAddressField(_("IP address"), null=True, blank=True)
    fabric_address = models.GenericIPAddressField(
        _("fabric address"),
        null=True,
        blank=True,
        help_text=_(
            "The node's address on the GPU fabric (IPoIB or RoCE), which NCCL and MPI use "
            "between the nodes of a cluster."
        ),
    )
    status = models.CharField(
        _("status"), max_length=16, choices=NodeStatus.choices, default=NodeStatus.AVAILABLE
    )
    status_changed_at = models.DateTimeField(_("status changed"), auto_now_add=True)
    notes = models.TextField(_("notes"), blank=True)

    lifecycle = Lifecycle(
        choices=NodeStatus,
        transitions=NODE_TRANSITIONS,
        event_model="inventory.NodeEvent",
        subject_field="node",
        describe=lambda node: gettext("Node %(hostname)s") % {"hostname": node.hostname},
        changed_at_field="status_changed_at",
    )

    class Meta:
        ordering = ["hostname"]
        verbose_name = _("node")
        verbose_name_plural = _("nodes")
        indexes = [models.Index(fields=["site", "node_type", "status"], name="node_search_idx")]

    def __str__(self) -> str:
        return self.hostname

    def clean(self) -> None:
        errors: dict[str, ValidationError] = {}
        if self.rack_id and self.site_id and self.rack.site_id != self.site_id:
            errors["rack"] = ValidationError(_("The rack is in another site."))
        if self.leaf_switch_id:
            leaf = self.leaf_switch
            if leaf.role != SwitchRole.LEAF:
                errors["leaf_switch"] = ValidationError(
                    _("“%(name)s” is a spine switch; a node hangs under a leaf."),
                    params={"name": leaf.name},
                )
            elif self.site_id and leaf.site_id != self.site_id:
                errors["leaf_switch"] = ValidationError(_("The leaf switch is in another site."))
        if errors:
            raise ValidationError(errors)


class NodeEvent(LifecycleEvent):
    """One row per node status transition: who, when, from, to, why."""

    node = models.ForeignKey(
        Node, on_delete=models.CASCADE, related_name="events", verbose_name=_("node")
    )

    class Meta(LifecycleEvent.Meta):
        ordering = ["-created_at", "-id"]
        verbose_name = _("node event")
        verbose_name_plural = _("node events")

    def __str__(self) -> str:
        return f"{self.node_id}: {self.from_label()} → {self.to_label()}"


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


class ReservationStatus(models.TextChoices):
    HOLD = "hold", _("hold")
    FIRM = "firm", _("firm")
    RELEASED = "released", _("released")
    EXPIRED = "expired", _("expired")
    ENDED = "ended", _("ended")


# The reservation lifecycle: a tentative hold becomes firm, or is released or expires.
RESERVATION_TRANSITIONS: dict[str, frozenset[str]] = {
    ReservationStatus.HOLD: frozenset(
        {ReservationStatus.FIRM, ReservationStatus.RELEASED, ReservationStatus.EXPIRED}
    ),
    ReservationStatus.FIRM: frozenset({ReservationStatus.RELEASED, ReservationStatus.ENDED}),
    ReservationStatus.RELEASED: frozenset(),
    ReservationStatus.EXPIRED: frozenset(),
    ReservationStatus.ENDED: frozenset(),
}
ACTIVE_RESERVATION_STATUSES = (ReservationStatus.HOLD, ReservationStatus.FIRM)


class Reservation(models.Model):
    """A node booked over the half-open range ``[start_at, end_at)``.

    The kind is the status while active: ``hold`` (tentative, with ``expires_at``) or
    ``firm``. ``group`` ties the nodes of one booking together; ``owner_ref`` names what
    the booking belongs to (``quote:Q-SZ-2026-000123``, ``order:42``).
    """

    node = models.ForeignKey(
        Node, on_delete=models.PROTECT, related_name="reservations", verbose_name=_("node")
    )
    start_at = models.DateTimeField(_("starts"))
    end_at = models.DateTimeField(_("ends"))
    # The node is kept from provisioning to the end of cleaning (``Site.held_range``);
    # no two active reservations of a node overlap on this range.
    held_from = models.DateTimeField(_("held from"))
    held_until = models.DateTimeField(_("held until"))
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=ReservationStatus.choices,
        default=ReservationStatus.HOLD,
    )
    expires_at = models.DateTimeField(
        _("hold expires"), null=True, blank=True, help_text=_("Only for holds.")
    )
    group = models.UUIDField(_("booking"), default=uuid.uuid4, db_index=True)
    owner_ref = models.CharField(_("belongs to"), max_length=100, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    lifecycle = Lifecycle(
        choices=ReservationStatus,
        transitions=RESERVATION_TRANSITIONS,
        event_model="inventory.ReservationEvent",
        subject_field="reservation",
        describe=lambda r: gettext("The booking of %(hostname)s") % {"hostname": r.node.hostname},
        lock_related=("node",),
    )

    class Meta:
        ordering = ["start_at", "node_id"]
        verbose_name = _("reservation")
        verbose_name_plural = _("reservations")
        indexes = [
            models.Index(
                fields=["node", "end_at", "start_at"],
                name="resv_active_node_range_idx",
                condition=Q(status__in=["hold", "firm"]),
            ),
            models.Index(
                fields=["expires_at"], name="resv_hold_expiry_idx", condition=Q(status="hold")
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(end_at__gt=models.F("start_at")),
                name="reservation_end_after_start",
                violation_error_message=_("A reservation must end after it starts."),
            ),
            models.CheckConstraint(
                condition=Q(held_from__lte=models.F("start_at"))
                & Q(held_until__gte=models.F("end_at")),
                name="reservation_held_covers_rental",
                violation_error_message=_("A reservation holds its node over its whole rental."),
            ),
            models.CheckConstraint(
                condition=~Q(status="hold") | Q(expires_at__isnull=False),
                name="reservation_hold_has_expiry",
                violation_error_message=_("A hold needs an expiry time."),
            ),
        ]

    def __str__(self) -> str:
        span = f"[{self.start_at:%Y-%m-%d %H:%M}, {self.end_at:%Y-%m-%d %H:%M})"
        return f"{self.node_id} {span} {self.get_status_display()}"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RESERVATION_STATUSES


class ReservationEvent(LifecycleEvent):
    reservation = models.ForeignKey(
        Reservation, on_delete=models.CASCADE, related_name="events", verbose_name=_("reservation")
    )

    class Meta(LifecycleEvent.Meta):
        ordering = ["-created_at", "-id"]
        verbose_name = _("reservation event")
        verbose_name_plural = _("reservation events")

    def __str__(self) -> str:
        return f"{self.reservation_id}: {self.from_label()} → {self.to_label()}"


# --- CSV imports run in the background ---------------------------------------------------


class ImportJobStatus(models.TextChoices):
    PENDING = "pending", _("waiting for a worker")
    RUNNING = "running", _("importing")
    DONE = "done", _("imported")
    FAILED = "failed", _("failed, nothing imported")


FINISHED_IMPORT_JOB_STATUSES = (ImportJobStatus.DONE, ImportJobStatus.FAILED)


class ImportJob(models.Model):
    """A node or switch CSV too large to import on the admin page, imported by a Celery task.

    Written only by ``inventory.csv_jobs``: the file is imported whole or not at all, and
    ``errors`` lists every failed row by its line in the file. Progress while the task
    runs is kept in the cache (the import's own transaction hides it from other readers);
    ``rows_done`` here is the final count.
    """

    kind = models.CharField(_("what"), max_length=20)
    file = models.FileField(_("file"), upload_to="inventory/imports/%Y/%m/")
    file_name = models.CharField(_("file name"), max_length=255)
    # The uploader's language: the row errors are written in it (blank: the site's default).
    language = models.CharField(_("language"), max_length=16, blank=True)
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=ImportJobStatus.choices,
        default=ImportJobStatus.PENDING,
        db_index=True,
    )
    rows_total = models.PositiveIntegerField(_("rows in the file"), default=0)
    rows_done = models.PositiveIntegerField(_("rows checked"), default=0)
    rows_new = models.PositiveIntegerField(_("rows added"), default=0)
    rows_updated = models.PositiveIntegerField(_("rows updated"), default=0)
    rows_unchanged = models.PositiveIntegerField(_("rows unchanged"), default=0)
    errors = models.JSONField(_("errors"), default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("uploaded"), auto_now_add=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("CSV import job")
        verbose_name_plural = _("CSV import jobs")

    def __str__(self) -> str:
        return f"{self.kind} {self.file_name} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_IMPORT_JOB_STATUSES
