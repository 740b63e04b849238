"""Price books and what they price: node prices, card options, add-ons, free services,
discount rules, promotions, and the log of changes to them.

Amounts are Decimal with the project's digits and places (``MONEY_*`` settings) and a
currency column beside them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.money import money_field
from inventory.models import Currency, GPUModel, NodeType, Site

__all__ = [
    "TAX_CLASSIFICATION",
    "AddonPrice",
    "AddonUnit",
    "Bilingual",
    "CardOptionPrice",
    "Category",
    "DiscountRule",
    "FreeService",
    "NodePrice",
    "PriceBasis",
    "PriceBook",
    "PriceChange",
    "Promotion",
    "TaxCategory",
    "Term",
    "fraction_field",
    "tax_category_reason",
]


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


# Per tax category: the 税收分类编码 and the short name the fapiao prints before the item
# (``*信息技术服务*…``), for the fapiao export. Codes follow the 商品和服务税收分类编码表
# (财税〔2016〕36号 categories).
# UNVERIFIED — FINANCE MUST CONFIRM BEFORE THE FIRST IMPORT. These codes were written from
# memory and could not be checked against the State Taxation Administration's current
# table in any session so far (no authoritative copy was reachable). In particular the
# leasing code (经营租赁, 3040502…) and whether IDC rental should be coded as 信息技术服务
# (304020…) or 增值电信服务 (30302…) are open questions for finance and the tax advisor.
# Compare each code with the table in the tax software and change it here (one place);
# README "Fapiao export" repeats this warning.
TAX_CLASSIFICATION: dict[str, tuple[str, str]] = {
    TaxCategory.IT_SERVICE: ("3040205000000000000", "信息技术服务"),
    TaxCategory.EQUIPMENT_LEASE: ("3040502020200000000", "经营租赁"),
    TaxCategory.TELECOM: ("3030100000000000000", "基础电信服务"),
}


def tax_category_reason(category: str) -> str:
    """Why a category is taxed as it is (the note under the document's lines, after the
    category's label and rate: the label is not repeated here)."""
    reasons = {
        TaxCategory.IT_SERVICE: gettext(
            "The provider operates the servers, network and data centre for you."
        ),
        TaxCategory.EQUIPMENT_LEASE: gettext("Hardware leased for the customer's own control."),
        TaxCategory.TELECOM: gettext("Bandwidth and traffic."),
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
