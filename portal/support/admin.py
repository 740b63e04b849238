"""The back office: saved replies are kept here; tickets and incidents are shown (their
writes go through the staff pages' services, which record who and why)."""

from __future__ import annotations

from django.contrib import admin

from core.admin_base import ReadOnlyAdmin, ReadOnlyInline
from portal.support.models import (
    SavedReply,
    StatusIncident,
    StatusUpdate,
    Ticket,
    TicketEvent,
    TicketMessage,
)


@admin.register(SavedReply)
class SavedReplyAdmin(admin.ModelAdmin):
    list_display = ("title", "language", "active")
    list_filter = ("language", "active")
    search_fields = ("title", "body")


class TicketMessageInline(ReadOnlyInline):
    model = TicketMessage
    fields = ("created_at", "author", "from_staff", "internal", "via", "body")
    readonly_fields = fields
    show_change_link = False


class TicketEventInline(ReadOnlyInline):
    model = TicketEvent
    fields = ("created_at", "actor", "from_status", "to_status", "reason", "internal")
    readonly_fields = fields
    show_change_link = False


@admin.register(Ticket)
class TicketAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "subject",
        "organisation",
        "category",
        "priority",
        "status",
        "assignee",
        "response_due_at",
        "response_missed",
        "resolution_missed",
    )
    list_filter = ("status", "category", "priority", "tier", "source")
    search_fields = ("subject", "gpu_serial", "node__hostname", "order__number")
    inlines = [TicketMessageInline, TicketEventInline]


class StatusUpdateInline(ReadOnlyInline):
    model = StatusUpdate
    fields = ("created_at", "status", "body", "body_zh", "author")
    readonly_fields = fields
    show_change_link = False


@admin.register(StatusIncident)
class StatusIncidentAdmin(ReadOnlyAdmin):
    list_display = ("title", "site", "component", "impact", "status", "started_at")
    list_filter = ("site", "component", "impact", "status")
    inlines = [StatusUpdateInline]
