"""provisioning: every migration up to 2026-12 squashed into one (a fresh database applies
this one; a database that applied the old ones is left as it is). Generated from the
models, with the schema and data steps the old migrations ran by hand appended."""

import django.db.models.deletion
from django.conf import settings
from provisioning.validation import seeding
from django.db import migrations, models


def seed_validation_rules(apps, schema_editor):
    """provisioning.0003 and 0007: the acceptance rules of VALIDATION.md."""
    seeding.replace_seed(
        apps.get_model("provisioning", "ValidationRule"), using=schema_editor.connection.alias
    )


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("provisioning", "0001_provisioning_runs"),
        ("provisioning", "0002_validation_runs_rules_reports"),
        ("provisioning", "0003_seed_validation_rules"),
        ("provisioning", "0004_node_validation_proxy"),
        ("provisioning", "0005_verbose_names_zh"),
        ("provisioning", "0006_day_two_health_incidents_spares_policies"),
        ("provisioning", "0006_event_reason_codes"),
        ("provisioning", "0006_validation_rule_gpu_count"),
        ("provisioning", "0007_reseed_validation_rules_issue19"),
        ("provisioning", "0007_runnode_host_keys"),
        ("provisioning", "0008_merge_20261201_2101"),
        ("provisioning", "0008_merge_day_two_and_host_keys"),
        ("provisioning", "0009_health_incident_event_reason_code"),
        ("provisioning", "0010_merge_validation_gpu_count_and_day_two"),
        ("provisioning", "0011_merge_money_and_validation"),
    ]

    dependencies = [
        ("billing", "0001_squashed_2026_12"),
        ("inventory", "0001_squashed_2026_12"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="NodeValidation",
            fields=[],
            options={
                "verbose_name": "node validation",
                "verbose_name_plural": "node validation",
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("inventory.node",),
        ),
        migrations.CreateModel(
            name="HealthIncident",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("rule", models.CharField(max_length=48, verbose_name="health rule")),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("notify", "notify"),
                            ("revalidate", "re-validate (quick profile)"),
                            ("replace", "replace"),
                        ],
                        max_length=12,
                        verbose_name="action",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("open", "detected"),
                            ("awaiting", "waiting for your approval"),
                            ("revalidating", "re-validating"),
                            ("replacing", "replacing"),
                            ("replaced", "replaced"),
                            ("no_spare", "no spare free: staff informed"),
                            ("notified", "notified"),
                            ("resolved", "resolved"),
                        ],
                        default="open",
                        max_length=16,
                        verbose_name="status",
                    ),
                ),
                (
                    "status_changed_at",
                    models.DateTimeField(auto_now_add=True, verbose_name="status changed"),
                ),
                ("metric", models.CharField(max_length=100, verbose_name="metric")),
                ("value", models.FloatField(verbose_name="value")),
                ("gpu", models.CharField(blank=True, max_length=16, verbose_name="GPU")),
                ("observed_at", models.DateTimeField(verbose_name="observed")),
                ("detected_at", models.DateTimeField(auto_now_add=True, verbose_name="detected")),
                (
                    "decide_by",
                    models.DateTimeField(blank=True, null=True, verbose_name="decide by"),
                ),
                (
                    "validation_run_id",
                    models.PositiveIntegerField(
                        blank=True, null=True, verbose_name="validation run"
                    ),
                ),
                (
                    "handed_over_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="handed over"),
                ),
                (
                    "approved_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="approved by",
                    ),
                ),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="health_incidents",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
                (
                    "order",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="health_incidents",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
            ],
            options={
                "verbose_name": "health incident",
                "verbose_name_plural": "health incidents",
                "ordering": ["-detected_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="HealthIncidentEvent",
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
                    "incident",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="provisioning.healthincident",
                        verbose_name="incident",
                    ),
                ),
            ],
            options={
                "verbose_name": "health incident event",
                "verbose_name_plural": "health incident events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="NodeStep",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "name",
                    models.CharField(
                        choices=[
                            ("claim", "claim the node"),
                            ("power_off", "power off"),
                            ("network_boot", "one-time network boot"),
                            ("power_on", "power on"),
                            ("install", "install the OS image"),
                            ("access", "install SSH keys, hostname and network"),
                            ("fabric", "fabric isolation"),
                            ("boot_os", "boot the OS"),
                            ("check_os", "check the OS answers"),
                            ("validate", "validation"),
                            ("erase", "secure disk erase"),
                            ("bios_reset", "BIOS reset"),
                            ("check_clean", "check and release"),
                        ],
                        max_length=16,
                        verbose_name="step",
                    ),
                ),
                ("position", models.PositiveSmallIntegerField(verbose_name="order")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "waiting"),
                            ("running", "running"),
                            ("done", "done"),
                            ("failed", "failed"),
                            ("skipped", "skipped"),
                        ],
                        default="pending",
                        max_length=16,
                        verbose_name="status",
                    ),
                ),
                (
                    "status_changed_at",
                    models.DateTimeField(auto_now_add=True, verbose_name="status changed"),
                ),
                ("attempt", models.PositiveSmallIntegerField(default=0, verbose_name="attempt")),
                ("started_at", models.DateTimeField(blank=True, null=True, verbose_name="started")),
                (
                    "finished_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="finished"),
                ),
                (
                    "lease_until",
                    models.DateTimeField(blank=True, null=True, verbose_name="lease until"),
                ),
                ("expected_s", models.FloatField(default=0.0, verbose_name="expected seconds")),
                ("message", models.TextField(blank=True, verbose_name="message")),
                ("log_excerpt", models.TextField(blank=True, verbose_name="log excerpt")),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="provisioning_steps",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
            ],
            options={
                "verbose_name": "node step",
                "verbose_name_plural": "node steps",
                "ordering": ["run_id", "node_id", "position"],
            },
        ),
        migrations.CreateModel(
            name="NodeStepEvent",
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
                    "step",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="provisioning.nodestep",
                        verbose_name="step",
                    ),
                ),
            ],
            options={
                "verbose_name": "node step event",
                "verbose_name_plural": "node step events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="NodeSwap",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("reason", models.TextField(verbose_name="reason")),
                ("failed_at", models.DateTimeField(verbose_name="failed")),
                (
                    "restored_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="spare delivered"),
                ),
                (
                    "hours_lost",
                    models.DecimalField(
                        decimal_places=2, default=0, max_digits=10, verbose_name="hours lost"
                    ),
                ),
                (
                    "failed_node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.node",
                        verbose_name="failed node",
                    ),
                ),
                (
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="node_swaps",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
                (
                    "requested_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="requested by",
                    ),
                ),
                (
                    "spare_node",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.node",
                        verbose_name="spare node",
                    ),
                ),
            ],
            options={
                "verbose_name": "node swap",
                "verbose_name_plural": "node swaps",
                "ordering": ["failed_at", "pk"],
            },
        ),
        migrations.AddField(
            model_name="healthincident",
            name="swap",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="provisioning.nodeswap",
                verbose_name="swap",
            ),
        ),
        migrations.CreateModel(
            name="ProvisioningRun",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("provision", "provisioning"),
                            ("clean", "cleaning"),
                            ("replace", "replacement"),
                        ],
                        default="provision",
                        max_length=16,
                        verbose_name="kind",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "pending"),
                            ("running", "running"),
                            ("validating", "validating"),
                            ("delivered", "delivered"),
                            ("failed", "failed"),
                            ("cancelled", "cancelled"),
                        ],
                        default="pending",
                        max_length=16,
                        verbose_name="status",
                    ),
                ),
                (
                    "status_changed_at",
                    models.DateTimeField(auto_now_add=True, verbose_name="status changed"),
                ),
                (
                    "driver",
                    models.CharField(blank=True, max_length=16, verbose_name="hardware driver"),
                ),
                ("message", models.TextField(blank=True, verbose_name="current message")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("started_at", models.DateTimeField(blank=True, null=True, verbose_name="started")),
                (
                    "finished_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="finished"),
                ),
                (
                    "deadline_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="deadline"),
                ),
                ("launch", models.PositiveIntegerField(default=0, verbose_name="launch")),
                (
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="provisioning_runs",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
            ],
            options={
                "verbose_name": "provisioning run",
                "verbose_name_plural": "provisioning runs",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.AddField(
            model_name="nodeswap",
            name="run",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="swaps",
                to="provisioning.provisioningrun",
                verbose_name="run",
            ),
        ),
        migrations.AddField(
            model_name="nodestep",
            name="run",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="steps",
                to="provisioning.provisioningrun",
                verbose_name="run",
            ),
        ),
        migrations.AddField(
            model_name="healthincident",
            name="replacement_run",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="provisioning.provisioningrun",
                verbose_name="replacement run",
            ),
        ),
        migrations.CreateModel(
            name="ProvisioningRunEvent",
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
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="provisioning.provisioningrun",
                        verbose_name="run",
                    ),
                ),
            ],
            options={
                "verbose_name": "provisioning run event",
                "verbose_name_plural": "provisioning run events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="ReplacementPolicy",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "mode",
                    models.CharField(
                        choices=[("automatic", "automatic"), ("ask", "ask me first")],
                        default="automatic",
                        max_length=12,
                        verbose_name="replacement",
                    ),
                ),
                (
                    "ask_minutes",
                    models.PositiveIntegerField(
                        default=30,
                        help_text="With “ask me first”: replace anyway when nobody answered by then.",
                        verbose_name="proceed after (minutes)",
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="changed")),
                (
                    "order",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="replacement_policy",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
                (
                    "updated_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="changed by",
                    ),
                ),
            ],
            options={
                "verbose_name": "replacement policy",
                "verbose_name_plural": "replacement policies",
            },
        ),
        migrations.CreateModel(
            name="RunNode",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("slot", models.PositiveSmallIntegerField(verbose_name="slot")),
                (
                    "state",
                    models.CharField(
                        choices=[("active", "active"), ("swapped_out", "swapped out")],
                        default="active",
                        max_length=16,
                        verbose_name="state",
                    ),
                ),
                ("ssh_user", models.CharField(blank=True, max_length=32, verbose_name="SSH user")),
                ("addresses", models.JSONField(blank=True, default=list, verbose_name="addresses")),
                (
                    "host_keys",
                    models.JSONField(blank=True, default=list, verbose_name="SSH host keys"),
                ),
                (
                    "delivered_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="delivered"),
                ),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="run_nodes",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="run_nodes",
                        to="provisioning.provisioningrun",
                        verbose_name="run",
                    ),
                ),
            ],
            options={
                "verbose_name": "node of a run",
                "verbose_name_plural": "nodes of runs",
                "ordering": ["run_id", "slot", "pk"],
            },
        ),
        migrations.CreateModel(
            name="SimulatedFault",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("xid", "XID error"),
                            ("ecc_sbe", "correctable ECC errors"),
                            ("ecc_dbe", "uncorrectable ECC errors"),
                            ("row_remap_failure", "row-remap failure"),
                            ("nvlink_down", "NVLink down"),
                            ("ib_down", "InfiniBand port down"),
                            ("ib_flap", "InfiniBand link flapping"),
                            ("throttle", "clock throttle"),
                            ("gpu_missing", "GPU missing"),
                            ("node_silent", "node silent"),
                            ("util_dip", "utilisation dip"),
                        ],
                        max_length=24,
                        verbose_name="fault",
                    ),
                ),
                (
                    "gpu",
                    models.PositiveSmallIntegerField(
                        blank=True, null=True, verbose_name="GPU (or port)"
                    ),
                ),
                ("value", models.FloatField(default=0.0, verbose_name="value")),
                ("start_at", models.DateTimeField(verbose_name="from")),
                ("end_at", models.DateTimeField(blank=True, null=True, verbose_name="until")),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="simulated_faults",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
            ],
            options={
                "verbose_name": "simulated fault",
                "verbose_name_plural": "simulated faults",
                "ordering": ["start_at", "pk"],
            },
        ),
        migrations.CreateModel(
            name="SparePool",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "target",
                    models.PositiveIntegerField(
                        help_text="Free nodes kept back for replacements.",
                        verbose_name="spares to keep",
                    ),
                ),
                (
                    "node_type",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        to="inventory.nodetype",
                        verbose_name="node type",
                    ),
                ),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        to="inventory.site",
                        verbose_name="site",
                    ),
                ),
            ],
            options={
                "verbose_name": "spare pool",
                "verbose_name_plural": "spare pools",
            },
        ),
        migrations.CreateModel(
            name="UtilisationAlert",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("raised_at", models.DateTimeField(auto_now_add=True, verbose_name="raised")),
                ("utilisation", models.FloatField(verbose_name="utilisation")),
                (
                    "pointer",
                    models.CharField(max_length=24, verbose_name="what the metrics point at"),
                ),
                (
                    "answered_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="answered"),
                ),
                (
                    "answered_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="answered by",
                    ),
                ),
                (
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="utilisation_alerts",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
            ],
            options={
                "verbose_name": "low-utilisation alert",
                "verbose_name_plural": "low-utilisation alerts",
                "ordering": ["-raised_at"],
            },
        ),
        migrations.CreateModel(
            name="ValidationRule",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("metric", models.CharField(max_length=64, verbose_name="metric")),
                (
                    "gpu_model",
                    models.CharField(
                        help_text="A model key (H100, H200, A100-80G, …), “*” for any GPU, or “cpu”.",
                        max_length=32,
                        verbose_name="GPU model",
                    ),
                ),
                (
                    "fabric",
                    models.CharField(
                        blank=True,
                        help_text="Only on this fabric (ndr400 …).",
                        max_length=16,
                        verbose_name="fabric",
                    ),
                ),
                (
                    "scope",
                    models.CharField(
                        choices=[("node", "per node"), ("cluster", "per cluster")],
                        default="node",
                        max_length=8,
                        verbose_name="scope",
                    ),
                ),
                (
                    "check_name",
                    models.CharField(
                        blank=True,
                        help_text="The check that measures it.",
                        max_length=32,
                        verbose_name="agent check",
                    ),
                ),
                (
                    "message_size_bytes",
                    models.BigIntegerField(
                        blank=True, null=True, verbose_name="message size (bytes)"
                    ),
                ),
                (
                    "gpu_count",
                    models.PositiveSmallIntegerField(
                        blank=True,
                        help_text="Only for nodes with this many GPUs (empty: any).",
                        null=True,
                        verbose_name="GPUs per node",
                    ),
                ),
                ("unit", models.CharField(blank=True, max_length=16, verbose_name="unit")),
                (
                    "baseline",
                    models.DecimalField(
                        blank=True,
                        decimal_places=4,
                        max_digits=16,
                        null=True,
                        verbose_name="baseline",
                    ),
                ),
                (
                    "baseline_from",
                    models.CharField(
                        blank=True,
                        help_text="Take the baseline from the node's expected figures (e.g. gpu_count).",
                        max_length=64,
                        verbose_name="baseline from",
                    ),
                ),
                (
                    "baseline_multiplier_from",
                    models.CharField(
                        blank=True, max_length=64, verbose_name="baseline multiplied by"
                    ),
                ),
                (
                    "min_variance",
                    models.DecimalField(
                        blank=True,
                        decimal_places=4,
                        max_digits=8,
                        null=True,
                        verbose_name="minimum variance",
                    ),
                ),
                (
                    "min_value",
                    models.DecimalField(
                        blank=True,
                        decimal_places=4,
                        max_digits=16,
                        null=True,
                        verbose_name="minimum",
                    ),
                ),
                (
                    "min_inclusive",
                    models.BooleanField(default=True, verbose_name="minimum included"),
                ),
                (
                    "max_value",
                    models.DecimalField(
                        blank=True,
                        decimal_places=4,
                        max_digits=16,
                        null=True,
                        verbose_name="maximum",
                    ),
                ),
                ("equals", models.CharField(blank=True, max_length=32, verbose_name="equals")),
                (
                    "max_below_median",
                    models.DecimalField(
                        blank=True,
                        decimal_places=4,
                        max_digits=6,
                        null=True,
                        verbose_name="max. below node median",
                    ),
                ),
                ("required", models.BooleanField(default=True, verbose_name="required")),
                ("active", models.BooleanField(default=True, verbose_name="active")),
                ("source", models.TextField(verbose_name="source")),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated")),
            ],
            options={
                "verbose_name": "validation rule",
                "verbose_name_plural": "validation rules",
                "ordering": ["scope", "gpu_model", "metric", "fabric", "pk"],
                "indexes": [
                    models.Index(fields=["active", "gpu_model"], name="validation_rule_idx")
                ],
            },
        ),
        migrations.CreateModel(
            name="ValidationRun",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "profile",
                    models.CharField(
                        choices=[("quick", "quick health check"), ("acceptance", "acceptance")],
                        default="acceptance",
                        max_length=12,
                        verbose_name="profile",
                    ),
                ),
                (
                    "trigger",
                    models.CharField(
                        choices=[
                            ("provisioning", "provisioning run"),
                            ("staff", "staff re-check"),
                            ("idle_sweep", "idle-node sweep"),
                            ("health", "health rule"),
                        ],
                        default="staff",
                        max_length=16,
                        verbose_name="started by",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "pending"),
                            ("running", "running"),
                            ("passed", "passed"),
                            ("failed", "failed"),
                            ("cancelled", "cancelled"),
                        ],
                        default="pending",
                        max_length=12,
                        verbose_name="status",
                    ),
                ),
                (
                    "status_changed_at",
                    models.DateTimeField(auto_now_add=True, verbose_name="status changed"),
                ),
                ("started_at", models.DateTimeField(blank=True, null=True, verbose_name="started")),
                (
                    "finished_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="finished"),
                ),
                (
                    "cluster_accepted",
                    models.BooleanField(blank=True, null=True, verbose_name="cluster accepted"),
                ),
                (
                    "cluster_reasons",
                    models.JSONField(blank=True, default=list, verbose_name="cluster reasons"),
                ),
                (
                    "cluster_verdict",
                    models.JSONField(blank=True, default=dict, verbose_name="cluster verdict"),
                ),
                (
                    "cluster_metrics",
                    models.JSONField(blank=True, default=dict, verbose_name="cluster measurement"),
                ),
                (
                    "rules_snapshot",
                    models.JSONField(blank=True, default=list, verbose_name="rules applied"),
                ),
                ("error", models.TextField(blank=True, verbose_name="error")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "nodes",
                    models.ManyToManyField(
                        related_name="validation_runs", to="inventory.node", verbose_name="nodes"
                    ),
                ),
                (
                    "order",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="validation_runs",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
                (
                    "requested_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="requested by",
                    ),
                ),
            ],
            options={
                "verbose_name": "validation run",
                "verbose_name_plural": "validation runs",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="ValidationReport",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "language",
                    models.CharField(
                        choices=[("zh-hans", "Simplified Chinese"), ("en", "English")],
                        max_length=8,
                        verbose_name="language",
                    ),
                ),
                ("sha256", models.CharField(max_length=64, verbose_name="SHA-256")),
                ("size", models.PositiveIntegerField(verbose_name="size")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                ("file", models.FileField(upload_to="acceptance/%Y/", verbose_name="file")),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reports",
                        to="provisioning.validationrun",
                        verbose_name="run",
                    ),
                ),
            ],
            options={
                "verbose_name": "acceptance report",
                "verbose_name_plural": "acceptance reports",
            },
        ),
        migrations.CreateModel(
            name="ValidationNodeResult",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("hostname", models.CharField(max_length=100, verbose_name="hostname")),
                ("gpu_model", models.CharField(max_length=64, verbose_name="GPU model judged")),
                ("device", models.CharField(blank=True, max_length=16, verbose_name="device")),
                ("accepted", models.BooleanField(verbose_name="accepted")),
                ("reasons", models.JSONField(blank=True, default=list, verbose_name="reasons")),
                ("notes", models.JSONField(blank=True, default=list, verbose_name="notes")),
                (
                    "rule_results",
                    models.JSONField(blank=True, default=list, verbose_name="rule results"),
                ),
                (
                    "report",
                    models.JSONField(blank=True, default=dict, verbose_name="agent document"),
                ),
                (
                    "report_sha256",
                    models.CharField(blank=True, max_length=64, verbose_name="document SHA-256"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="recorded")),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="validation_results",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="results",
                        to="provisioning.validationrun",
                        verbose_name="run",
                    ),
                ),
            ],
            options={
                "verbose_name": "node result",
                "verbose_name_plural": "node results",
                "ordering": ["run", "hostname"],
            },
        ),
        migrations.CreateModel(
            name="ValidationArtifact",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("check_name", models.CharField(max_length=48, verbose_name="check")),
                (
                    "status",
                    models.CharField(blank=True, max_length=16, verbose_name="check status"),
                ),
                ("raw_format", models.CharField(blank=True, max_length=32, verbose_name="format")),
                ("content", models.TextField(blank=True, verbose_name="raw output")),
                ("sha256", models.CharField(max_length=64, verbose_name="SHA-256")),
                ("size", models.PositiveIntegerField(verbose_name="bytes")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="recorded")),
                (
                    "node",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="validation_artifacts",
                        to="inventory.node",
                        verbose_name="node",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="artifacts",
                        to="provisioning.validationrun",
                        verbose_name="run",
                    ),
                ),
            ],
            options={
                "verbose_name": "raw output",
                "verbose_name_plural": "raw outputs",
                "ordering": ["run", "node_id", "pk"],
            },
        ),
        migrations.CreateModel(
            name="ValidationRunEvent",
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
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="provisioning.validationrun",
                        verbose_name="run",
                    ),
                ),
            ],
            options={
                "verbose_name": "validation run event",
                "verbose_name_plural": "validation run events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="FabricAllocation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=8, verbose_name="kind")),
                ("value", models.PositiveIntegerField(verbose_name="value")),
                ("fabric", models.CharField(max_length=16, verbose_name="fabric")),
                ("allocated_at", models.DateTimeField(auto_now_add=True, verbose_name="allocated")),
                (
                    "released_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="released"),
                ),
                (
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="fabric_keys",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
            ],
            options={
                "verbose_name": "fabric key",
                "verbose_name_plural": "fabric keys",
                "ordering": ["-allocated_at"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("released_at__isnull", True)),
                        fields=("kind", "value"),
                        name="fabric_key_unique_in_use",
                    ),
                    models.UniqueConstraint(
                        condition=models.Q(("released_at__isnull", True)),
                        fields=("order",),
                        name="fabric_key_one_per_order",
                    ),
                ],
            },
        ),
        migrations.AddConstraint(
            model_name="provisioningrun",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status__in", ["pending", "running", "validating"])),
                fields=("order", "kind"),
                name="provisioningrun_one_active_per_order",
            ),
        ),
        migrations.AddIndex(
            model_name="nodestep",
            index=models.Index(fields=["status", "lease_until"], name="nodestep_lease_idx"),
        ),
        migrations.AddConstraint(
            model_name="nodestep",
            constraint=models.UniqueConstraint(
                fields=("run", "node", "name"), name="nodestep_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="healthincident",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("status__in", ["open", "awaiting", "revalidating", "replacing", "no_spare"])
                ),
                fields=("node", "rule"),
                name="healthincident_one_open_per_rule",
            ),
        ),
        migrations.AddConstraint(
            model_name="runnode",
            constraint=models.UniqueConstraint(fields=("run", "node"), name="runnode_unique_node"),
        ),
        migrations.AddConstraint(
            model_name="runnode",
            constraint=models.UniqueConstraint(
                condition=models.Q(("state", "active")),
                fields=("run", "slot"),
                name="runnode_one_per_slot",
            ),
        ),
        migrations.AddConstraint(
            model_name="sparepool",
            constraint=models.UniqueConstraint(
                fields=("site", "node_type"), name="sparepool_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="utilisationalert",
            constraint=models.UniqueConstraint(
                condition=models.Q(("answered_at__isnull", True)),
                fields=("order",),
                name="utilisationalert_one_open",
            ),
        ),
        migrations.AddIndex(
            model_name="validationrun",
            index=models.Index(fields=["status", "trigger"], name="validation_run_status_idx"),
        ),
        migrations.AddConstraint(
            model_name="validationreport",
            constraint=models.UniqueConstraint(
                fields=("run", "language"), name="validation_report_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="validationnoderesult",
            constraint=models.UniqueConstraint(
                fields=("run", "node"), name="validation_result_unique"
            ),
        ),
        migrations.RunPython(seed_validation_rules, migrations.RunPython.noop),
    ]
