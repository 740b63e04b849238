"""Admin for orders (shown only, with their events)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from billing.models import (
    Order,
    OrderEvent,
)
from core.admin_base import (
    ReadOnlyAdmin,
    ReadOnlyInline,
    SiteTimeZoneMixin,
)


class OrderEventInline(ReadOnlyInline):
    model = OrderEvent
    fields = ("created_at", "from_label", "to_label", "actor", "reason")
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = gettext_lazy("status history")

    def get_queryset(self, request: HttpRequest) -> QuerySet[OrderEvent]:
        return super().get_queryset(request).select_related("actor")


@admin.register(Order)
class OrderAdmin(SiteTimeZoneMixin, ReadOnlyAdmin):
    """Orders come from accepted quotes and move through their services."""

    site_time_fields = ("start_at", "end_at", "created_at")

    list_display = (
        "number",
        "quote",
        "organisation",
        "site",
        "status",
        "gross_total",
        "currency",
        "start_at",
        "end_at",
        "created_at",
    )
    list_select_related = ("quote", "organisation", "site")
    list_filter = ("status", "site")
    search_fields = ("number", "quote__number", "organisation__name")
    inlines = (OrderEventInline,)
