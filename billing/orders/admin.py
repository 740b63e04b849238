"""Admin for orders (shown only, with their events)."""

from __future__ import annotations

from django.contrib import admin

from billing.models import (
    Order,
    OrderEvent,
)
from core.admin_base import (
    LifecycleEventInline,
    ReadOnlyAdmin,
    SiteTimeZoneMixin,
)


class OrderEventInline(LifecycleEventInline):
    model = OrderEvent


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
