"""accounts: every migration up to 2026-12 squashed into one (a fresh database applies
this one; a database that applied the old ones is left as it is). Generated from the
models, with the schema and data steps the old migrations ran by hand appended."""

import core.validators
import django.db.models.deletion
import django.db.models.functions.text
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("accounts", "0001_initial"),
        ("accounts", "0002_ssh_public_keys"),
        ("accounts", "0003_organisation_fapiao_details"),
        ("accounts", "0004_organisation_auto_renew"),
        ("accounts", "0005_verbose_names_zh"),
        ("accounts", "0006_names_refuse_emoji"),
        ("accounts", "0007_api_keys_and_webhooks"),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Organisation",
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
                        max_length=200, validators=[core.validators.no_emoji], verbose_name="name"
                    ),
                ),
                (
                    "legal_name",
                    models.CharField(
                        blank=True,
                        max_length=200,
                        validators=[core.validators.no_emoji],
                        verbose_name="legal name",
                    ),
                ),
                (
                    "tax_id",
                    models.CharField(
                        blank=True,
                        help_text="For the fapiao (统一社会信用代码).",
                        max_length=64,
                        verbose_name="tax ID",
                    ),
                ),
                ("billing_address", models.TextField(blank=True, verbose_name="billing address")),
                ("country", models.CharField(default="CN", max_length=2, verbose_name="country")),
                (
                    "billing_email",
                    models.EmailField(blank=True, max_length=254, verbose_name="billing email"),
                ),
                (
                    "fapiao_type",
                    models.CharField(
                        choices=[
                            ("ordinary", "ordinary VAT fapiao (普票)"),
                            ("special", "special VAT fapiao (专票)"),
                        ],
                        default="ordinary",
                        max_length=10,
                        verbose_name="fapiao type",
                    ),
                ),
                (
                    "fapiao_title",
                    models.CharField(
                        blank=True,
                        help_text="The buyer's name on the fapiao; the legal name when empty.",
                        max_length=200,
                        verbose_name="fapiao title",
                    ),
                ),
                (
                    "fapiao_address_phone",
                    models.CharField(
                        blank=True, max_length=300, verbose_name="registered address and phone"
                    ),
                ),
                (
                    "fapiao_bank_account",
                    models.CharField(
                        blank=True, max_length=300, verbose_name="bank and account number"
                    ),
                ),
                (
                    "auto_renew",
                    models.BooleanField(
                        default=False,
                        help_text="When on, the renewal quote made before a rental ends is accepted for the organisation at once (its contract or terms and payment follow as usual).",
                        verbose_name="renew rentals automatically",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
            ],
            options={
                "verbose_name": "organisation",
                "verbose_name_plural": "organisations",
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="ApiKey",
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
                        max_length=100, validators=[core.validators.no_emoji], verbose_name="name"
                    ),
                ),
                ("prefix", models.CharField(max_length=16, unique=True, verbose_name="prefix")),
                ("key_hash", models.CharField(max_length=64, verbose_name="key digest (SHA-256)")),
                ("scopes", models.JSONField(default=dict, verbose_name="scopes")),
                (
                    "allowed_ips",
                    models.JSONField(blank=True, default=list, verbose_name="IP allow-list"),
                ),
                ("expires_at", models.DateTimeField(blank=True, null=True, verbose_name="expires")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "last_used_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="last used"),
                ),
                (
                    "last_used_ip",
                    models.GenericIPAddressField(
                        blank=True, null=True, verbose_name="last used from"
                    ),
                ),
                ("revoked_at", models.DateTimeField(blank=True, null=True, verbose_name="revoked")),
                (
                    "created_by",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_keys",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="created by",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_keys",
                        to="accounts.organisation",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "API key",
                "verbose_name_plural": "API keys",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="CustomerProfile",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "email_verified_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="email verified"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="customer_profile",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "customer profile",
                "verbose_name_plural": "customer profiles",
            },
        ),
        migrations.CreateModel(
            name="ApiAuditEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("method", models.CharField(max_length=8, verbose_name="method")),
                ("path", models.CharField(max_length=500, verbose_name="path")),
                ("status_code", models.PositiveSmallIntegerField(verbose_name="status")),
                (
                    "idempotency_key",
                    models.CharField(blank=True, max_length=200, verbose_name="idempotency key"),
                ),
                (
                    "ip",
                    models.GenericIPAddressField(blank=True, null=True, verbose_name="IP address"),
                ),
                (
                    "created_at",
                    models.DateTimeField(auto_now_add=True, db_index=True, verbose_name="at"),
                ),
                (
                    "api_key",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="audit",
                        to="accounts.apikey",
                        verbose_name="API key",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="accounts.organisation",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "API audit entry",
                "verbose_name_plural": "API audit entries",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="WebhookDelivery",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "pending"),
                            ("retrying", "retrying"),
                            ("succeeded", "succeeded"),
                            ("failed", "failed"),
                        ],
                        default="pending",
                        max_length=12,
                        verbose_name="status",
                    ),
                ),
                ("attempts", models.PositiveSmallIntegerField(default=0, verbose_name="attempts")),
                (
                    "last_status_code",
                    models.PositiveSmallIntegerField(null=True, verbose_name="last HTTP status"),
                ),
                (
                    "last_response_ms",
                    models.PositiveIntegerField(null=True, verbose_name="last response time (ms)"),
                ),
                (
                    "last_error",
                    models.CharField(blank=True, max_length=500, verbose_name="last error"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "delivered_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="delivered"),
                ),
                (
                    "replay_of",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="accounts.webhookdelivery",
                        verbose_name="replay of",
                    ),
                ),
            ],
            options={
                "verbose_name": "webhook delivery",
                "verbose_name_plural": "webhook deliveries",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="WebhookAttempt",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "status_code",
                    models.PositiveSmallIntegerField(null=True, verbose_name="HTTP status"),
                ),
                ("response_ms", models.PositiveIntegerField(verbose_name="response time (ms)")),
                ("error", models.CharField(blank=True, max_length=500, verbose_name="error")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="at")),
                (
                    "delivery",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="attempt_log",
                        to="accounts.webhookdelivery",
                        verbose_name="delivery",
                    ),
                ),
            ],
            options={
                "verbose_name": "webhook attempt",
                "verbose_name_plural": "webhook attempts",
                "ordering": ["created_at", "pk"],
            },
        ),
        migrations.CreateModel(
            name="WebhookEndpoint",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("url", models.URLField(max_length=500, verbose_name="URL")),
                (
                    "description",
                    models.CharField(blank=True, max_length=200, verbose_name="description"),
                ),
                ("event_types", models.JSONField(default=list, verbose_name="event types")),
                ("secret", models.CharField(max_length=100, verbose_name="signing secret")),
                (
                    "previous_secret",
                    models.CharField(blank=True, max_length=100, verbose_name="previous secret"),
                ),
                (
                    "previous_secret_until",
                    models.DateTimeField(null=True, verbose_name="previous secret valid until"),
                ),
                ("active", models.BooleanField(default=True, verbose_name="active")),
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
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="webhook_endpoints",
                        to="accounts.organisation",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "webhook endpoint",
                "verbose_name_plural": "webhook endpoints",
                "ordering": ["pk"],
            },
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="endpoint",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="deliveries",
                to="accounts.webhookendpoint",
                verbose_name="endpoint",
            ),
        ),
        migrations.CreateModel(
            name="WebhookEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("event_id", models.CharField(max_length=40, unique=True, verbose_name="event ID")),
                ("type", models.CharField(max_length=60, verbose_name="type")),
                ("data", models.JSONField(default=dict, verbose_name="data")),
                (
                    "dedupe",
                    models.CharField(blank=True, max_length=200, verbose_name="deduplication key"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="accounts.organisation",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "webhook event",
                "verbose_name_plural": "webhook events",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="event",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="deliveries",
                to="accounts.webhookevent",
                verbose_name="event",
            ),
        ),
        migrations.CreateModel(
            name="Membership",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "role",
                    models.CharField(
                        choices=[("owner", "owner"), ("member", "member"), ("billing", "billing")],
                        default="member",
                        max_length=16,
                        verbose_name="role",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to="accounts.organisation",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "membership",
                "verbose_name_plural": "memberships",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("organisation", "user"), name="membership_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Invitation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("email", models.EmailField(max_length=254, verbose_name="email")),
                (
                    "role",
                    models.CharField(
                        choices=[("owner", "owner"), ("member", "member"), ("billing", "billing")],
                        max_length=16,
                        verbose_name="role",
                    ),
                ),
                (
                    "token",
                    models.CharField(
                        editable=False, max_length=64, unique=True, verbose_name="token"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("expires_at", models.DateTimeField(verbose_name="expires")),
                (
                    "accepted_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="accepted"),
                ),
                (
                    "revoked_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="withdrawn"),
                ),
                (
                    "accepted_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="accepted by",
                    ),
                ),
                (
                    "invited_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="invited by",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="invitations",
                        to="accounts.organisation",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "invitation",
                "verbose_name_plural": "invitations",
                "ordering": ["-created_at"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(
                            ("accepted_at__isnull", True), ("revoked_at__isnull", True)
                        ),
                        fields=("organisation", "email"),
                        name="invitation_one_open_per_email",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("email", django.db.models.functions.text.Lower("email"))
                        ),
                        name="invitation_email_lower",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="IdempotencyRecord",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=200, verbose_name="idempotency key")),
                ("request_hash", models.CharField(max_length=64, verbose_name="request digest")),
                ("status_code", models.PositiveSmallIntegerField(default=0, verbose_name="status")),
                ("response", models.JSONField(blank=True, null=True, verbose_name="response")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="accounts.organisation",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "idempotency record",
                "verbose_name_plural": "idempotency records",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("organisation", "key"), name="idempotency_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="SshPublicKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100, verbose_name="name")),
                ("public_key", models.TextField(verbose_name="public key")),
                ("algorithm", models.CharField(max_length=16, verbose_name="algorithm")),
                ("bits", models.PositiveIntegerField(verbose_name="bits")),
                ("fingerprint", models.CharField(max_length=64, verbose_name="fingerprint")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="added")),
                (
                    "added_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="added by",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="ssh_keys",
                        to="accounts.organisation",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "SSH public key",
                "verbose_name_plural": "SSH public keys",
                "ordering": ["name", "pk"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("organisation", "fingerprint"), name="sshkey_unique_per_org"
                    )
                ],
            },
        ),
        migrations.AddConstraint(
            model_name="webhookevent",
            constraint=models.UniqueConstraint(
                condition=models.Q(("dedupe", ""), _negated=True),
                fields=("organisation", "dedupe"),
                name="webhook_event_dedupe",
            ),
        ),
    ]
