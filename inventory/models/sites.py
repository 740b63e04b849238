"""Where the hardware stands: sites (data centres with their currency, VAT rate, time
zone, lead and cleaning times), racks and the switches of the fabric."""

from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext_lazy as _

__all__ = [
    "Currency",
    "Fabric",
    "Rack",
    "Site",
    "Switch",
    "SwitchRole",
    "validate_timezone",
]


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
