"""Customer organisations and their members."""

from __future__ import annotations

import re
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.validators import no_emoji


class FapiaoType(models.TextChoices):
    """The kind of 发票 the customer wants from the tax system (mainland China)."""

    ORDINARY = "ordinary", _("ordinary VAT fapiao (普票)")
    SPECIAL = "special", _("special VAT fapiao (专票)")


class Organisation(models.Model):
    """A customer company: what quotes, orders, contracts and invoices belong to."""

    name = models.CharField(_("name"), max_length=200, validators=[no_emoji])
    legal_name = models.CharField(
        _("legal name"), max_length=200, blank=True, validators=[no_emoji]
    )
    tax_id = models.CharField(
        _("tax ID"), max_length=64, blank=True, help_text=_("For the fapiao (统一社会信用代码).")
    )
    billing_address = models.TextField(_("billing address"), blank=True)
    country = models.CharField(_("country"), max_length=2, default="CN")
    billing_email = models.EmailField(_("billing email"), blank=True)
    # The 发票 request, printed on mainland payment requests as "fapiao to be issued to".
    fapiao_type = models.CharField(
        _("fapiao type"), max_length=10, choices=FapiaoType.choices, default=FapiaoType.ORDINARY
    )
    fapiao_title = models.CharField(
        _("fapiao title"),
        max_length=200,
        blank=True,
        help_text=_("The buyer's name on the fapiao; the legal name when empty."),
    )
    fapiao_address_phone = models.CharField(
        _("registered address and phone"), max_length=300, blank=True
    )
    fapiao_bank_account = models.CharField(_("bank and account number"), max_length=300, blank=True)
    auto_renew = models.BooleanField(
        _("renew rentals automatically"),
        default=False,
        help_text=_(
            "When on, the renewal quote made before a rental ends is accepted for the "
            "organisation at once (its contract or terms and payment follow as usual)."
        ),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("organisation")
        verbose_name_plural = _("organisations")

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        self.tax_id = tax_id_normalise(country=self.country, tax_id=self.tax_id)
        problem = tax_id_problem(country=self.country, tax_id=self.tax_id)
        if problem:
            raise ValidationError({"tax_id": problem})
        if self.fapiao_type == FapiaoType.SPECIAL and not (
            self.tax_id and self.fapiao_address_phone and self.fapiao_bank_account
        ):
            raise ValidationError(
                {
                    "fapiao_type": gettext(
                        "A special VAT fapiao (专票) needs the tax ID, the registered address "
                        "and phone, and the bank and account number."
                    )
                }
            )

    @property
    def fapiao_buyer(self) -> str:
        """The buyer's name on the fapiao."""
        return self.fapiao_title or self.legal_name or self.name

    def legal_entity_missing(self) -> list[str]:
        """What a contract needs to name the customer's legal entity and is not on file
        (translated, in the order of the organisation form): the legal name, the
        registration number (China: a valid 统一社会信用代码; Hong Kong: the business
        registration number) and the registered address. Empty when complete."""
        return legal_entity_missing(
            legal_name=self.legal_name,
            country=self.country,
            tax_id=self.tax_id,
            address=self.billing_address,
        )

    @property
    def legal_details_complete(self) -> bool:
        """Whether the legal entity is on file (``legal_entity_missing`` is empty)."""
        return not self.legal_entity_missing()


class MemberRole(models.TextChoices):
    OWNER = "owner", _("owner")
    MEMBER = "member", _("member")
    BILLING = "billing", _("billing")


class Membership(models.Model):
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("organisation"),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("user"),
    )
    role = models.CharField(
        _("role"), max_length=16, choices=MemberRole.choices, default=MemberRole.MEMBER
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(fields=["organisation", "user"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organisation} ({self.role})"


# --- Countries and tax IDs ----------------------------------------------------------------

# ISO 3166-1 alpha-2 codes offered on the organisation settings page: where our customers
# are. The field itself stores any two-letter code.
COUNTRY_CHOICES: list[tuple[str, str | Promise]] = [
    ("CN", _("China (mainland)")),
    ("HK", _("Hong Kong")),
    ("MO", _("Macao")),
    ("TW", _("Taiwan")),
    ("SG", _("Singapore")),
    ("JP", _("Japan")),
    ("KR", _("South Korea")),
    ("MY", _("Malaysia")),
    ("TH", _("Thailand")),
    ("VN", _("Vietnam")),
    ("ID", _("Indonesia")),
    ("IN", _("India")),
    ("AE", _("United Arab Emirates")),
    ("AU", _("Australia")),
    ("GB", _("United Kingdom")),
    ("DE", _("Germany")),
    ("FR", _("France")),
    ("NL", _("Netherlands")),
    ("CH", _("Switzerland")),
    ("CA", _("Canada")),
    ("US", _("United States")),
]

# 统一社会信用代码 (GB 32100-2015): 18 characters, digits and upper-case letters except
# I, O, S, V and Z.
USCC_RE = re.compile(r"[0-9A-HJ-NP-RTUW-Y]{18}")
USCC_ALPHABET = "0123456789ABCDEFGHJKLMNPQRTUWXY"  # value = position (31 characters)
USCC_WEIGHTS = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)
# Hong Kong business registration number: the first 8 digits of the BR certificate's
# number, optionally with the 3-digit branch number (the rest of the certificate's number
# is its expiry and a check digit, which change on renewal).
HK_BR_RE = re.compile(r"\d{8}(-\d{3})?")


def uscc_check_character(first17: str) -> str:
    """The 18th character of a 统一社会信用代码 (GB 32100-2015): 31 − (Σ value × weight
    mod 31), with 31 written as 0."""
    total = sum(USCC_ALPHABET.index(c) * w for c, w in zip(first17, USCC_WEIGHTS, strict=True))
    return USCC_ALPHABET[(31 - total % 31) % 31]


def tax_id_normalise(*, country: str, tax_id: str) -> str:
    """How a tax ID is stored: trimmed; for China and Hong Kong, upper-case without
    spaces."""
    tax_id = tax_id.strip()
    if country in ("CN", "HK"):
        tax_id = "".join(tax_id.split()).upper()
    return tax_id


def tax_id_problem(*, country: str, tax_id: str) -> str | None:
    """Why a (normalised) tax ID is not acceptable for a country, or ``None``.

    China's unified social credit code is checked with its check character (GB
    32100-2015), a Hong Kong business registration number by its form (8 digits, with an
    optional 3-digit branch number: it has no published check digit); other countries'
    numbers are accepted as given.
    """
    if country == "CN" and tax_id and not USCC_RE.fullmatch(tax_id):
        return gettext(
            "A unified social credit code (统一社会信用代码) has 18 characters: digits and "
            "capital letters except I, O, S, V and Z."
        )
    if country == "CN" and tax_id and uscc_check_character(tax_id[:17]) != tax_id[17]:
        return gettext(
            "This unified social credit code (统一社会信用代码) has a typing error: its last "
            "character does not match the other 17. Copy it from the business licence."
        )
    if country == "HK" and tax_id and not HK_BR_RE.fullmatch(tax_id):
        return gettext(
            "A Hong Kong business registration number has 8 digits (the first 8 of the "
            "business registration certificate's number, e.g. 12345678 or "
            "12345678-000)."
        )
    return None


def registration_label(country: str) -> str:
    """What the registration number is called for an organisation of ``country``."""
    if country == "CN":
        return gettext("unified social credit code (统一社会信用代码)")
    if country == "HK":
        return gettext("business registration number (BR)")
    return gettext("company registration or tax number")


def legal_entity_missing(*, legal_name: str, country: str, tax_id: str, address: str) -> list[str]:
    """What is missing (or invalid) to name a legal entity on a contract: its legal name,
    registration number and registered address (``Organisation.legal_entity_missing``)."""
    missing = []
    if not legal_name.strip():
        missing.append(gettext("legal name"))
    normalised = tax_id_normalise(country=country, tax_id=tax_id)
    if not normalised or tax_id_problem(country=country, tax_id=normalised):
        missing.append(registration_label(country))
    if not address.strip():
        missing.append(gettext("registered address"))
    return missing


# --- Accounts -----------------------------------------------------------------------------


class CustomerProfile(models.Model):
    """What the portal knows about a customer's account beyond Django's user.

    Sign-up creates one with ``email_verified_at`` empty; the link in the verification
    email (or an accepted invitation, or a completed password reset) fills it. Users
    without a profile were created by staff (admin, seed data) and count as verified.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="customer_profile",
        verbose_name=_("user"),
    )
    email_verified_at = models.DateTimeField(_("email verified"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("customer profile")
        verbose_name_plural = _("customer profiles")

    def __str__(self) -> str:
        return str(self.user)

    @property
    def email_verified(self) -> bool:
        return self.email_verified_at is not None


class Invitation(models.Model):
    """An owner's invitation for an email address to join an organisation with a role.

    The link in the email carries ``token``; the invitation is open until ``expires_at``
    unless accepted or withdrawn first.
    """

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="invitations",
        verbose_name=_("organisation"),
    )
    email = models.EmailField(_("email"))
    role = models.CharField(_("role"), max_length=16, choices=MemberRole.choices)
    token = models.CharField(max_length=64, unique=True, editable=False, verbose_name=_("token"))
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("invited by"),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires"))
    accepted_at = models.DateTimeField(_("accepted"), null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("accepted by"),
    )
    revoked_at = models.DateTimeField(_("withdrawn"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")
        constraints = [
            # One open invitation per address and organisation: inviting again withdraws
            # the previous one.
            models.UniqueConstraint(
                fields=["organisation", "email"],
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="invitation_one_open_per_email",
            ),
            models.CheckConstraint(
                condition=models.Q(email=Lower("email")), name="invitation_email_lower"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.email} → {self.organisation} ({self.role})"

    def is_open(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.accepted_at is None and self.revoked_at is None and now < self.expires_at


class SshPublicKey(models.Model):
    """An SSH public key of an organisation, installed on the nodes of its orders.

    Only ``accounts.services.ssh_key_add`` creates them: it parses the key with
    ``accounts.ssh_keys`` (ed25519, ECDSA, RSA ≥ 3072 bits) and stores the normalised line.
    """

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="ssh_keys",
        verbose_name=_("organisation"),
    )
    name = models.CharField(_("name"), max_length=100)
    public_key = models.TextField(_("public key"))
    algorithm = models.CharField(_("algorithm"), max_length=16)
    bits = models.PositiveIntegerField(_("bits"))
    fingerprint = models.CharField(_("fingerprint"), max_length=64)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("added by"),
    )
    created_at = models.DateTimeField(_("added"), auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]
        verbose_name = _("SSH public key")
        verbose_name_plural = _("SSH public keys")
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "fingerprint"], name="sshkey_unique_per_org"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.algorithm}, {self.fingerprint})"


# --- API keys, idempotency records and outgoing webhooks ------------------------------------
# Organisation data that every layer above may write into (billing and provisioning emit
# webhook events through ``accounts.webhooks.emit_event``). The rules are in
# ``accounts.api_keys`` and ``accounts.webhooks``; the HTTP side is ``portal.api``.


class ApiScope(models.TextChoices):
    """What a key may do with one resource family."""

    READ = "read", _("read")
    WRITE = "write", _("read and write")


class ApiKey(models.Model):
    """A key for ``/api/v1/``: shown once at creation, stored as its SHA-256 only.

    ``prefix`` (the first characters after ``gpk_``) finds the row; the digest of the whole
    key proves it. The key acts as ``created_by`` (an owner when it was made) within its
    organisation, and stops working when revoked, expired, or when that user leaves.
    """

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="api_keys",
        verbose_name=_("organisation"),
    )
    name = models.CharField(_("name"), max_length=100, validators=[no_emoji])
    prefix = models.CharField(_("prefix"), max_length=16, unique=True)
    key_hash = models.CharField(_("key digest (SHA-256)"), max_length=64)
    scopes = models.JSONField(_("scopes"), default=dict)  # {"orders": "write", ...}
    allowed_ips = models.JSONField(_("IP allow-list"), default=list, blank=True)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_keys",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)
    last_used_ip = models.GenericIPAddressField(_("last used from"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")

    def __str__(self) -> str:
        return f"{self.name} (gpk_{self.prefix}…)"

    def active_at(self, moment: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or moment < self.expires_at)


class ApiAuditEntry(models.Model):
    """One write made with an API key: who (the key), what (method, path), the outcome."""

    api_key = models.ForeignKey(
        ApiKey, on_delete=models.CASCADE, related_name="audit", verbose_name=_("API key")
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="+", verbose_name=_("organisation")
    )
    method = models.CharField(_("method"), max_length=8)
    path = models.CharField(_("path"), max_length=500)
    status_code = models.PositiveSmallIntegerField(_("status"))
    idempotency_key = models.CharField(_("idempotency key"), max_length=200, blank=True)
    ip = models.GenericIPAddressField(_("IP address"), null=True, blank=True)
    created_at = models.DateTimeField(_("at"), auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("API audit entry")
        verbose_name_plural = _("API audit entries")

    def __str__(self) -> str:
        return f"{self.method} {self.path} → {self.status_code}"


class IdempotencyRecord(models.Model):
    """The first answer to a POST with an ``Idempotency-Key``, replayed to its retries.

    Claimed (row inserted, ``status_code`` 0) before the work starts, so concurrent
    retries with one key wait on the row instead of doing the work twice.
    """

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="+", verbose_name=_("organisation")
    )
    key = models.CharField(_("idempotency key"), max_length=200)
    request_hash = models.CharField(_("request digest"), max_length=64)
    status_code = models.PositiveSmallIntegerField(_("status"), default=0)
    response = models.JSONField(_("response"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("idempotency record")
        verbose_name_plural = _("idempotency records")
        constraints = [
            models.UniqueConstraint(fields=["organisation", "key"], name="idempotency_unique")
        ]

    def __str__(self) -> str:
        return self.key


class WebhookEndpoint(models.Model):
    """A URL of the organisation's that receives the event types it chose, signed with
    ``secret`` (and, until ``previous_secret_until``, also with the secret it replaced)."""

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="webhook_endpoints",
        verbose_name=_("organisation"),
    )
    url = models.URLField(_("URL"), max_length=500)
    description = models.CharField(_("description"), max_length=200, blank=True)
    event_types = models.JSONField(_("event types"), default=list)
    secret = models.CharField(_("signing secret"), max_length=100)
    previous_secret = models.CharField(_("previous secret"), max_length=100, blank=True)
    previous_secret_until = models.DateTimeField(_("previous secret valid until"), null=True)
    active = models.BooleanField(_("active"), default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        verbose_name = _("webhook endpoint")
        verbose_name_plural = _("webhook endpoints")

    def __str__(self) -> str:
        return self.url


class WebhookEvent(models.Model):
    """Something that happened to an organisation's objects, as sent to its endpoints.
    ``dedupe`` makes an emission idempotent (one ``order.paid`` per order)."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="+", verbose_name=_("organisation")
    )
    event_id = models.CharField(_("event ID"), max_length=40, unique=True)
    type = models.CharField(_("type"), max_length=60)
    data = models.JSONField(_("data"), default=dict)
    dedupe = models.CharField(_("deduplication key"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("webhook event")
        verbose_name_plural = _("webhook events")
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "dedupe"],
                condition=~models.Q(dedupe=""),
                name="webhook_event_dedupe",
            )
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.event_id}"


class WebhookDeliveryStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    RETRYING = "retrying", _("retrying")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")


class WebhookDelivery(models.Model):
    """One event sent to one endpoint (a replay is a new delivery of the same event)."""

    endpoint = models.ForeignKey(
        WebhookEndpoint,
        on_delete=models.CASCADE,
        related_name="deliveries",
        verbose_name=_("endpoint"),
    )
    event = models.ForeignKey(
        WebhookEvent, on_delete=models.CASCADE, related_name="deliveries", verbose_name=_("event")
    )
    status = models.CharField(
        _("status"),
        max_length=12,
        choices=WebhookDeliveryStatus.choices,
        default=WebhookDeliveryStatus.PENDING,
    )
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    replay_of = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("replay of"),
    )
    last_status_code = models.PositiveSmallIntegerField(_("last HTTP status"), null=True)
    last_response_ms = models.PositiveIntegerField(_("last response time (ms)"), null=True)
    last_error = models.CharField(_("last error"), max_length=500, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    delivered_at = models.DateTimeField(_("delivered"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint}"


class WebhookAttempt(models.Model):
    """One HTTP request of a delivery: the log the dashboard shows."""

    delivery = models.ForeignKey(
        WebhookDelivery,
        on_delete=models.CASCADE,
        related_name="attempt_log",
        verbose_name=_("delivery"),
    )
    status_code = models.PositiveSmallIntegerField(_("HTTP status"), null=True)
    response_ms = models.PositiveIntegerField(_("response time (ms)"))
    error = models.CharField(_("error"), max_length=500, blank=True)
    created_at = models.DateTimeField(_("at"), auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("webhook attempt")
        verbose_name_plural = _("webhook attempts")

    def __str__(self) -> str:
        return f"{self.delivery_id}: {self.status_code or self.error}"
