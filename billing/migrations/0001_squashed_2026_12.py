"""billing: every migration up to 2026-12 squashed into one (a fresh database applies
this one; a database that applied the old ones is left as it is). Generated from the
models, with the schema and data steps the old migrations ran by hand appended."""

import billing.models.quotes
import core.validators
import django.core.validators
import django.db.models.deletion
import django.db.models.expressions
import django.utils.timezone
from decimal import Decimal
from django.conf import settings
from django.db import migrations, models


# billing.0011: the standard dunning policy: reminders 7 and 3 days before, on and 3 days
# after the due date, then suspension 10 days after it.
STEPS = [(-7, "remind"), (-3, "remind"), (0, "remind"), (3, "remind"), (10, "suspend")]


def seed_dunning_policy(apps, schema_editor):
    Policy = apps.get_model("billing", "DunningPolicy")
    Step = apps.get_model("billing", "DunningStep")
    if Policy.objects.exists():
        return
    policy = Policy.objects.create(name="standard", active=True)
    Step.objects.bulk_create(
        [Step(policy=policy, offset_days=days, action=action) for days, action in STEPS]
    )


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("billing", "0001_initial"),
        ("billing", "0002_payment_duplicates"),
        ("billing", "0003_order_image_and_ssh_keys"),
        ("billing", "0004_contracts_signatures_gate"),
        ("billing", "0005_estimate"),
        ("billing", "0006_seller_entity"),
        ("billing", "0007_order_idempotency_key"),
        ("billing", "0008_tax_categories"),
        ("billing", "0009_invoices_over_the_term"),
        ("billing", "0010_dunning_suspension_renewal"),
        ("billing", "0011_seed_dunning_policy"),
        ("billing", "0012_provisioning_release_provision_at"),
        ("billing", "0013_verbose_names_zh"),
        ("billing", "0014_names_refuse_emoji"),
        ("billing", "0015_credit_note_document_verbose_names"),
        ("billing", "0016_verbose_names_money_dunning"),
        ("billing", "0017_paymentevent"),
        ("billing", "0018_contract_signatures_and_signatories"),
        ("billing", "0018_event_reason_codes"),
        ("billing", "0018_ledger_credit_balance_monthly_sla"),
        ("billing", "0018_usage_voiding_and_record_permission"),
        ("billing", "0019_contract_countersign_permission"),
        ("billing", "0020_merge_event_codes_and_usage_voiding"),
        ("billing", "0021_merge_20261201_2101"),
        ("billing", "0021_merge_contract_signatures_and_main"),
        ("billing", "0022_merge_ledger_and_contract_signatures"),
        ("billing", "0023_contract_email_field_names"),
    ]

    dependencies = [
        ("accounts", "0001_squashed_2026_12"),
        ("inventory", "0001_squashed_2026_12"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="StripeEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "stripe_id",
                    models.CharField(max_length=255, unique=True, verbose_name="Stripe event ID"),
                ),
                ("type", models.CharField(max_length=100, verbose_name="type")),
                ("payload", models.JSONField(verbose_name="payload")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("received", "received"),
                            ("processed", "processed"),
                            ("ignored", "ignored"),
                            ("flagged", "flagged"),
                            ("failed", "failed"),
                        ],
                        default="received",
                        max_length=12,
                        verbose_name="status",
                    ),
                ),
                ("error", models.TextField(blank=True, verbose_name="error")),
                (
                    "received_at",
                    models.DateTimeField(auto_now_add=True, verbose_name="received at"),
                ),
                (
                    "processed_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="processed at"),
                ),
            ],
            options={
                "verbose_name": "Stripe event",
                "verbose_name_plural": "Stripe events",
                "ordering": ["-received_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="Contract",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.CharField(max_length=32, unique=True, verbose_name="number")),
                (
                    "language",
                    models.CharField(
                        choices=[("zh-hans", "Simplified Chinese"), ("en", "English")],
                        max_length=8,
                        verbose_name="language",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("drafted", "drafted"),
                            ("customer_signed", "signed by the customer"),
                            ("countersigned", "countersigned"),
                            ("active", "active"),
                            ("suspended", "suspended"),
                            ("ended", "ended"),
                            ("cancelled", "cancelled"),
                        ],
                        default="drafted",
                        max_length=20,
                        verbose_name="status",
                    ),
                ),
                ("parties", models.JSONField(default=dict, verbose_name="parties")),
                ("terms_version", models.CharField(max_length=16, verbose_name="terms version")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="drafted")),
                (
                    "signer_name",
                    models.CharField(
                        blank=True,
                        max_length=200,
                        validators=[core.validators.no_emoji],
                        verbose_name="signed by",
                    ),
                ),
                (
                    "signer_title",
                    models.CharField(blank=True, max_length=200, verbose_name="title"),
                ),
                (
                    "signer_email",
                    models.EmailField(blank=True, max_length=254, verbose_name="signer's email"),
                ),
                ("signed_at", models.DateTimeField(blank=True, null=True, verbose_name="signed")),
                (
                    "signed_ip",
                    models.GenericIPAddressField(blank=True, null=True, verbose_name="from IP"),
                ),
                (
                    "signed_user_agent",
                    models.CharField(blank=True, max_length=400, verbose_name="browser"),
                ),
                (
                    "signed_sha256",
                    models.CharField(
                        blank=True, max_length=64, verbose_name="SHA-256 of the PDF signed"
                    ),
                ),
                (
                    "countersigned_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="countersigned"),
                ),
                (
                    "countersigner_name",
                    models.CharField(
                        blank=True, max_length=200, verbose_name="provider's signatory"
                    ),
                ),
                (
                    "countersigner_title",
                    models.CharField(blank=True, max_length=200, verbose_name="signatory's title"),
                ),
                (
                    "customer_signed_sha256",
                    models.CharField(
                        blank=True,
                        max_length=64,
                        verbose_name="SHA-256 of the PDF with the customer's signature",
                    ),
                ),
                (
                    "final_sha256",
                    models.CharField(
                        blank=True, max_length=64, verbose_name="SHA-256 of the sealed PDF"
                    ),
                ),
                (
                    "ready_emailed_at",
                    models.DateTimeField(
                        blank=True,
                        editable=False,
                        null=True,
                        verbose_name="ready-to-sign email sent at",
                    ),
                ),
                (
                    "sealed_emailed_at",
                    models.DateTimeField(
                        blank=True,
                        editable=False,
                        null=True,
                        verbose_name="sealed-contract email sent at",
                    ),
                ),
                (
                    "amends",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="amendments",
                        to="billing.contract",
                        verbose_name="amends",
                    ),
                ),
                (
                    "approver",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="second approver",
                    ),
                ),
                (
                    "countersigner",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="countersigner",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="contracts",
                        to="accounts.organisation",
                        verbose_name="customer",
                    ),
                ),
                (
                    "signer",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="signer",
                    ),
                ),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.site",
                        verbose_name="site",
                    ),
                ),
            ],
            options={
                "verbose_name": "contract",
                "verbose_name_plural": "contracts",
                "ordering": ["-created_at", "-pk"],
                "permissions": [
                    ("countersign_contract", "Can countersign contracts for the provider")
                ],
            },
        ),
        migrations.CreateModel(
            name="ContractEvent",
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
                    "contract",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="billing.contract",
                        verbose_name="contract",
                    ),
                ),
            ],
            options={
                "verbose_name": "contract event",
                "verbose_name_plural": "contract events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="CreditNote",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.CharField(max_length=32, unique=True, verbose_name="number")),
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
                    "net_total",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="net"),
                ),
                (
                    "vat_total",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="VAT"),
                ),
                (
                    "gross_total",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="total"),
                ),
                ("reason", models.TextField(verbose_name="reason")),
                ("lines", models.JSONField(default=list, verbose_name="lines")),
                (
                    "fapiao",
                    models.JSONField(blank=True, default=dict, verbose_name="fapiao request"),
                ),
                (
                    "issued_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="issued"),
                ),
                (
                    "issued_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="issued by",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="credit_notes",
                        to="accounts.organisation",
                        verbose_name="customer",
                    ),
                ),
            ],
            options={
                "verbose_name": "credit note",
                "verbose_name_plural": "credit notes",
                "ordering": ["-issued_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="DunningPolicy",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100, unique=True, verbose_name="name")),
                (
                    "active",
                    models.BooleanField(
                        default=True,
                        help_text="Only one policy is active at a time.",
                        verbose_name="active",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
            ],
            options={
                "verbose_name": "dunning policy",
                "verbose_name_plural": "dunning policies",
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("active", True)),
                        fields=("active",),
                        name="dunningpolicy_one_active",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="DunningStep",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "offset_days",
                    models.SmallIntegerField(
                        help_text="-7 is a week before, 3 is three days after.",
                        verbose_name="days from the due date",
                    ),
                ),
                (
                    "action",
                    models.CharField(
                        choices=[("remind", "email a reminder"), ("suspend", "suspend the order")],
                        max_length=8,
                        verbose_name="action",
                    ),
                ),
                (
                    "policy",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="steps",
                        to="billing.dunningpolicy",
                        verbose_name="policy",
                    ),
                ),
            ],
            options={
                "verbose_name": "dunning step",
                "verbose_name_plural": "dunning steps",
                "ordering": ["policy", "offset_days"],
            },
        ),
        migrations.CreateModel(
            name="Invoice",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.CharField(max_length=32, unique=True, verbose_name="number")),
                (
                    "status",
                    models.CharField(
                        choices=[("issued", "issued"), ("paid", "paid"), ("void", "void")],
                        default="issued",
                        max_length=8,
                        verbose_name="status",
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
                    "net_total",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="net"),
                ),
                (
                    "vat_total",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="VAT"),
                ),
                (
                    "gross_total",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="total"),
                ),
                (
                    "issued_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="issued"),
                ),
                ("due_at", models.DateTimeField(verbose_name="due")),
                (
                    "bank_reference",
                    models.CharField(
                        help_text="The customer writes this on the bank transfer.",
                        max_length=32,
                        unique=True,
                        verbose_name="transfer reference",
                    ),
                ),
                ("paid_at", models.DateTimeField(blank=True, null=True, verbose_name="paid")),
                (
                    "paid_reference",
                    models.CharField(blank=True, max_length=100, verbose_name="payment reference"),
                ),
                (
                    "period_seq",
                    models.PositiveSmallIntegerField(
                        blank=True, null=True, verbose_name="billing period"
                    ),
                ),
                (
                    "period_start",
                    models.DateTimeField(blank=True, null=True, verbose_name="period starts"),
                ),
                (
                    "period_end",
                    models.DateTimeField(blank=True, null=True, verbose_name="period ends"),
                ),
                (
                    "amount_paid",
                    models.DecimalField(
                        decimal_places=2,
                        default=Decimal("0"),
                        max_digits=14,
                        verbose_name="paid so far",
                    ),
                ),
                (
                    "amount_credited",
                    models.DecimalField(
                        decimal_places=2,
                        default=Decimal("0"),
                        max_digits=14,
                        verbose_name="credited",
                    ),
                ),
                (
                    "fapiao",
                    models.JSONField(blank=True, default=dict, verbose_name="fapiao request"),
                ),
                (
                    "issued_emailed_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="issue emailed"),
                ),
                (
                    "marked_paid_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="marked paid by",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="invoices",
                        to="accounts.organisation",
                        verbose_name="customer",
                    ),
                ),
            ],
            options={
                "verbose_name": "invoice",
                "verbose_name_plural": "invoices",
                "ordering": ["-issued_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="DunningNotice",
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
                            ("sent", "sent"),
                            ("skipped", "skipped (a later step was due)"),
                            ("done", "done"),
                        ],
                        max_length=8,
                        verbose_name="status",
                    ),
                ),
                (
                    "suspend_on",
                    models.DateTimeField(
                        blank=True,
                        help_text="The date this reminder announced, when it announced one.",
                        null=True,
                        verbose_name="suspension announced for",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="done")),
                ("emailed_at", models.DateTimeField(blank=True, null=True, verbose_name="emailed")),
                (
                    "step",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="notices",
                        to="billing.dunningstep",
                        verbose_name="step",
                    ),
                ),
                (
                    "invoice",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="dunning_notices",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
            ],
            options={
                "verbose_name": "dunning notice",
                "verbose_name_plural": "dunning notices",
                "ordering": ["invoice", "created_at", "pk"],
            },
        ),
        migrations.CreateModel(
            name="CreditNoteRequest",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
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
                    "gross_total",
                    models.DecimalField(
                        decimal_places=2, max_digits=14, verbose_name="total credited"
                    ),
                ),
                ("reason", models.TextField(verbose_name="reason")),
                ("lines", models.JSONField(default=list, verbose_name="lines")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "waiting for approval"),
                            ("approved", "approved and issued"),
                            ("rejected", "rejected"),
                        ],
                        default="pending",
                        max_length=8,
                        verbose_name="status",
                    ),
                ),
                (
                    "requested_at",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="requested"
                    ),
                ),
                ("decided_at", models.DateTimeField(blank=True, null=True, verbose_name="decided")),
                (
                    "credit_note",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="request",
                        to="billing.creditnote",
                        verbose_name="credit note",
                    ),
                ),
                (
                    "decided_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="decided by",
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
                    "invoice",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="credit_note_requests",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
            ],
            options={
                "verbose_name": "credit note awaiting approval",
                "verbose_name_plural": "credit notes awaiting approval",
                "ordering": ["-requested_at", "-pk"],
                "permissions": [("approve_creditnoterequest", "Can approve large credit notes")],
            },
        ),
        migrations.AddField(
            model_name="creditnote",
            name="invoice",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="credit_notes",
                to="billing.invoice",
                verbose_name="invoice",
            ),
        ),
        migrations.CreateModel(
            name="CreditApplication",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "amount",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="amount"),
                ),
                (
                    "applied_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="applied"),
                ),
                (
                    "credit_note",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="applications",
                        to="billing.creditnote",
                        verbose_name="credit note",
                    ),
                ),
                (
                    "invoice",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="credit_applications",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
            ],
            options={
                "verbose_name": "credit applied",
                "verbose_name_plural": "credits applied",
                "ordering": ["applied_at", "pk"],
            },
        ),
        migrations.CreateModel(
            name="InvoiceDocument",
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
                ("file", models.FileField(upload_to="invoices/%Y/", verbose_name="file")),
                (
                    "invoice",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="documents",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
            ],
            options={
                "verbose_name": "invoice document",
                "verbose_name_plural": "invoice documents",
            },
        ),
        migrations.CreateModel(
            name="InvoiceEvent",
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
                    "invoice",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
            ],
            options={
                "verbose_name": "invoice event",
                "verbose_name_plural": "invoice events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="InvoiceLine",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("position", models.PositiveSmallIntegerField(verbose_name="position")),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("charge", "period charge"),
                            ("usage", "metered usage"),
                            ("credit", "SLA credit"),
                        ],
                        max_length=8,
                        verbose_name="kind",
                    ),
                ),
                ("code", models.CharField(max_length=64, verbose_name="code")),
                ("description", models.CharField(max_length=300, verbose_name="description")),
                (
                    "description_zh",
                    models.CharField(
                        blank=True, max_length=300, verbose_name="description (Chinese)"
                    ),
                ),
                (
                    "quantity",
                    models.DecimalField(
                        decimal_places=3,
                        default=Decimal("1"),
                        max_digits=14,
                        verbose_name="quantity",
                    ),
                ),
                ("unit", models.CharField(blank=True, max_length=16, verbose_name="unit")),
                (
                    "unit_price",
                    models.DecimalField(
                        blank=True,
                        decimal_places=2,
                        max_digits=14,
                        null=True,
                        verbose_name="unit price",
                    ),
                ),
                (
                    "periods",
                    models.DecimalField(
                        decimal_places=4,
                        default=Decimal("1"),
                        max_digits=10,
                        verbose_name="periods",
                    ),
                ),
                (
                    "period_unit",
                    models.CharField(blank=True, max_length=8, verbose_name="period unit"),
                ),
                (
                    "list_amount",
                    models.DecimalField(
                        blank=True, decimal_places=2, max_digits=14, null=True, verbose_name="list"
                    ),
                ),
                (
                    "discount",
                    models.DecimalField(
                        decimal_places=2,
                        default=Decimal("0"),
                        max_digits=14,
                        verbose_name="discount",
                    ),
                ),
                ("net", models.DecimalField(decimal_places=2, max_digits=14, verbose_name="net")),
                ("vat", models.DecimalField(decimal_places=2, max_digits=14, verbose_name="VAT")),
                (
                    "vat_rate",
                    models.DecimalField(
                        decimal_places=4,
                        default=Decimal("0"),
                        max_digits=5,
                        validators=[
                            django.core.validators.MinValueValidator(Decimal("0")),
                            django.core.validators.MaxValueValidator(Decimal("1")),
                        ],
                        verbose_name="VAT rate",
                    ),
                ),
                (
                    "tax_category",
                    models.CharField(
                        choices=[
                            ("it_service", "IDC / IT service (信息技术服务)"),
                            ("equipment_lease", "equipment lease (有形动产租赁)"),
                            ("telecom", "basic telecom (基础电信服务)"),
                        ],
                        default="it_service",
                        max_length=16,
                        verbose_name="tax category",
                    ),
                ),
                ("detail", models.JSONField(blank=True, default=dict, verbose_name="detail")),
                (
                    "invoice",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="lines",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
            ],
            options={
                "verbose_name": "invoice line",
                "verbose_name_plural": "invoice lines",
                "ordering": ["invoice", "position"],
            },
        ),
        migrations.CreateModel(
            name="NumberSequence",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=8, verbose_name="kind")),
                ("year", models.PositiveSmallIntegerField(verbose_name="year")),
                ("last", models.PositiveIntegerField(default=0, verbose_name="last number")),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.site",
                        verbose_name="site",
                    ),
                ),
            ],
            options={
                "verbose_name": "number sequence",
                "verbose_name_plural": "number sequences",
            },
        ),
        migrations.CreateModel(
            name="Order",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.CharField(max_length=32, unique=True, verbose_name="number")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("awaiting_payment", "awaiting contract and payment"),
                            ("paid", "paid"),
                            ("provisioning", "provisioning"),
                            ("validating", "validating"),
                            ("ready", "ready"),
                            ("expired", "expired"),
                            ("cancelled", "cancelled"),
                            ("ended", "ended"),
                        ],
                        default="awaiting_payment",
                        max_length=20,
                        verbose_name="status",
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
                    "gross_total",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="total"),
                ),
                ("start_at", models.DateTimeField(verbose_name="starts")),
                ("end_at", models.DateTimeField(verbose_name="ends")),
                (
                    "reservation_group",
                    models.UUIDField(blank=True, null=True, verbose_name="booking"),
                ),
                (
                    "payment_due_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Unpaid by then, the order expires.",
                        null=True,
                        verbose_name="pay by",
                    ),
                ),
                (
                    "idempotency_key",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="The configure form's key: accepting the same form twice finds this order.",
                        max_length=64,
                        verbose_name="idempotency key",
                    ),
                ),
                ("paid_at", models.DateTimeField(blank=True, null=True, verbose_name="paid")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                (
                    "image_profile",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="orders",
                        to="inventory.imageprofile",
                        verbose_name="OS image",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="orders",
                        to="accounts.organisation",
                        verbose_name="customer",
                    ),
                ),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="orders",
                        to="inventory.site",
                        verbose_name="site",
                    ),
                ),
                (
                    "ssh_keys",
                    models.ManyToManyField(
                        blank=True,
                        related_name="orders",
                        to="accounts.sshpublickey",
                        verbose_name="SSH keys",
                    ),
                ),
            ],
            options={
                "verbose_name": "order",
                "verbose_name_plural": "orders",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.AddField(
            model_name="invoice",
            name="order",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="invoices",
                to="billing.order",
                verbose_name="order",
            ),
        ),
        migrations.AddField(
            model_name="creditnote",
            name="order",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="credit_notes",
                to="billing.order",
                verbose_name="order",
            ),
        ),
        migrations.AddField(
            model_name="contract",
            name="order",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="contracts",
                to="billing.order",
                verbose_name="order",
            ),
        ),
        migrations.CreateModel(
            name="OrderEvent",
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
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
            ],
            options={
                "verbose_name": "order event",
                "verbose_name_plural": "order events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="Payment",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "method",
                    models.CharField(
                        choices=[
                            ("card", "card"),
                            ("alipay", "Alipay"),
                            ("wechat_pay", "WeChat Pay"),
                            ("bank_transfer", "bank transfer"),
                        ],
                        max_length=16,
                        verbose_name="method",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "pending"),
                            ("succeeded", "succeeded"),
                            ("failed", "failed"),
                            ("refunded", "refunded"),
                        ],
                        default="pending",
                        max_length=12,
                        verbose_name="status",
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
                    "amount",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="amount"),
                ),
                (
                    "amount_refunded",
                    models.DecimalField(
                        decimal_places=2,
                        default=Decimal("0"),
                        max_digits=14,
                        verbose_name="refunded",
                    ),
                ),
                (
                    "stripe_payment_intent",
                    models.CharField(
                        blank=True,
                        max_length=255,
                        null=True,
                        unique=True,
                        verbose_name="Stripe payment intent",
                    ),
                ),
                (
                    "reference",
                    models.CharField(blank=True, max_length=100, verbose_name="reference"),
                ),
                ("value_date", models.DateField(blank=True, null=True, verbose_name="value date")),
                (
                    "receipt_emailed_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="receipt emailed"),
                ),
                ("failure_message", models.TextField(blank=True, verbose_name="failure")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                (
                    "succeeded_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="succeeded at"),
                ),
                (
                    "provider_succeeded_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="When Stripe says the payment succeeded (its charge or event time): of several payments of one invoice, the first to succeed pays it.",
                        null=True,
                        verbose_name="succeeded at the provider",
                    ),
                ),
                (
                    "duplicate_refund",
                    models.CharField(
                        blank=True,
                        help_text="The Stripe refund of this duplicate, made once from the back office.",
                        max_length=255,
                        verbose_name="duplicate refunded",
                    ),
                ),
                (
                    "duplicate_of",
                    models.ForeignKey(
                        blank=True,
                        help_text="Set when another payment paid the invoice first: refund this one.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="duplicates",
                        to="billing.payment",
                        verbose_name="duplicate of",
                    ),
                ),
                (
                    "invoice",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="payments",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
            ],
            options={
                "verbose_name": "payment",
                "verbose_name_plural": "payments",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="PaymentEvent",
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
                    "payment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="billing.payment",
                        verbose_name="payment",
                    ),
                ),
            ],
            options={
                "verbose_name": "payment event",
                "verbose_name_plural": "payment events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="PriceBook",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "tax_rates",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text='As fractions, e.g. {"it_service": "0.06", "equipment_lease": "0.13", "telecom": "0.09"}; a category not listed pays the site\'s VAT rate.',
                        verbose_name="VAT rate per tax category",
                    ),
                ),
                ("name", models.CharField(max_length=100, verbose_name="name")),
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
                ("effective_from", models.DateTimeField(verbose_name="effective from")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                ("notes", models.TextField(blank=True, verbose_name="notes")),
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
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="price_books",
                        to="inventory.site",
                        verbose_name="site",
                    ),
                ),
            ],
            options={
                "verbose_name": "price book",
                "verbose_name_plural": "price books",
                "ordering": ["site__code", "-effective_from"],
            },
        ),
        migrations.CreateModel(
            name="NodePrice",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "category",
                    models.CharField(
                        choices=[
                            ("gpu", "GPU servers and cards"),
                            ("bare_metal", "bare-metal CPU servers"),
                        ],
                        max_length=16,
                        verbose_name="category",
                    ),
                ),
                (
                    "tax_category",
                    models.CharField(
                        choices=[
                            ("it_service", "IDC / IT service (信息技术服务)"),
                            ("equipment_lease", "equipment lease (有形动产租赁)"),
                            ("telecom", "basic telecom (基础电信服务)"),
                        ],
                        default="it_service",
                        max_length=16,
                        verbose_name="tax category",
                    ),
                ),
                (
                    "basis",
                    models.CharField(
                        choices=[("node", "per node"), ("gpu", "per GPU")],
                        max_length=8,
                        verbose_name="priced",
                    ),
                ),
                (
                    "monthly",
                    models.DecimalField(
                        decimal_places=2,
                        max_digits=14,
                        validators=[django.core.validators.MinValueValidator(0)],
                        verbose_name="per unit per month",
                    ),
                ),
                (
                    "daily",
                    models.DecimalField(
                        decimal_places=2,
                        max_digits=14,
                        validators=[django.core.validators.MinValueValidator(0)],
                        verbose_name="per unit per day",
                    ),
                ),
                (
                    "daily_note",
                    models.CharField(
                        blank=True,
                        help_text="e.g. “derived: monthly ÷ 30 × 1.2” when the offer gives no daily price.",
                        max_length=200,
                        verbose_name="how the daily rate was set",
                    ),
                ),
                (
                    "node_type",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.nodetype",
                        verbose_name="node type",
                    ),
                ),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="node_prices",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
            ],
            options={
                "verbose_name": "node price",
                "verbose_name_plural": "node prices",
            },
        ),
        migrations.CreateModel(
            name="FreeService",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, verbose_name="name (English)")),
                (
                    "name_zh",
                    models.CharField(blank=True, max_length=200, verbose_name="name (Chinese)"),
                ),
                ("position", models.PositiveSmallIntegerField(default=0, verbose_name="position")),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="free_services",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
            ],
            options={
                "verbose_name": "free service",
                "verbose_name_plural": "free services",
                "ordering": ["position", "pk"],
            },
        ),
        migrations.CreateModel(
            name="Estimate",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=64, unique=True, verbose_name="key")),
                (
                    "language",
                    models.CharField(
                        choices=[("zh-hans", "Simplified Chinese"), ("en", "English")],
                        max_length=8,
                        verbose_name="language",
                    ),
                ),
                ("configuration", models.JSONField(verbose_name="configuration")),
                ("reopen_path", models.CharField(max_length=2000, verbose_name="reopen path")),
                (
                    "file",
                    models.FileField(blank=True, upload_to="estimates/%Y/", verbose_name="file"),
                ),
                ("sha256", models.CharField(blank=True, max_length=64, verbose_name="SHA-256")),
                ("size", models.PositiveIntegerField(blank=True, null=True, verbose_name="size")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                (
                    "rendered_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="rendered at"),
                ),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
            ],
            options={
                "verbose_name": "estimate",
                "verbose_name_plural": "estimates",
            },
        ),
        migrations.CreateModel(
            name="DiscountRule",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, verbose_name="name (English)")),
                (
                    "name_zh",
                    models.CharField(blank=True, max_length=200, verbose_name="name (Chinese)"),
                ),
                ("code", models.SlugField(max_length=32, verbose_name="code")),
                (
                    "term",
                    models.CharField(
                        choices=[
                            ("day", "daily"),
                            ("month", "monthly"),
                            ("quarter", "quarterly"),
                            ("year", "annual"),
                        ],
                        max_length=8,
                        verbose_name="term",
                    ),
                ),
                (
                    "multiplier",
                    models.DecimalField(
                        decimal_places=4,
                        help_text="0.8500 means the customer pays 85 percent of list",
                        max_digits=5,
                        validators=[
                            django.core.validators.MinValueValidator(Decimal("0")),
                            django.core.validators.MaxValueValidator(Decimal("1")),
                        ],
                        verbose_name="pay this share of list",
                    ),
                ),
                (
                    "category",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("gpu", "GPU servers and cards"),
                            ("bare_metal", "bare-metal CPU servers"),
                        ],
                        max_length=16,
                        verbose_name="category",
                    ),
                ),
                (
                    "gpu_model",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.gpumodel",
                        verbose_name="GPU model",
                    ),
                ),
                (
                    "node_type",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.nodetype",
                        verbose_name="node type",
                    ),
                ),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="discounts",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
            ],
            options={
                "verbose_name": "term discount",
                "verbose_name_plural": "term discounts",
                "ordering": ["term", "code"],
            },
        ),
        migrations.CreateModel(
            name="CardOptionPrice",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "monthly",
                    models.DecimalField(
                        decimal_places=2,
                        max_digits=14,
                        validators=[django.core.validators.MinValueValidator(0)],
                        verbose_name="per card per month",
                    ),
                ),
                (
                    "daily",
                    models.DecimalField(
                        decimal_places=2,
                        max_digits=14,
                        validators=[django.core.validators.MinValueValidator(0)],
                        verbose_name="per card per day",
                    ),
                ),
                (
                    "max_per_node",
                    models.PositiveSmallIntegerField(
                        default=4, verbose_name="cards per node, at most"
                    ),
                ),
                (
                    "gpu_model",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.gpumodel",
                        verbose_name="GPU model",
                    ),
                ),
                (
                    "node_type",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.nodetype",
                        verbose_name="node type",
                    ),
                ),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="card_prices",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
            ],
            options={
                "verbose_name": "card option price",
                "verbose_name_plural": "card option prices",
            },
        ),
        migrations.CreateModel(
            name="AddonPrice",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, verbose_name="name (English)")),
                (
                    "name_zh",
                    models.CharField(blank=True, max_length=200, verbose_name="name (Chinese)"),
                ),
                ("code", models.SlugField(max_length=32, verbose_name="code")),
                (
                    "unit",
                    models.CharField(
                        choices=[
                            ("tb_month", "per TB per month"),
                            ("tb", "per TB"),
                            ("ip_month", "per IP per month"),
                            ("month", "per month"),
                            ("once", "once"),
                        ],
                        max_length=16,
                        verbose_name="unit",
                    ),
                ),
                (
                    "price",
                    models.DecimalField(
                        decimal_places=2,
                        max_digits=14,
                        validators=[django.core.validators.MinValueValidator(0)],
                        verbose_name="price per unit",
                    ),
                ),
                ("note", models.CharField(blank=True, max_length=200, verbose_name="note")),
                (
                    "note_zh",
                    models.CharField(blank=True, max_length=200, verbose_name="note (Chinese)"),
                ),
                (
                    "tax_category",
                    models.CharField(
                        choices=[
                            ("it_service", "IDC / IT service (信息技术服务)"),
                            ("equipment_lease", "equipment lease (有形动产租赁)"),
                            ("telecom", "basic telecom (基础电信服务)"),
                        ],
                        default="it_service",
                        max_length=16,
                        verbose_name="tax category",
                    ),
                ),
                ("position", models.PositiveSmallIntegerField(default=0, verbose_name="position")),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="addons",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
            ],
            options={
                "verbose_name": "add-on price",
                "verbose_name_plural": "add-on prices",
                "ordering": ["position", "code"],
            },
        ),
        migrations.CreateModel(
            name="PriceChange",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="time"),
                ),
                ("what", models.CharField(max_length=200, verbose_name="what")),
                ("before", models.JSONField(blank=True, null=True, verbose_name="before")),
                ("after", models.JSONField(blank=True, null=True, verbose_name="after")),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="actor",
                    ),
                ),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="changes",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
            ],
            options={
                "verbose_name": "price change",
                "verbose_name_plural": "price changes",
                "ordering": ["-at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="Promotion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, verbose_name="name (English)")),
                (
                    "name_zh",
                    models.CharField(blank=True, max_length=200, verbose_name="name (Chinese)"),
                ),
                ("code", models.SlugField(max_length=32, verbose_name="code")),
                ("valid_from", models.DateField(verbose_name="valid from")),
                ("valid_until", models.DateField(verbose_name="valid until (inclusive)")),
                ("buy", models.PositiveSmallIntegerField(default=1, verbose_name="buy")),
                ("get", models.PositiveSmallIntegerField(default=1, verbose_name="get free")),
                (
                    "category",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("gpu", "GPU servers and cards"),
                            ("bare_metal", "bare-metal CPU servers"),
                        ],
                        max_length=16,
                        verbose_name="category",
                    ),
                ),
                (
                    "node_type",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.nodetype",
                        verbose_name="node type",
                    ),
                ),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="promotions",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
            ],
            options={
                "verbose_name": "promotion",
                "verbose_name_plural": "promotions",
                "ordering": ["valid_from", "code"],
            },
        ),
        migrations.CreateModel(
            name="ProvisioningRelease",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("released_at", models.DateTimeField(verbose_name="released at")),
                (
                    "provision_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="provisioning begins"),
                ),
                ("basis", models.CharField(max_length=200, verbose_name="basis")),
                (
                    "order",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="provisioning_release",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
            ],
            options={
                "verbose_name": "provisioning release",
                "verbose_name_plural": "provisioning releases",
            },
        ),
        migrations.CreateModel(
            name="Quote",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.CharField(db_index=True, max_length=32, verbose_name="number")),
                ("version", models.PositiveSmallIntegerField(default=1, verbose_name="version")),
                (
                    "contact_name",
                    models.CharField(
                        max_length=200,
                        validators=[core.validators.no_emoji],
                        verbose_name="contact",
                    ),
                ),
                ("contact_email", models.EmailField(max_length=254, verbose_name="contact email")),
                (
                    "language",
                    models.CharField(
                        choices=[("zh-hans", "Simplified Chinese"), ("en", "English")],
                        default="zh-hans",
                        max_length=8,
                        verbose_name="language",
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
                        max_digits=5,
                        validators=[
                            django.core.validators.MinValueValidator(Decimal("0")),
                            django.core.validators.MaxValueValidator(Decimal("1")),
                        ],
                        verbose_name="VAT rate",
                    ),
                ),
                (
                    "term",
                    models.CharField(
                        choices=[
                            ("day", "daily"),
                            ("month", "monthly"),
                            ("quarter", "quarterly"),
                            ("year", "annual"),
                        ],
                        max_length=8,
                        verbose_name="term",
                    ),
                ),
                (
                    "duration",
                    models.PositiveSmallIntegerField(verbose_name="duration (in term units)"),
                ),
                ("start_date", models.DateField(verbose_name="start date")),
                ("valid_until", models.DateField(verbose_name="valid until")),
                (
                    "expires_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="End of the validity day, site time.",
                        null=True,
                        verbose_name="expires",
                    ),
                ),
                (
                    "extra_discount",
                    models.DecimalField(
                        decimal_places=4,
                        default=Decimal("0"),
                        max_digits=5,
                        validators=[
                            django.core.validators.MinValueValidator(Decimal("0")),
                            django.core.validators.MaxValueValidator(Decimal("1")),
                        ],
                        verbose_name="extra discount",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("draft", "draft"),
                            ("pending_approval", "pending approval"),
                            ("approved", "approved"),
                            ("sent", "sent"),
                            ("accepted", "accepted"),
                            ("rejected", "rejected"),
                            ("expired", "expired"),
                            ("superseded", "superseded"),
                        ],
                        default="draft",
                        max_length=20,
                        verbose_name="status",
                    ),
                ),
                (
                    "list_total",
                    models.DecimalField(
                        decimal_places=2,
                        default=Decimal("0"),
                        max_digits=14,
                        verbose_name="list total",
                    ),
                ),
                (
                    "discount_total",
                    models.DecimalField(
                        decimal_places=2,
                        default=Decimal("0"),
                        max_digits=14,
                        verbose_name="discounts",
                    ),
                ),
                (
                    "net_total",
                    models.DecimalField(
                        decimal_places=2, default=Decimal("0"), max_digits=14, verbose_name="net"
                    ),
                ),
                (
                    "vat_total",
                    models.DecimalField(
                        decimal_places=2, default=Decimal("0"), max_digits=14, verbose_name="VAT"
                    ),
                ),
                (
                    "gross_total",
                    models.DecimalField(
                        decimal_places=2, default=Decimal("0"), max_digits=14, verbose_name="total"
                    ),
                ),
                ("placement", models.JSONField(blank=True, default=dict, verbose_name="placement")),
                (
                    "reservation_group",
                    models.UUIDField(blank=True, null=True, verbose_name="booking"),
                ),
                (
                    "token",
                    models.CharField(
                        default=billing.models.quotes.new_token,
                        editable=False,
                        max_length=64,
                        unique=True,
                        verbose_name="token",
                    ),
                ),
                ("notes", models.TextField(blank=True, verbose_name="notes for the customer")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("sent_at", models.DateTimeField(blank=True, null=True, verbose_name="sent")),
                ("emailed_at", models.DateTimeField(blank=True, null=True, verbose_name="emailed")),
                (
                    "decided_at",
                    models.DateTimeField(
                        blank=True, null=True, verbose_name="accepted or rejected"
                    ),
                ),
                (
                    "decided_by_name",
                    models.CharField(
                        blank=True,
                        max_length=200,
                        validators=[core.validators.no_emoji],
                        verbose_name="accepted or rejected by",
                    ),
                ),
                (
                    "decided_ip",
                    models.GenericIPAddressField(blank=True, null=True, verbose_name="from IP"),
                ),
                ("decision_comment", models.TextField(blank=True, verbose_name="comment")),
                (
                    "created_by",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="quotes_created",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="created by",
                    ),
                ),
                (
                    "decided_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="decided by",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="quotes",
                        to="accounts.organisation",
                        verbose_name="customer",
                    ),
                ),
                (
                    "previous",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="next_revision",
                        to="billing.quote",
                        verbose_name="revises",
                    ),
                ),
                (
                    "price_book",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="quotes",
                        to="billing.pricebook",
                        verbose_name="price book",
                    ),
                ),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="quotes",
                        to="inventory.site",
                        verbose_name="site",
                    ),
                ),
            ],
            options={
                "verbose_name": "quote",
                "verbose_name_plural": "quotes",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.AddField(
            model_name="order",
            name="quote",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="order",
                to="billing.quote",
                verbose_name="quote",
            ),
        ),
        migrations.AddField(
            model_name="contract",
            name="quote",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="contracts",
                to="billing.quote",
                verbose_name="quote",
            ),
        ),
        migrations.CreateModel(
            name="QuoteDocument",
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
                ("file", models.FileField(upload_to="quotes/%Y/", verbose_name="file")),
                (
                    "quote",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="documents",
                        to="billing.quote",
                        verbose_name="quote",
                    ),
                ),
            ],
            options={
                "verbose_name": "quote document",
                "verbose_name_plural": "quote documents",
            },
        ),
        migrations.CreateModel(
            name="QuoteEvent",
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
                    "quote",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="billing.quote",
                        verbose_name="quote",
                    ),
                ),
            ],
            options={
                "verbose_name": "quote event",
                "verbose_name_plural": "quote events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="QuoteItem",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("position", models.PositiveSmallIntegerField(default=0, verbose_name="position")),
                (
                    "kind",
                    models.CharField(
                        choices=[("node", "nodes"), ("addon", "add-on"), ("custom", "custom line")],
                        max_length=8,
                        verbose_name="kind",
                    ),
                ),
                (
                    "quantity",
                    models.DecimalField(
                        decimal_places=2,
                        max_digits=10,
                        validators=[django.core.validators.MinValueValidator(0)],
                        verbose_name="quantity",
                    ),
                ),
                (
                    "cards_per_node",
                    models.PositiveSmallIntegerField(default=0, verbose_name="cards per node"),
                ),
                ("addon_code", models.SlugField(blank=True, max_length=32, verbose_name="add-on")),
                (
                    "description",
                    models.CharField(blank=True, max_length=300, verbose_name="description"),
                ),
                (
                    "unit_price",
                    models.DecimalField(
                        blank=True,
                        decimal_places=2,
                        max_digits=14,
                        null=True,
                        verbose_name="unit price",
                    ),
                ),
                (
                    "discountable",
                    models.BooleanField(default=False, verbose_name="sales discount applies"),
                ),
                (
                    "card_gpu_model",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.gpumodel",
                        verbose_name="GPU cards",
                    ),
                ),
                (
                    "node_type",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="inventory.nodetype",
                        verbose_name="node type",
                    ),
                ),
                (
                    "quote",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="items",
                        to="billing.quote",
                        verbose_name="quote",
                    ),
                ),
            ],
            options={
                "verbose_name": "quote item",
                "verbose_name_plural": "quote items",
                "ordering": ["position", "pk"],
            },
        ),
        migrations.CreateModel(
            name="QuoteLine",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("position", models.PositiveSmallIntegerField(verbose_name="position")),
                ("kind", models.CharField(max_length=8, verbose_name="kind")),
                ("code", models.CharField(max_length=64, verbose_name="code")),
                ("description", models.CharField(max_length=300, verbose_name="description")),
                (
                    "description_zh",
                    models.CharField(
                        blank=True, max_length=300, verbose_name="description (Chinese)"
                    ),
                ),
                (
                    "quantity",
                    models.DecimalField(decimal_places=2, max_digits=12, verbose_name="quantity"),
                ),
                ("unit", models.CharField(max_length=16, verbose_name="unit")),
                (
                    "unit_price",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="unit price"),
                ),
                (
                    "periods",
                    models.DecimalField(decimal_places=4, max_digits=10, verbose_name="periods"),
                ),
                ("period_unit", models.CharField(max_length=8, verbose_name="period unit")),
                (
                    "list_amount",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="list"),
                ),
                (
                    "discount_amount",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="discounts"),
                ),
                ("net", models.DecimalField(decimal_places=2, max_digits=14, verbose_name="net")),
                ("vat", models.DecimalField(decimal_places=2, max_digits=14, verbose_name="VAT")),
                (
                    "gross",
                    models.DecimalField(decimal_places=2, max_digits=14, verbose_name="gross"),
                ),
                ("adjustments", models.JSONField(default=list, verbose_name="adjustments")),
                ("note", models.CharField(blank=True, max_length=200, verbose_name="note")),
                (
                    "note_zh",
                    models.CharField(blank=True, max_length=200, verbose_name="note (Chinese)"),
                ),
                (
                    "tax_category",
                    models.CharField(
                        choices=[
                            ("it_service", "IDC / IT service (信息技术服务)"),
                            ("equipment_lease", "equipment lease (有形动产租赁)"),
                            ("telecom", "basic telecom (基础电信服务)"),
                        ],
                        default="it_service",
                        max_length=16,
                        verbose_name="tax category",
                    ),
                ),
                (
                    "vat_rate",
                    models.DecimalField(
                        decimal_places=4,
                        default=Decimal("0"),
                        max_digits=5,
                        validators=[
                            django.core.validators.MinValueValidator(Decimal("0")),
                            django.core.validators.MaxValueValidator(Decimal("1")),
                        ],
                        verbose_name="VAT rate",
                    ),
                ),
                (
                    "quote",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="lines",
                        to="billing.quote",
                        verbose_name="quote",
                    ),
                ),
            ],
            options={
                "verbose_name": "quote line",
                "verbose_name_plural": "quote lines",
                "ordering": ["position"],
            },
        ),
        migrations.CreateModel(
            name="Refund",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.CharField(max_length=32, unique=True, verbose_name="number")),
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
                    "amount",
                    models.DecimalField(
                        decimal_places=2,
                        max_digits=14,
                        validators=[django.core.validators.MinValueValidator(Decimal("0.01"))],
                        verbose_name="amount",
                    ),
                ),
                ("reason", models.TextField(blank=True, verbose_name="reason")),
                (
                    "reference",
                    models.CharField(blank=True, max_length=255, verbose_name="reference"),
                ),
                (
                    "stripe_refund",
                    models.CharField(
                        blank=True,
                        max_length=255,
                        null=True,
                        unique=True,
                        verbose_name="Stripe refund",
                    ),
                ),
                (
                    "created_at",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="refunded"
                    ),
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
                (
                    "invoice",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="refunds",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
                (
                    "payment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="refunds",
                        to="billing.payment",
                        verbose_name="payment",
                    ),
                ),
            ],
            options={
                "verbose_name": "refund",
                "verbose_name_plural": "refunds",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="Renewal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kept", models.JSONField(blank=True, default=list, verbose_name="same nodes")),
                (
                    "replaced",
                    models.JSONField(blank=True, default=list, verbose_name="nodes no longer free"),
                ),
                (
                    "offered",
                    models.JSONField(
                        blank=True, default=list, verbose_name="nodes offered instead"
                    ),
                ),
                (
                    "unavailable",
                    models.TextField(blank=True, verbose_name="why no renewal could be offered"),
                ),
                (
                    "auto_accepted",
                    models.BooleanField(default=False, verbose_name="accepted automatically"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="made")),
                ("emailed_at", models.DateTimeField(blank=True, null=True, verbose_name="emailed")),
                (
                    "order",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="renewal",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
                (
                    "quote",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="renewal_of",
                        to="billing.quote",
                        verbose_name="renewal quote",
                    ),
                ),
            ],
            options={
                "verbose_name": "renewal",
                "verbose_name_plural": "renewals",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="SalesProfile",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "max_discount",
                    models.DecimalField(
                        decimal_places=4,
                        default=Decimal("0.10"),
                        help_text="0.1000 = 10%",
                        max_digits=5,
                        validators=[
                            django.core.validators.MinValueValidator(Decimal("0")),
                            django.core.validators.MaxValueValidator(Decimal("1")),
                        ],
                        verbose_name="maximum extra discount",
                    ),
                ),
                (
                    "can_approve",
                    models.BooleanField(default=False, verbose_name="approves discounts"),
                ),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sales_profile",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "sales profile",
                "verbose_name_plural": "sales profiles",
            },
        ),
        migrations.CreateModel(
            name="SellerEntity",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("legal_name", models.CharField(max_length=200, verbose_name="legal name")),
                (
                    "legal_name_zh",
                    models.CharField(
                        blank=True, max_length=200, verbose_name="legal name (Chinese)"
                    ),
                ),
                (
                    "registration_kind",
                    models.CharField(
                        choices=[
                            ("uscc", "unified social credit code (统一社会信用代码)"),
                            ("hk_br", "Hong Kong business registration number"),
                        ],
                        max_length=8,
                        verbose_name="registration",
                    ),
                ),
                (
                    "registration_number",
                    models.CharField(max_length=32, verbose_name="registration number"),
                ),
                ("address", models.CharField(max_length=300, verbose_name="address")),
                (
                    "address_zh",
                    models.CharField(blank=True, max_length=300, verbose_name="address (Chinese)"),
                ),
                ("bank_name", models.CharField(max_length=200, verbose_name="bank")),
                (
                    "bank_name_zh",
                    models.CharField(blank=True, max_length=200, verbose_name="bank (Chinese)"),
                ),
                (
                    "account_name",
                    models.CharField(
                        help_text="Exactly the seller's legal name.",
                        max_length=200,
                        verbose_name="account name",
                    ),
                ),
                ("account_number", models.CharField(max_length=64, verbose_name="account number")),
                (
                    "cnaps_code",
                    models.CharField(
                        blank=True,
                        max_length=12,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^\\d{12}$", "A CNAPS code has 12 digits."
                            )
                        ],
                        verbose_name="CNAPS code",
                    ),
                ),
                (
                    "swift_code",
                    models.CharField(
                        blank=True,
                        max_length=11,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$",
                                "A SWIFT/BIC code has 8 or 11 characters.",
                            )
                        ],
                        verbose_name="SWIFT/BIC",
                    ),
                ),
                (
                    "telecom_licence",
                    models.CharField(
                        blank=True,
                        help_text="Mainland: the number of the value-added telecom business licence for IDC services (增值电信业务经营许可证); Hong Kong: the OFCA licence number.",
                        max_length=64,
                        verbose_name="telecom licence",
                    ),
                ),
                (
                    "issues_fapiao",
                    models.BooleanField(
                        default=True,
                        help_text="Payment documents are payment requests (付款通知书) and carry the customer's fapiao request; off means invoices (Hong Kong).",
                        verbose_name="mainland entity",
                    ),
                ),
                (
                    "site",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="seller",
                        to="inventory.site",
                        verbose_name="site",
                    ),
                ),
            ],
            options={
                "verbose_name": "seller entity",
                "verbose_name_plural": "seller entities",
            },
        ),
        migrations.CreateModel(
            name="ContractSignatory",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, verbose_name="full name")),
                (
                    "name_zh",
                    models.CharField(
                        blank=True, max_length=200, verbose_name="full name (Chinese)"
                    ),
                ),
                ("title", models.CharField(max_length=200, verbose_name="title")),
                (
                    "title_zh",
                    models.CharField(blank=True, max_length=200, verbose_name="title (Chinese)"),
                ),
                ("active", models.BooleanField(default=True, verbose_name="active")),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="contract_signatory",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
                (
                    "seller",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="signatories",
                        to="billing.sellerentity",
                        verbose_name="seller entity",
                    ),
                ),
            ],
            options={
                "verbose_name": "authorised signatory",
                "verbose_name_plural": "authorised signatories",
            },
        ),
        migrations.CreateModel(
            name="SigningCode",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("email", models.EmailField(max_length=254, verbose_name="email")),
                ("code_hash", models.CharField(max_length=64, verbose_name="code hash")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                ("expires_at", models.DateTimeField(verbose_name="expires at")),
                ("attempts", models.PositiveSmallIntegerField(default=0, verbose_name="attempts")),
                ("used_at", models.DateTimeField(blank=True, null=True, verbose_name="used at")),
                (
                    "contract",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="codes",
                        to="billing.contract",
                        verbose_name="contract",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "signing code",
                "verbose_name_plural": "signing codes",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.AddField(
            model_name="contract",
            name="signed_code",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="billing.signingcode",
                verbose_name="signing code used",
            ),
        ),
        migrations.CreateModel(
            name="SlaCredit",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("node_ref", models.CharField(max_length=100, verbose_name="node")),
                ("period_seq", models.PositiveSmallIntegerField(verbose_name="billing period")),
                ("month", models.DateField(blank=True, null=True, verbose_name="month")),
                ("period_start", models.DateTimeField(verbose_name="measured from")),
                ("period_end", models.DateTimeField(verbose_name="measured until")),
                (
                    "availability",
                    models.DecimalField(
                        decimal_places=3, max_digits=7, verbose_name="availability %"
                    ),
                ),
                (
                    "credit_percent",
                    models.DecimalField(decimal_places=2, max_digits=5, verbose_name="credit %"),
                ),
                (
                    "node_charge",
                    models.DecimalField(
                        decimal_places=2,
                        max_digits=14,
                        verbose_name="node's charge for the month (net)",
                    ),
                ),
                (
                    "amount",
                    models.DecimalField(
                        decimal_places=2, max_digits=14, verbose_name="credit (net)"
                    ),
                ),
                ("explanation", models.TextField(verbose_name="explanation")),
                ("evidence", models.JSONField(default=dict, verbose_name="evidence")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "credit_note",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="sla_credits",
                        to="billing.creditnote",
                        verbose_name="credit note",
                    ),
                ),
                (
                    "invoice_line",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="sla_credit",
                        to="billing.invoiceline",
                        verbose_name="invoice line",
                    ),
                ),
                (
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="sla_credits",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
            ],
            options={
                "verbose_name": "SLA credit",
                "verbose_name_plural": "SLA credits",
                "ordering": ["order", "month", "period_seq", "node_ref"],
            },
        ),
        migrations.CreateModel(
            name="Suspension",
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
                        choices=[("suspended", "suspended"), ("resumed", "resumed")],
                        default="suspended",
                        max_length=12,
                        verbose_name="status",
                    ),
                ),
                ("suspended_at", models.DateTimeField(verbose_name="suspended")),
                ("resumed_at", models.DateTimeField(blank=True, null=True, verbose_name="resumed")),
                (
                    "suspended_emailed_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="suspension emailed"),
                ),
                (
                    "resumed_emailed_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="resumption emailed"),
                ),
                (
                    "invoice",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="suspension",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
                (
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="suspensions",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
            ],
            options={
                "verbose_name": "suspension",
                "verbose_name_plural": "suspensions",
                "ordering": ["-suspended_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="SuspensionEvent",
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
                    "suspension",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="billing.suspension",
                        verbose_name="suspension",
                    ),
                ),
            ],
            options={
                "verbose_name": "suspension event",
                "verbose_name_plural": "suspension events",
                "ordering": ["created_at", "pk"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="TermsAcceptance",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.CharField(max_length=16, verbose_name="terms version")),
                ("name", models.CharField(max_length=200, verbose_name="name")),
                ("accepted_at", models.DateTimeField(verbose_name="accepted")),
                (
                    "ip",
                    models.GenericIPAddressField(blank=True, null=True, verbose_name="IP address"),
                ),
                (
                    "order",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="terms_acceptance",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "terms acceptance",
                "verbose_name_plural": "terms acceptances",
            },
        ),
        migrations.CreateModel(
            name="UsageRecord",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "metric",
                    models.CharField(
                        choices=[("egress_tb", "internet egress traffic (TB)")],
                        max_length=16,
                        verbose_name="metric",
                    ),
                ),
                ("day", models.DateField(verbose_name="day")),
                (
                    "quantity",
                    models.DecimalField(decimal_places=3, max_digits=14, verbose_name="quantity"),
                ),
                ("external_id", models.CharField(max_length=100, verbose_name="external id")),
                ("source", models.CharField(max_length=16, verbose_name="source")),
                (
                    "node_hostname",
                    models.CharField(blank=True, max_length=100, verbose_name="node"),
                ),
                ("recorded_at", models.DateTimeField(auto_now_add=True, verbose_name="recorded")),
                ("void_reason", models.TextField(blank=True, verbose_name="reason for voiding")),
                (
                    "invoice",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="usage_records",
                        to="billing.invoice",
                        verbose_name="invoice",
                    ),
                ),
                (
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="usage_records",
                        to="billing.order",
                        verbose_name="order",
                    ),
                ),
                (
                    "recorded_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="recorded by",
                    ),
                ),
                (
                    "voids",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="voided_by",
                        to="billing.usagerecord",
                        verbose_name="voids",
                    ),
                ),
            ],
            options={
                "verbose_name": "usage record",
                "verbose_name_plural": "usage records",
                "ordering": ["order", "day", "pk"],
                "permissions": [("record_usage", "Can post, import and void usage records")],
            },
        ),
        migrations.CreateModel(
            name="ContractAuditEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.PositiveIntegerField(verbose_name="sequence number")),
                ("at", models.DateTimeField(verbose_name="time")),
                ("kind", models.CharField(max_length=32, verbose_name="kind")),
                ("detail", models.JSONField(default=dict, verbose_name="detail")),
                ("prev_hash", models.CharField(max_length=64, verbose_name="previous hash")),
                ("hash", models.CharField(max_length=64, verbose_name="hash")),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="actor",
                    ),
                ),
                (
                    "contract",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="audit",
                        to="billing.contract",
                        verbose_name="contract",
                    ),
                ),
            ],
            options={
                "verbose_name": "contract audit entry",
                "verbose_name_plural": "contract audit entries",
                "ordering": ["contract", "seq"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("contract", "seq"), name="contractaudit_unique_seq"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ContractDocument",
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
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("draft", "for signature"),
                            ("signed", "signed by the customer"),
                            ("sealed", "signed and sealed"),
                            ("audit", "audit record"),
                        ],
                        max_length=8,
                        verbose_name="kind",
                    ),
                ),
                ("file", models.FileField(upload_to="contracts/%Y/", verbose_name="file")),
                (
                    "contract",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="documents",
                        to="billing.contract",
                        verbose_name="contract",
                    ),
                ),
            ],
            options={
                "verbose_name": "contract document",
                "verbose_name_plural": "contract documents",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("contract", "kind", "language"), name="contractdoc_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="CreditNoteDocument",
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
                ("file", models.FileField(upload_to="credit_notes/%Y/", verbose_name="file")),
                (
                    "credit_note",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="documents",
                        to="billing.creditnote",
                        verbose_name="credit note",
                    ),
                ),
            ],
            options={
                "verbose_name": "credit note PDF",
                "verbose_name_plural": "credit note PDFs",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("credit_note", "language"), name="creditnotedoc_unique"
                    )
                ],
            },
        ),
        migrations.AddConstraint(
            model_name="dunningstep",
            constraint=models.UniqueConstraint(
                fields=("policy", "offset_days", "action"), name="dunningstep_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="dunningstep",
            constraint=models.UniqueConstraint(
                condition=models.Q(("action", "suspend")),
                fields=("policy",),
                name="dunningstep_one_suspend",
            ),
        ),
        migrations.AddConstraint(
            model_name="dunningnotice",
            constraint=models.UniqueConstraint(
                fields=("invoice", "step"), name="dunningnotice_once"
            ),
        ),
        migrations.AddConstraint(
            model_name="creditapplication",
            constraint=models.CheckConstraint(
                condition=models.Q(("amount__gt", 0)), name="creditapplication_positive"
            ),
        ),
        migrations.AddConstraint(
            model_name="invoicedocument",
            constraint=models.UniqueConstraint(
                fields=("invoice", "language"), name="invoicedoc_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="invoiceline",
            constraint=models.UniqueConstraint(
                fields=("invoice", "position"), name="invoiceline_unique_pos"
            ),
        ),
        migrations.AddConstraint(
            model_name="numbersequence",
            constraint=models.UniqueConstraint(
                fields=("kind", "site", "year"), name="numbersequence_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="invoice",
            constraint=models.UniqueConstraint(
                condition=models.Q(("period_seq__isnull", False)),
                fields=("order", "period_seq"),
                name="invoice_unique_order_period",
            ),
        ),
        migrations.AddConstraint(
            model_name="creditnote",
            constraint=models.CheckConstraint(
                condition=models.Q(("gross_total__lt", 0)), name="creditnote_negative"
            ),
        ),
        migrations.AddConstraint(
            model_name="pricebook",
            constraint=models.UniqueConstraint(
                fields=("site", "currency", "effective_from"), name="pricebook_unique_start"
            ),
        ),
        migrations.AddConstraint(
            model_name="nodeprice",
            constraint=models.UniqueConstraint(
                fields=("price_book", "node_type"), name="nodeprice_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="nodeprice",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "daily__gte",
                        django.db.models.expressions.CombinedExpression(
                            models.F("monthly"), "/", models.Value(30)
                        ),
                    )
                ),
                name="nodeprice_daily_not_below_monthly",
                violation_error_message="The daily rate × 30 must be at least the monthly rate, or renting by the day would be cheaper than by the month.",
            ),
        ),
        migrations.AddConstraint(
            model_name="discountrule",
            constraint=models.UniqueConstraint(
                fields=("price_book", "code"), name="discount_unique_code"
            ),
        ),
        migrations.AddConstraint(
            model_name="discountrule",
            constraint=models.CheckConstraint(
                condition=models.Q(("multiplier__gt", 0), ("multiplier__lte", 1)),
                name="discount_multiplier_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="cardoptionprice",
            constraint=models.UniqueConstraint(
                fields=("price_book", "node_type", "gpu_model"), name="cardprice_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="cardoptionprice",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "daily__gte",
                        django.db.models.expressions.CombinedExpression(
                            models.F("monthly"), "/", models.Value(30)
                        ),
                    )
                ),
                name="cardprice_daily_not_below_monthly",
                violation_error_message="The daily rate × 30 must be at least the monthly rate, or renting by the day would be cheaper than by the month.",
            ),
        ),
        migrations.AddConstraint(
            model_name="addonprice",
            constraint=models.UniqueConstraint(
                fields=("price_book", "code"), name="addon_unique_code"
            ),
        ),
        migrations.AddConstraint(
            model_name="promotion",
            constraint=models.UniqueConstraint(
                fields=("price_book", "code"), name="promotion_unique_code"
            ),
        ),
        migrations.AddConstraint(
            model_name="promotion",
            constraint=models.CheckConstraint(
                condition=models.Q(("valid_until__gte", models.F("valid_from"))),
                name="promotion_dates_in_order",
            ),
        ),
        migrations.AddConstraint(
            model_name="promotion",
            constraint=models.CheckConstraint(
                condition=models.Q(("buy__gte", 1), ("get__gte", 1)), name="promotion_n_m"
            ),
        ),
        migrations.AddIndex(
            model_name="quote",
            index=models.Index(fields=["status", "valid_until"], name="quote_expiry_idx"),
        ),
        migrations.AddConstraint(
            model_name="quote",
            constraint=models.UniqueConstraint(
                fields=("number", "version"), name="quote_unique_version"
            ),
        ),
        migrations.AddIndex(
            model_name="order",
            index=models.Index(fields=["status", "payment_due_at"], name="order_due_idx"),
        ),
        migrations.AddConstraint(
            model_name="order",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key", ""), _negated=True),
                fields=("organisation", "idempotency_key"),
                name="order_unique_idempotency_key",
            ),
        ),
        migrations.AddConstraint(
            model_name="quotedocument",
            constraint=models.UniqueConstraint(
                fields=("quote", "language"), name="quotedoc_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="quoteitem",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("kind", "node"), _negated=True),
                    ("node_type__isnull", False),
                    _connector="OR",
                ),
                name="quoteitem_node_has_type",
            ),
        ),
        migrations.AddConstraint(
            model_name="quoteline",
            constraint=models.UniqueConstraint(
                fields=("quote", "position"), name="quoteline_unique_pos"
            ),
        ),
        migrations.AddConstraint(
            model_name="refund",
            constraint=models.CheckConstraint(
                condition=models.Q(("amount__gt", 0)), name="refund_positive"
            ),
        ),
        migrations.AddConstraint(
            model_name="slacredit",
            constraint=models.UniqueConstraint(
                condition=models.Q(("month__isnull", True)),
                fields=("order", "node_ref", "period_seq"),
                name="slacredit_unique_node_period",
            ),
        ),
        migrations.AddConstraint(
            model_name="slacredit",
            constraint=models.UniqueConstraint(
                condition=models.Q(("month__isnull", False)),
                fields=("order", "node_ref", "month"),
                name="slacredit_unique_node_month",
            ),
        ),
        migrations.AddConstraint(
            model_name="suspension",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "suspended")),
                fields=("order",),
                name="suspension_one_open",
            ),
        ),
        migrations.AddConstraint(
            model_name="usagerecord",
            constraint=models.UniqueConstraint(
                fields=("order", "external_id"), name="usage_unique_external"
            ),
        ),
        migrations.AddConstraint(
            model_name="usagerecord",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("quantity__gte", 0), ("voids__isnull", True)),
                    models.Q(("quantity__lte", 0), ("voids__isnull", False)),
                    _connector="OR",
                ),
                name="usage_quantity_positive",
            ),
        ),
        migrations.AddConstraint(
            model_name="usagerecord",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("voids__isnull", True),
                    models.Q(("void_reason", ""), _negated=True),
                    _connector="OR",
                ),
                name="usage_void_has_reason",
            ),
        ),
        migrations.RunPython(seed_dunning_policy, migrations.RunPython.noop),
    ]
