"""Billing: price books, discounts, promotions, add-ons, quotes and their revisions, orders.

Amounts are Decimal with the project's digits and places (``MONEY_*`` settings) and a
currency column beside them. A quote stores the engine's priced lines as they were when
it was priced: a later price-book change never touches a quote that was sent.
"""

from __future__ import annotations

import secrets
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation, SshPublicKey, tax_id_problem
from billing.periods import end_of_day
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent, StoredDocument
from core.money import money_field
from core.validators import no_emoji
from inventory.models import Currency, GPUModel, ImageProfile, NodeType, Site


def fraction_field(verbose_name: Any, **kwargs: Any) -> models.DecimalField:
    return models.DecimalField(
        verbose_name,
        max_digits=5,
        decimal_places=4,
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
        **kwargs,
    )


class Bilingual(models.Model):
    """Data shown to customers in both languages: ``name`` (English) and ``name_zh``."""

    name = models.CharField(_("name (English)"), max_length=200)
    name_zh = models.CharField(_("name (Chinese)"), max_length=200, blank=True)

    class Meta:
        abstract = True

    def localized_name(self, language: str | None = None) -> str:
        language = language or translation.get_language() or "en"
        if language.startswith("zh") and self.name_zh:
            return self.name_zh
        return self.name


class Term(models.TextChoices):
    DAY = "day", _("daily")
    MONTH = "month", _("monthly")
    QUARTER = "quarter", _("quarterly")
    YEAR = "year", _("annual")


class Category(models.TextChoices):
    GPU = "gpu", _("GPU servers and cards")
    BARE_METAL = "bare_metal", _("bare-metal CPU servers")


# --- Price books ------------------------------------------------------------------------


class TaxCategory(models.TextChoices):
    """What is sold, for VAT: each priced line has one; the rate per category is data on
    the price book (``PriceBook.tax_rates``)."""

    IT_SERVICE = "it_service", _("IDC / IT service (信息技术服务)")
    EQUIPMENT_LEASE = "equipment_lease", _("equipment lease (有形动产租赁)")
    TELECOM = "telecom", _("basic telecom (基础电信服务)")


def tax_category_reason(category: str) -> str:
    """Why a category is taxed as it is (the note under the document's lines)."""
    reasons = {
        TaxCategory.IT_SERVICE: gettext(
            "IDC / IT service: the provider operates the servers, network and data centre "
            "for you (信息技术服务)."
        ),
        TaxCategory.EQUIPMENT_LEASE: gettext(
            "Equipment lease: hardware leased for the customer's own control (有形动产租赁)."
        ),
        TaxCategory.TELECOM: gettext("Basic telecom: bandwidth and traffic (基础电信服务)."),
    }
    return reasons.get(category, "")


class PriceBook(models.Model):
    """One site's prices in one currency from ``effective_from`` on.

    The book in force at a moment is the latest one effective by then. A new book (or a
    change to a future one) applies to quotes priced from then on; quotes store their
    prices, so a sent quote keeps them.
    """

    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="price_books", verbose_name=_("site")
    )
    tax_rates = models.JSONField(
        _("VAT rate per tax category"),
        default=dict,
        blank=True,
        help_text=_(
            'As fractions, e.g. {"it_service": "0.06", "equipment_lease": "0.13", '
            '"telecom": "0.09"}; a category not listed pays the site\'s VAT rate.'
        ),
    )
    name = models.CharField(_("name"), max_length=100)
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    effective_from = models.DateTimeField(_("effective from"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    notes = models.TextField(_("notes"), blank=True)

    class Meta:
        ordering = ["site__code", "-effective_from"]
        verbose_name = _("price book")
        verbose_name_plural = _("price books")
        constraints = [
            models.UniqueConstraint(
                fields=["site", "currency", "effective_from"], name="pricebook_unique_start"
            )
        ]

    def __str__(self) -> str:
        return f"{self.site.code} {self.currency} {self.name}"

    @property
    def short_name(self) -> str:
        """ "Shenzhen 2026-01-01" / "深圳 2026-01-01": the site and the day it came into force,
        for narrow document headers."""
        day = self.effective_from.astimezone(self.site.tzinfo).date().isoformat()
        return f"{self.site.display_name} {day}"

    @property
    def display_name(self) -> str:
        """How documents name the book in any language: its site, currency and the day it
        came into force (unique per book); ``name`` is the back office's own label."""
        day = self.effective_from.astimezone(self.site.tzinfo).date().isoformat()
        return gettext("%(site)s · %(currency)s · in force from %(date)s") % {
            "site": self.site.display_name,
            "currency": self.currency,
            "date": day,
        }


class PriceBasis(models.TextChoices):
    PER_NODE = "node", _("per node")
    PER_GPU = "gpu", _("per GPU")


class NodePrice(models.Model):
    """A node type's price: per node or per GPU, per month, and a daily rate of its own."""

    price_book = models.ForeignKey(
        PriceBook,
        on_delete=models.CASCADE,
        related_name="node_prices",
        verbose_name=_("price book"),
    )
    node_type = models.ForeignKey(
        NodeType, on_delete=models.PROTECT, related_name="+", verbose_name=_("node type")
    )
    category = models.CharField(_("category"), max_length=16, choices=Category.choices)
    tax_category = models.CharField(
        _("tax category"),
        max_length=16,
        choices=TaxCategory.choices,
        default=TaxCategory.IT_SERVICE,
    )
    basis = models.CharField(_("priced"), max_length=8, choices=PriceBasis.choices)
    monthly = money_field(_("per unit per month"), validators=[MinValueValidator(0)])
    daily = money_field(_("per unit per day"), validators=[MinValueValidator(0)])
    daily_note = models.CharField(
        _("how the daily rate was set"),
        max_length=200,
        blank=True,
        help_text=_("e.g. “derived: monthly ÷ 30 × 1.2” when the offer gives no daily price."),
    )

    class Meta:
        verbose_name = _("node price")
        verbose_name_plural = _("node prices")
        constraints = [
            models.UniqueConstraint(fields=["price_book", "node_type"], name="nodeprice_unique"),
            models.CheckConstraint(
                condition=Q(daily__gte=models.F("monthly") / 30),
                name="nodeprice_daily_not_below_monthly",
                violation_error_message=_(
                    "The daily rate × 30 must be at least the monthly rate, or renting by "
                    "the day would be cheaper than by the month."
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node_type} {self.monthly}/{self.get_basis_display()}"


class CardOptionPrice(models.Model):
    """An optional GPU card for a server (bare-metal E5 + RTX 3090 ¥1,750 per card)."""

    price_book = models.ForeignKey(
        PriceBook,
        on_delete=models.CASCADE,
        related_name="card_prices",
        verbose_name=_("price book"),
    )
    node_type = models.ForeignKey(
        NodeType, on_delete=models.PROTECT, related_name="+", verbose_name=_("node type")
    )
    gpu_model = models.ForeignKey(
        GPUModel, on_delete=models.PROTECT, related_name="+", verbose_name=_("GPU model")
    )
    monthly = money_field(_("per card per month"), validators=[MinValueValidator(0)])
    daily = money_field(_("per card per day"), validators=[MinValueValidator(0)])
    max_per_node = models.PositiveSmallIntegerField(_("cards per node, at most"), default=4)

    class Meta:
        verbose_name = _("card option price")
        verbose_name_plural = _("card option prices")
        constraints = [
            models.UniqueConstraint(
                fields=["price_book", "node_type", "gpu_model"], name="cardprice_unique"
            ),
            models.CheckConstraint(
                condition=Q(daily__gte=models.F("monthly") / 30),
                name="cardprice_daily_not_below_monthly",
                violation_error_message=_(
                    "The daily rate × 30 must be at least the monthly rate, or renting by "
                    "the day would be cheaper than by the month."
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node_type} + {self.gpu_model}"

    @property
    def code(self) -> str:
        return f"gpu{self.gpu_model_id}"


class AddonUnit(models.TextChoices):
    TB_MONTH = "tb_month", _("per TB per month")
    TB = "tb", _("per TB")
    IP_MONTH = "ip_month", _("per IP per month")
    MONTH = "month", _("per month")
    ONCE = "once", _("once")


class AddonPrice(Bilingual):
    """Priced, or explicitly free: storage, traffic, IPs, DDoS tiers."""

    price_book = models.ForeignKey(
        PriceBook, on_delete=models.CASCADE, related_name="addons", verbose_name=_("price book")
    )
    code = models.SlugField(_("code"), max_length=32)
    unit = models.CharField(_("unit"), max_length=16, choices=AddonUnit.choices)
    price = money_field(_("price per unit"), validators=[MinValueValidator(0)])
    note = models.CharField(_("note"), max_length=200, blank=True)
    note_zh = models.CharField(_("note (Chinese)"), max_length=200, blank=True)
    tax_category = models.CharField(
        _("tax category"),
        max_length=16,
        choices=TaxCategory.choices,
        default=TaxCategory.IT_SERVICE,
    )
    position = models.PositiveSmallIntegerField(default=0, verbose_name=_("position"))

    class Meta:
        ordering = ["position", "code"]
        verbose_name = _("add-on price")
        verbose_name_plural = _("add-on prices")
        constraints = [
            models.UniqueConstraint(fields=["price_book", "code"], name="addon_unique_code")
        ]

    def __str__(self) -> str:
        return self.localized_name()

    def localized_note(self, language: str | None = None) -> str:
        language = language or translation.get_language() or "en"
        if language.startswith("zh") and self.note_zh:
            return self.note_zh
        return self.note


class FreeService(Bilingual):
    """Shown on every quote as a zero-priced line (snapshots, environment set-up …)."""

    price_book = models.ForeignKey(
        PriceBook,
        on_delete=models.CASCADE,
        related_name="free_services",
        verbose_name=_("price book"),
    )
    position = models.PositiveSmallIntegerField(default=0, verbose_name=_("position"))

    class Meta:
        ordering = ["position", "pk"]
        verbose_name = _("free service")
        verbose_name_plural = _("free services")

    def __str__(self) -> str:
        return self.localized_name()


class DiscountRule(Bilingual):
    """Pay ``multiplier`` of list for a term; the most specific scope wins."""

    price_book = models.ForeignKey(
        PriceBook, on_delete=models.CASCADE, related_name="discounts", verbose_name=_("price book")
    )
    code = models.SlugField(_("code"), max_length=32)
    term = models.CharField(_("term"), max_length=8, choices=Term.choices)
    multiplier = fraction_field(
        _("pay this share of list"),
        help_text=_("0.8500 means the customer pays 85 percent of list"),
    )
    node_type = models.ForeignKey(
        NodeType,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("node type"),
    )
    gpu_model = models.ForeignKey(
        GPUModel,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("GPU model"),
    )
    category = models.CharField(_("category"), max_length=16, choices=Category.choices, blank=True)

    class Meta:
        ordering = ["term", "code"]
        verbose_name = _("term discount")
        verbose_name_plural = _("term discounts")
        constraints = [
            models.UniqueConstraint(fields=["price_book", "code"], name="discount_unique_code"),
            models.CheckConstraint(
                condition=Q(multiplier__gt=0) & Q(multiplier__lte=1),
                name="discount_multiplier_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.localized_name()} ({self.multiplier})"


class Promotion(Bilingual):
    """Buy N, get M free, between two dates (Hong Kong bare metal: buy one, get one)."""

    price_book = models.ForeignKey(
        PriceBook, on_delete=models.CASCADE, related_name="promotions", verbose_name=_("price book")
    )
    code = models.SlugField(_("code"), max_length=32)
    valid_from = models.DateField(_("valid from"))
    valid_until = models.DateField(_("valid until (inclusive)"))
    buy = models.PositiveSmallIntegerField(_("buy"), default=1)
    get = models.PositiveSmallIntegerField(_("get free"), default=1)
    category = models.CharField(_("category"), max_length=16, choices=Category.choices, blank=True)
    node_type = models.ForeignKey(
        NodeType,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("node type"),
    )

    class Meta:
        ordering = ["valid_from", "code"]
        verbose_name = _("promotion")
        verbose_name_plural = _("promotions")
        constraints = [
            models.UniqueConstraint(fields=["price_book", "code"], name="promotion_unique_code"),
            models.CheckConstraint(
                condition=Q(valid_until__gte=models.F("valid_from")),
                name="promotion_dates_in_order",
            ),
            models.CheckConstraint(condition=Q(buy__gte=1) & Q(get__gte=1), name="promotion_n_m"),
        ]

    def __str__(self) -> str:
        return self.localized_name()


class PriceChange(models.Model):
    """The log of every price-book change: who, when, what, before and after."""

    price_book = models.ForeignKey(
        PriceBook, on_delete=models.CASCADE, related_name="changes", verbose_name=_("price book")
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("actor"),
    )
    at = models.DateTimeField(default=timezone.now, verbose_name=_("time"))
    what = models.CharField(_("what"), max_length=200)
    before = models.JSONField(_("before"), null=True, blank=True)
    after = models.JSONField(_("after"), null=True, blank=True)

    class Meta:
        ordering = ["-at", "-pk"]
        verbose_name = _("price change")
        verbose_name_plural = _("price changes")

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.what}"


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
# What a customer may see of an organisation's quotes: those sent to it (drafts and quotes
# awaiting approval are the sales team's business).
QUOTE_CUSTOMER_VISIBLE = (
    QuoteStatus.SENT,
    QuoteStatus.ACCEPTED,
    QuoteStatus.REJECTED,
    QuoteStatus.EXPIRED,
    QuoteStatus.SUPERSEDED,
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
        sent: the end of the validity day, never past the rental's first day)."""
        if self.expires_at is not None:
            return self.expires_at
        return end_of_day(site=self.site, day=min(self.valid_until, self.start_date))


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


# --- Orders -----------------------------------------------------------------------------


class OrderStatus(models.TextChoices):
    AWAITING_PAYMENT = "awaiting_payment", _("awaiting contract and payment")
    PAID = "paid", _("paid")
    PROVISIONING = "provisioning", _("provisioning")
    VALIDATING = "validating", _("validating")
    READY = "ready", _("ready")
    EXPIRED = "expired", _("expired")
    CANCELLED = "cancelled", _("cancelled")
    ENDED = "ended", _("ended")


ORDER_TRANSITIONS: dict[str, frozenset[str]] = {
    OrderStatus.AWAITING_PAYMENT: frozenset(
        {OrderStatus.PAID, OrderStatus.EXPIRED, OrderStatus.CANCELLED}
    ),
    OrderStatus.PAID: frozenset({OrderStatus.PROVISIONING, OrderStatus.CANCELLED}),
    OrderStatus.PROVISIONING: frozenset({OrderStatus.VALIDATING, OrderStatus.CANCELLED}),
    OrderStatus.VALIDATING: frozenset(
        {OrderStatus.READY, OrderStatus.PROVISIONING, OrderStatus.CANCELLED}
    ),
    OrderStatus.READY: frozenset({OrderStatus.ENDED}),
    OrderStatus.EXPIRED: frozenset(),
    OrderStatus.CANCELLED: frozenset(),
    OrderStatus.ENDED: frozenset(),
}


class Order(models.Model):
    number = models.CharField(_("number"), max_length=32, unique=True)
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="orders", verbose_name=_("customer")
    )
    quote = models.OneToOneField(
        Quote, on_delete=models.PROTECT, related_name="order", verbose_name=_("quote")
    )
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="orders", verbose_name=_("site")
    )
    status = models.CharField(
        _("status"),
        max_length=20,
        choices=OrderStatus.choices,
        default=OrderStatus.AWAITING_PAYMENT,
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    gross_total = money_field(_("total"))
    start_at = models.DateTimeField(_("starts"))
    end_at = models.DateTimeField(_("ends"))
    reservation_group = models.UUIDField(_("booking"), null=True, blank=True)
    payment_due_at = models.DateTimeField(
        _("pay by"), null=True, blank=True, help_text=_("Unpaid by then, the order expires.")
    )
    idempotency_key = models.CharField(
        _("idempotency key"),
        max_length=64,
        blank=True,
        default="",
        help_text=_("The configure form's key: accepting the same form twice finds this order."),
    )
    paid_at = models.DateTimeField(_("paid"), null=True, blank=True)
    image_profile = models.ForeignKey(
        ImageProfile,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="orders",
        verbose_name=_("OS image"),
    )
    ssh_keys = models.ManyToManyField(
        SshPublicKey, blank=True, related_name="orders", verbose_name=_("SSH keys")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    lifecycle = Lifecycle(
        choices=OrderStatus,
        transitions=ORDER_TRANSITIONS,
        event_model="billing.OrderEvent",
        subject_field="order",
        describe=lambda o: gettext("Order %(number)s") % {"number": o.number},
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "payment_due_at"], name="order_due_idx")]
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="order_unique_idempotency_key",
            )
        ]

    def __str__(self) -> str:
        return self.number


class OrderEvent(LifecycleEvent):
    order = models.ForeignKey(
        Order, on_delete=models.CASCADE, related_name="events", verbose_name=_("order")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("order event")
        verbose_name_plural = _("order events")

    def __str__(self) -> str:
        return f"{self.order_id}: {self.from_label()} → {self.to_label()}"


# --- Invoices and payments --------------------------------------------------------------


class InvoiceStatus(models.TextChoices):
    ISSUED = "issued", _("issued")
    PAID = "paid", _("paid")
    VOID = "void", _("void")


# An issued invoice is paid or voided (its order lapsed or was cancelled); both are final.
INVOICE_TRANSITIONS: dict[str, frozenset[str]] = {
    InvoiceStatus.ISSUED: frozenset({InvoiceStatus.PAID, InvoiceStatus.VOID}),
    InvoiceStatus.PAID: frozenset(),
    InvoiceStatus.VOID: frozenset(),
}


class PaymentMethod(models.TextChoices):
    CARD = "card", _("card")
    ALIPAY = "alipay", _("Alipay")
    WECHAT_PAY = "wechat_pay", _("WeChat Pay")
    BANK_TRANSFER = "bank_transfer", _("bank transfer")


class Invoice(models.Model):
    """What the customer pays: the order's first invoice carries the quote's totals."""

    number = models.CharField(_("number"), max_length=32, unique=True)
    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="invoices", verbose_name=_("order")
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="invoices", verbose_name=_("customer")
    )
    status = models.CharField(
        _("status"), max_length=8, choices=InvoiceStatus.choices, default=InvoiceStatus.ISSUED
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    net_total = money_field(_("net"))
    vat_total = money_field(_("VAT"))
    gross_total = money_field(_("total"))
    issued_at = models.DateTimeField(_("issued"), default=timezone.now)
    due_at = models.DateTimeField(_("due"))
    bank_reference = models.CharField(
        _("transfer reference"),
        max_length=32,
        unique=True,
        help_text=_("The customer writes this on the bank transfer."),
    )
    paid_at = models.DateTimeField(_("paid"), null=True, blank=True)
    paid_reference = models.CharField(_("payment reference"), max_length=100, blank=True)
    marked_paid_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("marked paid by"),
    )
    # The billing period this document charges (``billing.schedule``); ``None`` for a
    # document outside the schedule (metered usage after the term, legacy invoices).
    period_seq = models.PositiveSmallIntegerField(_("billing period"), null=True, blank=True)
    period_start = models.DateTimeField(_("period starts"), null=True, blank=True)
    period_end = models.DateTimeField(_("period ends"), null=True, blank=True)
    # Partial payments: the invoice stays issued until this reaches the total.
    amount_paid = money_field(_("paid so far"), default=Decimal("0"))
    # The customer's fapiao request as it was when the document was issued (for finance).
    fapiao = models.JSONField(_("fapiao request"), default=dict, blank=True)

    lifecycle = Lifecycle(
        choices=InvoiceStatus,
        transitions=INVOICE_TRANSITIONS,
        event_model="billing.InvoiceEvent",
        subject_field="invoice",
        describe=lambda i: gettext("Invoice %(number)s") % {"number": i.number},
    )

    class Meta:
        ordering = ["-issued_at", "-pk"]
        verbose_name = _("invoice")
        verbose_name_plural = _("invoices")
        constraints = [
            models.UniqueConstraint(
                fields=["order", "period_seq"],
                condition=Q(period_seq__isnull=False),
                name="invoice_unique_order_period",
            )
        ]

    def __str__(self) -> str:
        return self.number

    @property
    def amount_due(self) -> Decimal:
        """What is still to pay (0 once paid in full, or void)."""
        if self.status != InvoiceStatus.ISSUED:
            return Decimal("0")
        return max(self.gross_total - self.amount_paid, Decimal("0"))


class InvoiceEvent(LifecycleEvent):
    invoice = models.ForeignKey(
        Invoice, on_delete=models.CASCADE, related_name="events", verbose_name=_("invoice")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("invoice event")
        verbose_name_plural = _("invoice events")

    def __str__(self) -> str:
        return f"{self.invoice_id}: {self.from_label()} → {self.to_label()}"


class PaymentStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    REFUNDED = "refunded", _("refunded")


class Payment(models.Model):
    """One attempt to pay an invoice: a Stripe PaymentIntent or a bank transfer."""

    invoice = models.ForeignKey(
        Invoice, on_delete=models.PROTECT, related_name="payments", verbose_name=_("invoice")
    )
    method = models.CharField(_("method"), max_length=16, choices=PaymentMethod.choices)
    status = models.CharField(
        _("status"), max_length=12, choices=PaymentStatus.choices, default=PaymentStatus.PENDING
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices)
    amount = money_field(_("amount"))
    amount_refunded = money_field(_("refunded"), default=Decimal("0"))
    stripe_payment_intent = models.CharField(
        max_length=255, null=True, blank=True, unique=True, verbose_name=_("Stripe payment intent")
    )
    reference = models.CharField(_("reference"), max_length=100, blank=True)
    failure_message = models.TextField(_("failure"), blank=True)
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    succeeded_at = models.DateTimeField(null=True, blank=True, verbose_name=_("succeeded at"))
    provider_succeeded_at = models.DateTimeField(
        _("succeeded at the provider"),
        null=True,
        blank=True,
        help_text=_(
            "When Stripe says the payment succeeded (its charge or event time): of several "
            "payments of one invoice, the first to succeed pays it."
        ),
    )
    duplicate_of = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="duplicates",
        verbose_name=_("duplicate of"),
        help_text=_("Set when another payment paid the invoice first: refund this one."),
    )
    duplicate_refund = models.CharField(
        _("duplicate refunded"),
        max_length=255,
        blank=True,
        help_text=_("The Stripe refund of this duplicate, made once from the back office."),
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("payment")
        verbose_name_plural = _("payments")

    def __str__(self) -> str:
        return f"{self.invoice_id} {self.method} {self.amount} {self.status}"


class StripeEventStatus(models.TextChoices):
    RECEIVED = "received", _("received")
    PROCESSED = "processed", _("processed")
    IGNORED = "ignored", _("ignored")
    FLAGGED = "flagged", _("flagged")
    FAILED = "failed", _("failed")


class StripeEvent(models.Model):
    """Every verified webhook event, stored once by its Stripe id."""

    stripe_id = models.CharField(max_length=255, unique=True, verbose_name=_("Stripe event ID"))
    type = models.CharField(max_length=100, verbose_name=_("type"))
    payload = models.JSONField(verbose_name=_("payload"))
    status = models.CharField(
        max_length=12,
        choices=StripeEventStatus.choices,
        default=StripeEventStatus.RECEIVED,
        verbose_name=_("status"),
    )
    error = models.TextField(blank=True, verbose_name=_("error"))
    received_at = models.DateTimeField(auto_now_add=True, verbose_name=_("received at"))
    processed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("processed at"))

    class Meta:
        ordering = ["-received_at", "-pk"]
        verbose_name = _("Stripe event")
        verbose_name_plural = _("Stripe events")

    def __str__(self) -> str:
        return f"{self.stripe_id} {self.type} {self.status}"


class InvoiceDocument(StoredDocument):
    """A rendered invoice PDF, stored once per invoice and language, with its SHA-256."""

    invoice = models.ForeignKey(
        Invoice, on_delete=models.CASCADE, related_name="documents", verbose_name=_("invoice")
    )
    file = models.FileField(upload_to="invoices/%Y/", verbose_name=_("file"))

    class Meta:
        verbose_name = _("invoice document")
        verbose_name_plural = _("invoice documents")
        constraints = [
            models.UniqueConstraint(fields=["invoice", "language"], name="invoicedoc_unique")
        ]

    def __str__(self) -> str:
        return f"{self.invoice} [{self.language}] {self.sha256[:12]}"


# Contracts, signatures, the provisioning gate, schedules, dunning, renewals, SLA credits.
from billing.models_contracts import *  # noqa: E402, F403
from billing.models_dunning import *  # noqa: E402, F403

# Invoice lines, credit notes, refunds, metered usage and SLA credits.
from billing.models_money import *  # noqa: E402, F403
