"""What is rented: GPU models with their reference figures, node types (the server
configurations rented as one unit) and the OS image profiles an order is installed with."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from inventory.models.sites import Fabric, _chinese

__all__ = [
    "GPUModel",
    "ImageProfile",
    "Interconnect",
    "NodeType",
]


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
