"""Quotes and what they are made of: sales profiles, gapless number sequences, quote
items and priced lines, events, stored documents, the seller entities and anonymous
estimates.

A quote stores the engine's priced lines as they were when it was priced: a later
price-book change never touches a quote that was sent.
"""

from __future__ import annotations

import secrets
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation, tax_id_problem
from billing.models.pricebooks import PriceBook, TaxCategory, Term, fraction_field
from billing.pricing.periods import end_of_day, quote_expiry
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent, StoredDocument
from core.money import money_field
from core.validators import no_emoji
from inventory.models import Currency, GPUModel, NodeType, Site

__all__ = [
    "CNAPS_RE",
    "QUOTE_EDITABLE",
    "QUOTE_SENT_STATUSES",
    "QUOTE_TRANSITIONS",
    "SWIFT_RE",
    "Estimate",
    "ItemKind",
    "NumberSequence",
    "Quote",
    "QuoteDocument",
    "QuoteEvent",
    "QuoteItem",
    "QuoteLine",
    "QuoteStatus",
    "RegistrationKind",
    "SalesProfile",
    "SellerEntity",
    "new_token",
]


# --- Sales ------------------------------------------------------------------------------


class SalesProfile(models.Model):
    """How much extra discount a salesperson may give alone, and whether they approve."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="sales_profile",
        verbose_name=_("user"),
    )
    max_discount = fraction_field(
        _("maximum extra discount"), default=Decimal("0.10"), help_text=_("0.1000 = 10%")
    )
    can_approve = models.BooleanField(_("approves discounts"), default=False)

    class Meta:
        verbose_name = _("sales profile")
        verbose_name_plural = _("sales profiles")

    def __str__(self) -> str:
        return f"{self.user} ≤ {self.max_discount:.0%}"


# --- Quotes -----------------------------------------------------------------------------


class QuoteStatus(models.TextChoices):
    DRAFT = "draft", _("draft")
    PENDING_APPROVAL = "pending_approval", _("pending approval")
    APPROVED = "approved", _("approved")
    SENT = "sent", _("sent")
    ACCEPTED = "accepted", _("accepted")
    REJECTED = "rejected", _("rejected")
    EXPIRED = "expired", _("expired")
    SUPERSEDED = "superseded", _("superseded")


QUOTE_TRANSITIONS: dict[str, frozenset[str]] = {
    QuoteStatus.DRAFT: frozenset(
        {QuoteStatus.PENDING_APPROVAL, QuoteStatus.SENT, QuoteStatus.SUPERSEDED}
    ),
    QuoteStatus.PENDING_APPROVAL: frozenset(
        {QuoteStatus.APPROVED, QuoteStatus.DRAFT, QuoteStatus.SUPERSEDED}
    ),
    QuoteStatus.APPROVED: frozenset({QuoteStatus.SENT, QuoteStatus.DRAFT, QuoteStatus.SUPERSEDED}),
    QuoteStatus.SENT: frozenset(
        {
            QuoteStatus.ACCEPTED,
            QuoteStatus.REJECTED,
            QuoteStatus.EXPIRED,
            QuoteStatus.SUPERSEDED,
        }
    ),
    QuoteStatus.ACCEPTED: frozenset(),
    QuoteStatus.REJECTED: frozenset(),
    QuoteStatus.EXPIRED: frozenset(),
    QuoteStatus.SUPERSEDED: frozenset(),
}
# A quote sent to its customer, and whatever became of it since. The one set for two
# facts that must not drift apart: these are what a customer may see of an organisation's
# quotes (drafts and quotes awaiting approval are the sales team's business), and their
# content can no longer change, so their PDF is rendered once and kept.
QUOTE_SENT_STATUSES = frozenset(
    {
        QuoteStatus.SENT,
        QuoteStatus.ACCEPTED,
        QuoteStatus.REJECTED,
        QuoteStatus.EXPIRED,
        QuoteStatus.SUPERSEDED,
    }
)
# Statuses in which the quote's content may still change (editing withdraws an approval).
QUOTE_EDITABLE = (QuoteStatus.DRAFT, QuoteStatus.PENDING_APPROVAL, QuoteStatus.APPROVED)


def new_token() -> str:
    return secrets.token_urlsafe(32)


class NumberSequence(models.Model):
    """The last number used per document kind, site and year (Q-SZ-2026-000123).

    Taken under a row lock inside the creating transaction, so numbers are gapless:
    a rolled-back creation gives its number back.
    """

    kind = models.CharField(
        max_length=8, verbose_name=_("kind")
    )  # "Q" quotes, "O" orders, "I" invoices
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="+", verbose_name=_("site")
    )
    year = models.PositiveSmallIntegerField(verbose_name=_("year"))
    last = models.PositiveIntegerField(default=0, verbose_name=_("last number"))

    class Meta:
        verbose_name = _("number sequence")
        verbose_name_plural = _("number sequences")
        constraints = [
            models.UniqueConstraint(fields=["kind", "site", "year"], name="numbersequence_unique")
        ]

    def __str__(self) -> str:
        return f"{self.kind}-{self.site_id}-{self.year}: {self.last}"


class Quote(models.Model):
    number = models.CharField(_("number"), max_length=32, db_index=True)
    version = models.PositiveSmallIntegerField(_("version"), default=1)
    previous = models.OneToOneField(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="next_revision",
        verbose_name=_("revises"),
    )
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="quotes", verbose_name=_("site")
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="quotes", verbose_name=_("customer")
    )
    contact_name = models.CharField(_("contact"), max_length=200, validators=[no_emoji])
    contact_email = models.EmailField(_("contact email"))
    language = models.CharField(
        _("language"), max_length=8, choices=settings.LANGUAGES, default="zh-hans"
    )
    price_book = models.ForeignKey(
        PriceBook, on_delete=models.PROTECT, related_name="quotes", verbose_name=_("price book")
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    vat_rate = fraction_field(_("VAT rate"))
    term = models.CharField(_("term"), max_length=8, choices=Term.choices)
    duration = models.PositiveSmallIntegerField(_("duration (in term units)"))
    start_date = models.DateField(_("start date"))
    valid_until = models.DateField(_("valid until"))
    expires_at = models.DateTimeField(
        _("expires"), null=True, blank=True, help_text=_("End of the validity day, site time.")
    )
    extra_discount = fraction_field(_("extra discount"), default=Decimal("0"))
    status = models.CharField(
        _("status"), max_length=20, choices=QuoteStatus.choices, default=QuoteStatus.DRAFT
    )
    list_total = money_field(_("list total"), default=Decimal("0"))
    discount_total = money_field(_("discounts"), default=Decimal("0"))
    net_total = money_field(_("net"), default=Decimal("0"))
    vat_total = money_field(_("VAT"), default=Decimal("0"))
    gross_total = money_field(_("total"), default=Decimal("0"))
    placement = models.JSONField(_("placement"), default=dict, blank=True)
    reservation_group = models.UUIDField(_("booking"), null=True, blank=True)
    token = models.CharField(
        max_length=64, unique=True, default=new_token, editable=False, verbose_name=_("token")
    )
    notes = models.TextField(_("notes for the customer"), blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="quotes_created",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    sent_at = models.DateTimeField(_("sent"), null=True, blank=True)
    emailed_at = models.DateTimeField(_("emailed"), null=True, blank=True)
    decided_at = models.DateTimeField(_("accepted or rejected"), null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("decided by"),
    )
    decided_by_name = models.CharField(
        _("accepted or rejected by"), max_length=200, blank=True, validators=[no_emoji]
    )
    decided_ip = models.GenericIPAddressField(_("from IP"), null=True, blank=True)
    decision_comment = models.TextField(_("comment"), blank=True)

    lifecycle = Lifecycle(
        choices=QuoteStatus,
        transitions=QUOTE_TRANSITIONS,
        event_model="billing.QuoteEvent",
        subject_field="quote",
        describe=lambda q: (
            gettext("Quote %(number)s v%(version)s") % {"number": q.number, "version": q.version}
        ),
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("quote")
        verbose_name_plural = _("quotes")
        constraints = [
            models.UniqueConstraint(fields=["number", "version"], name="quote_unique_version"),
        ]
        indexes = [models.Index(fields=["status", "valid_until"], name="quote_expiry_idx")]

    def __str__(self) -> str:
        return f"{self.number} v{self.version}"

    @property
    def is_editable(self) -> bool:
        return self.status in QUOTE_EDITABLE

    @property
    def expiry(self) -> Any:
        """The quote's real expiry: when it stops being open and its holds end (set when
        sent: the end of the validity day, never past the last moment accepting can
        still meet the start, ``billing.pricing.periods.quote_expiry``)."""
        if self.expires_at is not None:
            return self.expires_at
        return quote_expiry(
            site=self.site, valid_until=self.valid_until, start_date=self.start_date
        )

    @property
    def validity_shortened(self) -> bool:
        """Whether the quote closes before the end of its validity date: accepting later
        could no longer meet the start (``quote_expiry``)."""
        return bool(self.expiry < end_of_day(site=self.site, day=self.valid_until))

    @property
    def expiry_text(self) -> str:
        """The expiry as every page, PDF and email prints it: site time, to the minute."""
        return str(self.expiry.astimezone(self.site.tzinfo).strftime("%Y-%m-%d %H:%M"))


class ItemKind(models.TextChoices):
    NODE = "node", _("nodes")
    ADDON = "addon", _("add-on")
    CUSTOM = "custom", _("custom line")


class QuoteItem(models.Model):
    """What the quote asks for (the engine's input); ``QuoteLine`` is what it costs."""

    quote = models.ForeignKey(
        Quote, on_delete=models.CASCADE, related_name="items", verbose_name=_("quote")
    )
    position = models.PositiveSmallIntegerField(default=0, verbose_name=_("position"))
    kind = models.CharField(_("kind"), max_length=8, choices=ItemKind.choices)
    node_type = models.ForeignKey(
        NodeType,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("node type"),
    )
    quantity = models.DecimalField(
        _("quantity"), max_digits=10, decimal_places=2, validators=[MinValueValidator(0)]
    )
    card_gpu_model = models.ForeignKey(
        GPUModel,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("GPU cards"),
    )
    cards_per_node = models.PositiveSmallIntegerField(_("cards per node"), default=0)
    addon_code = models.SlugField(_("add-on"), max_length=32, blank=True)
    description = models.CharField(_("description"), max_length=300, blank=True)
    unit_price = money_field(_("unit price"), null=True, blank=True)
    discountable = models.BooleanField(_("sales discount applies"), default=False)

    class Meta:
        ordering = ["position", "pk"]
        verbose_name = _("quote item")
        verbose_name_plural = _("quote items")
        constraints = [
            models.CheckConstraint(
                condition=~Q(kind="node") | Q(node_type__isnull=False),
                name="quoteitem_node_has_type",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.quantity}"


class QuoteLine(models.Model):
    """A priced line, exactly as the engine produced it when the quote was priced."""

    quote = models.ForeignKey(
        Quote, on_delete=models.CASCADE, related_name="lines", verbose_name=_("quote")
    )
    position = models.PositiveSmallIntegerField(verbose_name=_("position"))
    kind = models.CharField(max_length=8, verbose_name=_("kind"))
    code = models.CharField(max_length=64, verbose_name=_("code"))
    description = models.CharField(max_length=300, verbose_name=_("description"))
    description_zh = models.CharField(
        max_length=300, blank=True, verbose_name=_("description (Chinese)")
    )
    quantity = models.DecimalField(max_digits=12, decimal_places=2, verbose_name=_("quantity"))
    unit = models.CharField(max_length=16, verbose_name=_("unit"))
    unit_price = money_field(_("unit price"))
    periods = models.DecimalField(max_digits=10, decimal_places=4, verbose_name=_("periods"))
    period_unit = models.CharField(max_length=8, verbose_name=_("period unit"))
    list_amount = money_field(_("list"))
    discount_amount = money_field(_("discounts"))
    net = money_field(_("net"))
    vat = money_field(_("VAT"))
    gross = money_field(_("gross"))
    adjustments = models.JSONField(default=list, verbose_name=_("adjustments"))
    note = models.CharField(max_length=200, blank=True, verbose_name=_("note"))
    note_zh = models.CharField(max_length=200, blank=True, verbose_name=_("note (Chinese)"))
    tax_category = models.CharField(
        _("tax category"), max_length=16, choices=TaxCategory.choices, default="it_service"
    )
    vat_rate = fraction_field(_("VAT rate"), default=Decimal("0"))

    class Meta:
        verbose_name = _("quote line")
        verbose_name_plural = _("quote lines")
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["quote", "position"], name="quoteline_unique_pos")
        ]

    def __str__(self) -> str:
        return f"{self.localized_description()}: {self.net}"

    def localized_description(self, language: str | None = None) -> str:
        language = language or translation.get_language() or "en"
        if language.startswith("zh") and self.description_zh:
            return self.description_zh
        return self.description


class QuoteEvent(LifecycleEvent):
    quote = models.ForeignKey(
        Quote, on_delete=models.CASCADE, related_name="events", verbose_name=_("quote")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("quote event")
        verbose_name_plural = _("quote events")

    def __str__(self) -> str:
        return f"{self.quote_id}: {self.from_label()} → {self.to_label()}"


class QuoteDocument(StoredDocument):
    """A rendered quote PDF, stored once per version and language, with its SHA-256."""

    quote = models.ForeignKey(
        Quote, on_delete=models.CASCADE, related_name="documents", verbose_name=_("quote")
    )
    file = models.FileField(upload_to="quotes/%Y/", verbose_name=_("file"))

    class Meta:
        verbose_name = _("quote document")
        verbose_name_plural = _("quote documents")
        constraints = [
            models.UniqueConstraint(fields=["quote", "language"], name="quotedoc_unique")
        ]

    def __str__(self) -> str:
        return f"{self.quote} [{self.language}] {self.sha256[:12]}"


class RegistrationKind(models.TextChoices):
    USCC = "uscc", _("unified social credit code (统一社会信用代码)")
    HK_BR = "hk_br", _("Hong Kong business registration number")


SWIFT_RE = r"^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$"
CNAPS_RE = r"^\d{12}$"


class SellerEntity(models.Model):
    """Who sells at a site: the legal entity on its quotes and payment documents, with
    its registration number and the bank account customers pay into, in both languages.

    A mainland entity (``issues_fapiao``) sends payment requests (付款通知书): only the tax
    system issues a 发票. A Hong Kong entity issues invoices.
    """

    site = models.OneToOneField(
        Site, on_delete=models.PROTECT, related_name="seller", verbose_name=_("site")
    )
    legal_name = models.CharField(_("legal name"), max_length=200)
    legal_name_zh = models.CharField(_("legal name (Chinese)"), max_length=200, blank=True)
    registration_kind = models.CharField(
        _("registration"), max_length=8, choices=RegistrationKind.choices
    )
    registration_number = models.CharField(_("registration number"), max_length=32)
    address = models.CharField(_("address"), max_length=300)
    address_zh = models.CharField(_("address (Chinese)"), max_length=300, blank=True)
    bank_name = models.CharField(_("bank"), max_length=200)
    bank_name_zh = models.CharField(_("bank (Chinese)"), max_length=200, blank=True)
    account_name = models.CharField(
        _("account name"), max_length=200, help_text=_("Exactly the seller's legal name.")
    )
    account_number = models.CharField(_("account number"), max_length=64)
    cnaps_code = models.CharField(
        _("CNAPS code"),
        max_length=12,
        blank=True,
        validators=[RegexValidator(CNAPS_RE, _("A CNAPS code has 12 digits."))],
    )
    swift_code = models.CharField(
        _("SWIFT/BIC"),
        max_length=11,
        blank=True,
        validators=[RegexValidator(SWIFT_RE, _("A SWIFT/BIC code has 8 or 11 characters."))],
    )
    telecom_licence = models.CharField(
        _("telecom licence"),
        max_length=64,
        blank=True,
        help_text=_(
            "Mainland: the number of the value-added telecom business licence for IDC "
            "services (增值电信业务经营许可证); Hong Kong: the OFCA licence number."
        ),
    )
    issues_fapiao = models.BooleanField(
        _("mainland entity"),
        default=True,
        help_text=_(
            "Payment documents are payment requests (付款通知书) and carry the customer's "
            "fapiao request; off means invoices (Hong Kong)."
        ),
    )

    class Meta:
        verbose_name = _("seller entity")
        verbose_name_plural = _("seller entities")

    def __str__(self) -> str:
        return self.legal_name

    def clean(self) -> None:
        super().clean()
        if self.account_name not in (self.legal_name, self.legal_name_zh):
            raise ValidationError(
                {"account_name": gettext("The account name must be exactly the legal name.")}
            )
        if self.registration_kind == RegistrationKind.USCC:
            problem = tax_id_problem(country="CN", tax_id=self.registration_number)
            if problem:
                raise ValidationError({"registration_number": problem})
        if self.issues_fapiao and not self.cnaps_code:
            raise ValidationError(
                {"cnaps_code": gettext("A mainland account needs its CNAPS code.")}
            )

    def localized(self, language: str) -> dict[str, str]:
        zh = language.lower().startswith("zh")
        return {
            "legal_name": (self.legal_name_zh if zh else "") or self.legal_name,
            "address": (self.address_zh if zh else "") or self.address,
            "bank_name": (self.bank_name_zh if zh else "") or self.bank_name,
        }


class Estimate(models.Model):
    """A non-binding quote PDF of a configuration, for anyone (no account): no number from
    the gapless quote sequence, no nodes held. One row per configuration, language, price
    book and day (``key``), so identical configurations are served from the stored file.
    The documents queue renders it; ``rendered_at`` is set when the file is stored."""

    key = models.CharField(max_length=64, unique=True, verbose_name=_("key"))
    language = models.CharField(
        max_length=8, choices=settings.LANGUAGES, verbose_name=_("language")
    )
    configuration = models.JSONField(verbose_name=_("configuration"))
    reopen_path = models.CharField(max_length=2000, verbose_name=_("reopen path"))
    price_book = models.ForeignKey(
        PriceBook, on_delete=models.CASCADE, related_name="+", verbose_name=_("price book")
    )
    file = models.FileField(upload_to="estimates/%Y/", blank=True, verbose_name=_("file"))
    sha256 = models.CharField(max_length=64, blank=True, verbose_name=_("SHA-256"))
    size = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("size"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    rendered_at = models.DateTimeField(null=True, blank=True, verbose_name=_("rendered at"))

    class Meta:
        verbose_name = _("estimate")
        verbose_name_plural = _("estimates")

    def __str__(self) -> str:
        return f"estimate {self.key[:12]} [{self.language}]"

    @property
    def is_ready(self) -> bool:
        return self.rendered_at is not None and bool(self.file)
