"""inventory: every migration up to 2026-12 squashed into one (a fresh database applies
this one; a database that applied the old ones is left as it is). Generated from the
models, with the schema and data steps the old migrations ran by hand appended."""

import uuid
from decimal import Decimal

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.contrib.postgres.operations import BtreeGistExtension
from django.db import migrations, models

import inventory.models

# The exclusion constraint of inventory.0002 as inventory.0010 left it: no two active
# reservations (hold or firm) of one node overlap over the range they hold it for.
# PostgreSQL only: on SQLite (the embedded default) inventory.services.reservation_hold guards.
CREATE = """
ALTER TABLE inventory_reservation
ADD CONSTRAINT reservation_no_overlap
EXCLUDE USING gist (
    node_id WITH =,
    tstzrange(held_from, held_until, '[)') WITH &&
) WHERE (status IN ('hold', 'firm'))
"""
DROP = "ALTER TABLE inventory_reservation DROP CONSTRAINT IF EXISTS reservation_no_overlap"


def constraint_forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def constraint_backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("inventory", "0001_initial"),
        ("inventory", "0002_reservation_no_overlap"),
        ("inventory", "0003_import_job"),
        ("inventory", "0004_image_profiles_and_node_drivers"),
        ("inventory", "0005_site_lead_time"),
        ("inventory", "0006_switch_port_budget"),
        ("inventory", "0007_verbose_names_zh"),
        ("inventory", "0008_nodetype_name_zh"),
        ("inventory", "0009_event_reason_codes"),
        ("inventory", "0010_reservation_held_range"),
        ("inventory", "0011_node_fabric_address_site_jump_host"),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        BtreeGistExtension(),
        migrations.CreateModel(
            name="GPUModel",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=64, unique=True, verbose_name="name")),
                ("memory_gb", models.PositiveIntegerField(verbose_name="memory (GB)")),
                (
                    "memory_bandwidth_tbs",
                    models.DecimalField(
                        decimal_places=3, max_digits=6, verbose_name="memory bandwidth (TB/s)"
                    ),
                ),
                (
                    "reference_tflops",
                    models.DecimalField(
                        decimal_places=1, max_digits=8, verbose_name="reference TFLOPS (measured)"
                    ),
                ),
                (
                    "reference_precision",
                    models.CharField(
                        choices=[("bf16", "bf16"), ("fp16", "fp16")],
                        default="bf16",
                        max_length=8,
                        verbose_name="reference precision",
                    ),
                ),
                (
                    "reference_source",
                    models.TextField(verbose_name="source of the reference figures"),
                ),
                (
                    "nvlink_generation",
                    models.PositiveSmallIntegerField(
                        blank=True,
                        help_text="Empty: PCIe only.",
                        null=True,
                        verbose_name="NVLink generation",
                    ),
                ),
            ],
            options={
                "verbose_name": "GPU model",
                "verbose_name_plural": "GPU models",
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="Node",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "hostname",
                    models.CharField(max_length=100, unique=True, verbose_name="hostname"),
                ),
                (
                    "serial",
                    models.CharField(max_length=64, unique=True, verbose_name="serial number"),
                ),
                (
                    "bmc_address",
                    models.CharField(
                        blank=True,
                        help_text="Redfish endpoint URL or IP.",
                        max_length=255,
                        verbose_name="BMC address",
                    ),
                ),
                (
                    "bmc_system_id",
                    models.CharField(
                        blank=True,
                        help_text="Redfish ComputerSystem id.",
                        max_length=255,
                        verbose_name="BMC system id",
                    ),
                ),
                (
                    "bmc_username",
                    models.CharField(blank=True, max_length=64, verbose_name="BMC user"),
                ),
                (
                    "bmc_password_ref",
                    models.CharField(
                        blank=True,
                        help_text="env:NAME or file:/path: the password itself is never stored.",
                        max_length=255,
                        validators=[inventory.models.validate_secret_reference],
                        verbose_name="BMC password reference",
                    ),
                ),
                (
                    "driver",
                    models.CharField(
                        blank=True,
                        choices=[("simulated", "simulated"), ("redfish", "Redfish")],
                        help_text="Empty: the portal's default (PORTAL_HARDWARE_DRIVER).",
                        max_length=16,
                        verbose_name="hardware driver",
                    ),
                ),
                (
                    "ip_address",
                    models.GenericIPAddressField(blank=True, null=True, verbose_name="IP address"),
                ),
                (
                    "fabric_address",
                    models.GenericIPAddressField(
                        blank=True,
                        help_text="The node's address on the GPU fabric (IPoIB or RoCE), which NCCL and MPI use between the nodes of a cluster.",
                        null=True,
                        verbose_name="fabric address",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("available", "available"),
                            ("reserved", "reserved"),
                            ("provisioning", "provisioning"),
                            ("validating", "validating"),
                            ("in_service", "in service"),
                            ("maintenance", "maintenance"),
                            ("faulty", "faulty"),
                            ("retired", "retired"),
                        ],
                        default="available",
                        max_length=16,
                        verbose_name="status",
                    ),
                ),
                (
                    "status_changed_at",
                    models.DateTimeField(auto_now_add=True, verbose_name="status changed"),
                ),
                ("notes", models.TextField(blank=True, verbose_name="notes")),
            ],
            options={
                "verbose_name": "node",
                "verbose_name_plural": "nodes",
                "ordering": ["hostname"],
            },
        ),
        migrations.CreateModel(
            name="Rack",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("room", models.CharField(blank=True, max_length=50, verbose_name="room")),
                ("name", models.CharField(max_length=50, verbose_name="name")),
                (
                    "power_kw",
                    models.DecimalField(
                        blank=True,
                        decimal_places=1,
                        max_digits=6,
                        null=True,
                        verbose_name="power budget (kW)",
                    ),
                ),
            ],
            options={
                "verbose_name": "rack",
                "verbose_name_plural": "racks",
                "ordering": ["site__code", "name"],
            },
        ),
        migrations.CreateModel(
            name="ImageProfile",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("code", models.SlugField(max_length=48, unique=True, verbose_name="code")),
                ("name", models.CharField(max_length=200, verbose_name="name")),
                ("image_url", models.URLField(max_length=500, verbose_name="installer image URL")),
                ("sha256", models.CharField(blank=True, max_length=64, verbose_name="SHA-256")),
                (
                    "ssh_user",
                    models.CharField(default="ubuntu", max_length=32, verbose_name="SSH user"),
                ),
                ("is_default", models.BooleanField(default=False, verbose_name="default")),
                ("active", models.BooleanField(default=True, verbose_name="offered")),
            ],
            options={
                "verbose_name": "image profile",
                "verbose_name_plural": "image profiles",
                "ordering": ["-is_default", "name"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("is_default", True)),
                        fields=("is_default",),
                        name="imageprofile_one_default",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ImportJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=20, verbose_name="what")),
                (
                    "file",
                    models.FileField(upload_to="inventory/imports/%Y/%m/", verbose_name="file"),
                ),
                ("file_name", models.CharField(max_length=255, verbose_name="file name")),
                ("language", models.CharField(blank=True, max_length=16, verbose_name="language")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "waiting for a worker"),
                            ("running", "importing"),
                            ("done", "imported"),
                            ("failed", "failed, nothing imported"),
                        ],
                        db_index=True,
                        default="pending",
                        max_length=16,
                        verbose_name="status",
                    ),
                ),
                (
                    "rows_total",
                    models.PositiveIntegerField(default=0, verbose_name="rows in the file"),
                ),
                ("rows_done", models.PositiveIntegerField(default=0, verbose_name="rows checked")),
                ("rows_new", models.PositiveIntegerField(default=0, verbose_name="rows added")),
                (
                    "rows_updated",
                    models.PositiveIntegerField(default=0, verbose_name="rows updated"),
                ),
                (
                    "rows_unchanged",
                    models.PositiveIntegerField(default=0, verbose_name="rows unchanged"),
                ),
                ("errors", models.JSONField(blank=True, default=list, verbose_name="errors")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="uploaded")),
                ("started_at", models.DateTimeField(blank=True, null=True, verbose_name="started")),
                (
                    "finished_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="finished"),
                ),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="created by",
                    ),
                ),
            ],
            options={
                "verbose_name": "CSV import job",
                "verbose_name_plural": "CSV import jobs",
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="NodeEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("from_status", models.CharField(blank=True, max_length=24, verbose_name="from")),
                ("to_status", models.CharField(max_length=24, verbose_name="to")),
                ("reason", models.TextField(blank=True, verbose_name="why")),
                (
                    "reason_text",
                    models.JSONField(
                        blank=True, editable=False, null=True, verbose_name="why (code)"
                    ),
                ),
                (
                    "created_at",
                    models.DateTimeField(auto_now_add=True, db_index=True, verbose_name="when"),
                ),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="by",
                    ),
                ),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
            ],
            options={
                "verbose_name": "node event",
                "verbose_name_plural": "node events",
                "ordering": ["-created_at", "-id"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="NodeType",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("code", models.SlugField(max_length=32, unique=True, verbose_name="code")),
                ("name", models.CharField(max_length=100, verbose_name="name")),
                (
                    "name_zh",
                    models.CharField(
                        blank=True,
                        help_text="Shown on Chinese pages and documents; empty: the name above.",
                        max_length=100,
                        verbose_name="name (Chinese)",
                    ),
                ),
                (
                    "cpu",
                    models.CharField(
                        help_text="e.g. 2× Xeon Platinum 8480+", max_length=100, verbose_name="CPU"
                    ),
                ),
                ("ram_gb", models.PositiveIntegerField(verbose_name="RAM (GB)")),
                ("ram_kind", models.CharField(blank=True, max_length=32, verbose_name="RAM kind")),
                ("gpu_count", models.PositiveSmallIntegerField(default=0, verbose_name="GPUs")),
                (
                    "interconnect",
                    models.CharField(
                        choices=[
                            ("nvswitch", "NVLink with NVSwitch (all-to-all)"),
                            ("nvlink", "NVLink bridges"),
                            ("pcie", "PCIe only"),
                        ],
                        max_length=16,
                        verbose_name="intra-node interconnect",
                    ),
                ),
                ("nic_count", models.PositiveSmallIntegerField(verbose_name="NICs")),
                ("nic_speed_gbps", models.PositiveIntegerField(verbose_name="NIC speed (Gb/s)")),
                (
                    "fabric",
                    models.CharField(
                        choices=[
                            ("ib_ndr", "InfiniBand NDR 400G"),
                            ("ib_hdr", "InfiniBand HDR 200G"),
                            ("roce_v2", "RoCE v2"),
                            ("ethernet", "Ethernet"),
                        ],
                        max_length=16,
                        verbose_name="inter-node fabric",
                    ),
                ),
                ("storage", models.CharField(max_length=100, verbose_name="storage")),
                (
                    "max_optional_gpus",
                    models.PositiveSmallIntegerField(
                        default=0, verbose_name="optional GPU cards, at most"
                    ),
                ),
                ("description", models.TextField(blank=True, verbose_name="description")),
                (
                    "gpu_model",
                    models.ForeignKey(
                        blank=True,
                        help_text="Empty for a CPU server whose GPUs are optional cards.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="node_types",
                        to="inventory.gpumodel",
                        verbose_name="GPU model",
                    ),
                ),
                (
                    "optional_gpu_models",
                    models.ManyToManyField(
                        blank=True,
                        related_name="optional_in_node_types",
                        to="inventory.gpumodel",
                        verbose_name="optional GPU cards",
                    ),
                ),
            ],
            options={
                "verbose_name": "node type",
                "verbose_name_plural": "node types",
                "ordering": ["code"],
            },
        ),
        migrations.AddField(
            model_name="node",
            name="node_type",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="nodes",
                to="inventory.nodetype",
                verbose_name="node type",
            ),
        ),
        migrations.AddField(
            model_name="node",
            name="rack",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="nodes",
                to="inventory.rack",
                verbose_name="rack",
            ),
        ),
        migrations.CreateModel(
            name="Reservation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("start_at", models.DateTimeField(verbose_name="starts")),
                ("end_at", models.DateTimeField(verbose_name="ends")),
                ("held_from", models.DateTimeField(verbose_name="held from")),
                ("held_until", models.DateTimeField(verbose_name="held until")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("hold", "hold"),
                            ("firm", "firm"),
                            ("released", "released"),
                            ("expired", "expired"),
                            ("ended", "ended"),
                        ],
                        default="hold",
                        max_length=16,
                        verbose_name="status",
                    ),
                ),
                (
                    "expires_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Only for holds.",
                        null=True,
                        verbose_name="hold expires",
                    ),
                ),
                (
                    "group",
                    models.UUIDField(db_index=True, default=uuid.uuid4, verbose_name="booking"),
                ),
                (
                    "owner_ref",
                    models.CharField(db_index=True, max_length=100, verbose_name="belongs to"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="created by",
                    ),
                ),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="reservations",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
            ],
            options={
                "verbose_name": "reservation",
                "verbose_name_plural": "reservations",
                "ordering": ["start_at", "node_id"],
            },
        ),
        migrations.CreateModel(
            name="ReservationEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("from_status", models.CharField(blank=True, max_length=24, verbose_name="from")),
                ("to_status", models.CharField(max_length=24, verbose_name="to")),
                ("reason", models.TextField(blank=True, verbose_name="why")),
                (
                    "reason_text",
                    models.JSONField(
                        blank=True, editable=False, null=True, verbose_name="why (code)"
                    ),
                ),
                (
                    "created_at",
                    models.DateTimeField(auto_now_add=True, db_index=True, verbose_name="when"),
                ),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="by",
                    ),
                ),
                (
                    "reservation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="inventory.reservation",
                        verbose_name="reservation",
                    ),
                ),
            ],
            options={
                "verbose_name": "reservation event",
                "verbose_name_plural": "reservation events",
                "ordering": ["-created_at", "-id"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="Site",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "code",
                    models.SlugField(
                        help_text="e.g. SZ, HK", max_length=8, unique=True, verbose_name="code"
                    ),
                ),
                ("name", models.CharField(max_length=100, verbose_name="name")),
                (
                    "name_zh",
                    models.CharField(blank=True, max_length=100, verbose_name="name (Chinese)"),
                ),
                ("city", models.CharField(max_length=100, verbose_name="city")),
                (
                    "city_zh",
                    models.CharField(blank=True, max_length=100, verbose_name="city (Chinese)"),
                ),
                (
                    "timezone",
                    models.CharField(
                        default="Asia/Shanghai",
                        max_length=64,
                        validators=[inventory.models.validate_timezone],
                        verbose_name="time zone",
                    ),
                ),
                (
                    "currency",
                    models.CharField(
                        choices=[
                            ("CNY", "Chinese yuan (CNY)"),
                            ("HKD", "Hong Kong dollar (HKD)"),
                            ("USD", "US dollar (USD)"),
                        ],
                        max_length=3,
                        verbose_name="currency",
                    ),
                ),
                (
                    "vat_rate",
                    models.DecimalField(
                        decimal_places=4,
                        help_text="As a fraction: 0.0600 is 6%.",
                        max_digits=5,
                        validators=[
                            django.core.validators.MinValueValidator(Decimal("0")),
                            django.core.validators.MaxValueValidator(Decimal("1")),
                        ],
                        verbose_name="VAT rate",
                    ),
                ),
                (
                    "lead_time_hours",
                    models.PositiveIntegerField(
                        default=24,
                        help_text="How long the site needs to prepare nodes: the earliest start of an order is this long after it is paid.",
                        validators=[django.core.validators.MaxValueValidator(2160)],
                        verbose_name="lead time (hours)",
                    ),
                ),
                (
                    "ssh_jump_host",
                    models.CharField(
                        blank=True,
                        help_text="The bastion customers connect through (user@host or host:port), shown in the delivery details; empty: the portal's PORTAL_SSH_JUMP_HOST.",
                        max_length=200,
                        verbose_name="SSH jump host",
                    ),
                ),
                (
                    "cleaning_hours",
                    models.PositiveIntegerField(
                        default=8,
                        help_text="How long cleaning takes after a rental ends (disk wipe, BIOS reset, checks): the node stays booked for this long after the end.",
                        validators=[django.core.validators.MaxValueValidator(720)],
                        verbose_name="cleaning time (hours)",
                    ),
                ),
            ],
            options={
                "verbose_name": "site",
                "verbose_name_plural": "sites",
                "ordering": ["code"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("vat_rate__gte", 0), ("vat_rate__lte", 1)),
                        name="site_vat_rate_range",
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="rack",
            name="site",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="racks",
                to="inventory.site",
                verbose_name="site",
            ),
        ),
        migrations.AddField(
            model_name="node",
            name="site",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="nodes",
                to="inventory.site",
                verbose_name="site",
            ),
        ),
        migrations.CreateModel(
            name="Switch",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=64, verbose_name="name")),
                (
                    "role",
                    models.CharField(
                        choices=[("leaf", "leaf"), ("spine", "spine")],
                        max_length=8,
                        verbose_name="role",
                    ),
                ),
                (
                    "fabric",
                    models.CharField(
                        choices=[
                            ("ib_ndr", "InfiniBand NDR 400G"),
                            ("ib_hdr", "InfiniBand HDR 200G"),
                            ("roce_v2", "RoCE v2"),
                            ("ethernet", "Ethernet"),
                        ],
                        max_length=16,
                        verbose_name="fabric",
                    ),
                ),
                ("port_speed_gbps", models.PositiveIntegerField(verbose_name="port speed (Gb/s)")),
                ("port_count", models.PositiveIntegerField(default=64, verbose_name="ports")),
                (
                    "node_ports",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Ports nodes may use (the rest go up to the spine); empty: half the ports.",
                        null=True,
                        verbose_name="ports for nodes",
                    ),
                ),
                (
                    "scalable_unit",
                    models.CharField(
                        blank=True,
                        help_text="The rail switches of one scalable unit share this name and form one leaf group: an 8-NIC node connects one NIC to each of them.",
                        max_length=32,
                        verbose_name="scalable unit",
                    ),
                ),
                (
                    "rack",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="switches",
                        to="inventory.rack",
                        verbose_name="rack",
                    ),
                ),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="switches",
                        to="inventory.site",
                        verbose_name="site",
                    ),
                ),
                (
                    "uplinks",
                    models.ManyToManyField(
                        blank=True,
                        help_text="The spine switches this leaf connects to.",
                        related_name="downlinks",
                        to="inventory.switch",
                        verbose_name="uplinks",
                    ),
                ),
            ],
            options={
                "verbose_name": "switch",
                "verbose_name_plural": "switches",
                "ordering": ["site__code", "name"],
            },
        ),
        migrations.AddField(
            model_name="node",
            name="leaf_switch",
            field=models.ForeignKey(
                limit_choices_to={"role": "leaf"},
                on_delete=django.db.models.deletion.PROTECT,
                related_name="nodes",
                to="inventory.switch",
                verbose_name="leaf switch",
            ),
        ),
        migrations.CreateModel(
            name="MaintenanceWindow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("start_at", models.DateTimeField(verbose_name="starts")),
                ("end_at", models.DateTimeField(verbose_name="ends")),
                ("reason", models.CharField(max_length=200, verbose_name="reason")),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="created by",
                    ),
                ),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="maintenance_windows",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
            ],
            options={
                "verbose_name": "maintenance window",
                "verbose_name_plural": "maintenance windows",
                "ordering": ["start_at"],
                "indexes": [
                    models.Index(fields=["node", "end_at", "start_at"], name="maint_node_range_idx")
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("end_at__gt", models.F("start_at"))),
                        name="maintenance_end_after_start",
                        violation_error_message="The window must end after it starts.",
                    )
                ],
            },
        ),
        migrations.AddConstraint(
            model_name="nodetype",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("gpu_model__isnull", True), ("gpu_count", 0)),
                    models.Q(("gpu_model__isnull", False), ("gpu_count__gt", 0)),
                    _connector="OR",
                ),
                name="nodetype_gpu_model_and_count_agree",
                violation_error_message="A GPU model needs a GPU count above 0, and no model 0.",
            ),
        ),
        migrations.AddIndex(
            model_name="reservation",
            index=models.Index(
                condition=models.Q(("status__in", ["hold", "firm"])),
                fields=["node", "end_at", "start_at"],
                name="resv_active_node_range_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="reservation",
            index=models.Index(
                condition=models.Q(("status", "hold")),
                fields=["expires_at"],
                name="resv_hold_expiry_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="reservation",
            constraint=models.CheckConstraint(
                condition=models.Q(("end_at__gt", models.F("start_at"))),
                name="reservation_end_after_start",
                violation_error_message="A reservation must end after it starts.",
            ),
        ),
        migrations.AddConstraint(
            model_name="reservation",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("held_from__lte", models.F("start_at")),
                    ("held_until__gte", models.F("end_at")),
                ),
                name="reservation_held_covers_rental",
                violation_error_message="A reservation holds its node over its whole rental.",
            ),
        ),
        migrations.AddConstraint(
            model_name="reservation",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("status", "hold"), _negated=True),
                    ("expires_at__isnull", False),
                    _connector="OR",
                ),
                name="reservation_hold_has_expiry",
                violation_error_message="A hold needs an expiry time.",
            ),
        ),
        migrations.AddConstraint(
            model_name="rack",
            constraint=models.UniqueConstraint(
                fields=("site", "name"), name="rack_unique_name_per_site"
            ),
        ),
        migrations.AddConstraint(
            model_name="switch",
            constraint=models.UniqueConstraint(
                fields=("site", "name"), name="switch_unique_name_per_site"
            ),
        ),
        migrations.AddIndex(
            model_name="node",
            index=models.Index(fields=["site", "node_type", "status"], name="node_search_idx"),
        ),
        migrations.RunPython(constraint_forwards, constraint_backwards),
    ]
