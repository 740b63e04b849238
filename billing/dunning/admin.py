"""Dunning and renewals in the back office: the policy is edited here (its steps inline);
notices, suspensions and renewals are records, read-only."""

from __future__ import annotations

from django.contrib import admin

from billing.models import (
    DunningNotice,
    DunningPolicy,
    DunningStep,
    Renewal,
    Suspension,
    SuspensionEvent,
)
from core.admin_base import ReadOnlyAdmin, ReadOnlyInline


class DunningStepInline(admin.TabularInline):
    model = DunningStep
    fields = ("offset_days", "action")
    extra = 0


@admin.register(DunningPolicy)
class DunningPolicyAdmin(admin.ModelAdmin):
    list_display = ("name", "active", "grace_days")
    inlines = (DunningStepInline,)


@admin.register(DunningNotice)
class DunningNoticeAdmin(ReadOnlyAdmin):
    list_display = ("invoice", "step", "status", "suspend_on", "created_at", "emailed_at")
    list_filter = ("status",)
    search_fields = ("invoice__number", "invoice__order__number")
    list_select_related = ("invoice", "step")


class SuspensionEventInline(ReadOnlyInline):
    model = SuspensionEvent
    fields = ("created_at", "from_status", "to_status", "actor", "reason")
    readonly_fields = fields


@admin.register(Suspension)
class SuspensionAdmin(ReadOnlyAdmin):
    list_display = ("order", "invoice", "status", "suspended_at", "resumed_at")
    list_filter = ("status",)
    search_fields = ("order__number", "invoice__number")
    list_select_related = ("order", "invoice")
    inlines = (SuspensionEventInline,)


@admin.register(Renewal)
class RenewalAdmin(ReadOnlyAdmin):
    list_display = ("order", "quote", "same_nodes", "auto_accepted", "created_at")
    list_filter = ("auto_accepted",)
    search_fields = ("order__number", "quote__number")
    list_select_related = ("order", "quote")
