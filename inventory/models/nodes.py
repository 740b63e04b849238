"""Nodes (the servers themselves, with their BMC and hardware driver) and the node
lifecycle: its statuses, its table of allowed moves and its event rows."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.lifecycle import Lifecycle
from core.models import LifecycleEvent
from inventory.models.catalog import NodeType
from inventory.models.sites import Rack, Site, Switch, SwitchRole

__all__ = [
    "NODE_TRANSITIONS",
    "NODE_UNBOOKABLE_STATUSES",
    "HardwareDriverKind",
    "Node",
    "NodeEvent",
    "NodeStatus",
    "validate_secret_reference",
]


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
