"""Admin for quotes (shown only), sales profiles and the seller entities."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy

from billing.documents import common as document_common
from billing.models import (
    Quote,
    QuoteEvent,
    QuoteLine,
    SalesProfile,
    SellerEntity,
)
from billing.pricing.admin import percent
from core.admin_base import (
    LifecycleEventInline,
    ReadOnlyAdmin,
    ReadOnlyInline,
    SiteTimeZoneMixin,
)

# --- Sales ------------------------------------------------------------------------------


@admin.register(SalesProfile)
class SalesProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "max_discount_percent", "can_approve")
    list_select_related = ("user",)
    list_filter = ("can_approve",)
    search_fields = ("user__username", "user__email", "user__first_name", "user__last_name")
    autocomplete_fields = ("user",)

    @admin.display(description=gettext_lazy("maximum extra discount"), ordering="max_discount")
    def max_discount_percent(self, obj: SalesProfile) -> str:
        return percent(obj.max_discount)


# --- Quotes and orders (shown only) -----------------------------------------------------


class QuoteLineInline(ReadOnlyInline):
    model = QuoteLine
    fields = (
        "position",
        "line_description",
        "quantity",
        "unit_price",
        "line_basis",
        "line_periods",
        "list_amount",
        "discount_amount",
        "net",
        "vat",
        "gross",
    )
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = gettext_lazy("priced lines")

    # The line as the quote's PDF words it, in the admin's language (not the raw codes).
    @admin.display(description=gettext_lazy("description"))
    def line_description(self, obj: QuoteLine) -> str:
        return obj.localized_description()

    @admin.display(description=gettext_lazy("unit"))
    def line_basis(self, obj: QuoteLine) -> str:
        return document_common.basis_text(obj.unit, obj.period_unit) or obj.unit

    @admin.display(description=gettext_lazy("periods"))
    def line_periods(self, obj: QuoteLine) -> str:
        return document_common.periods_text(obj.periods, obj.period_unit)


class QuoteEventInline(LifecycleEventInline):
    model = QuoteEvent


@admin.register(Quote)
class QuoteAdmin(SiteTimeZoneMixin, ReadOnlyAdmin):
    """Quotes are made and moved on the sales pages; numbers must stay gapless."""

    site_time_fields = ("created_at",)

    list_display = (
        "number",
        "version",
        "organisation",
        "site",
        "status",
        "gross_total",
        "currency",
        "created_by",
        "created_at",
    )
    list_select_related = ("organisation", "site", "created_by")
    list_filter = ("status", "site", "created_by")
    search_fields = ("number", "organisation__name", "organisation__legal_name")
    inlines = (QuoteLineInline, QuoteEventInline)


@admin.register(SellerEntity)
class SellerEntityAdmin(admin.ModelAdmin):
    """Who sells at each site: on its quotes and payment documents."""

    list_display = ("legal_name", "site", "registration_kind", "registration_number")
    list_select_related = ("site",)
    search_fields = ("legal_name", "legal_name_zh", "registration_number")
